"""The stranded-items check of a large stage with eligibility rules (annotation/stranding.py):
the witnesses' shortcut against the statement that counts every open item stage member by
member, on the same database in the same run.

Usage (from the repository root; needs PostgreSQL through DATABASE_URL)::

    scripts/with-services.sh .venv/bin/python benchmarks/stranding_rules.py \
        [--items 100000] [--members 200] [--skilled 4] [--repeat 3] [--old-repeat 1]

Builds (once per database) a project with one verify stage of overlap 3 and the rules
``not_author`` and ``skill: medicine``: ``--members`` annotators of whom ``--skilled`` have the
tag, ``--items`` items (one in 50 written by a member), and on the first 2,000 item stages two
skips by skilled members (so some are stranded). Then times both methods, ``--repeat`` times
the new one and ``--old-repeat`` times the old one, and prints for each: the PostgreSQL
backend's CPU (utime + stime of its process, from /proc: the figure that a loaded machine
inflates least), the wall time, the load average beside it, and the answer (count and first
ids), which must be the same.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")

SLUG = "bench-stranding-rules"
CHUNK = 5_000


def setup_django() -> None:
    import django

    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        sys.exit("Set DATABASE_URL to a PostgreSQL database (run under scripts/with-services.sh).")
    django.setup()


def build(items: int, members: int, skilled: int, seed: int) -> None:
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from annotation import services
    from annotation.models import Assignment, Item, ItemStage, Membership, Project

    call_command("migrate", verbosity=0)
    if Project.objects.filter(slug=SLUG).exists():
        print(f"reusing project {SLUG!r}")
        return
    chooser = random.Random(seed)
    started = time.perf_counter()
    project = services.project_create(slug=SLUG, name="Bench stranding rules", kind="generic")
    stage = services.stage_create(
        project=project,
        slug="verify",
        name="Verify",
        kind="verify",
        overlap=3,
        eligibility=[{"rule": "not_author"}, {"rule": "skill", "tag": "medicine"}],
    )
    users = get_user_model().objects.bulk_create(
        get_user_model()(username=f"bench-strand-{n}") for n in range(members)
    )
    for user in users:
        services.membership_add(project=project, user=user, role="annotator")
    tagged = [user.pk for user in users[:skilled]]
    Membership.objects.filter(project=project, user_id__in=tagged).update(skills="medicine law")
    for start in range(0, items, CHUNK):
        services.items_create(
            project=project,
            rows=[
                {"external_id": f"s-{n:07d}", "payload": {"text": f"Sentence {n}."}}
                for n in range(start, min(items, start + CHUNK))
            ],
        )
    ids = list(Item.objects.filter(project=project).values_list("pk", flat=True))
    for pk in chooser.sample(ids, len(ids) // 50):
        Item.objects.filter(pk=pk).update(author_id=chooser.choice(users).pk)
    expires = timezone.now() + timedelta(hours=1)
    held = []
    for row in ItemStage.objects.filter(stage=stage).order_by("pk")[:2000]:
        for user_id in chooser.sample(tagged, 2):
            held.append(
                Assignment(
                    item_stage=row,
                    stage_id=stage.pk,
                    annotator_id=user_id,
                    status=Assignment.Status.SKIPPED,
                    expires_at=expires,
                    round=row.round,
                    phase=row.phase,
                )
            )
    Assignment.objects.bulk_create(held, batch_size=5000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(
        f"built {items:,} items, {members} members ({skilled} skilled), {len(held):,} skips"
        f" in {time.perf_counter() - started:.0f} s"
    )


def backend_cpu() -> float:
    """CPU seconds (user + system) of this connection's PostgreSQL backend so far."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def old_method(stage) -> tuple[list[int], int]:
    """The statement before the witnesses: every open item stage, member by member."""
    from annotation import stranding

    statement, params = stranding._stranded_sql(stage, only_ids=False)
    statement = f"SELECT y.*, COUNT(*) OVER () FROM ({statement}) y ORDER BY y.id"
    statement += f" LIMIT {stranding.EXAMPLES}"
    rows = stranding._fetchall(statement, params)
    return [row[0] for row in rows], int(rows[0][-1]) if rows else 0


def new_method(stage) -> tuple[list[int], int]:
    from annotation import stranding

    found, count = stranding._stranded(stage, ids=None, limit=stranding.EXAMPLES)
    return [row.item_stage_id for row in found], count


def measure(name: str, method, stage, repeat: int) -> tuple[list[int], int]:
    answer: tuple[list[int], int] = ([], 0)
    for number in range(repeat):
        load = os.getloadavg()[0]
        cpu, wall = backend_cpu(), time.perf_counter()
        answer = method(stage)
        wall, cpu = time.perf_counter() - wall, backend_cpu() - cpu
        print(
            f"{name:<42} run {number + 1}: db CPU {cpu * 1000:9,.0f} ms, wall {wall * 1000:9,.0f} ms,"
            f" load {load:5.1f}; {answer[1]:,} stranded"
        )
    return answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--members", type=int, default=200)
    parser.add_argument("--skilled", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--old-repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    setup_django()
    build(args.items, args.members, args.skilled, args.seed)

    from annotation import stranding
    from annotation.models import ItemStage, Stage

    stage = Stage.objects.get(project__slug=SLUG, slug="verify")
    open_count = ItemStage.objects.filter(stage=stage, state="open").count()
    print(f"stage: {open_count:,} open item stages; witnesses {stranding._witnesses(stage)}")
    new = measure("witnesses (annotation/stranding.py)", new_method, stage, args.repeat)
    if args.old_repeat:
        old = measure("every item stage, member by member", old_method, stage, args.old_repeat)
        print("same answer:", old == new)
        if old != new:
            sys.exit("the two methods disagree")


if __name__ == "__main__":
    main()
