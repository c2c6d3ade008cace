"""ps2's keys — memory. Peak activations of GPipe and 1F1B from the simulator; interleaved 1F1B's peak on GPU j, in
whole stages, from the simulator, for m a multiple of p and for m < p (one round, which the formula sheet's form does
not cover: its warm-up's (v − 1)p becomes (v − 1)m; tests/grading/test_derivations.py checks the form); a parallel
block's activations (GPT-J's and PaLM's, which ppedu does not model) from ppedu's inventory of a sequential one
(:meth:`ppedu.cluster.Model.block_activations`: Korthikanti et al.'s, for any width of keys, values and MLP, no
dropout) less its second norm's input and its separate MLP input; the student's stage in GB, with 16 bytes per
parameter for mixed-precision Adam (Rajbhandari et al., 2020), and what fits in 80 GB. The written answers are graded
by hand. GPU 0's GB and ``max_m_gpipe`` (questions 3 and 4) are right either against the key or against the student's
own peaks and GB; ``fits_1f1b`` against their own where they gave them (:class:`FollowThrough`).

>>> from ppedu.grading.assignments import my_values
>>> key = _memory_key(my_values("ps2", "alice"))
>>> key["S_act_GB"] > 0 and key["weights_GB"] > 0
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from grader.keys.ps1 import FormulaJudge
from grader.questions import Keyed
from ppedu import schedules, simulate
from ppedu.cluster import Model
from ppedu.grading.answers import Flag, Wrong
from ppedu.grading.assignments import Values
from ppedu.grading.assignments.ps2 import QUESTIONS, FollowsOn
from ppedu.grading.students import pick

GB = 1e9
GPU_GB = 80
BYTES_PER_PARAM = 16


def _peaks_key(v: Mapping[str, Any]) -> dict[str, Any]:
    return {name: simulate(schedules.build(s, v["p"], v["m"])).peak_activations
            for name, s in (("peak_gpipe", "gpipe"), ("peak_1f1b", "1f1b"))}


def _peaks_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any],
                v: Mapping[str, Any]) -> str | None:
    if len(got) != v["p"]:
        return f"Give one number per GPU ({v['p']} of them), GPU 0 first."
    if name == "peak_1f1b" and got == key["peak_gpipe"]:
        return "Those are GPipe's: in 1F1B a GPU starts backwards before all forwards are done."
    return "Simulate the schedule and read `peak_activations`: this part is open-library."


@cache
def _interleaved_peaks(p: int, m: int, v: int) -> tuple[float, ...]:
    return tuple(simulate(schedules.interleaved_1f1b(p, m, v)).peak_stage_activations)


def _interleaved_peak(name: str, args: tuple[Any, ...]) -> float:
    p, m, v, j = args
    return _interleaved_peaks(p, m, v)[j]


def _sheets_peak(p: int, m: int, v: int, j: int) -> float:
    """The formula sheet's interleaved peak, which holds for m a multiple of p (the 2021 paper's groups of p)."""
    return min(2 * (p - j - 1) + (v - 1) * p + 1, v * m) / v


def _interleaved_why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    p, m, v, j = args
    if m < p and abs(got - _sheets_peak(p, m, v, j)) < 1e-9:
        return ("that is the formula sheet's peak, which holds for m a multiple of p; with fewer micro-batches than "
                "GPUs, what does GPU j run before its first backward?")
    if abs(got - min(p - j, m)) < 1e-9:
        return ("that is 1F1B's peak; interleaving's GPU j warms up with more chunks' forwards before its first "
                "backward.")
    if abs(got * v - want * v - 1) < 1e-9 or abs(got * v - want * v + 1) < 1e-9:
        return "one chunk off: the peak is the warm-up's forwards plus the one forward before the first backward."
    if abs(got - want * v) < 1e-9:
        return "that counts chunks; the question asks for whole stages' worth (a chunk holds 1/v of a stage)."
    return "count the forwards GPU j runs before its first backward (chapter 4's warm-up), in chunks of 1/v of a stage."


def _sequential_parts(args: tuple[Any, ...]) -> dict[str, float]:
    """ppedu's inventory of a standard (sequential, pre-norm) block of that shape: what a student's copy gives."""
    s, b, h, heads, kv_heads, ffn, gated, flash = args
    block = Model("asked", layers=1, hidden=h, vocab=1, seq=s, microbatch=b, heads=heads, kv_heads=kv_heads, ffn=ffn,
                  gated=bool(gated), flash_attention=bool(flash))
    return block.block_activations("none")


def _block_bytes(name: str, args: tuple[Any, ...]) -> float:
    """A parallel block's (GPT-J's, PaLM's: ``x + Attention(Norm(x)) + MLP(Norm(x))``), from the sequential block's
    inventory: one norm, not two, so one norm input; and the MLP reads the tensor attention reads, kept once."""
    parts = _sequential_parts(args)
    parts["norm inputs"] /= 2
    del parts["MLP input"]
    return sum(parts.values())


def _block_why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    s, b, h, heads, kv_heads, ffn, gated, flash = args
    sbh = s * b * h
    if abs(got - 34 * sbh) < 1e-6 * want:
        return "34·s·b·h is a standard block's with dropout; count this block's parts: its keys and values, its MLP."
    if abs(got - sum(_sequential_parts(args).values())) < 1e-6 * want:
        return ("that is a standard block's, attention then the MLP, each behind its own norm; in a parallel block "
                "both read one norm's output: which tensors are no longer there, and which is kept once, not twice?")
    if not flash and abs(got - (want - 2 * b * heads * s * s)) < 1e-6 * want:
        return "without FlashAttention the s × s attention scores are kept too: 2 bytes each, per head."
    if flash and abs(got - (want - 4 * b * heads * s)) < 1e-6 * want:
        return "FlashAttention keeps one fp32 statistic per query and head for its backward: 4·b·heads·s bytes."
    return ("count part by part, in 16-bit values: what the one norm and the input that attention and the MLP share "
            "keep, queries, keys and values (keys and values shrink with fewer kv heads), the projection's input, the "
            "MLP's hidden activations (two of width ffn, three gated), and what the attention core keeps.")


def _hidden(name: str, v: Values) -> tuple[tuple[Any, ...], ...]:
    def choose(what: str, choices: Any) -> Any:
        return pick("ps2-hidden", v.student, f"{name}:{what}", tuple(choices))

    if name == "interleaved_peak":
        p = choose("p", range(2, 9))
        few = [(q, m, c, j) for q in range(3, 9) for m in range(2, q) for c in (2, 3, 4) for j in range(q)
               if _interleaved_peak(name, (q, m, c, j)) != _sheets_peak(q, m, c, j)]
        return (p, p * choose("k", (1, 2, 4)), choose("v", (2, 3, 4)), choose("j", range(p))), choose("few", few)
    h = choose("h", (2048, 3072, 6144))
    return ((choose("s", (1024, 8192)), choose("b", (1, 4)), h, h // 64, choose("kv", (1, 4, h // 64)),
             choose("ffn", (2 * h, 4 * h)), choose("gated", (0, 1)), choose("flash", (0, 1))),)


def _memory_key(v: Mapping[str, Any]) -> dict[str, Any]:
    block = _block_bytes("block_bytes", (v["seq"], v["microbatch_size"], v["hidden"], v["heads"], v["kv_heads"],
                                         v["ffn"], int(v["gated"]), 1))
    s_act = v["layers_per_gpu"] * block / GB
    weights = v["layers_per_gpu"] * v["layer_params"] * BYTES_PER_PARAM / GB
    peak_gpipe, peak_1f1b = (max(x) for x in _peaks_key(v).values())
    return {
        "S_act_GB": s_act,
        "weights_GB": weights,
        "gpipe_gpu0_GB": weights + peak_gpipe * s_act,
        "one_f_one_b_gpu0_GB": weights + peak_1f1b * s_act,
        "max_m_gpipe": max(0, math.floor((GPU_GB - weights) / s_act)),
        "fits_1f1b": weights + peak_1f1b * s_act <= GPU_GB,
    }


def _own_memory(given: Mapping[str, Any], v: Mapping[str, Any]) -> dict[str, Any]:
    """Questions 3 and 4 computed from the student's own earlier answers (their peaks, their GB)."""
    weights, s_act = given["weights_GB"], given["S_act_GB"]
    one_f_one_b = weights + max(given["peak_1f1b"]) * s_act
    return {
        "gpipe_gpu0_GB": weights + max(given["peak_gpipe"]) * s_act,
        "one_f_one_b_gpu0_GB": one_f_one_b,
        "max_m_gpipe": max(0, math.floor((GPU_GB - weights) / s_act)) if s_act > 0 else None,
        "fits_1f1b": one_f_one_b <= GPU_GB,
    }


