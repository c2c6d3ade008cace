"""What the course says PyTorch and Megatron-LM accept, held to PyTorch itself (its schedules built here, as its
visualiser builds them, accept or refuse) and to Megatron-LM's rules as ppedu's own interleaving applies them."""

import warnings

import pytest

from ppedu.frameworks import megatron_accepts, megatron_runs, pytorch_accepts
from ppedu.reference import TORCH_NAMES
from ppedu.schedules import build
from ppedu.schedules.interleaved import _group

TORCH = ["gpipe", "1f1b", "interleaved", "interleaved-zb", "looped-bfs", "zb-v", "dualpipe-v"]


def pytorch_builds(name: str, p: int, m: int) -> bool:
    """Whether PyTorch 2.13's own class for ``name`` can be built for ``m`` micro-batches on ``p`` ranks."""
    from torch.distributed.pipelining._schedule_visualizer import get_schedule_ops

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            get_schedule_ops(TORCH_NAMES[name], p, m, num_stages_per_rank=1 if name in ("gpipe", "1f1b") else 2)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("name", TORCH)
def test_pytorch_accepts_exactly_what_the_course_says_it_does(name):
    for p in (2, 3, 4):
        for m in range(1, 4 * p + 3):
            assert pytorch_builds(name, p, m) == pytorch_accepts(name, p, m), (name, p, m)


def test_pytorch_refuses_some_m_that_megatron_runs_with_its_group_set():
    refused = [m for m in range(4, 17) if not pytorch_accepts("interleaved", 4, m)]
    assert refused == [9, 11, 13, 14] and all(megatron_runs(4, m) for m in refused)
    assert not pytorch_builds("interleaved", 4, 26) and megatron_accepts(4, 26, group=13)  # the vendor's bubble/ideal


def test_megatron_by_default_needs_m_a_multiple_of_p_and_never_runs_m_below_p():
    for p in range(2, 7):
        for m in range(1, 5 * p):
            assert megatron_accepts(p, m) == (m % p == 0), (p, m)
            assert megatron_runs(p, m) == (m >= p), (p, m)


def test_ppedus_group_rule_is_megatrons_where_megatron_runs():
    # ppedu's default group is the smallest Megatron accepts; an explicit one is checked by Megatron's two rules.
    for p in range(2, 6):
        for m in range(p, 4 * p):
            assert megatron_accepts(p, m, _group(p, m, None))
            for g in range(p, m + 1):
                try:
                    build("interleaved", p, m, 2, group=g)
                    accepted = True
                except ValueError:
                    accepted = False
                assert accepted == megatron_accepts(p, m, g), (p, m, g)


def test_bad_schedule_names_are_refused_with_the_choices():
    with pytest.raises(ValueError, match="unknown PyTorch schedule 'chimera'"):
        pytorch_accepts("chimera", 4, 8)


def test_pytorchs_split_backward_keeps_a_layers_input_alive_from_b_until_w():
    """Chapter 5's default memory model (FREE_AT_W): PyTorch's input-gradient pass keeps the graph, and what the
    weight gradient needs (a linear layer's input) lives until its W ends."""
    import torch
    from torch.distributed.pipelining._backward import stage_backward_input, stage_backward_weight

    layer = torch.nn.Linear(3, 3)
    x = torch.randn(2, 3, requires_grad=True)
    hidden = layer(x)
    saved = hidden.grad_fn  # addmm saves its input (mat1) for the weight gradient
    _, groups = stage_backward_input([torch.tanh(hidden).sum()], None, [x], layer.parameters())
    assert x.grad is not None and layer.weight.grad is None and saved._saved_mat1.shape == (2, 3)  # after B
    stage_backward_weight(layer.parameters(), groups)
    assert layer.weight.grad is not None
    with pytest.raises(RuntimeError, match="freed"):
        saved._saved_mat1  # after W
