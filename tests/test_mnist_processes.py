"""The lab across processes: real processes, gloo on CPU, every hand-over a message. Orders that finish
reproduce the unpipelined gradients; a valid order deadlocks only when sends block; an order that waits
on itself deadlocks either way, where the simulator says it would. Each wait is bounded."""

import pytest
import torch
from torch.nn.functional import cross_entropy

from ppedu import Costs, Op, Schedule, schedules, simulate
from ppedu.mnist import load_mnist, mlp, run_schedule, split_model
from ppedu.mnist.processes import LAYERS, run_processes

SMALL = {"hidden": 64, "batch_size": 32, "warmup": 0, "repeats": 1}


def crossed(p: int = 2) -> Schedule:
    """GPU 0 waits for micro-batch 0's gradient before it sends micro-batch 1 on; GPU 1 wants micro-batch 1
    before it sends that gradient back."""
    s = schedules.one_f_one_b(p, 2)
    order = [(("F", 0), ("B", 0), ("F", 1), ("B", 1)), (("F", 0), ("F", 1), ("B", 0), ("B", 1))]
    return Schedule(tuple(tuple(Op(k, mb, j) for k, mb in order[j]) for j in range(p)), "crossed", s.placement, 2)


def test_an_order_that_finishes_reproduces_the_unpipelined_gradients_and_loss():
    run = run_processes(schedules.one_f_one_b(2, 4), "overlapped", timeout=20, **SMALL)
    assert run.finished, run.explain()
    torch.manual_seed(0)
    model = mlp(layers=LAYERS, hidden=SMALL["hidden"])
    images, labels = load_mnist("train", limit=SMALL["batch_size"])
    alone = run_schedule(schedules.one_f_one_b(2, 4), split_model(model, 2), (images, labels), cross_entropy)
    assert run.loss == pytest.approx(alone.loss, abs=1e-6) and run.max_grad_diff <= 1e-6
    t, c = run.measured, run.schedule.columns
    ends = t.end[c.needs[c.needs >= 0]]
    assert (t.start[c.needs >= 0] >= ends - 5e-3).all()  # nothing computed before its input was sent
    assert run.predicted.schedule is run.schedule and run.predicted.makespan > 0


def test_a_valid_order_deadlocks_when_neighbours_both_send_and_sends_block():
    s = schedules.one_f_one_b(2, 4)
    simulate(s)  # the simulator, whose sends never wait, finds nothing wrong
    run = run_processes(s, "blocking", timeout=3, **SMALL)
    assert not run.finished
    assert [(w.rank, w.op) for w in run.waits] == [(0, Op("F", 1, 0)), (1, Op("B", 0, 1))]
    assert "GPU 1 to receive the activation" in str(run.waits[0]) and "GPU 0 to receive the gradient" in str(run.waits[1])


def test_an_order_that_waits_on_itself_deadlocks_where_the_simulator_says():
    with pytest.raises(ValueError, match="GPU 0 waits at B0c0 for B0c1; GPU 1 waits at F1c1 for F1c0"):
        simulate(crossed())
    run = run_processes(crossed(), "overlapped", timeout=3, **SMALL)
    assert [(w.rank, w.op) for w in run.waits] == [(0, Op("B", 0, 0)), (1, Op("F", 1, 1))]
    assert "receive the gradient of micro-batch 0 from GPU 1" in run.explain()


def test_four_processes_interleaved_with_split_backwards_reproduce_the_gradients():
    run = run_processes(schedules.interleaved_zero_bubble(4, 4, 2), "overlapped", timeout=30, **SMALL)
    assert run.finished, run.explain()
    assert run.max_grad_diff <= 1e-6 and len(run.records) == 4
    assert {r.op.kind for rank in run.records for r in rank} == {"F", "B", "W"}


def test_what_the_lab_cannot_run_is_refused_with_its_reason():
    with pytest.raises(ValueError, match="two copies of the model"):
        run_processes(schedules.dualpipe(2, 4))
    with pytest.raises(ValueError, match="mode is one of blocking, overlapped"):
        run_processes(schedules.gpipe(2, 2), "eager")
    with pytest.raises(ValueError, match="fewer than 12 chunks"):
        run_processes(schedules.interleaved_1f1b(4, 4, 3))
