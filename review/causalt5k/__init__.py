"""CausalT5k as a plug-in of the engine (review/README.md, "CausalT5k"); registered by
``review.causalt5k.apps.CausalT5kConfig``."""
