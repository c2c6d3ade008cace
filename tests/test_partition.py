"""Layer partitioning: the exact optimum, checked against brute force, and the CLI."""

import itertools
import re
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu import Costs, partition, simulate
from ppedu.schedules import one_f_one_b
from test_cli import ppedu


def brute_force(costs, p, speeds):
    """The least bottleneck over every way to cut ``costs`` into ``p`` non-empty contiguous stages."""
    n = len(costs)
    best = float("inf")
    for cuts in itertools.combinations(range(1, n), p - 1):
        bounds = (0, *cuts, n)
        best = min(best, max(sum(costs[a:b]) / s for a, b, s in zip(bounds, bounds[1:], speeds)))
    return best


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_the_cut_is_optimal_against_brute_force(data):
    costs = data.draw(st.lists(st.integers(0, 20).map(float), min_size=1, max_size=9))
    p = data.draw(st.integers(1, len(costs)))
    speeds = data.draw(st.one_of(st.none(), st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0]), min_size=p, max_size=p)))
    part = partition(costs, p, speeds)
    assert part.bottleneck == pytest.approx(brute_force(costs, p, speeds or [1.0] * p))
    assert part.bounds[0] == 0 and part.bounds[-1] == len(costs) and all(n >= 1 for n in part.sizes)
    assert part.stage_costs == pytest.approx(part.apply(costs))


@given(st.integers(1, 8), st.integers(1, 6), st.sampled_from([0.5, 1.0, 7.0]))
def test_balanced_layers_give_equal_stages(p, per_stage, cost):
    part = partition([cost] * (p * per_stage), p)
    assert part.sizes == (per_stage,) * p
    assert part.stage_costs == (cost * per_stage,) * p


def test_a_twice_as_fast_gpu_gets_twice_the_layers():
    part = partition([1.0] * 9, 2, speeds=[2, 1])
    assert part.sizes == (6, 3) and part.stage_costs == (3.0, 3.0)
    assert part.totals([1.0] * 9) == (6.0, 3.0)  # what speed does not change: parameters, bytes


def test_the_partition_drives_a_heterogeneous_pipeline():
    layers = [1, 1, 1, 1, 4, 1, 1, 1]
    even, best = partition([1] * 8, 4), partition(layers, 4)
    t_even = simulate(one_f_one_b(4, 16), Costs(f=even.apply(layers), b=even.apply(layers)))
    t_best = simulate(one_f_one_b(4, 16), Costs(f=best.stage_costs, b=best.stage_costs))
    assert best.bottleneck == 4 < max(even.apply(layers)) == 5
    assert t_best.makespan < t_even.makespan


@pytest.mark.parametrize("args, words", [
    (([1, 2], 3), "cannot cut 2 layers into 3 non-empty stages"),
    (([1, -2], 2), "layer costs must be finite non-negative numbers"),
    (([1, float("nan")], 1), "layer costs must be finite non-negative numbers"),
    (([1, 2], 2, [1]), "1 speeds for 2 stages"),
    (([1, 2], 2, [1, 0]), "speeds must be positive"),
    (([1, 2], 0), "p (stages) must be a whole number ≥ 1"),
])
def test_bad_input_names_the_rule(args, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        partition(*args)


def test_apply_needs_one_value_per_layer():
    with pytest.raises(ValueError, match="3 layer values for a partition of 2 layers"):
        partition([1, 1], 1).apply([1, 1, 1])


def test_cli_prints_the_stages_and_json():
    out = ppedu("partition", "--layers", "1,2,3,4,5,6", "-p", "3")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[2].split() == ["1", "3–4", "2", "1", "9"]
    assert "bottleneck 9 (stage 1)" in out.stdout
    data = json.loads(ppedu("partition", "--layers", "4,4,4,4", "-p", "2", "--speeds", "3,1", "--json").stdout)
    assert data["bounds"] == [0, 3, 4] and data["stage_costs"] == [4.0, 4.0]
    bad = ppedu("partition", "--layers", "1,2", "-p", "3")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "cannot cut 2 layers" in bad.stderr


def test_cli_partitions_a_preset_model():
    data = json.loads(ppedu("partition", "--model", "70b", "-p", "8", "--json").stdout)
    # 82 units: the embedding (no FLOPs) rides with the first 10 blocks, the output layer with the last 10.
    assert data["sizes"] == [11, 10, 10, 10, 10, 10, 10, 11]
    assert data["bottleneck"] == data["stage_costs"][-1] > data["stage_costs"][0]
    bad = ppedu("partition", "--model", "9b", "-p", "8")
    assert bad.returncode == 2 and "unknown preset '9b'" in bad.stderr
