"""exercises/ is what nbgrader makes of solutions/, and every assignment's points add up."""

import re

import pytest

from conftest import ROOT, assignments, cells, graded_cells


def _comparable(path):
    return [(c.cell_type, c.source, c.metadata.get("nbgrader")) for c in cells(path)]


@pytest.mark.parametrize("name", assignments())
def test_exercises_are_exactly_what_generate_assignment_makes(course, name):
    made = sorted((course / "exercises" / name).glob("*.ipynb"))
    committed = sorted((ROOT / "exercises" / name).glob("*.ipynb"))
    assert [p.name for p in made] == [p.name for p in committed], "run `nbgrader generate_assignment --force`"
    for new, old in zip(made, committed):
        assert _comparable(new) == _comparable(old), f"{old} is stale: run `nbgrader generate_assignment {name} --force`"


@pytest.mark.parametrize("name", assignments())
def test_release_has_no_solutions_or_hidden_tests(name):
    text = "\n".join(c.source for p in (ROOT / "exercises" / name).glob("*.ipynb") for c in cells(p))
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text and "referee" not in text


@pytest.mark.parametrize("name", assignments())
def test_grade_ids_are_unique_and_points_add_up(name):
    for path in (ROOT / "solutions" / name).glob("*.ipynb"):
        ids = [c.metadata.nbgrader["grade_id"] for c in cells(path) if "nbgrader" in c.metadata]
        assert len(ids) == len(set(ids)), f"duplicate grade_id in {path.name} (a copied cell?)"
        graded = graded_cells(path)
        assert graded and all(points > 0 for _, points in graded)
        # The points the text announces are the points the cells carry: in total, and per question.
        text = "\n".join(c.source for c in cells(path) if c.cell_type == "markdown")
        total = re.search(r"\*\*(\d+) points?\.\*\*", text)
        assert total and int(total[1]) == sum(p for _, p in graded)
        stated = [int(n) for n in re.findall(r"^## \d+\..*\((\d+) points?[,)]", text, re.M)]
        assert sum(stated) == int(total[1])
