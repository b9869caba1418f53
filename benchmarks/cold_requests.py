"""Cold first requests: what a page costs as the first request a freshly started web worker
serves, against the same page once the worker is warm.

    scripts/with-services.sh .venv/bin/python benchmarks/cold_requests.py \
        [--data-dir /var/tmp/rungwise-bench-pages] [--only "Items: newest,Setup"] [--rounds 2] \
        [--checkout /path/to/another/checkout] [--profile "Items: search an id"]

Uses the database ``benchmarks/pages_scale.py`` built (run it once first; the same
``--data-dir``), and its page list. For each page and round it starts the web server as
deployed (granian, one worker, so the first request surely meets a fresh process), waits for
``/healthz`` as a deployment's health check does, then requests the page once (cold) and twice
more (warm) and stops the server. It prints the time the server took to answer its health
check (start-up), the cold and warm times, and the CPU milliseconds the server's processes
spent on each (from ``/proc``: fair on a machine shared with other work, whose load average is
printed beside the figures).

``--profile NAME`` instead loads the app in this process as a worker does (``rungwise.wsgi``),
then runs the first request to that page under cProfile and prints where its time went
(cumulative), then the second request's total for comparison.

Not a test: it prints figures (CONTRIBUTING.md, "Benchmarks are scripts").
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")

from benchmarks import pages_scale  # noqa: E402 (after the path and settings above)


def _selected(only: str) -> list[tuple[str, str, dict[str, str]]]:
    wanted = [part.strip().lower() for part in only.split(",") if part.strip()] or [""]
    return [page for page in pages_scale.pages() if any(p in page[0].lower() for p in wanted)]


def _headers(path: str, cookie: str, token: str, extra: dict[str, str]) -> dict[str, str]:
    if path.startswith("/api/"):
        return {"Authorization": f"Token {token}", **extra}
    return {"Cookie": cookie, **extra}


def measure(
    database_url: str, checkout: Path, only: str, rounds: int, cookie: str, token: str
) -> None:
    print(f"\nload average before: {pages_scale.load_average()}")
    print(
        f"{'page':<36} {'start-up':>8} {'CPU':>6} {'cold':>7} {'CPU':>6} {'warm':>7} {'CPU':>6}"
        f"  status  (ms; CPU: the web server's)"
    )
    for name, path, extra in _selected(only):
        headers = _headers(path, cookie, token, extra)
        for _ in range(rounds):
            started = time.perf_counter()
            server, port = pages_scale.serve(database_url, 1, checkout)
            try:
                startup = time.perf_counter() - started
                startup_cpu = pages_scale.tree_cpu_seconds(server.pid)
                cold = pages_scale.fetch(port, path, headers)
                cold_cpu = pages_scale.tree_cpu_seconds(server.pid) - startup_cpu
                before = pages_scale.tree_cpu_seconds(server.pid)
                warm = [pages_scale.fetch(port, path, headers) for _ in range(2)]
                warm_cpu = (pages_scale.tree_cpu_seconds(server.pid) - before) / len(warm)
            finally:
                server.terminate()
                server.wait(timeout=30)
            warm_ms = min(timing.seconds for timing in warm) * 1000
            print(
                f"{name:<36} {startup * 1000:>8.0f} {startup_cpu * 1000:>6.0f} "
                f"{cold.seconds * 1000:>7.0f} {cold_cpu * 1000:>6.0f} {warm_ms:>7.0f} "
                f"{warm_cpu * 1000:>6.0f}  {cold.status}/{warm[-1].status}",
                flush=True,
            )
    print(f"load average after: {pages_scale.load_average()}")


def profile(name: str, cookie: str, token: str, top: int) -> None:
    """The first request to page ``name`` in this process, under cProfile."""
    from django.test import Client

    import rungwise.wsgi  # noqa: F401 (what a worker imports before its first request)

    [(_, path, extra)] = [page for page in pages_scale.pages() if page[0] == name]
    client = Client(headers=_headers(path, cookie, token, extra))
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    response = client.get(path)
    profiler.disable()
    first = time.perf_counter() - started
    started = time.perf_counter()
    client.get(path)
    second = time.perf_counter() - started
    print(f"{name}: first request {first * 1000:.0f} ms ({response.status_code}), "
          f"second {second * 1000:.0f} ms; load average {pages_scale.load_average()}")  # fmt: skip
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="Items: newest", help="pages (comma-separated parts)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--checkout", default=str(REPO))
    parser.add_argument("--data-dir", default="/var/tmp/rungwise-bench-pages")
    parser.add_argument("--profile", default="", help="profile the first request to this page")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        sys.exit("Set DATABASE_URL to a PostgreSQL database (run under scripts/with-services.sh).")
    os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1,testserver")
    # As pages_scale.py: the pages name their static files by hash, collected into a directory
    # of the benchmark's own; set before the settings are read (--profile serves in process).
    static_root = Path(args.data_dir) / f"static-{Path(args.checkout).resolve().name}"
    os.environ["STATIC_ROOT"] = str(static_root)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from annotation.models import Project

    scale = pages_scale.SMALL if args.small else pages_scale.FULL
    cluster, database_url = pages_scale.use_database(
        f"bench_pages_{scale.name}_{args.seed}", Path(args.data_dir)
    )
    try:
        call_command("migrate", verbosity=0)
        if not Project.objects.filter(slug=pages_scale.SLUG, description="complete").exists():
            sys.exit(
                "Build the pages first: benchmarks/pages_scale.py --build-only (same --data-dir)."
            )
        cookie, token = pages_scale.session_cookie(), pages_scale.api_token()
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
            cwd=args.checkout,
            check=True,
        )
        if args.profile:
            profile(args.profile, cookie, token, args.top)
            return
        connection.close()
        measure(database_url, Path(args.checkout).resolve(), args.only, args.rounds, cookie, token)
    finally:
        connection.close()
        cluster.stop()


if __name__ == "__main__":
    main()
