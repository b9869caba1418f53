"""Django's PostgreSQL backend, with batches that fit server-side binding.

The settings bind parameters on the server (``server_side_binding``: psycopg prepares the hot
statements). PostgreSQL's protocol then carries at most 65,535 parameters per statement, but
Django sizes its batches (``bulk_create``, and the IN lists of a cascading delete) as one batch
per call on PostgreSQL: deleting a project with ExpliCa's 72,000 ratings failed with "number of
parameters must be between 0 and 65535" (tests/test_database_backend.py). Django has no setting
for the limit, so the operations class states it, as Django's SQLite backend does for its 999.
"""

from __future__ import annotations

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
