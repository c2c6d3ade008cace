"""The same model on PyTorch's pipeline engine (torchrun, gloo): the executor's losses, to 1e-5."""

import json
import os
import signal
import subprocess
import sys

import pytest

from ppedu.mnist.distributed import stage_indices
from ppedu.mnist.training import train

TIMEOUT = 240  # gloo's batch_isend_irecv has been seen to hang on CPU; never wait forever


def torchrun(p: int, *args: str) -> dict:
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(p),
               "-m", "ppedu.mnist.distributed", *args, "--json"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                          start_new_session=True) as run:
        try:
            out, err = run.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)  # torchrun and every rank it started
            run.communicate()
            pytest.fail(f"torchrun with {p} ranks did not finish in {TIMEOUT} s (a gloo hang?)")
    assert run.returncode == 0, err[-2000:]
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("schedule,p,m", [("1f1b", 2, 4), ("dualpipe-v", 4, 8)])
def test_torchrun_trains_to_the_executors_losses(schedule, p, m):
    ours = train(schedule, p=p, m=m, steps=3, batch_size=32)
    theirs = torchrun(p, "--schedule", schedule, "-m", str(m), "--steps", "3", "--batch-size", "32")
    assert theirs["p"] == p and theirs["backend"] == "gloo"
    assert theirs["losses"] == pytest.approx(list(ours.losses), abs=1e-5)
    assert theirs["max_grad_diff_vs_reference"] <= 1e-6
    assert 0 <= theirs["test_accuracy"] <= 1


def test_chunks_are_placed_as_pytorch_places_its_stages():
    from torch.distributed.pipelining.schedules import generate_stage_to_rank_mapping

    for p, v in [(2, 2), (4, 3)]:
        loop = generate_stage_to_rank_mapping(p, p * v)
        assert all(loop[i] == r for r in range(p) for i in stage_indices("interleaved", r, p, v))
    v_shape = generate_stage_to_rank_mapping(4, 8, style="v")
    assert all(v_shape[i] == r for r in range(4) for i in stage_indices("zbv", r, 4))


def test_outside_torchrun_it_says_how_to_start_it(monkeypatch, capsys):
    from ppedu.mnist.distributed import main

    monkeypatch.delenv("RANK", raising=False)
    with pytest.raises(SystemExit) as exit_:
        main(["--schedule", "1f1b", "-m", "2"])
    assert exit_.value.code == 2 and "torch.distributed.run" in capsys.readouterr().err


@pytest.mark.parametrize("p,m,args", [
    (2, 4, ["--schedule", "zb-h1"]),  # no PyTorch class: ppedu's order as I/W actions
    (4, 10, ["--schedule", "interleaved", "-v", "2", "--group", "6"]),  # Megatron's group, m not a multiple of p
])
def test_ppedus_own_orders_train_on_pytorchs_runtime(p, m, args):
    v = 2 if "-v" in args else 1
    ours = train(args[1], p=p, m=m, v=v, steps=2, batch_size=40 if m == 10 else 32)
    theirs = torchrun(p, *args, "-m", str(m), "--steps", "2", "--batch-size", "40" if m == 10 else "32")
    assert theirs["p"] == p and theirs["v"] == v
    assert theirs["losses"] == pytest.approx(list(ours.losses), abs=1e-5)
    assert theirs["max_grad_diff_vs_reference"] <= 1e-6


def test_a_searched_order_runs_as_written(tmp_path):
    # The order nobody wrote: searched, exported as PyTorch's CSV from the command line, trained.
    path = tmp_path / "searched.csv"
    found = json.loads(subprocess.run(
        [sys.executable, "-m", "ppedu", "search", "-p", "2", "-m", "4", "--w", "1", "--memory", "2", "--one-direction",
         "--seconds", "0.2", "--json", "--csv", str(path)], capture_output=True, text=True, timeout=120).stdout)
    theirs = torchrun(2, "--csv", str(path), "-m", "4", "--steps", "2", "--batch-size", "32")
    ours = train("1f1b", p=2, m=4, steps=2, batch_size=32)  # a step's loss does not depend on the order
    assert theirs["v"] == found["virtual"] and theirs["losses"] == pytest.approx(list(ours.losses), abs=1e-5)
    assert theirs["max_grad_diff_vs_reference"] <= 1e-6


@pytest.mark.parametrize("name", ["dualpipe", "chimera"])
def test_two_direction_schedules_are_refused_with_the_reason(name):
    from argparse import Namespace

    from ppedu.mnist.distributed import _order

    with pytest.raises(ValueError, match="two directions over two copies of the parameters"):
        _order(Namespace(schedule=name, csv=None, m=8, v=1, group=None), 4)
