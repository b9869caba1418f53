"""Slot counts with a meaning of their own. Django-free, no imports: the engine, the agreement
app's headlines and every plug-in read the same number (plug-ins through ``annotation.api``)."""

from __future__ import annotations

#: A stage overlap (``Stage.overlap``; an item stage's ``target_count``) that means "every
#: annotator who comes": practice items, attention checks, a crowd study's checks. An item stage
#: with this many slots never fills, so it never resolves; pages read any overlap at least this
#: large as "every annotator", not as a number.
EVERYONE = 100_000
