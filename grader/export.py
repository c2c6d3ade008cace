"""``nbgrader export`` of the assignments students were given: an assignment only generated (in the gradebook, never
released to the exchange, nobody's submission) would otherwise be a column of zeros for the whole class. The ones
left out are named in a warning; ``--assignment`` still exports exactly what it names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nbgrader.exchange.default.exchange import Exchange
from nbgrader.plugins import CsvExportPlugin


class ReleasedGrades(CsvExportPlugin):
    def export(self, gradebook: Any) -> None:
        if not self.assignment:
            given = [a.name for a in gradebook.assignments if self._given(a)]
            held = sorted({a.name for a in gradebook.assignments} - set(given))
            if held:
                self.log.warning("Not exported, never released and without submissions: %s", ", ".join(held))
            self.assignment = given or [""]  # an empty list would mean all
        super().export(gradebook)

    def _given(self, assignment: Any) -> bool:
        root = Path(Exchange(config=self.config).root)
        course = self.config.CourseDirectory.get("course_id", "")
        return assignment.num_submissions > 0 or (root / course / "outbound" / assignment.name).is_dir()
