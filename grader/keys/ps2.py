"""ps2's keys — memory: peak activations of GPipe and 1F1B per GPU, activation memory in GB for a
transformer, and which schedule fits an 80 GB GPU.

The arithmetic the notebook states (per transformer layer, 16-bit activations, attention scores
recomputed as flash attention does): one micro-batch keeps ``34·s·b·h`` bytes of activations
(Korthikanti et al., 2022); a layer has ``12·h²`` parameters, and mixed-precision Adam keeps
16 bytes per parameter (weights, gradients, fp32 master copy, two moments; Rajbhandari et al., 2020).

>>> from ppedu.grading.assignments import my_values
>>> key = _memory_key(my_values("ps2", "alice"))
>>> key["S_act_GB"] > 0 and key["weights_GB"] > 0
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from grader.questions import Keyed
from ppedu import schedules, simulate
from ppedu.grading.assignments.ps2 import QUESTIONS

GB = 1e9
GPU_GB = 80
ACTIVATION_BYTES = 34  # per token per hidden unit per layer (× s·b·h)
BYTES_PER_PARAM = 16


def _peaks_key(v: Mapping[str, Any]) -> dict[str, Any]:
    return {name: simulate(schedules.build(s, v["p"], v["m"])).peak_activations
            for name, s in (("peak_gpipe", "gpipe"), ("peak_1f1b", "1f1b"))}


def _memory_key(v: Mapping[str, Any]) -> dict[str, Any]:
    s_act = v["layers_per_gpu"] * ACTIVATION_BYTES * v["seq"] * v["microbatch_size"] * v["hidden"] / GB
    weights = v["layers_per_gpu"] * 12 * v["hidden"] ** 2 * BYTES_PER_PARAM / GB
    peak_gpipe, peak_1f1b = (max(x) for x in _peaks_key(v).values())
    return {
        "S_act_GB": s_act,
        "weights_GB": weights,
        "gpipe_gpu0_GB": weights + peak_gpipe * s_act,
        "one_f_one_b_gpu0_GB": weights + peak_1f1b * s_act,
        "max_m_gpipe": max(0, math.floor((GPU_GB - weights) / s_act)),
        "fits_1f1b": weights + peak_1f1b * s_act <= GPU_GB,
    }


def _peaks_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], v: Mapping[str, Any]) -> str | None:
    if len(got) != v["p"]:
        return f"Give one number per GPU ({v['p']} of them), GPU 0 first."
    if name == "peak_1f1b" and got == key["peak_gpipe"]:
        return "Those are GPipe's: in 1F1B a GPU starts backwards before all forwards are done."
    if name == "peak_1f1b" and tuple(got) == tuple(min(v["p"] - j + 1, v["m"]) for j in range(v["p"])):
        return "One too many on each GPU: GPU j runs p - j - 1 warm-up forwards, then one more before its first backward."
    return "Simulate the schedule and read `peak_activations`, or count the forwards a GPU runs before each backward."


def _memory_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], v: Mapping[str, Any]) -> str | None:
    if name == "S_act_GB" and abs(got - key[name] / v["layers_per_gpu"]) < 1e-3 * key[name]:
        return "That is one layer's; a GPU holds layers_per_gpu layers."
    if name in ("S_act_GB", "weights_GB") and abs(got * GB / 2**30 - key[name]) < 1e-2 * key[name]:
        return "Use 1 GB = 10⁹ bytes here."
    if name == "max_m_gpipe":
        return "GPipe keeps all m micro-batches on GPU 0: the weights plus m × S_act must stay within 80 GB."
    return None


KEYS: dict[str, Any] = {
    "peaks": Keyed(QUESTIONS["peaks"], _peaks_key, _peaks_hint),
    "s_act": Keyed(QUESTIONS["s_act"], _memory_key, _memory_hint),
    "gpu0": Keyed(QUESTIONS["gpu0"], _memory_key, _memory_hint),
    "fits": Keyed(QUESTIONS["fits"], _memory_key, _memory_hint),
}
