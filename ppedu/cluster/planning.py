"""Which schedule for my cluster: every schedule at every m, simulated on a real model, and the
fastest that fits in memory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ppedu.cluster.costing import Memory, costs_for, memory_for, on_gpus, replicated_params
from ppedu.cluster.hardware import ADAM_BYTES, GB, Cluster, Model
from ppedu.cluster.collectives import ring_seconds
from ppedu.cluster.parallel import Parallel, Traffic, data_parallel, traffic
from ppedu.schedules import SCHEDULES, VIRTUAL, build
from ppedu.simulate import Timeline, simulate
from ppedu.text import columns

@dataclass(frozen=True)
class PlanRow:
    """One schedule at one ``m`` on one cluster: its simulated step, memory and traffic. With data
    parallelism the pipeline's step is followed by its gradient collectives (:attr:`data_seconds`),
    which this model does not overlap with the step: an upper bound."""

    timeline: Timeline
    memory: Memory
    capacity: tuple[float, ...]
    tokens: int
    parallel: Parallel = Parallel()
    data_seconds: float = 0.0
    model_flops: float = 0.0
    hardware_flops: float = 0.0
    peak_flops: float = 0.0
    traffic: tuple[Traffic, ...] = ()

    @property
    def schedule(self) -> str:
        return self.timeline.schedule.name

    @property
    def v(self) -> int:
        return self.timeline.schedule.virtual

    @property
    def m(self) -> int:
        return self.timeline.schedule.microbatches

    @property
    def step_time(self) -> float:
        """Seconds per optimizer step of ``m`` micro-batches on each of the ``d`` pipelines."""
        return self.timeline.makespan + self.data_seconds

    @property
    def tokens_per_second(self) -> float:
        return self.parallel.d * self.m * self.tokens / self.step_time if self.step_time else 0.0

    @property
    def mfu(self) -> float:
        """Model FLOPs utilization: the model's FLOPs in a step (three times its forward, for every
        micro-batch of every replica; recomputation not counted) ÷ what every GPU's peak could do in the
        step's time."""
        return self.model_flops / (self.step_time * self.peak_flops) if self.step_time and self.peak_flops else 0.0

    @property
    def hfu(self) -> float:
        """Hardware FLOPs utilization: as :attr:`mfu`, counting the FLOPs that recomputation runs again."""
        return self.hardware_flops / (self.step_time * self.peak_flops) if self.step_time and self.peak_flops else 0.0

    @property
    def fits(self) -> bool:
        return all(need <= have for need, have in zip(self.memory.total, self.capacity))

    def as_dict(self) -> dict[str, object]:
        t = self.timeline
        return {"schedule": self.schedule, "v": self.v, "m": self.m, "t": self.parallel.t, "d": self.parallel.d,
                "sequence_parallel": self.parallel.sequence, "zero": self.parallel.zero, "step_time": self.step_time,
                "pipeline_seconds": t.makespan, "data_seconds": self.data_seconds,
                "tokens_per_second": self.tokens_per_second, "mfu": self.mfu, "hfu": self.hfu,
                "bubble_ratio": t.bubble_ratio, "bubble_over_ideal": t.bubble_over_ideal,
                "memory": self.memory.as_dict(), "fits": self.fits,
                "traffic_bytes": [{"tensor": x.tensor, "pipeline": x.pipeline, "data": x.data, "expert": x.expert}
                                  for x in self.traffic]}


def plan(model: Model, cluster: Cluster, microbatches: Sequence[int], schedules: Sequence[str] | None = None,
         v: int = 2, recompute: str = "selective", optimizer_bytes: float = ADAM_BYTES,
         parallel: Parallel = Parallel()) -> list[PlanRow]:
    """Every schedule (default: all the course has; ``interleaved`` with ``v`` chunks per GPU) at
    every ``m`` it accepts, simulated on ``model`` and ``cluster`` — the pipeline's ``p`` stages, each
    ``parallel.t`` GPUs of tensor parallelism, the pipeline replicated ``parallel.d`` times; rows by
    ``m``, then schedule."""
    model.layer_activation_bytes(recompute)  # names a bad recompute mode before any schedule is skipped
    capacity = tuple(cluster.device(s).memory for s in range(cluster.gpus))
    peak = sum(cluster.device(s).tflops * 1e12 for s in range(cluster.gpus)) * parallel.t * parallel.d
    forward = sum(model.layer_flops())
    again = sum(model.layer_backward_flops(recompute)[0]) - sum(model.layer_backward_flops("none")[0])
    rows = []
    for m in microbatches:
        for name in schedules or SCHEDULES:
            try:
                schedule = build(name, cluster.gpus, m, v if name in VIRTUAL else 1)
                costs, cut = costs_for(model, cluster, schedule, recompute, parallel)
            except ValueError:
                if schedules:  # asked for by name: say why it cannot run
                    raise
                continue
            timeline = simulate(schedule, costs)
            memory = memory_for(model, timeline, cut, recompute, optimizer_bytes, parallel)
            per_gpu = on_gpus(schedule, replicated_params(model, cut)[0])  # what the replicas reduce
            blocks = [int(x) for x in on_gpus(schedule, cut.totals(model.layer_blocks()))]
            moe = [int(x) for x in on_gpus(schedule, cut.totals(model.layer_moe()))]
            data = max((sum(ring_seconds(n, parallel.d, kind, parallel.dp_link)
                            for kind, n in data_parallel(x, model, parallel, m)) for x in per_gpu), default=0.0)
            flows = tuple(traffic(model, parallel, m, k, h, x, e) for x, k, h, e in zip(per_gpu, blocks, schedule.sent, moe))
            replicas = m * parallel.d  # each micro-batch of each replica goes once through the whole model
            rows.append(PlanRow(timeline, memory, capacity, model.tokens, parallel, data, 3 * forward * replicas,
                                (3 * forward + again) * replicas, peak, flows))
    if not rows:
        raise ValueError(f"no schedule accepts p={cluster.gpus} with m in {list(microbatches)}")
    return rows


