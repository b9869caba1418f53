"""A release build at research scale on PostgreSQL: 1,000,002 annotations over 333,334 items,
before and after in one run.

    scripts/with-services.sh .venv/bin/python benchmarks/release_build.py
    scripts/with-services.sh .venv/bin/python benchmarks/release_build.py --items 100000 \\
        --before main --repeat 2 --profile

The project (kind ``generic``, one ``verify`` stage, three answers per item by 200 annotators,
every item resolved and accepted) is written by a few ``INSERT … SELECT`` statements, then
analysed. Each build runs in its own process (``release_publish`` then ``release_build``, the
service the Celery task calls) and its release is deleted afterwards, so every build is a
project's first release (no diff against a previous one; ``--with-diff`` builds a second one
too). "before" is the same build run from another checkout of the code (``--before REV``,
``git archive`` of that revision into a temporary folder; default ``main``; ``--before ''``
skips it), against the same database in the same run.

Printed per build: wall seconds, CPU seconds of the build's process and of its PostgreSQL
backend (from ``/proc``: user + system, so a loaded machine shows in the wall time rather than
in the CPU figures), peak resident memory above the level at start (sampled every 10 ms), the
zip's size, and the machine's load average at the start and end. ``--profile`` adds the build
process's top functions by own CPU time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
REPO = Path(os.environ.get("RELEASE_BENCH_CODE", HERE))
sys.path.insert(0, str(REPO))
SLUG = "release-bench"

sys.path.insert(1, str(Path(__file__).resolve().parent))
from io_scale import PeakRss  # noqa: E402  (the one peak-memory sampler of the benchmarks)


def django_setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")
    import django

    django.setup()


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (its reaped children included)."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    ticks = sum(int(value) for value in fields[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


def report(**figures) -> None:
    print("RESULT " + json.dumps(figures), flush=True)


# --- the data ---------------------------------------------------------------------------------


def phase_setup(items: int, per_item: int, annotators: int) -> None:
    """The project: ``items`` accepted items, ``per_item`` answers each by ``annotators``
    people, a majority resolution each. Written by INSERT … SELECT (minutes through the
    services at this size)."""
    django_setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection, transaction

    from annotation import services
    from annotation.models import Annotation, Item, ItemStage, Project, Resolution

    call_command("migrate", verbosity=0)
    if Project.objects.filter(slug=SLUG).exists():
        report(created=False, annotations=Annotation.objects.filter(
            item_stage__stage__project__slug=SLUG).count())  # fmt: skip
        return
    started = time.perf_counter()
    project = services.project_create(slug=SLUG, name="Release bench", kind="generic")
    stage = services.stage_create(project=project, slug="verify", name="Verify", kind="verify",
                                  overlap=per_item, resolution_policy="majority")  # fmt: skip
    User = get_user_model()
    User.objects.bulk_create([User(username=f"bench-annotator-{n:03d}") for n in range(annotators)])
    people = list(
        User.objects.filter(username__startswith="bench-annotator-").values_list("pk", flat=True)
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"""INSERT INTO {Item._meta.db_table}
                (project_id, external_id, payload, source, "group", purpose, status, version,
                 created_at)
            SELECT %(project)s, 'case-' || lpad(n::text, 7, '0'),
                   jsonb_build_object(
                       'scenario', 'Case ' || n || ': the sprinkler was on, so the grass got '
                                   'wet before dawn.',
                       'claim', CASE WHEN n %% 97 = 0 THEN '=1+1 is a formula'
                                     ELSE 'The sprinkler caused the wet grass.' END,
                       'pearl_level', 'L' || (1 + n %% 3), 'score', n %% 10),
                   'bench', '', 'regular', 'accepted', 1, now()
            FROM generate_series(1, %(items)s) n""",
            {"project": project.pk, "items": items},
        )
        cursor.execute(
            f"""INSERT INTO {ItemStage._meta.db_table}
                (item_id, stage_id, state, target_count, submitted_count, leased_count,
                 random_key, spread_rank, group_size, opened_at, completed_at, resolved_at)
            SELECT i.id, %(stage)s, 'resolved', %(per_item)s, %(per_item)s, 0,
                   (i.id * 2654435761) %% 2147483647, 0, 1, now(), now(), now()
            FROM {Item._meta.db_table} i WHERE i.project_id = %(project)s""",
            {"stage": stage.pk, "per_item": per_item, "project": project.pk},
        )
        cursor.execute(
            f"""INSERT INTO {Annotation._meta.db_table}
                (item_stage_id, annotator_id, external_rater, payload, seconds_spent,
                 client_info, item_version, created_at)
            SELECT s.id, (%(people)s::int[])[1 + (s.id * 7 + g) %% %(n_people)s], '',
                   jsonb_build_object('value', CASE WHEN (s.id + g) %% 4 = 0 THEN 'reject'
                                                    ELSE 'keep' END, 'comment', ''),
                   4.5, '{{}}'::jsonb, 1, now() - make_interval(secs => s.id)
            FROM {ItemStage._meta.db_table} s, generate_series(1, %(per_item)s) g
            WHERE s.stage_id = %(stage)s
            ORDER BY s.id, g""",
            {"people": people, "n_people": len(people), "per_item": per_item,
             "stage": stage.pk},
        )  # fmt: skip
        cursor.execute(
            f"""INSERT INTO {Resolution._meta.db_table}
                (item_stage_id, value, status, outcome, votes, n_annotations, policy, reason,
                 computed_at)
            SELECT s.id, '"keep"'::jsonb, 'majority', 'accept',
                   '{{"keep": 2, "reject": 1}}'::jsonb, %(per_item)s, 'majority', '', now()
            FROM {ItemStage._meta.db_table} s WHERE s.stage_id = %(stage)s""",
            {"per_item": per_item, "stage": stage.pk},
        )
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    report(created=True, seconds=time.perf_counter() - started,
           annotations=Annotation.objects.filter(item_stage__stage=stage).count())  # fmt: skip


# --- one build (a child process, run from the code under test) ------------------------------


def phase_build(with_diff: bool, profile: bool) -> None:
    django_setup()
    from django.db import connection

    from annotation.models import Project
    from releases.models import Release
    from releases.services import release_build, release_publish

    project = Project.objects.get(slug=SLUG)
    Release.objects.filter(project=project).delete()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    builds = 2 if with_diff else 1
    figures = []
    for _ in range(builds):
        profiler = None
        if profile:
            import cProfile

            profiler = cProfile.Profile(time.process_time)
            profiler.enable()
        load_before = load()
        peak = PeakRss()
        cpu_before, pg_before = time.process_time(), process_cpu(backend)
        started = time.perf_counter()
        release = release_publish(project=project, user=None)  # on-commit task not run here
        release = release_build(release_id=release.pk)
        seconds = time.perf_counter() - started
        cpu, pg_cpu = time.process_time() - cpu_before, process_cpu(backend) - pg_before
        grown = peak()
        peak_mib = peak.peak
        if profiler is not None:
            import io
            import pstats

            profiler.disable()
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
            print(text.getvalue(), file=sys.stderr)
        assert release.status == "published", release.message
        files = {entry["name"]: entry["bytes"] for entry in release.manifest["files"]}
        digests = {entry["name"]: entry["sha256"] for entry in release.manifest["files"]}
        figures.append(
            {
                "seconds": seconds,
                "cpu": cpu,
                "pg_cpu": pg_cpu,
                "grown_mib": grown,
                "peak_mib": peak_mib,
                "zip_mib": release.stats["bytes"] / 2**20,
                "items": release.stats["items"],
                "annotations": release.stats["annotations"],
                "diff": release.stats.get("diff") is not None,
                "files": files,
                "sha256": digests,
                "load": f"{load_before} → {load()}",
            }  # fmt: skip
        )
    Release.objects.filter(project=project).delete()
    report(builds=figures)


# --- orchestration ----------------------------------------------------------------------------


def child(*args: str, code: Path = HERE, show_stderr: bool = False) -> dict:
    env = dict(os.environ, LOG_LEVEL="ERROR", RELEASE_BENCH_CODE=str(code))
    done = subprocess.run(
        [sys.executable, str(HERE / "benchmarks" / "release_build.py"), "--phase", *args],
        cwd=code, env=env, capture_output=True, text=True,
    )  # fmt: skip
    if show_stderr or done.returncode:
        print(done.stderr, file=sys.stderr)
    done.check_returncode()
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def checkout(revision: str, into: Path) -> Path:
    """The code of ``revision`` in a folder (``git archive``), to run the "before" build."""
    into.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(HERE), "archive", revision], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def show(label: str, build: dict) -> None:
    print(
        f"  {label:7} {build['seconds']:6.1f} s wall  CPU {build['cpu']:5.1f} s build + "
        f"{build['pg_cpu']:5.1f} s PostgreSQL  peak +{build['grown_mib']:6.1f} MiB "
        f"(RSS {build['peak_mib']:.0f} MiB)  zip {build['zip_mib']:6.1f} MiB"
        f"{'  (diff against the previous)' if build['diff'] else ''}  load {build['load']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=333_334)
    parser.add_argument("--per-item", type=int, default=3, help="answers per item")
    parser.add_argument("--annotators", type=int, default=200)
    parser.add_argument("--before", default="main", help="git revision of the 'before' build")
    parser.add_argument("--repeat", type=int, default=1, help="builds per side, alternating")
    parser.add_argument("--with-diff", action="store_true", help="also a second release")
    parser.add_argument("--profile", action="store_true", help="cProfile each build (stderr)")
    parser.add_argument("--phase", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        name, *rest = args.phase
        if name == "setup":
            phase_setup(int(rest[0]), int(rest[1]), int(rest[2]))
        else:
            phase_build(rest[0] == "diff", rest[1] == "profile")
        return
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("needs PostgreSQL: run through scripts/with-services.sh")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.environ.setdefault("MEDIA_ROOT", str(work / "media"))
        print(f"PostgreSQL, {os.cpu_count()} cores, load {load()}; {args.items:,} items × "
              f"{args.per_item} answers by {args.annotators} annotators")  # fmt: skip
        made = child("setup", str(args.items), str(args.per_item), str(args.annotators))
        if made.get("created"):
            print(f"  data written in {made['seconds']:.1f} s: {made['annotations']:,} annotations")
        sides = [("after", HERE)]
        if args.before:
            sides.insert(0, (f"before ({args.before})", checkout(args.before, work / "before")))
        options = ("diff" if args.with_diff else "single", "profile" if args.profile else "-")
        results: dict[str, list[dict]] = {label: [] for label, _ in sides}
        print("\nrelease build (publish + build, the files, datasheet, manifest and zip)")
        for _ in range(args.repeat):
            for label, code in sides:
                builds = child("build", *options, code=code, show_stderr=args.profile)["builds"]
                results[label].extend(builds)
                for build in builds:
                    show(label.split()[0], build)
        if args.before:
            before, after = (results[label] for label, _ in sides)
            best = min(build["seconds"] for build in before), min(b["seconds"] for b in after)
            cpu = (min(b["cpu"] + b["pg_cpu"] for b in before),
                   min(b["cpu"] + b["pg_cpu"] for b in after))  # fmt: skip
            print(f"\n  best wall {best[0]:.1f} s → {best[1]:.1f} s ({best[0] / best[1]:.1f}×); "
                  f"CPU (build + PostgreSQL) {cpu[0]:.1f} s → {cpu[1]:.1f} s")  # fmt: skip
            # The data files (not the datasheet, which states when it was built, nor the
            # dataset card) must not change: the release's own and the dataset folder's Parquet.
            ours, theirs = after[-1].get("sha256", {}), before[-1].get("sha256", {})
            data = sorted(
                name
                for name in ours
                if name.startswith(("items.", "annotations.", "hf_dataset/data/"))
            )
            same = [name for name in data if theirs.get(name) == ours[name]]
            print(
                f"  data files byte-identical before/after: {len(same)} of {len(data)}"
                + ("" if len(same) == len(data) else f" (differ: {sorted(set(data) - set(same))})")
            )
        files = results["after"][-1]["files"]
        print("\n  files of the last build: " + ", ".join(
            f"{name} {size / 2**20:.1f} MiB" for name, size in sorted(files.items())))  # fmt: skip


if __name__ == "__main__":
    main()
