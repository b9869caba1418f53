"""One annotator on the embedded default (`make run`: SQLite, tasks in-process): how long a submit
that completes an item takes to answer, for a ratings item and for a choice item.

    .venv/bin/python benchmarks/embedded_submit.py                        # this checkout
    .venv/bin/python benchmarks/embedded_submit.py --before /work/main    # before, then after
    .venv/bin/python benchmarks/embedded_submit.py --submits 60 --think 0.5
    .venv/bin/python benchmarks/embedded_submit.py --profile              # where a submit's time goes

For each checkout (``--before``'s first, then this one, back to back in one run): a fresh SQLite
file is migrated and given a ratings project (one pair file, overlap 1) and a choice project (a
label stage, overlap 1), both with one annotator; ``manage.py runserver --noreload`` serves it
as ``make run`` does (DEBUG on, no ``CELERY_BROKER_URL``, so tasks run in-process); the
annotator signs in and submits ``--submits`` answers in each project over HTTP, as the htmx item
screen does (each submit's response carries the next item). With overlap 1 every submit
completes its item: the item's resolution, the agreement refresh and, for ratings, the stored
analyses follow it. ``--think`` seconds pass between submits (an annotator reads the next item);
the background work that submits set off runs meanwhile, as it would.

Prints per project and checkout the p50 / p95 / max of the submit request's wall time (the first
``--warmup`` submits of each project are left out: the server's first requests import and
compile), how many of them shared the process with a running background job, the server's CPU
time over the run (``/proc``, the server process), and the load
average beside every figure: the machine is shared, so compare the two checkouts of one run.
The server's CPU includes its live child processes (the worker process that runs the tasks,
rungwise/inprocess.py); a task still running when the loops end is counted only so far.

``--profile`` (``cpu``, the default: the request thread's CPU; ``wall``: its elapsed time, which
adds waiting for the disk, the SQLite lock, the GIL and a core) runs cProfile inside each measured
submit's request thread and prints, per project, where a submit's time goes: inside SQLite
(statements, commits, opening and closing connections), the in-process hand-off of the tasks it
sends, the submit service, choosing and rendering the next item; then the functions that cost
most. Profiling slows every function call, so its totals exceed the unprofiled figures: compare
the shares, and the two checkouts of one run.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
SUBMIT_URL = re.compile(r'hx-post="(/annotate/assignments/\d+/submit/)"')


# --- The data (run in a subprocess, with the checkout's code) ----------------------------------


def build(count: int) -> dict[str, object]:
    """Migrate the SQLite file of SQLITE_PATH and fill it; the ids the client needs."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from annotation import services
    from annotation.models import Role
    from ratings import services as ratings_services
    from ratings.models import RatingsSetup

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user(username="rater", password="embedded-bench-pass")
    ratings = ratings_services.ratings_project_create(
        slug="bench-ratings", name="Bench ratings", overlap=1, seed=4242
    )
    lines = ["pair_id,sentence_a,sentence_b,subset,origin,flags"] + [
        f"p{index},The storm {index} hit.,The power went out.,causal,hand-written,"
        for index in range(count)
    ]
    ratings_services.pairs_import(
        project=ratings, content="\n".join(lines) + "\n", filename="pairs.csv"
    )
    services.membership_add(project=ratings, user=user, role=Role.ANNOTATOR)
    choice = services.project_create(slug="bench-choice", name="Bench choice", kind="generic")
    label = services.stage_create(
        project=choice,
        kind="label",
        overlap=1,
        slug="label",
        name="Label",
        config={"choices": ["causal", "temporal", "none"]},
    )
    services.items_create(
        project=choice,
        rows=[
            {"external_id": f"item-{index:05d}", "payload": {"text": f"Sentence {index}."}}
            for index in range(count)
        ],
    )
    services.membership_add(project=choice, user=user, role=Role.ANNOTATOR)
    return {
        "ratings": RatingsSetup.objects.get(project=ratings).rating_stage_id,
        "choice": label.pk,
    }