@dataclass(frozen=True)
class FollowThrough:
    """Answers computed from earlier ones, right if equal to the key or to what the student's own earlier answers
    give (follow-through: a slip in ``block_bytes`` or the peaks costs those questions, not these too). A yes/no
    answer has one right value per student: their own earlier answers', the key's only where those are missing
    (accepting either would pass both ``True`` and ``False`` where a slip flips it)."""

    form: FollowsOn

    def judge(self, data: Mapping[str, object], values: Values) -> str:
        got, key = self.form.read(data), _memory_key(values)
        try:
            own = _own_memory(FollowsOn(self.form.given).read(data), values)
        except (Wrong, ValueError, ZeroDivisionError, OverflowError):  # earlier answers missing or malformed
            own = {}
        problems = []
        for answer in self.form.answers:
            mine = own.get(answer.name)
            right = ([key[answer.name]] if mine is None else [bool(mine)] if isinstance(answer, Flag)
                     else [key[answer.name], mine])
            if any(answer.equal(got[answer.name], want) for want in right):
                continue
            hint = _memory_hint(answer.name, got[answer.name], got, key, values)
            problems.append(f"`{answer.name}` is not right yet." + (f" {hint[:1].upper()}{hint[1:]}" if hint else ""))
        if problems:
            raise Wrong("\n".join(problems))
        return "correct"


def _memory_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any],
                 v: Mapping[str, Any]) -> str | None:
    if name == "S_act_GB" and abs(got - key[name] / v["layers_per_gpu"]) < 1e-3 * key[name]:
        return "That is one layer's; a GPU holds layers_per_gpu layers."
    if name in ("S_act_GB", "weights_GB") and abs(got * GB / 2**30 - key[name]) < 1e-2 * key[name]:
        return "Use 1 GB = 10⁹ bytes here."
    if name == "max_m_gpipe":
        return "GPipe keeps all m micro-batches on GPU 0: the weights plus m × S_act must stay within 80 GB."
    return None


KEYS: dict[str, Any] = {
    "peaks": Keyed(QUESTIONS["peaks"], _peaks_key, _peaks_hint),
    "interleaved_peak": FormulaJudge(QUESTIONS["interleaved_peak"], _interleaved_peak, _interleaved_why, _hidden),
    "block": FormulaJudge(QUESTIONS["block"], _block_bytes, _block_why, _hidden, rel=1e-9),
    "s_act": Keyed(QUESTIONS["s_act"], _memory_key, _memory_hint),
    "gpu0": FollowThrough(QUESTIONS["gpu0"]),
    "fits": FollowThrough(QUESTIONS["fits"]),
}
