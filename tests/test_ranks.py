"""Chapter 15's lab across real processes (gloo): every way of averaging gradients, ZeRO-1 by hand and FSDP2 give the
unsharded model's gradients and parameters to 1e-6 (in float64, where rounding is far below it), send what chapters
12 and 13 count, and DDP's buckets are the rule the lab states; the launcher ends every process of a run that fails.
World sizes stay at 2 (3 where padding matters): the machine's cores are shared."""

import os
import time

import pytest

from ppedu.ranks import RanksFailed, Workload, bucket_plan, compare, run_fsdp2, run_ranks, run_zero1
from ppedu.ranks.timing import Measured, against_model, fit

pytest.importorskip("torch")
EXACT = Workload(steps=3, batch=48, dtype="float64")


def test_every_way_of_averaging_gradients_is_the_unsharded_step_and_sends_chapter_12s_bytes():
    rows = {r.method: r for r in compare(2, EXACT, cap_mb=0.25)}
    assert set(rows) == {"each parameter", "one flat buffer", "buckets from hooks", "DDP",
                         "DDP, gradients as bucket views"}
    for r in rows.values():
        assert r.grad_gap <= 1e-6 and r.param_gap <= 1e-6, r
        assert r.sent_mb == r.formula_mb, r  # 2(n − 1)/n · Ψ, however the gradients are grouped
    model = EXACT.model()
    params = list(model.parameters())
    plan = bucket_plan([p.numel() * p.element_size() for p in params], int(0.25 * 2**20))
    buckets = tuple(round(sum(params[i].numel() * params[i].element_size() for i in b) / 1e3, 1) for b in plan)
    assert rows["DDP"].buckets_kb == rows["buckets from hooks"].buckets_kb == buckets  # the reducer's own rule
    assert len(rows["each parameter"].buckets_kb) == len(params) and len(rows["one flat buffer"].buckets_kb) == 1
    assert rows["DDP, gradients as bucket views"].grad_storages == len(plan)  # each .grad a view into its bucket
    assert rows["DDP"].grad_storages == len(params)


@pytest.mark.parametrize("world", [2, 3])
def test_zero1_by_hand_is_the_unsharded_adam_with_a_reduce_scatter_and_an_all_gather(world):
    run = run_zero1(world, Workload(steps=3, batch=48, optimizer="adam", dtype="float64"))
    assert run.param_gap <= 1e-6
    assert run.collectives == "1 reduce-scatter, 1 all-gather"
    assert run.sent_mb == pytest.approx(run.formula_mb, rel=1e-4)  # ZeRO-1's 2Ψ·(n − 1)/n, the shards padded
    assert run.adam_mb == pytest.approx(run.formula_adam_mb, rel=1e-4)  # Adam's moments: 1/n of them


def test_fsdp2_on_gloo_is_the_unsharded_model_and_gathers_as_chapter_13_walks_it():
    run = run_fsdp2(2, Workload(steps=3, batch=48, optimizer="adam", dtype="float64"))
    assert run.sharded.param_gap <= 1e-6
    assert run.gathers == run.model_gathers == 16 and run.reduce_scatters == 8  # eight units, resharded
    memory = {m.what: m for m in run.memory}
    state = memory["sharded state: parameters, gradients, Adam"]
    assert state.measured_mb == pytest.approx(state.model_mb, rel=0.02)  # the shards padded to a multiple of n
    transient = memory["gathered and whole at the peak"]
    assert transient.model_mb <= transient.measured_mb <= 2 * transient.model_mb


def test_fsdp2_without_resharding_gathers_each_unit_once():
    run = run_fsdp2(2, Workload(steps=2, batch=48, optimizer="adam", dtype="float64"), reshard_after_forward=False)
    assert run.gathers == run.model_gathers == 8 and run.sharded.param_gap <= 1e-6


def test_the_fit_recovers_a_known_link_and_the_model_reads_it():
    rows = [Measured(kind, 4, s, (6 if kind == "all-reduce" else 3) * 2e-5 + s * (1.5 if kind == "all-reduce" else 0.75)
                     / 2e9) for kind in ("all-reduce", "all-gather") for s in (1e3, 1e5, 1e7)]
    fitted = fit(rows, ("all-reduce", "all-gather"))
    assert fitted.alpha == pytest.approx(2e-5) and fitted.bandwidth == pytest.approx(2e9)
    assert {v.measured_over_ring for v in against_model(rows, fitted)} == {1.0}
    assert rows[2].busbw == pytest.approx(rows[2].algbw * 1.5)  # nccl-tests' factor, 2(n − 1)/n


def _raises(rank, world):
    if rank == 1:
        raise ValueError("rank 1's own error")
    return rank


def _hangs(rank, world):
    if rank == 1:
        time.sleep(600)
    return os.getpid()


def test_a_failed_or_hung_run_names_its_rank_and_leaves_no_process():
    with pytest.raises(RanksFailed, match="rank 1: ValueError: rank 1's own error"):
        run_ranks(_raises, 2, timeout=120)
    start = time.monotonic()
    with pytest.raises(RanksFailed, match="rank 1 gave no result"):
        run_ranks(_hangs, 2, timeout=30)
    assert time.monotonic() - start < 90
    import multiprocessing

    assert not multiprocessing.active_children()