def serve(port: int, log: str, profile: str | None = None) -> None:
    """``manage.py runserver --noreload`` (in the checkout, as ``make run``), with each request's
    thread CPU and wall time appended to ``log``: the request thread's CPU is what a submit costs
    whatever else shares the machine (waiting for the GIL or a core is not CPU). With ``profile``
    (``cpu`` or ``wall``: the profiler's clock), each submit request runs under cProfile and the
    stats of a project's submits so far (the client names it in ``X-Bench-Project``) are written
    to ``log.<project>.prof`` after each."""
    import threading

    import django.db  # noqa: F401  (its request receivers first: see below)
    from django.core.management import execute_from_command_line
    from django.core.signals import request_finished, request_started

    from rungwise import inprocess

    started = threading.local()
    profiled: dict[str, pstats.Stats] = {}
    # Background jobs (rungwise/inprocess.py) started so far, and whether one runs now: a
    # request during which one ran shared the process (the GIL, SQLite's write lock) with it.
    jobs = {"started": 0, "running": False}
    run_one = inprocess._run_one

    def counted_run_one(job: Any) -> None:
        jobs["started"] += 1
        jobs["running"] = True
        try:
            run_one(job)
        finally:
            jobs["running"] = False

    inprocess._run_one = counted_run_one
    clock = time.thread_time if profile == "cpu" else time.perf_counter

    def begin(environ: dict[str, str] | None = None, **_: object) -> None:
        environ = environ or {}
        project = environ.get("HTTP_X_BENCH_PROJECT", "")
        if profile and project and environ.get("PATH_INFO", "").endswith("/submit/"):
            # Per thread: cProfile sees only the thread that enabled it (this request's).
            started.project = project
            started.profiler = cProfile.Profile(clock)
            started.profiler.enable()
        started.times = (time.thread_time(), time.perf_counter())
        started.jobs = (jobs["running"], jobs["started"])

    def end(**_: object) -> None:
        profiler = started.__dict__.pop("profiler", None)
        if profiler is not None:
            profiler.disable()
        cpu, wall = started.__dict__.pop("times", (None, None))
        if cpu is None:
            return
        running, count = started.__dict__.pop("jobs", (False, 0))
        shared = int(running or jobs["running"] or jobs["started"] != count)
        figures = f"{time.thread_time() - cpu:.6f} {time.perf_counter() - wall:.6f} {shared}\n"
        if profiler is not None:
            project = started.project
            profiler.create_stats()
            if project in profiled:
                profiled[project].add(profiler)
            else:
                profiled[project] = pstats.Stats(profiler)
            # Whole before the request's line is: the client reads it once it sees the line.
            profiled[project].dump_stats(f"{log}.{project}.prof.part")
            os.replace(f"{log}.{project}.prof.part", f"{log}.{project}.prof")
        with open(log, "a") as out:
            out.write(figures)

    # Connected after Django's own receivers (django.db, imported above), so that the figures
    # include what they do at a request's end: closing its database connection.
    request_started.connect(begin, weak=False)
    request_finished.connect(end, weak=False)
    execute_from_command_line(["manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"])


# --- The run ------------------------------------------------------------------------------------


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def cpu_seconds(pid: int) -> float:
    """User + system CPU of the process and of its children that exited (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float:
    """:func:`cpu_seconds` of the process and of its live descendants (the embedded default's
    worker process, rungwise/inprocess.py, runs the tasks a submit sends)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            total += cpu_seconds(current)
        except OSError:
            continue
        todo.extend(children.get(current, []))
    return total


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


#: What a submit's time is spent on: a name, and the functions (cProfile's keys: file, line,
#: name; a file's path is matched by its end) whose cumulative time it is. Parts may nest (the
#: SQLite calls of the submit service are in both): each is its own question.
PARTS: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "submit service (annotation_submit)",
        [("annotation/services/submit.py", "annotation_submit")],
    ),
    ("next item + its page (_after_finishing)", [("annotation/views.py", "_after_finishing")]),
    ("in-process hand-off (inprocess.submit)", [("rungwise/inprocess.py", "submit")]),
    ("tasks sent (apply_async, hand-off incl.)", [("rungwise/celery.py", "apply_async")]),
    ("DEBUG query log (last_executed_query)", [("sqlite3/operations.py", "last_executed_query")]),
    ("connection opened (get_new_connection)", [("sqlite3/base.py", "get_new_connection")]),
    (
        "connection closed at the end (close_old_connections)",
        [("django/db/__init__.py", "close_old_connections")],
    ),
]
#: The sqlite3 module's calls into SQLite (C functions: cProfile's file is "~").
SQLITE_CALLS = {
    "<method 'execute' of 'sqlite3.Cursor' objects>": "statements",
    "<method 'executemany' of 'sqlite3.Cursor' objects>": "statements",
    "<method 'fetchone' of 'sqlite3.Cursor' objects>": "statements",
    "<method 'fetchmany' of 'sqlite3.Cursor' objects>": "statements",
    "<method 'fetchall' of 'sqlite3.Cursor' objects>": "statements",
    "<method 'execute' of 'sqlite3.Connection' objects>": "statements",
    "<method 'commit' of 'sqlite3.Connection' objects>": "commits",
    "<method 'rollback' of 'sqlite3.Connection' objects>": "commits",
    "<built-in method _sqlite3.connect>": "opening connections",
    "<method 'create_function' of 'sqlite3.Connection' objects>": "opening connections",
    "<method 'create_aggregate' of 'sqlite3.Connection' objects>": "opening connections",
    "<method 'close' of 'sqlite3.Connection' objects>": "closing connections (checkpoint)",
}


