"""Review workflows, two plug-ins of the engine in one package (review/README.md):

- ``review.meter`` (app label ``meter``): METER's verify → check/edit/vote → filter pipeline.
- ``review.causalt5k`` (app label ``review``): CausalT5k's release import, normalisation and
  validation (near-duplicates, adversarial review, quality gate, blind answers).

This package is not a Django app itself; each of the two is installed on its own
(rungwise/settings.py, ``INSTALLED_APPS``)."""
