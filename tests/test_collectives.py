"""Collectives from first principles: the α–β costs of ring and tree, checked against NCCL-tests' own definitions
of algorithm and bus bandwidth (doc/PERFORMANCE.md in NVIDIA's nccl-tests), and the properties that hold for any
size, group and link."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppedu.cluster import LINKS, Link
from ppedu.cluster.collectives import ALGORITHMS, KINDS, bus_factor, cost, crossover, ring

KIND = st.sampled_from(sorted(KINDS))
N = st.integers(2, 512)
BYTES = st.floats(1.0, 1e12)
BANDWIDTH = st.floats(1e6, 1e12)


@pytest.mark.parametrize("kind, n, factor", [
    ("all-reduce", 8, 2 * 7 / 8), ("reduce-scatter", 8, 7 / 8), ("all-gather", 16, 15 / 16), ("all-to-all", 4, 3 / 4),
    ("broadcast", 32, 1.0),
])
def test_bus_factors_are_nccl_tests_summary(kind, n, factor):
    assert bus_factor(kind, n) == pytest.approx(factor)


@given(KIND, N, BYTES, BANDWIDTH)
def test_a_ring_without_latency_reads_the_links_bandwidth_as_its_bus_bandwidth(kind, n, nbytes, bandwidth):
    # NCCL-tests define busbw so that it compares with the hardware's peak whatever n is: the ring attains it.
    c = cost(kind, nbytes, n, Link("ideal", bandwidth, 0.0))
    assert c.busbw == pytest.approx(bandwidth, rel=1e-9)
    assert c.algbw == pytest.approx(bandwidth / bus_factor(kind, n), rel=1e-9)


@given(N, BYTES)
def test_an_all_reduce_is_a_reduce_scatter_then_an_all_gather(n, nbytes):
    link = LINKS["ib-400"]
    parts = [cost(k, nbytes, n, link) for k in ("reduce-scatter", "all-gather")]
    whole = cost("all-reduce", nbytes, n, link)
    assert whole.sent == pytest.approx(sum(p.sent for p in parts)) and whole.steps == sum(p.steps for p in parts)
    assert whole.seconds == pytest.approx(sum(p.seconds for p in parts))


def test_the_worked_example_one_gigabyte_over_eight_nvlink_gpus():
    # 2·(n−1)/n = 1.75 GB leave each GPU in 14 steps: 14 × 3 µs + 1.75 GB ÷ 450 GB/s.
    c = cost("all-reduce", 1e9, 8, LINKS["nvlink"])
    assert (c.sent, c.steps) == (1.75e9, 14)
    assert c.seconds == pytest.approx(14 * 3e-6 + 1.75e9 / 450e9)
    assert c.busbw == pytest.approx(c.algbw * 1.75) and c.busbw < 450e9  # latency keeps it below the link


@given(st.integers(3, 1024))
def test_a_tree_takes_two_log_n_steps_and_sends_twice_the_buffer(n):
    c = cost("all-reduce", 1e6, n, LINKS["nvlink"], "tree")
    assert c.steps == 2 * math.ceil(math.log2(n)) and c.sent == 2e6
    assert cost("all-reduce", 1e6, 2, LINKS["nvlink"], "tree").sent == 1e6  # two GPUs: each the root of one tree


@given(st.integers(8, 512), st.sampled_from(sorted(LINKS)))
def test_the_tree_wins_below_the_crossover_and_the_ring_above(n, name):
    link = LINKS[name]
    m = crossover(n, link)
    below, above = (tuple(cost("all-reduce", size, n, link, a).seconds for a in ALGORITHMS) for size in (m / 2, m * 2))
    assert below[1] < below[0] and above[0] < above[1]


def test_ring_keeps_the_old_per_gpu_volumes_and_one_gpu_sends_nothing():
    assert ring(8e9, 8, "all-reduce") == pytest.approx(2 * 8e9 * 7 / 8)
    assert ring(8e9, 8, "all-gather") == ring(8e9, 8, "reduce-scatter") == pytest.approx(7e9)
    assert ring(8e9, 1, "all-reduce") == 0 and cost("all-reduce", 1e9, 1, LINKS["nvlink"]).seconds == 0


@pytest.mark.parametrize("call, words", [
    (lambda: cost("all-sum", 1, 2, LINKS["nvlink"]), "unknown collective 'all-sum'"),
    (lambda: cost("all-gather", 1, 4, LINKS["nvlink"], "tree"), "the tree algorithm is an all-reduce's"),
    (lambda: cost("all-reduce", 1, 0, LINKS["nvlink"]), "n must be a whole number ≥ 1"),
    (lambda: cost("all-reduce", -1, 4, LINKS["nvlink"]), "non-negative number of bytes"),
    (lambda: cost("all-reduce", 1, 4, LINKS["nvlink"], "mesh"), "unknown algorithm 'mesh'"),
])
def test_bad_input_names_the_rule(call, words):
    with pytest.raises(ValueError, match=words):
        call()