def print_profile(path: Path, submits: int, args: argparse.Namespace) -> None:
    """Where the profiled submits' time went, per submit (``--profile``)."""
    if not path.exists():
        print(f"    (no profile at {path})")
        return
    stats = pstats.Stats(str(path))
    table = stats.stats  # type: ignore[attr-defined]  # {(file, line, name): (cc, nc, tt, ct, callers)}
    total = sum(entry[2] for entry in table.values())
    per = 1000 / submits
    print(f"    profile ({args.profile} clock), per submit: {total * per:.1f} ms in all")
    sqlite: dict[str, float] = {}
    for (file, _, name), entry in table.items():
        if file == "~" and name in SQLITE_CALLS:
            sqlite[SQLITE_CALLS[name]] = sqlite.get(SQLITE_CALLS[name], 0.0) + entry[2]
    print(
        f"      inside SQLite {sum(sqlite.values()) * per:6.1f} ms: "
        + ", ".join(f"{label} {seconds * per:.1f}" for label, seconds in sorted(sqlite.items()))
    )
    for label, functions in PARTS:
        seconds = sum(
            entry[3]
            for (file, _, name), entry in table.items()
            if any(file.endswith(end) and name == wanted for end, wanted in functions)
        )
        print(f"      {label:<55} {seconds * per:6.1f} ms")
    print(f"      the {args.top} functions with most time of their own (ms per submit, calls):")
    ranked = sorted(table.items(), key=lambda item: item[1][2], reverse=True)[: args.top]
    for (file, line, name), entry in ranked:
        where = name if file == "~" else f"{Path(file).parent.name}/{Path(file).name}:{line} {name}"
        print(f"        {entry[2] * per:6.2f}  {entry[1] / submits:6.1f}  {where}")


