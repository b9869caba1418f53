"""Django's PostgreSQL backend, with batches that fit server-side binding and a health check
that costs no round trip.

The settings bind parameters on the server (``server_side_binding``: psycopg prepares the hot
statements). PostgreSQL's protocol then carries at most 65,535 parameters per statement, but
Django sizes its batches (``bulk_create``, and the IN lists of a cascading delete) as one batch
per call on PostgreSQL: deleting a project with ExpliCa's 72,000 ratings failed with "number of
parameters must be between 0 and 65535" (tests/test_database_backend.py). Django has no setting
for the limit, so the operations class states it, as Django's SQLite backend does for its 999.

Kept connections are checked before a request reuses them (``conn_health_checks``). Django's
check sends ``SELECT 1``: a round trip on every request, two per annotation
(benchmarks/annotator_loop.py). A session the server ended (a restart, a terminated backend) has
a socket with something to read — the server's last message or the end of the stream — while a
healthy idle session's socket has nothing: ``is_usable`` looks at the socket without waiting and
sends ``SELECT 1`` only when there is something there (tests/test_database_backend.py,
tests/test_deployment.py).
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base, operations

#: The most parameters one statement can bind on the server (a 16-bit count in the protocol).
MAX_BOUND_PARAMETERS = 65_535


class DatabaseOperations(operations.DatabaseOperations):
    def bulk_batch_size(self, fields, objs):
        if not self.connection.features.uses_server_side_binding:
            return super().bulk_batch_size(fields, objs)
        per_row = max(len(fields), 1)
        return max(min(len(objs), MAX_BOUND_PARAMETERS // per_row), 1)


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations

    def is_usable(self) -> bool:
        """False when the kept connection can no longer be used; a round trip only when its
        socket has something to read (see the module's docstring)."""
        if self.connection is None or self.connection.closed or self.connection.broken:
            return False
        if self.connection.info.transaction_status != base.Database.pq.TransactionStatus.IDLE:
            return super().is_usable()
        poller = select.poll()
        try:
            poller.register(self.connection.fileno(), select.POLLIN)
            ready = poller.poll(0)
        except (OSError, ValueError):
            return False
        return super().is_usable() if ready else True