def best(rows: Sequence[PlanRow]) -> PlanRow | None:
    """The row with the most tokens per second (rows at different ``m`` train different batch
    sizes, so step times alone do not compare) among those that fit in memory, or ``None``."""
    return max((r for r in rows if r.fits), key=lambda r: r.tokens_per_second, default=None)


def render_plan(model: Model, cluster: Cluster, rows: Sequence[PlanRow], recompute: str = "selective") -> str:
    """:func:`plan`'s rows as the CLI prints them: a header, one line per schedule and m, the best.

    >>> from ppedu.cluster import GPUS, LINKS, MODELS
    >>> c = Cluster(GPUS["h100-80gb"], 2, LINKS["nvlink"])
    >>> print(render_plan(MODELS["7b"], c, plan(MODELS["7b"], c, [4], ["1f1b"])).splitlines()[-1])
    best: 1f1b at m=4, 13287 tokens/s, MFU 31.0%
    """
    winner = best(rows)
    links = cluster.link.name + (f", {cluster.between_nodes.name} between nodes of {cluster.node_size}"
                                 if cluster.between_nodes else "")
    hand_over = cluster.link.seconds(model.hand_over_bytes)
    parallel = rows[0].parallel if rows else Parallel()
    attention = "FlashAttention" if model.flash_attention else "eager attention"
    lines = [
        f"{model.name}: {model.params / 1e9:.1f} B parameters, {model.layers} blocks, {model.microbatch} × "
        f"{model.seq} tokens per micro-batch, {attention}, recompute {recompute}",
        f"pipeline of {cluster.gpus} stages on {gpu_names(cluster, detail=True)}, {links}; "
        f"a hand-over of {model.hand_over_bytes / 1e6:.3g} MB takes {hand_over * 1e3:.3g} ms",
        f"each stage {parallel.t} GPU(s) of tensor parallelism"
        + (" with sequence parallelism" if parallel.sequence else "")
        + f" over {parallel.tp_link.name}; {parallel.d} data-parallel replica(s)"
        + (f" over {parallel.dp_link.name}" if parallel.d > 1 else "") + (f", ZeRO-{parallel.zero}" if parallel.zero else "")
        + f": {cluster.gpus * parallel.t * parallel.d} GPUs",
        "",
    ]
    table = [("schedule", "m", "step s", "tokens/s", "MFU", "idle/total", "bubble/ideal", "max GB", "fits",
              "GB per GPU (0…)")]
    for r in rows:
        table.append((r.schedule + (f" v={r.v}" if r.v > 1 else ""), str(r.m), f"{r.step_time:.3f}",
                      f"{r.tokens_per_second:.0f}", f"{r.mfu:.1%}", f"{r.timeline.bubble_ratio:.2%}",
                      f"{r.timeline.bubble_over_ideal:.2%}", f"{max(r.memory.total) / GB:.1f}",
                      "yes" if r.fits else "no", " ".join(f"{x / GB:.0f}" for x in r.memory.total)))
    lines.append(columns(table))
    if winner:
        lines.append(f"\nbest: {winner.schedule}" + (f" v={winner.v}" if winner.v > 1 else "")
                     + f" at m={winner.m}, {winner.tokens_per_second:.0f} tokens/s, MFU {winner.mfu:.1%}")
    else:
        least = min(rows, key=lambda r: max(r.memory.total))
        need = max(least.memory.total)
        lines.append(f"\nnothing fits (the leanest, {least.schedule} at m={least.m}, needs {need / GB:.1f} GB on one GPU): "
                     "use more GPUs, --recompute full, tensor parallelism (--tp) or shard the optimizer state (--dp, --zero)")
    return "\n".join(lines)


def gpu_names(cluster: Cluster, detail: bool = False) -> str:
    """``8 × H100 80GB SXM``, or the runs of a mixed cluster (``2 × H100 …, 2 × A100 …``)."""
    runs: list[list] = []
    for s in range(cluster.gpus):
        gpu = cluster.device(s)
        if runs and runs[-1][0] == gpu:
            runs[-1][1] += 1
        else:
            runs.append([gpu, 1])
    return ", ".join(f"{n} × {g.name}" + (f" ({g.tflops:g} TFLOP/s at {g.efficiency:.0%}, {g.memory / GB:g} GB)"
                                          if detail else "") for g, n in runs)
