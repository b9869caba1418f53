"""Each lever of the annotator loop measured before and after in one run: one process drives
next + submit pairs through Django's WSGI handler (as benchmarks/profile_loop.py does) against
PostgreSQL, in alternating chunks with the lever off and on, and prints the CPU per pair in
this process and in its PostgreSQL backend for each side, chunk by chunk.

    .venv/bin/python benchmarks/levers.py
        [--levers prepare,health,lease,submit,publish,lean,batch,fold,chain,objects] [--chunks 10] [--pairs 400]

Why chunks in one process: on a shared VM the CPU a request costs drifts by 15-30 % between
runs minutes apart (benchmarks/README.md), more than most levers move it; alternating the two
sides every few seconds in one process puts both under the same drift.

The levers (off = as before the change, on = as now):

- ``prepare``: psycopg's prepare_threshold None (Django's default: nothing prepared) vs 0;
- ``health``: Django's health check of a kept connection (``SELECT 1`` per request) vs
  rungwise.db.postgresql's (the socket polled);
- ``lease``: the lease in a transaction (search, then insert) vs one statement
  (annotation.services.next_item._lease_at_once);
- ``submit``: the submit in a transaction with row locks vs one read and one conditional write
  (annotation.services.submit._annotation_submit_at_once);
- ``publish``: not a lever but a price: the Celery message sent when an item stage completes,
  off (not sent) vs on;
- ``lean``: next and submit through DRF's request machinery vs their lean request path
  (api/views/annotate_lean.py);
- ``batch``: one resolve message per completed item stage vs one per batch
  (annotation/services/resolution_publish.py; its flusher thread's CPU is this process's);
- ``fold``: on the lean path, the token read in a statement of its own vs with the stage
  (next) and the assignment (submit): 6 vs 4 statements per pair (api/views/annotate_lean.py);
- ``chain``: next and submit through every middleware in settings.MIDDLEWARE vs the short
  chain without settings.LEAN_MIDDLEWARE_SKIPPED (rungwise/handlers.py);
- ``objects``: per-request work done once: the lean path's Allow / Vary headers worked out
  for every response vs once per view class (api/views/annotate_lean.py ``_lean_headers``),
  the token's column count through ``get_user_model()`` every time vs cached
  (api.auth.token_width), and the hot path's rows turned into instances with two
  ``django.db.connection`` lookups per instance vs one per row (annotation.sql.load / unpack;
  the "off" side is the code as it was, kept here).

Not a test and not a throughput figure (benchmarks/annotator_loop.py is). Run without
DATABASE_URL it re-runs itself under scripts/with-services.sh with durable PostgreSQL settings.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

LEVERS = ("prepare", "health", "lease", "submit", "publish", "lean", "batch", "fold", "chain",
          "objects")  # fmt: skip


def toggles():
    """For each lever, a function that sets it off (False) or on (True) in this process."""
    from django.db import connection, connections
    from django.db.backends.postgresql.base import DatabaseWrapper as DjangoWrapper

    from annotation import sql
    from annotation.services import next_item, resolution_publish
    from annotation.services import submit as submitting
    from annotation.tasks import resolve_item_stage, resolve_item_stages
    from api import auth
    from api.views import annotate_lean
    from rungwise.db.postgresql.base import DatabaseWrapper as OurWrapper
    from rungwise.handlers import LeanChain

    wrapper = type(connections["default"])
    lease_at_once = next_item._assignment_next
    submit_at_once = submitting._annotation_submit_at_once
    tasks = [
        getattr(task, "_get_current_object", lambda task=task: task)()
        for task in (resolve_item_stage, resolve_item_stages)
    ]
    batching = resolution_publish.batching
    folded = {view: view.__dict__["lean_read"] for view in (annotate_lean.NextItemView, annotate_lean.SubmitView)}  # fmt: skip

    def prepare(on: bool) -> None:
        connection.connection.prepare_threshold = 0 if on else None

    def health(on: bool) -> None:
        wrapper.is_usable = OurWrapper.__dict__["is_usable"] if on else DjangoWrapper.is_usable

    def lease(on: bool) -> None:
        next_item._assignment_next = (
            lease_at_once if on else next_item._assignment_next_in_transaction
        )

    def submit(on: bool) -> None:
        submitting._annotation_submit_at_once = submit_at_once if on else (lambda *args: None)

    def publish(on: bool) -> None:
        for task in tasks:
            if on:
                task.__dict__.pop("delay", None)
            else:
                task.delay = lambda *args: None

    def lean(on: bool) -> None:
        annotate_lean.NextItemView.lean = annotate_lean.SubmitView.lean = on

    def batch(on: bool) -> None:
        resolution_publish.batching = batching if on else (lambda: False)
        if not on:
            resolution_publish.resolution_buffer().flush()  # nothing of the other side left

    def fold(on: bool) -> None:
        for view, read in folded.items():
            view.lean_read = read if on else annotate_lean._LeanPath.lean_read

    def chain(on: bool) -> None:
        LeanChain.lean = on

    load, unpack, width = sql.load, sql.unpack, auth.token_width
    headers = annotate_lean._LeanPath._lean_headers

    def load_before(model, row, start=0):
        values = list(row[start : start + sql.width(model)])
        for position, column, converters in sql._converters(model, connection.vendor):
            value = values[position]
            for converter in converters:
                value = converter(value, column, connection)
            values[position] = value
        return model.from_db(connection.alias, sql._attnames(model), values)

    def unpack_before(row, models, extras=()):
        instances, start = [], 0
        for model in models:
            instances.append(sql.load(model, row, start))
            start += sql.width(model)
        return instances, dict(zip(extras, row[start:], strict=True))

    def headers_before(view):
        type(view).__dict__.get("_lean_headers_found") and delattr(type(view), "_lean_headers_found")  # fmt: skip
        return headers(view)

    def objects(on: bool) -> None:
        sql.load, sql.unpack = (load, unpack) if on else (load_before, unpack_before)
        auth.token_width = annotate_lean.token_width = width if on else width.__wrapped__
        annotate_lean._LeanPath._lean_headers = headers if on else headers_before

    return {"prepare": prepare, "health": health, "lease": lease, "submit": submit,
            "publish": publish, "lean": lean, "batch": batch, "fold": fold, "chain": chain,
            "objects": objects}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levers", default=",".join(LEVERS))
    parser.add_argument("--chunks", type=int, default=10, help="chunks per lever (half on)")
    parser.add_argument("--pairs", type=int, default=400, help="next + submit pairs per chunk")
    args = parser.parse_args()
    chosen = [name.strip() for name in args.levers.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(LEVERS))
    if unknown:
        parser.error(f"unknown lever(s) {', '.join(unknown)}; choose from {', '.join(LEVERS)}")
    from profile_loop import in_process_loop, loop

    pairs_needed = len(chosen) * args.chunks * (args.pairs + 20) + 200
    handler, stage, tokens, backend = in_process_loop(
        f"levers_{int(time.time())}", 32, pairs_needed // 3 + 400
    )
    from annotator_loop import cpu_seconds

    setters = toggles()
    print(
        f"CPU per next + submit pair (ms), this process / its PostgreSQL backend; "
        f"{args.chunks} chunks of {args.pairs} pairs per lever, off and on alternating; "
        + "load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
    )
    for name in chosen:
        figures: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
        for index in range(args.chunks):
            on = bool(index % 2)
            setters[name](on)
            loop(handler, stage.pk, tokens, 20)  # settle (a statement prepared, a cache filled)
            cpu, pg = time.process_time(), cpu_seconds(backend)
            done = loop(handler, stage.pk, tokens, args.pairs)
            figures[on].append(
                ((time.process_time() - cpu) * 1000 / done,
                 (cpu_seconds(backend) - pg) * 1000 / done)
            )  # fmt: skip
        setters[name](True)
        line = [f"{name:<8}"]
        for on in (False, True):
            web = [web for web, _ in figures[on]]
            database = [database for _, database in figures[on]]
            line.append(
                f"{'on ' if on else 'off'} web {statistics.mean(web):.2f} "
                f"[{min(web):.2f}–{max(web):.2f}] PostgreSQL {statistics.mean(database):.2f} "
                f"[{min(database):.2f}–{max(database):.2f}]"
            )
        line.append(f"(load {os.getloadavg()[0]:.1f})")
        print("  ".join(line), flush=True)


if __name__ == "__main__":
    main()
