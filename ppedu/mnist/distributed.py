"""The lab's model on PyTorch's own pipeline engine, one process per stage (torchrun).

    python -m torch.distributed.run --nproc-per-node P -m ppedu.mnist.distributed \\
        (--schedule S | --csv FILE) -m M --steps N [--model mlp|cnn] [--json]

Every rank builds the same initial model (same seed), cuts it as ppedu's executor does and
keeps its own chunks in ``torch.distributed.pipelining.PipelineStage``s. PyTorch's own
schedules drive them for ``gpipe`` (``ScheduleGPipe``), ``1f1b`` (``Schedule1F1B``),
``interleaved`` (``ScheduleInterleaved1F1B``, ``-v`` chunks per rank), ``dualpipe-v``
(``ScheduleDualPipeV``) and ``zbv`` (``ScheduleZBVZeroBubble``; both V-shaped, two chunks per
rank). Every other ppedu schedule (``zb-h1``, ``zb-h2``, ``interleaved-zb``, ``looped-bfs``,
``zb-v``, and ``interleaved`` with Megatron's ``--group``) runs ppedu's own order on PyTorch's
``_PipelineScheduleRuntime``, as its actions (F, I, W, B); ``--csv`` runs any order written in
PyTorch's schedule CSV (``ppedu simulate … --csv``, a searched order). Chunk ``c`` lives where
the order runs it.

Two schedules cannot run there: DualPipe and Chimera send micro-batches both ways through two
copies of the model, and PyTorch's runtime names a chunk by its index alone, so it has no way
to say which copy an action means; they stop with that reason.

On CPU the ranks talk over gloo; with one GPU per rank, over NCCL. Rank 0 prints the losses, the
first step's largest gradient difference from the unpipelined model and the test accuracy,
with the same keys as ``ppedu mnist``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import sys
import time
from collections.abc import Sequence

import torch
from torch import nn
from torch.nn.functional import cross_entropy

from ppedu import schedules as ppedu_schedules
from ppedu.mnist.models import split_model
from ppedu.mnist.training import accuracy, initial_model, optimizer_for, training_batches
from ppedu.validate import one_of

#: Our names for PyTorch's schedules → (its schedule class name, chunks per rank or None for -v).
TORCH_SCHEDULES: dict[str, tuple[str, int | None]] = {
    "gpipe": ("ScheduleGPipe", 1),
    "1f1b": ("Schedule1F1B", 1),
    "interleaved": ("ScheduleInterleaved1F1B", None),
    "dualpipe-v": ("ScheduleDualPipeV", 2),
    "zbv": ("ScheduleZBVZeroBubble", 2),
}


def stage_indices(schedule: str, rank: int, p: int, v: int = 1) -> list[int]:
    """The model chunks rank ``rank`` of ``p`` holds: round robin, or the V for two-chunk schedules.

    >>> stage_indices("interleaved", 1, 4, v=2), stage_indices("dualpipe-v", 1, 4)
    ([1, 5], [1, 6])
    """
    per_rank = TORCH_SCHEDULES[one_of("schedule for torch.distributed", schedule, TORCH_SCHEDULES)][1] or v
    if TORCH_SCHEDULES[schedule][1] == 2:
        return [rank, 2 * p - 1 - rank]
    return [rank + k * p for k in range(per_rank)]


def main(argv: Sequence[str] | None = None) -> int:
    """Run under torchrun; every rank runs this (see the module's docstring)."""
    import torch.distributed as dist
    from torch.distributed import pipelining
    from torch.distributed.pipelining import schedules as pp_schedules

    parser = argparse.ArgumentParser(prog="python -m torch.distributed.run ... -m ppedu.mnist.distributed")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--schedule", choices=[*TORCH_SCHEDULES,
                                              *(n for n in ppedu_schedules.SCHEDULES if n not in TORCH_SCHEDULES)])
    which.add_argument("--csv", metavar="FILE", help="run this order, in PyTorch's schedule CSV format")
    parser.add_argument("-m", type=int, required=True, help="micro-batches per step")
    parser.add_argument("-v", type=int, default=1, help="chunks per rank (interleaved, interleaved-zb, looped-bfs)")
    parser.add_argument("--group", type=int, default=None, help="micro-batch group size (interleaved, interleaved-zb)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if "RANK" not in os.environ:
        parser.exit(2, f"{parser.prog}: error: start me with python -m torch.distributed.run (torchrun)\n")
    if args.batch_size % args.m:
        parser.exit(2, f"{parser.prog}: error: the batch size ({args.batch_size}) must be a multiple of m ({args.m})\n")

    cuda = torch.cuda.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    else:
        torch.set_num_threads(1)  # several ranks share the CPU's cores
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, p = dist.get_rank(), dist.get_world_size()
    try:
        start = time.perf_counter()
        model = initial_model(args.model, args.seed)
        # PyTorch's class where it has one; ppedu's order on its runtime otherwise (or for a --group).
        order = None if args.schedule in TORCH_SCHEDULES and args.group is None else _order(args, p)
        if order is None:
            mine = stage_indices(args.schedule, rank, p, args.v)
            total = p * len(mine)
        else:
            mine = sorted({_chunk(a) for a in order[rank]})
            total = 1 + max(_chunk(a) for row in order for a in row)
        chunks = split_model(model, total)  # ValueError if the model has fewer layers than chunks
        local: list[nn.Module] = [chunks[i].to(device) for i in mine]
        stages = [pipelining.PipelineStage(chunk, i, total, device) for i, chunk in zip(mine, local)]
        if order is None:
            kind = getattr(pp_schedules, TORCH_SCHEDULES[args.schedule][0])
            schedule = kind(stages if len(stages) > 1 or kind.__name__ == "ScheduleInterleaved1F1B" else stages[0],
                            n_microbatches=args.m, loss_fn=cross_entropy)
        else:  # ppedu's order on PyTorch's runtime, loaded as its CSV loader loads one
            schedule = pp_schedules._PipelineScheduleRuntime(stages, n_microbatches=args.m, loss_fn=cross_entropy)
            schedule.pipeline_order = {r: [pp_schedules._Action.from_str(a) for a in row] for r, row in enumerate(order)}
            schedule._prepare_schedule_with_comms(schedule.pipeline_order)
        params = [q for chunk in local for q in chunk.parameters()]
        optimizer = optimizer_for(params)
        has_first, has_last = 0 in mine, total - 1 in mine
        losses, diff = [], 0.0
        for step, (x, y) in enumerate(training_batches(args.steps, args.batch_size, args.seed)):
            optimizer.zero_grad(set_to_none=True)
            mb_losses: list[torch.Tensor] = []
            inputs = (x.to(device),) if has_first else ()
            schedule.step(*inputs, target=y.to(device) if has_last else None, losses=mb_losses if has_last else None)
            # The last chunk's rank knows the loss; everyone learns it from there.
            loss = torch.stack(mb_losses).mean().detach() if has_last else torch.zeros((), device=device)
            dist.all_reduce(loss)
            losses.append(loss.item())
            if step == 0:
                diff = _gradient_check(model, mine, local, (x, y), rank, dist)
            optimizer.step()
        state = _gather_model(local, mine, rank, dist)
        if rank == 0:
            for i, chunk_state in state.items():
                chunks[i].load_state_dict(chunk_state)
            result = {
                "schedule": args.schedule or args.csv, "p": p, "m": args.m, "v": total // p,
                "steps": args.steps, "model": args.model, "batch_size": args.batch_size,
                "backend": dist.get_backend(), "loss_first": losses[0], "loss_last": losses[-1], "losses": losses,
                "test_accuracy": accuracy(nn.Sequential(*(c.cpu() for c in chunks))),
                "max_grad_diff_vs_reference": diff, "seconds": time.perf_counter() - start,
            }
            if args.json:
                print(json.dumps(result))
            else:
                print(f"{args.schedule or args.csv} on {p} ranks ({result['backend']}): loss {losses[0]:.4f} → {losses[-1]:.4f}, "
                      f"test accuracy {result['test_accuracy']:.2%}, max |Δgrad| {diff:.2e}, {result['seconds']:.1f} s")
    except ValueError as error:  # e.g. more chunks than the model has layers: one line, like the CLI
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    finally:
        dist.destroy_process_group()
    return 0


def _chunk(action: str) -> int:
    """The chunk (PyTorch's stage index) an action such as ``3F0`` runs on."""
    return int(re.split(r"\D", action, maxsplit=1)[0])


def _order(args: argparse.Namespace, p: int) -> list[list[str]]:
    """Per rank, the actions to run: ppedu's schedule ``--schedule`` or the CSV ``--csv``."""
    from ppedu.export import torch_actions

    if args.csv:
        with open(args.csv, newline="", encoding="utf-8") as rows:
            order = [[a.strip() for a in row if a.strip()] for row in csv.reader(rows)]
        if len(order) != p:
            raise ValueError(f"{args.csv} has orders for {len(order)} ranks, but {p} ranks were started")
        return order
    chunked = args.schedule in ppedu_schedules.VIRTUAL
    return torch_actions(ppedu_schedules.build(args.schedule, p, args.m, args.v if chunked else 1,
                                               args.group if args.schedule in ppedu_schedules.GROUPED else None))


def _gradient_check(model: nn.Sequential, mine: list[int], local: list[nn.Module], batch, rank: int, dist) -> float:
    """Rank 0 compares every chunk's gradient with the unpipelined model's on the same batch."""
    from ppedu.mnist.executor import reference_gradients

    grads = {i: [(q.grad if q.grad is not None else torch.zeros_like(q)).detach().cpu() for q in chunk.parameters()]
             for i, chunk in zip(mine, local)}
    gathered: list[dict | None] = [None] * dist.get_world_size()
    dist.gather_object(grads, gathered if rank == 0 else None, dst=0)
    if rank != 0:
        return 0.0
    reference = reference_gradients(model.cpu(), batch, cross_entropy)
    merged = {i: g for part in gathered if part for i, g in part.items()}
    pipelined = [g for i in sorted(merged) for g in merged[i]]
    return max(float((a - b).abs().max()) for a, b in zip(pipelined, reference))


def _gather_model(local: list[nn.Module], mine: list[int], rank: int, dist) -> dict:
    state = {i: {k: t.detach().cpu() for k, t in chunk.state_dict().items()} for i, chunk in zip(mine, local)}
    gathered: list[dict | None] = [None] * dist.get_world_size()
    dist.gather_object(state, gathered if rank == 0 else None, dst=0)
    return {i: s for part in gathered if part for i, s in part.items()} if rank == 0 else {}


if __name__ == "__main__":
    sys.exit(main())
