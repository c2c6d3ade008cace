"""3D parallelism: the global batch caps m, so more replicas mean a larger bubble."""

import pytest

from ppedu.formulas import bubble_ratio
from ppedu.layout import deeper, layout, scale_out


def test_m_is_the_global_batch_over_replicas_and_micro_batch():
    row = layout(gpus=512, t=8, p=8, global_batch=1024, microbatch=2)
    assert (row.d, row.m) == (8, 64)
    assert row.idle_total == f"{bubble_ratio(8, 64):.2%}".replace("%", " %")


def test_scaling_out_at_a_fixed_batch_raises_the_bubble():
    rows = scale_out(8, 8, 512, (1, 2, 4, 8, 16, 32, 64))
    bubbles = [float(r.idle_total.split()[0]) for r in rows]
    assert bubbles == sorted(bubbles) and bubbles[-1] > 10 * bubbles[0]


def test_a_deeper_pipeline_cannot_drive_the_bubble_to_zero():
    rows = deeper(512, 8, 256, (2, 4, 8, 16, 32, 64))
    limit = 1 / (1 + 256 * 8 / 512)
    bubbles = [float(r.idle_total.split()[0]) / 100 for r in rows]
    assert bubbles == sorted(bubbles) and all(b < limit for b in bubbles) and bubbles[-1] > 0.98 * limit


@pytest.mark.parametrize("kwargs, rule", [
    (dict(gpus=100, t=8, p=4, global_batch=64), "t·p = 32 must divide the 100 GPUs"),
    (dict(gpus=64, t=8, p=2, global_batch=6), "d · microbatch = 4 must divide the global batch"),
    (dict(gpus=64, t=0, p=2, global_batch=6), "t must be a whole number"),
])
def test_an_impossible_layout_names_its_rule(kwargs, rule):
    with pytest.raises(ValueError, match=rule):
        layout(**kwargs)


def test_one_layout_shows_as_a_one_row_table():
    assert layout(gpus=64, t=8, p=4, global_batch=64)._repr_markdown_().splitlines()[2].startswith("| 64 | 8 | 4 | 2 |")