def run_checkout(checkout: Path, args: argparse.Namespace) -> None:
    import requests

    with tempfile.TemporaryDirectory(prefix="embedded-submit-") as folder:
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in {"DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL"}
        }
        env.update(
            SQLITE_PATH=str(Path(folder) / "db.sqlite3"),
            DJANGO_SETTINGS_MODULE="rungwise.settings",
            DEBUG="1",
            RUNGWISE_BIND="127.0.0.1",
            PYTHONPATH=str(checkout),
        )
        built = subprocess.run(
            [sys.executable, __file__, "--build", str(args.submits + args.warmup + 5)],
            cwd=checkout,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        stages = json.loads(built.stdout.strip().splitlines()[-1])
        port = free_port()
        log = Path(folder) / "requests.log"
        server = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(port), str(log)]
            + (["--profile", args.profile] if args.profile else []),
            cwd=checkout,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            session = requests.Session()
            deadline = time.monotonic() + 180  # a loaded machine starts runserver slowly
            while "csrftoken" not in session.cookies:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"the server of {checkout} did not start")
                try:
                    session.get(f"{base}/accounts/login/", timeout=10)
                except requests.ConnectionError:
                    time.sleep(0.2)
            session.post(
                f"{base}/accounts/login/",
                data={
                    "username": "rater",
                    "password": "embedded-bench-pass",
                    "csrfmiddlewaretoken": session.cookies["csrftoken"],
                },
                headers={"Referer": f"{base}/accounts/login/"},
            ).raise_for_status()
            cpu_before = tree_cpu_seconds(server.pid)
            for kind, value in (("ratings", "7"), ("choice", "causal")):
                headers = {
                    "HX-Request": "true",
                    "X-Bench-Project": kind,
                    "X-CSRFToken": session.cookies["csrftoken"] or "",
                    "Referer": base + "/",
                }
                page = session.post(f"{base}/annotate/{stages[kind]}/", headers=headers)
                page.raise_for_status()
                times: list[float] = []
                cpu: list[float] = []
                shared: list[bool] = []
                for number in range(args.warmup + args.submits):
                    found = SUBMIT_URL.search(page.text)
                    if not found:
                        raise SystemExit(f"{kind}: no item to submit after {number} submits")
                    logged = log.read_text().count("\n") if log.exists() else 0
                    start = time.perf_counter()
                    page = session.post(base + found[1], data={"value": value}, headers=headers)
                    elapsed = time.perf_counter() - start
                    page.raise_for_status()
                    if number >= args.warmup:
                        times.append(elapsed)
                        # The request's own line (the server logs it when the response closes;
                        # with --profile, after saving the profile: on a loaded machine, seconds).
                        waited_until = time.monotonic() + 60
                        while True:
                            lines = log.read_text().splitlines()
                            if len(lines) > logged or time.monotonic() > waited_until:
                                break
                            time.sleep(0.01)
                        cpu.append(float(lines[logged].split()[0]))
                        shared.append(lines[logged].split()[2] == "1")
                    time.sleep(args.think)
                print(
                    f"  {kind:<8} submit completing an item, n={len(times)}: wall "
                    f"p50 {statistics.median(times) * 1000:6.1f} ms "
                    f"p95 {percentile(times, 0.95) * 1000:6.1f} ms "
                    f"max {max(times) * 1000:6.1f} ms; request thread CPU "
                    f"p50 {statistics.median(cpu) * 1000:5.1f} ms "
                    f"p95 {percentile(cpu, 0.95) * 1000:5.1f} ms   ({load()})",
                    flush=True,
                )
                alone = [wall for wall, busy in zip(times, shared, strict=True) if not busy]
                beside = [wall for wall, busy in zip(times, shared, strict=True) if busy]
                print(
                    f"           {len(beside)} of {len(times)} shared the process with a "
                    "background job: wall p50 "
                    + (f"{statistics.median(beside) * 1000:.1f} ms" if beside else "-")
                    + "; the others: wall p50 "
                    + (f"{statistics.median(alone) * 1000:.1f} ms" if alone else "-"),
                    flush=True,
                )
                if args.profile:
                    profile = Path(f"{log}.{kind}.prof")
                    print_profile(profile, len(times) + args.warmup, args)
                    if args.keep_profiles and profile.exists():
                        kept = Path(args.keep_profiles) / f"{checkout.name}-{kind}.prof"
                        kept.parent.mkdir(parents=True, exist_ok=True)
                        kept.write_bytes(profile.read_bytes())
                        print(f"    kept: {kept}  (python -m pstats {kept})")
            print(
                f"  server CPU over both loops {tree_cpu_seconds(server.pid) - cpu_before:.1f} s "
                "(its worker process included) "
                f"({load()})",
                flush=True,
            )
        finally:
            server.terminate()
            server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="another checkout to measure first (e.g. /work/main)")
    parser.add_argument("--submits", type=int, default=40, help="measured submits per project")
    parser.add_argument("--warmup", type=int, default=3, help="submits left out per project")
    parser.add_argument("--think", type=float, default=0.3, help="seconds between submits")
    parser.add_argument(
        "--profile",
        nargs="?",
        const="cpu",
        choices=["cpu", "wall"],
        help="cProfile each submit's request thread, by its CPU (default) or elapsed time",
    )
    parser.add_argument("--top", type=int, default=15, help="functions listed with --profile")
    parser.add_argument(
        "--keep-profiles", metavar="DIR", help="with --profile: keep each project's stats here"
    )
    parser.add_argument("--build", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build is not None:
        print(json.dumps(build(args.build)))
        return
    if args.serve:
        serve(int(args.serve[0]), args.serve[1], args.profile)
        return
    checkouts = ([("before", Path(args.before).resolve())] if args.before else []) + [
        ("after" if args.before else "this checkout", HERE)
    ]
    for label, checkout in checkouts:
        print(f"{label}: {checkout}  ({load()})", flush=True)
        run_checkout(checkout, args)


if __name__ == "__main__":
    main()
