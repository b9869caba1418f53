"""Evaluation on releases: every question a published release holds, asked of a model endpoint,
scored by the workflow's own scorer beside the release's human baseline (llm/README.md,
"Evaluation on releases").

* ``llm.evaluation.scoring`` — the scorer contract a workflow registers (``Plugin.release_scorers``),
  the ``Question`` and ``Metric`` types and the interval helpers (Django-free);
* ``llm.evaluation.files`` — a published release's archive, read by file name (constant memory);
* ``llm.evaluation.services`` — create an evaluation, run it as a ``Run``, store its results;
* ``llm.evaluation.tasks`` — the Celery task; ``llm.evaluation.views`` / ``urls`` — the page.
"""
