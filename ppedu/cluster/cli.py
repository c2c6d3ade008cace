"""``ppedu plan``: which schedule for my cluster, on the command line (the CLI's edge; no library
module imports it)."""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, replace

from ppedu.cluster.break_even import break_even_bandwidth, interleaving_by_link
from ppedu.cluster.hardware import GB, GPU, GPUS, LINKS, MODELS, RECOMPUTE, Cluster, Model
from ppedu.cluster.layouts import layouts
from ppedu.cluster.parallel import Parallel
from ppedu.cluster.planning import best, gpu_names, plan, render_plan
from ppedu.text import columns
from ppedu.validate import numbers, one_of, whole


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register ``ppedu plan`` on the CLI's sub-command table."""
    cmd = commands.add_parser(
        "plan", help="which schedule for my cluster: step time, MFU, bubble and memory of each schedule for a real model",
        description="Per-layer times from FLOPs (2·params·tokens per matrix forward, the same again for each of B and "
        "W, and attention's s² core), hand-overs from link bandwidth and latency, memory from parameters (16 bytes "
        "each with Adam in mixed precision, split by tensor parallelism, sharded by ZeRO) plus the simulated peak "
        "activations. --layouts searches t, p, d, the schedule, m, recomputation and ZeRO for --gpus GPUs in all.")
    cmd.add_argument("--model", choices=list(MODELS), required=True, help="model preset: " + ", ".join(MODELS))
    cmd.add_argument("--gpus", type=int, required=True,
                     help="GPUs in the pipeline (stages); with --layouts, GPUs in all")
    cmd.add_argument("--gpu", default="h100-80gb",
                     help="GPU preset, or one per GPU comma-separated for a mixed cluster: " + ", ".join(GPUS))
    cmd.add_argument("--link", choices=list(LINKS), default="nvlink", help="link preset: " + ", ".join(LINKS))
    cmd.add_argument("--node-size", type=int, default=None, help="GPUs per node (with --between-nodes)")
    cmd.add_argument("--between-nodes", choices=list(LINKS), default=None, help="link between nodes")
    cmd.add_argument("-m", type=numbers, default=None, help="micro-batches per step, comma-separated "
                     "(default: 2p,4p,8p)")
    cmd.add_argument("-v", type=int, default=2, help="chunks per GPU for interleaved (default 2)")
    cmd.add_argument("--seq", type=int, default=None, help="sequence length (default: the model's)")
    cmd.add_argument("--microbatch", type=int, default=None, help="sequences per micro-batch (default 1)")
    cmd.add_argument("--recompute", choices=RECOMPUTE, default="selective", help="activation recomputation")
    cmd.add_argument("--eager-attention", action="store_true",
                     help="attention without FlashAttention: its s × s scores are kept (or recomputed, --recompute)")
    cmd.add_argument("--efficiency", type=float, default=None,
                     help="fraction of peak FLOP/s the kernels reach (default 0.4)")
    cmd.add_argument("--tp", type=int, default=1, help="tensor-parallel GPUs per stage, on --link (default 1)")
    cmd.add_argument("--sp", action="store_true", help="sequence parallelism with --tp")
    cmd.add_argument("--dp", type=int, default=1, help="data-parallel replicas of the pipeline (default 1)")
    cmd.add_argument("--zero", type=int, default=0, choices=(0, 1, 2, 3),
                     help="ZeRO stage over the --dp replicas: 1 shards Adam's state, 2 also the gradients, 3 also "
                     "the weights (FSDP)")
    cmd.add_argument("--dp-link", choices=list(LINKS), default="ib-400", help="link of the data-parallel collectives")
    cmd.add_argument("--layouts", action="store_true",
                     help="search t, p, d, schedule, m, recomputation and ZeRO for --gpus GPUs and --global-batch")
    cmd.add_argument("--global-batch", type=int, default=None, help="sequences per step in all (with --layouts)")
    cmd.add_argument("--top", type=int, default=10, help="layouts to print (with --layouts; default 10)")
    out = cmd.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON object")
    out.add_argument("--png", metavar="FILE", help="also draw the best schedule's spacetime diagram into FILE")
    cmd.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    model = MODELS[args.model]
    model = replace(model, seq=args.seq or model.seq, microbatch=args.microbatch or model.microbatch,
                    flash_attention=not args.eager_attention)
    names = [one_of("GPU preset", n, GPUS) for n in args.gpu.split(",")]
    if args.efficiency is not None and not 0 < args.efficiency <= 1:
        raise ValueError(f"efficiency lies in (0, 1] (got {args.efficiency})")
    kinds = tuple(replace(GPUS[n], efficiency=args.efficiency or GPUS[n].efficiency) for n in names)
    if args.layouts:
        return _layouts(args, model, kinds)
    if args.global_batch is not None:
        raise ValueError("--global-batch goes with --layouts (plan takes -m, the micro-batches per pipeline)")
    between = LINKS[args.between_nodes] if args.between_nodes else None
    cluster = Cluster(kinds[0] if len(kinds) == 1 else kinds, args.gpus, LINKS[args.link], args.node_size, between)
    parallel = Parallel(t=args.tp, d=args.dp, sequence=args.sp, zero=args.zero, tp_link=LINKS[args.link],
                        dp_link=LINKS[args.dp_link])
    if args.zero and args.dp == 1:
        raise ValueError("--zero shards over data-parallel replicas: give their number with --dp")
    p = cluster.gpus
    if any(x != int(x) or x < 1 for x in (args.m or ())):
        raise ValueError(f"m (micro-batches) must be whole numbers ≥ 1 (got {args.m})")
    ms = [int(x) for x in args.m] if args.m else [2 * p, 4 * p, 8 * p]
    rows = plan(model, cluster, ms, v=args.v, recompute=args.recompute, parallel=parallel)
    winner = best(rows)
    m_even = next((x for x in sorted(ms, reverse=True) if x % p == 0), None)
    links = interleaving_by_link(model, cluster, m_even, args.v, recompute=args.recompute) if m_even and p > 1 else []
    if args.json:
        print(json.dumps({
            "model": model.name, "params": model.params, "gpus": [cluster.device(s).name for s in range(p)],
            "link": cluster.link.name, "hand_over_bytes": model.hand_over_bytes, "recompute": args.recompute,
            "flash_attention": model.flash_attention, "t": parallel.t, "d": parallel.d, "zero": parallel.zero,
            "sequence_parallel": parallel.sequence,
            "memory_per_gpu": [cluster.device(s).memory for s in range(p)],
            "rows": [r.as_dict() for r in rows],
            "best": None if winner is None else {"schedule": winner.schedule, "v": winner.v, "m": winner.m},
            "interleaving": [{"link": link.name, "m": m_even, "v": args.v, "1f1b": a, "interleaved": b}
                             for link, a, b in links],
        }))
        return 0
    print(render_plan(model, cluster, rows, args.recompute))
    if links and m_even:
        print(f"\ninterleaving (v={args.v}) against 1F1B at m={m_even}, every hand-over over one link:")
        table = [("link", "hand-over ms", "1f1b s", "interleaved s", "pays?")] + [
            (link.name, f"{link.seconds(model.hand_over_bytes) * 1e3:.3f}", f"{a:.3f}", f"{b:.3f}",
             "yes" if b < a else "no") for link, a, b in links]
        print(columns(table))
        bw = break_even_bandwidth(model, cluster, m_even, args.v, args.recompute)
        if bw == 0 or math.isinf(bw):
            print("it pays at any bandwidth" if bw == 0 else "it does not pay at any bandwidth")
        else:
            print(f"it stops paying below {bw / GB:.3g} GB/s at {cluster.link.name}'s latency")
    if args.png:
        from ppedu.plot import plot_timeline

        shown = winner or min(rows, key=lambda r: max(r.memory.total))
        title = f"{shown.schedule} (m={shown.m}) — {model.name} on {gpu_names(cluster)}" + ("" if winner else " (does not fit)")
        plot_timeline(shown.timeline, title=title).savefig(args.png, dpi=150)
        print(f"wrote {args.png}")
    return 0


