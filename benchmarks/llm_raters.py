"""Model raters at research scale: a model rater works through N items (default 10,000) against
the local Chat Completions server (tests/fakes/chat_server.py, in a process of its own, answering
after ``--delay`` seconds like a fast model server) at the endpoint's concurrency, in a real
Celery worker on PostgreSQL and Redis. Prints, per concurrency: items and calls per second, and
the **platform's CPU per call** — the worker's plus PostgreSQL's plus Redis's, from /proc; the fake
server's own CPU is not the platform's and is printed apart. Then kills the worker (SIGKILL, its
whole process group) in the middle of a run, starts another, lets the sweep take the run over, and
checks: no item answered twice, no item left out, one ledger row per key, and how many requests
were sent again for calls in flight when the worker died.

    .venv/bin/python benchmarks/llm_raters.py [--items 10000] [--concurrency 1,32]
        [--delay 0.05] [--kill-items 3000] [--lease-sample 500] [--paths ready,waves,per-call]

(``--kill-items 0`` / ``--lease-sample 0`` leave out the killed worker / the engine's share.)

First, the engine's share of a call in the stage's order, the SWEEP order, waves of 32 in the
SWEEP order and ready waves of 32 (one statement each), in one run (lease_cost). Then each
concurrency on each of the run's paths: ``ready`` (llm/waves.py: a wave leased and submitted in
one statement, what every run on PostgreSQL takes), ``waves`` (the SWEEP-order waves,
``Run.options["sweep_waves"]``) and ``per-call`` (every call's ledger rows, lease, submit and
vote on their own: llm/runs.py); the killed worker's run takes the ready path. The load average
is printed beside every figure.

Run without DATABASE_URL it re-runs itself under scripts/with-services.sh. Not a test: it prints
figures; the behaviours it checks are asserted by tests/llm/test_runs.py.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.annotator_loop import cpu_seconds, fresh_database, tree_cpu  # noqa: E402


def load() -> str:
    """The machine's load average (1, 5, 15 minutes), printed beside every figure: the
    machine may be shared, and CPU per call is the figure to compare, not throughput."""
    return " [load {:.1f} {:.1f} {:.1f}]".format(*os.getloadavg())


def start_fake(delay: float) -> tuple[subprocess.Popen, str]:
    code = (
        "import sys, time; from tests.fakes.chat_server import serve; "
        "url, _ = serve(); print(url, flush=True); time.sleep(10**9)"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    url = process.stdout.readline().strip()
    return process, url


def redis_pid() -> int:
    pid_file = Path(os.environ["RUNGWISE_SERVICES_DIR"]) / "redis" / "redis.pid"
    if pid_file.exists():
        return int(pid_file.read_text().split()[0])
    out = subprocess.run(["pgrep", "-f", f"redis-server.*{os.environ['RUNGWISE_REDIS_PORT']}"],
                         capture_output=True, text=True).stdout.split()  # fmt: skip
    return int(out[0]) if out else 0


def postmaster_pid() -> int:
    return int((Path(os.environ["RUNGWISE_PG_DATA"]) / "postmaster.pid").read_text().split()[0])


def setup(items: int, concurrency: int, base_url: str, model: str):
    from annotation import services as engine
    from llm.models import Endpoint
    from llm.services import prompt_template_create, rater_add

    stamp = f"{concurrency}-{int(time.time() * 1000)}"
    project = engine.project_create(slug=f"llm-{stamp}", name=f"LLM bench {stamp}")
    stage = engine.stage_create(
        project=project, slug="label", name="Label", kind="label", overlap=1,
        config={"choices": ["causal", "temporal", "none"]},
    )  # fmt: skip
    engine.items_create(
        project=project,
        rows=(
            {"external_id": f"b{i}", "payload": {"text": f"Sentence {i}: rain, so floods."}}
            for i in range(items)
        ),
    )
    endpoint = Endpoint.objects.create(
        name=f"bench-{stamp}", base_url=base_url, model=model, concurrency=concurrency,
        requests_per_minute=0, max_retries=3, timeout_seconds=30,
    )  # fmt: skip
    version = prompt_template_create(
        project=project, name="label", kind="label", user_text="Label: {{ text }}"
    )
    return rater_add(stage=stage, endpoint=endpoint, prompt=version)


def worker(env: dict[str, str], name: str) -> subprocess.Popen:
    from tests.processes import start_worker

    return start_worker(env, name, pool="solo", log=Path(f"/tmp/llm-bench-{name}.log"), timeout=180)


def wait_done(run_id: int, timeout: float, until_done: int | None = None) -> None:
    from llm.models import Run

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = Run.objects.get(pk=run_id)
        if until_done is not None and run.done >= until_done:
            return
        if run.status in ("done", "failed", "cancelled"):
            return
        time.sleep(0.2)
    raise TimeoutError(f"run {run_id} not finished in {timeout} s")


def measured_run(
    args, concurrency: int, path: str, env, base_url: str, fake: subprocess.Popen
) -> str:
    from django.db import transaction

    from llm.models import Run
    from llm.runs import PER_CALL
    from llm.services import run_start
    from llm.waves import SWEEP_WAVES

    items = args.items if concurrency > 1 else max(args.items // 20, 200)
    rater = setup(items, concurrency, base_url, f"bench-{concurrency}")
    process = worker(env, f"bench{concurrency}@%h")
    load_before = load().strip(" ;")
    parts_before = (tree_cpu(process.pid), tree_cpu(postmaster_pid()), cpu_seconds(redis_pid()))
    fake_before = cpu_seconds(fake.pid)
    started = time.perf_counter()
    with transaction.atomic():  # the run is sent to the worker when this commits
        run = run_start(rater=rater)
        if path == "per-call":
            Run.objects.filter(pk=run.pk).update(options={PER_CALL: True})
        elif path == "waves":
            Run.objects.filter(pk=run.pk).update(options={SWEEP_WAVES: True})
    wait_done(run.pk, timeout=3600)
    elapsed = time.perf_counter() - started
    parts_after = (tree_cpu(process.pid), tree_cpu(postmaster_pid()), cpu_seconds(redis_pid()))
    fake_cpu = cpu_seconds(fake.pid) - fake_before
    from tests.processes import stop

    stop(process)
    run = Run.objects.get(pk=run.pk)
    worker_cpu, pg_cpu, redis_cpu = (a - b for a, b in zip(parts_after, parts_before, strict=True))
    platform = worker_cpu + pg_cpu + redis_cpu
    return (
        f"{path:>8}, concurrency {concurrency:>3}: {run.done} items in {elapsed:.1f} s = "
        f"{run.done / elapsed:.0f} items/s, {run.calls / elapsed:.0f} calls/s; "
        f"platform CPU per call {1000 * platform / max(run.calls, 1):.2f} ms "
        f"(worker {1000 * worker_cpu / max(run.calls, 1):.2f}, PostgreSQL "
        f"{1000 * pg_cpu / max(run.calls, 1):.2f}, Redis {1000 * redis_cpu / max(run.calls, 1):.2f}); "
        f"fake server {1000 * fake_cpu / max(run.calls, 1):.2f} ms per call (not counted);"
        f" load average at the start {load_before}, at the end{load()}"
    )


def killed_run(args, env, base_url: str, root: str) -> str:
    import requests
    from django.db.models import Count

    from annotation.models import Annotation, ItemStage
    from llm.models import Call, ModelVote, Run
    from llm.services import run_start
    from tests.processes import kill_group, stop

    model = "bench-kill"
    rater = setup(args.kill_items, 32, base_url, model)
    first = worker(env, "killed@%h")
    run = run_start(rater=rater)
    wait_done(run.pk, timeout=600, until_done=args.kill_items // 3)
    done_at_kill = Run.objects.get(pk=run.pk).done
    os.killpg(first.pid, signal.SIGKILL)
    kill_group(first)
    second = worker(env, "rescuer@%h")
    time.sleep(float(env["LLM_RUN_STALE_SECONDS"]) + 1)
    from llm.tasks import runs_sweep

    resent = runs_sweep()  # what the beat schedule runs every minute
    wait_done(run.pk, timeout=1200)
    stop(second)
    run = Run.objects.get(pk=run.pk)
    stage = rater.stage
    per_item = (
        Annotation.objects.filter(item_stage__stage=stage, annotator=rater.user)
        .values("item_stage_id").annotate(n=Count("id"))
    )  # fmt: skip
    twice = sum(1 for row in per_item if row["n"] > 1)
    answered = len(per_item)
    open_items = ItemStage.objects.filter(stage=stage).count()
    keys = Call.objects.filter(endpoint=rater.endpoint).count()
    requests_sent = len(
        requests.get(f"{root}/_requests", params={"model": model}, timeout=30).json()
    )
    votes = ModelVote.objects.filter(rater=rater).count()
    return (
        f"killed at {done_at_kill} of {open_items} items; sweep re-sent {resent} run(s); "
        f"run {run.status}: done {run.done}, failed {run.failed}\n"
        f"  items answered {answered} of {open_items} (gaps: {open_items - answered - run.failed}); "
        f"answered twice: {twice}; model votes {votes}; ledger rows {keys} for {open_items} keys; "
        f"requests to the server {requests_sent} ({requests_sent - keys} sent again: calls in "
        f"flight when the worker died)"
    )


def lease_cost(args) -> str:
    """The engine's share of a model rater's call, in this process (no worker, no model): a
    rater extra to one person per item over ``--items`` items, of which it already answered
    half (they stay open for the person), leases and submits ``--lease-sample`` more items in
    the stage's order (what runs did before the SWEEP order) and in the SWEEP order. CPU per
    lease + submit: this process's plus PostgreSQL's."""
    from django.db import connection

    from annotation.api import annotation_submit, assignment_next
    from annotation.models import ItemStage

    rater = setup(args.items, 32, "demo://responder/v1", "lease-cost")
    user, stage = rater.user, rater.stage
    cursor = 0
    for _ in range(args.items // 2):
        assignment = assignment_next(annotator=user, stage=stage, after=cursor)
        cursor = assignment.item_stage_id
        annotation_submit(assignment_id=assignment.pk, annotator=user, payload={"value": "none"})
    with connection.cursor() as db:
        db.execute(f"ANALYZE {ItemStage._meta.db_table}")
    lines = []
    for name, sweep in (("stage order", False), ("SWEEP order, item by item", True)):
        before = time.process_time(), tree_cpu(postmaster_pid())
        for _ in range(args.lease_sample):
            assignment = assignment_next(
                annotator=user, stage=stage, after=cursor if sweep else None
            )
            cursor = assignment.item_stage_id
            annotation_submit(
                assignment_id=assignment.pk, annotator=user, payload={"value": "none"}
            )
        own = (time.process_time() - before[0]) / args.lease_sample
        database = (tree_cpu(postmaster_pid()) - before[1]) / args.lease_sample
        lines.append(
            f"  {name}: {1000 * (own + database):.2f} ms per lease + submit "
            f"(this process {1000 * own:.2f}, PostgreSQL {1000 * database:.2f}){load()}"
        )
    from annotation.api import annotations_submit_wave

    before = time.process_time(), tree_cpu(postmaster_pid())
    submitted = 0
    while submitted < args.lease_sample:
        wave = annotations_submit_wave(
            annotator=user,
            stage=stage,
            after=cursor,
            answer=lambda item_stage: {"value": "none"},
            limit=32,
        )
        cursor, submitted = wave.cursor, submitted + len(wave.submitted)
    own = (time.process_time() - before[0]) / submitted
    database = (tree_cpu(postmaster_pid()) - before[1]) / submitted
    lines.append(
        f"  waves of 32 (annotations_submit_wave): {1000 * (own + database):.2f} ms per lease"
        f" + submit (this process {1000 * own:.2f}, PostgreSQL {1000 * database:.2f}){load()}"
    )
    from annotation.api import annotations_submit_ready, reached_by

    # the items a run would hold in memory (llm/runs.py loads its pending items once)
    ready = list(
        ItemStage.objects.filter(stage=stage, state="open", pk__gt=cursor)
        .select_related("item")
        .order_by("pk")[: args.lease_sample]
    )
    reached = reached_by(stage, user.pk)
    before = time.process_time(), tree_cpu(postmaster_pid())
    submitted = 0
    for start in range(0, len(ready), 32):
        submitted += len(
            annotations_submit_ready(
                annotator=user,
                stage=reached,
                answers=[
                    (item_stage, {"value": "none"}) for item_stage in ready[start : start + 32]
                ],
            )
        )
    own = (time.process_time() - before[0]) / max(submitted, 1)
    database = (tree_cpu(postmaster_pid()) - before[1]) / max(submitted, 1)
    lines.append(
        f"  ready waves of 32, one statement each (annotations_submit_ready): "
        f"{1000 * (own + database):.2f} ms per lease + submit (this process {1000 * own:.2f}, "
        f"PostgreSQL {1000 * database:.2f}; {submitted} items){load()}"
    )
    return (
        f"engine share at {args.items // 2} of {args.items} items answered and open:\n"
        + "\n".join(lines)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--concurrency", default="1,32")
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--kill-items", type=int, default=3000)
    parser.add_argument("--lease-sample", type=int, default=500)
    parser.add_argument(
        "--paths",
        default="per-call,waves,ready",
        help="the run's paths to measure: per-call (llm/runs.py, PER_CALL), waves in the SWEEP"
        " order (llm/waves.py, SWEEP_WAVES) and ready waves (one statement a wave)",
    )
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL"):
        os.execvp(
            str(REPO / "scripts/with-services.sh"),
            [str(REPO / "scripts/with-services.sh"), sys.executable, *sys.argv],
        )
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")
    os.environ["LLM_RUN_STALE_SECONDS"] = "5"
    import django

    django.setup()
    url = fresh_database(f"llm_bench_{int(time.time())}")
    from tests.processes import process_env

    env = process_env(DATABASE_URL=url, LLM_RUN_STALE_SECONDS="5")
    fake, base_url = start_fake(args.delay)
    root = base_url.rsplit("/v1", 1)[0]
    import requests

    for model in ["bench-1", "bench-32", "bench-kill"] + [
        f"bench-{c}" for c in args.concurrency.split(",")
    ]:
        requests.post(f"{root}/_control", json={"model": model, "delay": args.delay}, timeout=5)
    print(f"model server: {base_url} (fake, {args.delay * 1000:.0f} ms per answer)")
    try:
        if args.lease_sample:  # 0: skip the engine's share
            print(lease_cost(args), flush=True)
        for concurrency in (int(c) for c in args.concurrency.split(",")):
            for path in args.paths.split(","):
                print(measured_run(args, concurrency, path, env, base_url, fake), flush=True)
        if args.kill_items:  # 0: skip the killed worker
            print(killed_run(args, env, base_url, root), flush=True)
    finally:
        fake.kill()


if __name__ == "__main__":
    main()
