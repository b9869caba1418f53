"""I/O at scale on PostgreSQL: import 100,000 items, export 1,000,000 annotations.

    scripts/with-services.sh .venv/bin/python benchmarks/io_scale.py [--items 100000] [--per-item 10]
        [--before-rows 100000] [--import-only] [--index] [--steps] [--checkout DIR]

Each measured phase runs in its own process so that its peak memory (resident memory above
its level at the start of the phase, sampled every 10 ms) is its own. Printed figures:

* import: the same service the UI uses (on PostgreSQL one pass: every row checked and COPYed
  into a staging table, ids checked by SQL, one INSERT … SELECT; imports.services.staged), at
  the full size first (the first import into empty tables) and then at items/4: rows/s, peak
  memory (it should not grow with the rows), CPU seconds of the process and of its PostgreSQL
  backend, and the load average beside them (the machine may be shared). ``--before-rows N``
  first imports N rows through the two-pass pipeline PostgreSQL ran before (two passes over the
  file, ids looked up 1,000 at a time), into empty tables, then empties them again;
  ``--import-only`` stops after the imports; ``--index`` then fills the data manager's
  search index as its Celery task does after an import commits (annotation/search.py: the
  trigram indexes are off the import's path), and prints its figures as a line "indexing";
  ``--steps`` prints, under each one-pass import, the CPU a row (process + PostgreSQL) of each
  of its steps: reading, checking and COPYing the rows, the id checks, the INSERT of the items,
  opening them in their stage, the ANALYZE, and the whole write with its COMMIT (whose
  difference from the steps is mostly the deferred foreign-key checks); ``--checkout DIR``
  first imports the full size with another checkout's code (its own ``benchmarks/io_scale.py``,
  e.g. ``/work/main`` for before), into empty tables, then empties them again, so that this
  checkout's import of the full size, right after it, is again the first into empty tables:
  before and after in one run, under the same load; the database is migrated by that checkout
  first and by this one after the before import, so that each import runs on its own schema;
* export: release_annotations_jsonl / release_annotations_csv → annotations.jsonl /
  annotations.csv (on PostgreSQL, for every kind, each file is one COPY (SELECT …) TO STDOUT
  in PostgreSQL's own JSON / CSV spelling, streamed into the file: see releases.copy_export) and
  release_item_rows → items.jsonl (keyset-paginated, Python), at a quarter and at the full
  size: rows/s and peak memory (target ≥ 50,000 rows/s, memory flat), against a naive baseline
  measured in the same run (list(values()) + json.dumps, memory growing with the rows), at the
  quarter size only;
* release: the whole build (files, datasheet, manifest, zip) of the full project.

Throttles do not apply (no HTTP); the database is the throwaway one of with-services.sh.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def django_setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")
    import django

    django.setup()


class PeakRss:
    """Peak resident memory above the level at start, sampled every 10 ms from /proc (the
    process-wide ru_maxrss would hide anything below Django's start-up high-water mark)."""

    def __init__(self) -> None:
        import threading

        self.base = self.peak = self._now()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @staticmethod
    def _now() -> float:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * resource.getpagesize() / 2**20

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, self._now())

    def __call__(self) -> float:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._now())
        return self.peak - self.base


def report(**figures) -> None:
    print("RESULT " + json.dumps(figures), flush=True)


# --- phases (each in a child process) ------------------------------------------------------


