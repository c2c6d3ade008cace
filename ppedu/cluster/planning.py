"""Which schedule for my cluster: every schedule at every m, simulated on a real model, and the
fastest that fits in memory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ppedu.cluster.costing import Memory, costs_for, memory_for
from ppedu.cluster.hardware import ADAM_BYTES, GB, Cluster, Model
from ppedu.schedules import SCHEDULES, VIRTUAL, build
from ppedu.simulate import Timeline, simulate
from ppedu.text import columns

@dataclass(frozen=True)
class PlanRow:
    """One schedule at one ``m`` on one cluster: its simulated step and memory."""

    timeline: Timeline
    memory: Memory
    capacity: tuple[float, ...]
    tokens: int

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
        """Seconds per optimizer step of ``m`` micro-batches."""
        return self.timeline.makespan

    @property
    def tokens_per_second(self) -> float:
        return self.m * self.tokens / self.step_time if self.step_time else 0.0

    @property
    def fits(self) -> bool:
        return all(need <= have for need, have in zip(self.memory.total, self.capacity))

    def as_dict(self) -> dict[str, object]:
        t = self.timeline
        return {"schedule": self.schedule, "v": self.v, "m": self.m, "step_time": self.step_time,
                "tokens_per_second": self.tokens_per_second, "bubble_ratio": t.bubble_ratio,
                "bubble_over_ideal": t.bubble_over_ideal, "memory": self.memory.as_dict(), "fits": self.fits}


def plan(model: Model, cluster: Cluster, microbatches: Sequence[int], schedules: Sequence[str] | None = None,
         v: int = 2, recompute: str = "selective", optimizer_bytes: float = ADAM_BYTES) -> list[PlanRow]:
    """Every schedule (default: all the course has; ``interleaved`` with ``v`` chunks per GPU) at
    every ``m`` it accepts, simulated on ``model`` and ``cluster``; rows by ``m``, then schedule."""
    model.layer_activation_bytes(recompute)  # names a bad recompute mode before any schedule is skipped
    capacity = tuple(cluster.device(s).memory for s in range(cluster.gpus))
    rows = []
    for m in microbatches:
        for name in schedules or SCHEDULES:
            try:
                schedule = build(name, cluster.gpus, m, v if name in VIRTUAL else 1)
                costs, cut = costs_for(model, cluster, schedule, recompute)
            except ValueError:
                if schedules:  # asked for by name: say why it cannot run
                    raise
                continue
            timeline = simulate(schedule, costs)
            memory = memory_for(model, timeline, cut, recompute, optimizer_bytes)
            rows.append(PlanRow(timeline, memory, capacity, model.tokens))
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
    best: 1f1b at m=4, 15776 tokens/s
    """
    winner = best(rows)
    links = cluster.link.name + (f", {cluster.between_nodes.name} between nodes of {cluster.node_size}"
                                 if cluster.between_nodes else "")
    hand_over = cluster.link.seconds(model.hand_over_bytes)
    lines = [
        f"{model.name}: {model.params / 1e9:.1f} B parameters, {model.layers} blocks, {model.microbatch} × "
        f"{model.seq} tokens per micro-batch, recompute {recompute}",
        f"on {gpu_names(cluster, detail=True)}, {links}; "
        f"a hand-over of {model.hand_over_bytes / 1e6:.3g} MB takes {hand_over * 1e3:.3g} ms",
        "",
    ]
    table = [("schedule", "m", "step s", "tokens/s", "idle/total", "bubble/ideal", "max GB", "fits",
              "GB per GPU (0…)")]
    for r in rows:
        table.append((r.schedule + (f" v={r.v}" if r.v > 1 else ""), str(r.m), f"{r.step_time:.3f}",
                      f"{r.tokens_per_second:.0f}", f"{r.timeline.bubble_ratio:.2%}",
                      f"{r.timeline.bubble_over_ideal:.2%}", f"{max(r.memory.total) / GB:.1f}",
                      "yes" if r.fits else "no", " ".join(f"{x / GB:.0f}" for x in r.memory.total)))
    lines.append(columns(table))
    if winner:
        lines.append(f"\nbest: {winner.schedule}" + (f" v={winner.v}" if winner.v > 1 else "")
                     + f" at m={winner.m}, {winner.tokens_per_second:.0f} tokens/s")
    else:
        least = min(rows, key=lambda r: max(r.memory.total))
        need = max(least.memory.total)
        lines.append(f"\nnothing fits (the leanest, {least.schedule} at m={least.m}, needs {need / GB:.1f} GB on one GPU): "
                     "use more GPUs, --recompute full, or shard the optimizer state (--zero-dp)")
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
