"""counting, the widget exam: no test cell hands answers in (its exercises save them in the submission's
``counting.json``), so the Judge has nothing to score here; :mod:`grader.exam` judges the saved file."""

KEYS: dict[str, object] = {}