class CpuSeconds:
    """CPU seconds (user + system) of this process (rusage) and of its PostgreSQL backend
    (/proc/<backend pid>/stat, readable when the server runs on this machine), since start."""

    def __init__(self) -> None:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            self.backend = cursor.fetchone()[0]
        self.start = self._now()

    def _backend(self) -> float | None:
        try:
            with open(f"/proc/{self.backend}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def _now(self) -> tuple[float, float | None]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime, self._backend()

    def __call__(self) -> dict:
        process, backend = self._now()
        return {
            "cpu_process_s": process - self.start[0],
            "cpu_backend_s": None if backend is None or self.start[1] is None
            else backend - self.start[1],
        }  # fmt: skip


#: The steps of the staging import (imports/services/staged.py) ``--steps`` times apart.
STAGED_STEPS = ("_stage_rows", "_check_ids", "_insert_new", "_revise_changed", "_open_created")


def time_staged_steps(cpu: CpuSeconds) -> list[dict]:
    """Wrap the staging import's steps (and its ANALYZE of the item tables) so that each
    records the CPU seconds of this process and of its PostgreSQL backend, and the wall time,
    it took; return the list they are appended to (the whole import's rest is the COMMIT and
    the bookkeeping around it)."""
    from imports.services import staged

    steps: list[dict] = []

    def timed(name: str, function):
        def step(*args, **kwargs):
            process, backend = cpu._now()
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                process_after, backend_after = cpu._now()
                steps.append({
                    "step": name, "wall_s": time.perf_counter() - started,
                    "cpu_process_s": process_after - process,
                    "cpu_backend_s": None if backend is None or backend_after is None
                    else backend_after - backend,
                })  # fmt: skip

        return step

    for name in STAGED_STEPS:
        setattr(staged, name, timed(name, getattr(staged, name)))
    # staged calls it through the package (``services.planner_statistics_refresh``).
    services = staged.services
    services.planner_statistics_refresh = timed(
        "ANALYZE items", services.planner_statistics_refresh
    )
    # The whole write, its transaction's COMMIT (the deferred foreign-key checks) included.
    from imports.services import run as import_run

    import_run.staged_write = timed("whole write + COMMIT", import_run.staged_write)
    return steps


def phase_import(
    slug: str, rows: int, workdir: Path, path_kind: str = "one-pass", steps: bool = False
) -> None:
    django_setup()
    from annotation import services
    from annotation.models import Project
    from imports.services import import_batch_create, import_batch_run
    from imports.services import run as import_run

    # "two-pass": the pipeline PostgreSQL ran before the staging import (SQLite still runs it).
    import_run.STAGED_ON_POSTGRESQL = path_kind == "one-pass"

    project = Project.objects.filter(slug=slug).first() or services.project_create(
        slug=slug, name=slug, kind="generic"
    )
    if not project.stages.exists():
        services.stage_create(project=project, slug="verify", name="Verify", kind="verify",
                              overlap=10, resolution_policy="majority")  # fmt: skip
    path = workdir / f"{slug}.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        for n in range(rows):
            handle.write(json.dumps({
                "id": f"{slug}-{n:07d}",
                "scenario": f"Case {n}: the sprinkler was on, so the grass got wet before dawn.",
                "claim": "The sprinkler caused the wet grass.",
                "pearl_level": "L2", "label": "YES" if n % 3 else "NO", "score": n % 10,
            }) + "\n")  # fmt: skip
    peak = PeakRss()
    cpu = CpuSeconds()
    timed_steps = time_staged_steps(cpu) if steps and path_kind == "one-pass" else []
    started = time.perf_counter()
    with open(path, "rb") as handle:
        batch = import_batch_create(project=project, user=None, fileobj=handle, filename=path.name)
    batch = import_batch_run(batch_id=batch.pk)
    seconds = time.perf_counter() - started
    assert batch.status == "succeeded", batch.message
    report(rows=rows, seconds=seconds, rows_per_s=rows / seconds, peak_mib=peak(),
           bytes=path.stat().st_size, load=os.getloadavg()[0], steps=timed_steps,
           **cpu())  # fmt: skip


def phase_index() -> None:
    """The data manager's search index filled after the imports (annotation/search.py): the
    work taken off the import's path, done here as the Celery task does it."""
    django_setup()
    from annotation.models import ItemSearchPending
    from annotation.search import item_search_index

    queued = ItemSearchPending.objects.count()
    peak = PeakRss()
    cpu = CpuSeconds()
    started = time.perf_counter()
    done = item_search_index()
    seconds = time.perf_counter() - started
    report(rows=done, queued=queued, seconds=seconds, rows_per_s=done / max(seconds, 1e-9),
           peak_mib=peak(), load=os.getloadavg()[0], **cpu())  # fmt: skip


def empty_item_tables() -> None:
    """TRUNCATE the items and everything hanging off them: the next import is again the first
    into empty tables whose statistics say nothing (as in a fresh database)."""
    from django.db import connection

    from annotation.models import Item

    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {connection.ops.quote_name(Item._meta.db_table)} CASCADE")


def print_import(label: str, rows: int, result: dict) -> None:
    backend = result["cpu_backend_s"]
    print(f"  {label:9} {rows:>9,} rows  {result['bytes'] / 2**20:6.1f} MiB  "
          f"{result['seconds']:7.2f} s  {result['rows_per_s']:>8,.0f} rows/s  "
          f"peak +{result['peak_mib']:6.1f} MiB  CPU {result['cpu_process_s']:6.1f} s + "
          + ("?" if backend is None else f"{backend:.1f}") + " s PostgreSQL  "
          f"(load {result['load']:.2f})", flush=True)  # fmt: skip
    for step in result.get("steps", []):
        step_backend = step["cpu_backend_s"]
        print(f"      {step['step']:22} CPU {step['cpu_process_s'] / rows * 1e6:6.1f} + "
              + ("?" if step_backend is None else f"{step_backend / rows * 1e6:6.1f}")
              + f" µs a row (process + PostgreSQL), {step['wall_s']:7.2f} s", flush=True)  # fmt: skip


def phase_export(slug: str, workdir: Path, naive: bool) -> None:
    django_setup()
    from annotation.models import Annotation, Project
    from releases import services as release_services
    from releases.writers import write_jsonl

    project = Project.objects.get(slug=slug)
    peak = PeakRss()
    figures = {}
    if naive:
        started = time.perf_counter()
        rows = list(
            Annotation.objects.filter(item_stage__stage__project=project)
            .order_by("pk")
            .values("item_stage__item__external_id", "external_rater", "payload", "created_at")
        )
        with open(workdir / "naive.json", "w", encoding="utf-8") as handle:
            handle.write(json.dumps(rows, default=str))
        seconds = time.perf_counter() - started
        report(rows=len(rows), seconds=seconds, rows_per_s=len(rows) / seconds,
               peak_mib=peak())  # fmt: skip
        return
    for name, write in (
        ("annotations.jsonl", release_services.release_annotations_jsonl),
        ("annotations.csv", release_services.release_annotations_csv),
        ("items.jsonl", lambda project, path: write_jsonl(
            release_services.release_item_rows(project), path)),
    ):  # fmt: skip
        started = time.perf_counter()
        entry = write(project, workdir / name)
        seconds = time.perf_counter() - started
        figures[name] = {"rows": entry.rows, "seconds": seconds, "rows_per_s": entry.rows / seconds,
                         "mib": entry.bytes / 2**20}  # fmt: skip
    report(files=figures, peak_mib=peak())


def phase_release(slug: str) -> None:
    django_setup()
    from annotation.models import Project
    from releases.services import release_build, release_publish

    project = Project.objects.get(slug=slug)
    peak = PeakRss()
    started = time.perf_counter()
    release = release_publish(project=project, user=None)  # the on-commit task is not run here
    release = release_build(release_id=release.pk)
    seconds = time.perf_counter() - started
    assert release.status == "published", release.message
    report(seconds=seconds, items=release.stats["items"], annotations=release.stats["annotations"],
           zip_mib=release.stats["bytes"] / 2**20, peak_mib=peak())  # fmt: skip


# --- orchestration ---------------------------------------------------------------------------


def child(*args: str, checkout: Path = REPO) -> dict:
    """Run a phase in a child process with ``checkout``'s code (this one's by default)."""
    env = dict(os.environ, LOG_LEVEL="ERROR")
    output = subprocess.run(
        [sys.executable, str(checkout / "benchmarks" / "io_scale.py"), "--phase", *args],
        cwd=checkout, env=env, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    line = next(line for line in output.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def fill_annotations(slug: str, per_item: int) -> int:
    """Resolve every item of the project: per_item annotations by external raters, a majority
    resolution and status accepted, in three INSERT … SELECT statements."""
    from django.db import connection

    from annotation.models import Annotation, Item, ItemStage, Project, Resolution

    project = Project.objects.get(slug=slug)
    stage_ids = list(project.stages.values_list("pk", flat=True))
    with connection.cursor() as cursor:
        cursor.execute(
            f"""INSERT INTO {Annotation._meta.db_table}
                (item_stage_id, assignment_id, annotator_id, external_rater, payload,
                 seconds_spent, client_info, created_at)
            SELECT s.id, NULL, NULL, 'rater-' || ((s.id * 7 + g) %% 40),
                   jsonb_build_object('value', CASE WHEN (s.id + g) %% 4 = 0 THEN 'reject'
                                                    ELSE 'keep' END, 'comment', ''),
                   4.5, '{{}}'::jsonb, now()
            FROM {ItemStage._meta.db_table} s, generate_series(1, %s) g
            WHERE s.stage_id = ANY(%s)""",
            [per_item, stage_ids],
        )
        cursor.execute(
            f"""INSERT INTO {Resolution._meta.db_table}
                (item_stage_id, value, status, outcome, votes, n_annotations, policy, reason,
                 computed_at)
            SELECT s.id, '"keep"'::jsonb, 'majority', 'accept', '{{"keep": 8, "reject": 2}}'::jsonb,
                   %s, 'majority', '', now()
            FROM {ItemStage._meta.db_table} s WHERE s.stage_id = ANY(%s)""",
            [per_item, stage_ids],
        )
        cursor.execute(
            f"UPDATE {ItemStage._meta.db_table} SET state = 'resolved', submitted_count = %s, "
            f"target_count = %s WHERE stage_id = ANY(%s)",
            [per_item, per_item, stage_ids],
        )
        cursor.execute(
            f"UPDATE {Item._meta.db_table} SET status = 'accepted' WHERE project_id = %s",
            [project.pk],
        )
        cursor.execute("ANALYZE")
    return Annotation.objects.filter(item_stage__stage__project=project).count()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--per-item", type=int, default=10, help="annotations per item")
    parser.add_argument(
        "--before-rows", type=int, default=0,
        help="also import this many rows through the two-pass pipeline first (the path before "
        "the staging import), into empty tables; 0 skips it",
    )  # fmt: skip
    parser.add_argument("--import-only", action="store_true", help="stop after the imports")
    parser.add_argument(
        "--index", action="store_true",
        help="after the imports, fill the data manager's search index as its Celery task does",
    )  # fmt: skip
    parser.add_argument(
        "--steps", action="store_true",
        help="print each step of the one-pass imports apart: CPU a row of the process and of "
        "PostgreSQL (read and COPY, id checks, INSERT, opening, ANALYZE, the whole with COMMIT)",
    )  # fmt: skip
    parser.add_argument(
        "--checkout", type=Path,
        help="first import the full size with this checkout's code (before), into empty "
        "tables, then empty them again",
    )  # fmt: skip
    parser.add_argument("--phase", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        name, *rest = args.phase
        if name == "import":
            phase_import(rest[0], int(rest[1]), Path(rest[2]), rest[3], rest[4:] == ["steps"])
        elif name == "index":
            phase_index()
        elif name == "export":
            phase_export(rest[0], Path(rest[1]), naive=rest[2] == "naive")
        else:
            phase_release(rest[0])
        return
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("needs PostgreSQL: run through scripts/with-services.sh")
    django_setup()
    from django.core.management import call_command

    if args.checkout:
        # The before import runs on the before schema: the other checkout's migrations first,
        # this checkout's after it (below); a migration of this branch may be what it measures.
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--verbosity", "0"],
            cwd=args.checkout.resolve(), check=True,
        )  # fmt: skip
    else:
        call_command("migrate", verbosity=0)
    quarter = args.items // 4
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.environ.setdefault("MEDIA_ROOT", str(work / "media"))
        print(f"PostgreSQL, {os.cpu_count()} cores; {args.items:,} items × {args.per_item} "
              f"annotations\n")  # fmt: skip
        print("import (every row checked, all written in one transaction or none)")
        if args.before_rows:
            result = child("import", "before", str(args.before_rows), str(work), "two-pass")
            print_import("two-pass", args.before_rows, result)
            empty_item_tables()
        if args.checkout:
            result = child(
                "import", "full", str(args.items), str(work), "one-pass",
                *(["steps"] if args.steps else []), checkout=args.checkout.resolve(),
            )  # fmt: skip
            print_import("before", args.items, result)
            empty_item_tables()
            call_command("migrate", verbosity=0)
        # The full size first: the first import into empty tables, the case that was slowest.
        for slug, rows in (("full", args.items), ("small", quarter)):
            result = child(
                "import", slug, str(rows), str(work), "one-pass", *(["steps"] if args.steps else [])
            )
            print_import("one-pass", rows, result)
        if args.index:
            result = child("index")
            print_import("indexing", result["rows"], {**result, "bytes": 0})
        if args.import_only:
            return
        counts = {slug: fill_annotations(slug, args.per_item) for slug in ("small", "full")}
        print("\nexport (annotations: COPY streamed into the files; items: keyset-paginated)")
        peaks = {}
        for slug in ("small", "full"):
            result = child("export", slug, str(work), "stream")
            peaks[slug] = result["peak_mib"]
            for name, figures in result["files"].items():
                print(f"  {slug:5} {name:18} {figures['rows']:>9,} rows  {figures['seconds']:6.2f} s"
                      f"  {figures['rows_per_s']:>9,.0f} rows/s  {figures['mib']:7.1f} MiB")  # fmt: skip
            print(f"  {slug:5} peak memory +{result['peak_mib']:.1f} MiB "
                  f"({counts[slug]:,} annotations)")  # fmt: skip
        naive = child("export", "small", str(work), "naive")
        print(
            f"  baseline (list(values()) + json.dumps), {naive['rows']:,} rows: "
            f"{naive['rows_per_s']:,.0f} rows/s, peak +{naive['peak_mib']:.1f} MiB"
        )
        print(
            f"  memory full / small: {peaks['full'] / max(peaks['small'], 0.1):.2f} "
            f"for {counts['full'] / counts['small']:.1f}× the rows"
        )
        release = child("release", "full")
        print(f"\nrelease build of 'full': {release['seconds']:.1f} s for {release['items']:,} "
              f"items and {release['annotations']:,} annotations (zip {release['zip_mib']:.1f} MiB, "
              f"peak +{release['peak_mib']:.1f} MiB)")  # fmt: skip


if __name__ == "__main__":
    main()
