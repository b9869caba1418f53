"""METER as a plug-in of the engine (review/README.md, "METER"); registered by
``review.meter.apps.MeterConfig``."""
