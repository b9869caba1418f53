"""The database router of a site with a read replica (rungwise/replica.py states the contract;
rungwise/settings.py installs it only when ``RUNGWISE_REPLICA_URL`` is set).

Every write goes to ``default``; reads go to the replica only inside
``rungwise.replica.reading_from_replica`` (a view decorated with ``reads_from_replica``), and
even there not for ``PRIMARY_ONLY`` models nor while the primary's connection is inside a
transaction. Migrations run on ``default`` only: the replica is a copy of it.
"""

from __future__ import annotations

from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model

from rungwise.replica import REPLICA, current_read_alias

#: Apps whose rows say who the visitor is and what they may do: sign-in, sessions, API tokens,
#: sign-in lockout, messages, content types and permissions. Read from the primary always, so
#: a sign-in, a new session or a lockout a moment old counts at once.
PRIMARY_ONLY_APPS = frozenset({"auth", "sessions", "authtoken", "axes", "contenttypes", "admin"})
#: Single models of the same kind in Rungwise's apps (``app_label.model_name``): who belongs to
#: a project in which role, which every permission-checked fetch reads.
PRIMARY_ONLY_MODELS = frozenset({"annotation.membership"})


def primary_only(model: type[Model]) -> bool:
    """Whether reads of ``model`` stay on the primary inside a replica view."""
    meta = model._meta
    return meta.app_label in PRIMARY_ONLY_APPS or meta.label_lower in PRIMARY_ONLY_MODELS


class ReplicaRouter:
    """Reads of a marked view to the replica, everything else to the primary."""

    def db_for_read(self, model: type[Model], **hints: Any) -> str:
        # An explicit answer, never None: Django would otherwise read a related row where the
        # instance came from, the replica, after the view that read it had ended.
        if (
            current_read_alias() == REPLICA
            and not primary_only(model)
            and not connections[DEFAULT_DB_ALIAS].in_atomic_block
        ):
            return REPLICA
        return DEFAULT_DB_ALIAS

    def db_for_write(self, model: type[Model], **hints: Any) -> str:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, first: Model, second: Model, **hints: Any) -> bool | None:
        # The replica holds the primary's rows: an object read from one may refer to the other's.
        if {first._state.db, second._state.db} <= {DEFAULT_DB_ALIAS, REPLICA, None}:
            return True
        return None

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool | None:
        return db == DEFAULT_DB_ALIAS