def _layouts(args: argparse.Namespace, model: Model, kinds: tuple[GPU, ...]) -> int:
    """``ppedu plan --layouts``: every t, p, d, schedule, m, recomputation and ZeRO stage, fastest first."""
    if len(kinds) > 1:
        raise ValueError("--layouts takes one GPU preset (a mixed cluster is planned one pipeline at a time)")
    if args.global_batch is None:
        raise ValueError("--layouts needs --global-batch, the sequences per step in all")
    whole("top", args.top)
    node = args.node_size or 8
    rows = layouts(model, kinds[0], args.gpus, args.global_batch, node, LINKS[args.link],
                   LINKS[args.between_nodes or "ib-400"], v=args.v)
    if not rows:
        raise ValueError(f"no layout of {args.gpus} GPUs divides a global batch of {args.global_batch}")
    shown = rows[:args.top]
    if args.json:
        print(json.dumps({"model": model.name, "gpus": args.gpus, "global_batch": args.global_batch,
                          "layouts": [asdict(r) for r in shown]}))
        return 0
    print(f"{model.name} on {args.gpus} × {kinds[0].name} (nodes of {node}), {args.global_batch} sequences of "
          f"{model.seq} tokens per step; fastest first, those that fit before those that do not:\n")
    print(shown)
    return 0
