"""Where the web process spends its CPU on the annotator loop: one process drives
``POST /api/stages/<id>/next/`` and ``POST /api/assignments/<id>/submit/`` through Django's WSGI
handler (no HTTP server, no network) against PostgreSQL, and prints the CPU per next + submit
pair, split into Python time and time waiting for PostgreSQL, then the functions with the most
cumulative CPU time under cProfile (timed by ``time.process_time``).

    .venv/bin/python benchmarks/profile_loop.py [--pairs 2000] [--top 40] [--sort tottime]

It uses the same project as ``annotator_loop.py`` (a fresh database, items imported, overlap 3,
``verify`` kind, API tokens) and the same middleware as production (the SQL-count header off).
Not a test and not a throughput figure: CPU per request in one process, for finding what to
make cheaper. Run without DATABASE_URL it re-runs itself under scripts/with-services.sh.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))


def wsgi_call(handler, method: str, path: str, token: str, body: bytes = b""):
    """One request through the WSGI handler as a WSGI server would make it."""
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1",
        "HTTP_AUTHORIZATION": f"Token {token}",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.url_scheme": "http",
        "wsgi.version": (1, 0),
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    status_holder = {}

    def start_response(status, headers, exc_info=None):
        status_holder["status"] = int(status.split()[0])

    result = handler(environ, start_response)
    content = b"".join(result)
    if hasattr(result, "close"):
        result.close()
    return status_holder["status"], content


def loop(handler, stage_id: int, tokens: list[str], pairs: int) -> int:
    done = 0
    payload = json.dumps({"payload": {"value": "keep"}, "seconds_spent": 3.2}).encode()
    while done < pairs:
        token = tokens[done % len(tokens)]
        status, body = wsgi_call(handler, "POST", f"/api/stages/{stage_id}/next/", token)
        if status == 204:
            break
        assert status == 200, (status, body[:300])
        assignment = json.loads(body)["id"]
        status, body = wsgi_call(
            handler, "POST", f"/api/assignments/{assignment}/submit/", token, payload
        )
        assert status == 201, (status, body[:300])
        done += 1
    return done


def in_process_loop(name: str, annotators: int, items: int):
    """What benchmarks/profile_loop.py and benchmarks/levers.py start from: this script re-run
    under scripts/with-services.sh (durable PostgreSQL) when DATABASE_URL is unset; Django set
    up as deployed (the submit throttle off; rungwise.wsgi's handler); a fresh database ``name`` with ``items`` items
    imported for ``annotators`` annotators on an overlap-3 stage; the WSGI handler warmed up;
    one database connection kept for the whole run. Returns (handler, stage, tokens, the
    PostgreSQL backend's pid)."""
    if not os.environ.get("DATABASE_URL"):
        env = dict(os.environ, RUNGWISE_PG_DURABLE="1")
        os.execvpe(
            str(REPO / "scripts/with-services.sh"),
            [str(REPO / "scripts/with-services.sh"), sys.executable, *sys.argv],
            env,
        )
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")
    os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1")
    os.environ.setdefault("RUNGWISE_THROTTLE_SUBMIT", "off")
    import django

    django.setup()
    from annotator_loop import fresh_database, setup_project
    from django.core.management import call_command
    from django.db import connection

    from rungwise.handlers import WSGIHandler  # the handler rungwise/wsgi.py serves

    call_command("migrate", verbosity=0)
    fresh_database(name)
    stage, tokens = setup_project(annotators, items=items, overlap=3)
    handler = WSGIHandler()
    loop(handler, stage.pk, tokens, 200)  # warm: imports, caches, the connection
    # Keep this backend for the whole measurement (CONN_MAX_AGE would replace it mid-loop).
    connection.close_at = None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    return handler, stage, tokens, backend


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--annotators", type=int, default=32)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--sort", default="cumulative")
    parser.add_argument("--no-profile", action="store_true", help="the CPU figures only")
    parser.add_argument(
        "--callers", default="", help="print the callers of functions matching this"
    )
    args = parser.parse_args()
    handler, stage, tokens, backend = in_process_loop(
        f"profile_{int(time.time())}", args.annotators, (args.pairs * 2) // 3 + 200
    )
    from annotator_loop import cpu_seconds
    from django.db import connection

    waited = 0.0

    def timer(execute, sql, params, many, context):
        nonlocal waited
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            waited += time.perf_counter() - started

    with connection.execute_wrapper(timer):
        cpu0, wall0, pg0 = time.process_time(), time.perf_counter(), cpu_seconds(backend)
        done = loop(handler, stage.pk, tokens, args.pairs)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        pg = cpu_seconds(backend) - pg0
    print(
        f"{done} next+submit pairs: {cpu * 1000 / done:.2f} ms CPU each in this process, "
        f"{pg * 1000 / done:.2f} ms in its PostgreSQL backend; {wall * 1000 / done:.2f} ms wall, "
        f"of which {waited * 1000 / done:.2f} ms in SQL calls (PostgreSQL time plus the driver)"
    )
    if args.no_profile:
        return
    # Timed by CPU, not the clock: waiting for PostgreSQL is not this process's cost.
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    done = loop(handler, stage.pk, tokens, args.pairs)
    profiler.disable()
    stats = pstats.Stats(profiler)
    stats.sort_stats(args.sort).print_stats(args.top)
    if args.callers:
        stats.print_callers(args.callers)
    # Own time (tottime) summed by where the code lives: which layer to make cheaper.
    by_area: dict[str, float] = {}
    for (filename, _line, _name), (_cc, _nc, tottime, _ct, _callers) in stats.stats.items():
        if "site-packages/" in filename:
            area = filename.split("site-packages/", 1)[1].split("/", 1)[0]
        elif filename.startswith(str(REPO)):
            area = "rungwise:" + filename[len(str(REPO)) + 1 :].split("/", 1)[0]
        else:
            area = "stdlib/builtins"
        by_area[area] = by_area.get(area, 0.0) + tottime
    total = sum(by_area.values())
    print("own CPU time by area (share of the profiled loop):")
    for area, seconds in sorted(by_area.items(), key=lambda pair: -pair[1])[:20]:
        print(f"  {area:<32} {100 * seconds / total:5.1f} %")


if __name__ == "__main__":
    main()
