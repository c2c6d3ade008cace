"""A still picture beside each widget's live view, for places with no widget renderer (a static
slide deck, an HTML export, a notebook viewer); JupyterLab and Notebook 7 still show the widget."""

from __future__ import annotations

from typing import Any


class StaticFallback:
    """Adds ``text/html`` (from ``_static_html``) to the widget's display data."""

    def _static_html(self) -> str:
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        bundle: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]
        if bundle is not None:
            bundle["text/html"] = f'<div class="ppedu-static">{self._static_html()}</div>'
        return bundle
