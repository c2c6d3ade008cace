"""An exam-style practice set with a worked answer key, and written answers to every chapter's
self-check: each number is computed here, by the simulator or the course's closed forms, and the
worked answer shows the reasoning a student writes by hand.

>>> q = practice_set()[0]
>>> q.label, q.answer
('P1', (18.0, 54.0, 18.0))
>>> print(key(self_check_answers()[:1]).splitlines()[2])
**Chapter 1, question 1.** Count GPipe's grid at *p* = 3, *m* = 2 (*f* = *b* = 1): total slots, idle slots, bubble ratio.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from fractions import Fraction
from itertools import groupby
from math import comb
from random import Random

from ppedu import recomputation
from ppedu.batch_size import steps_and_examples
from ppedu.cluster import (
    GPUS, LINKS, MODELS, Cluster, Model, Parallel, collectives, context, experts, interleaving_by_link, plan, reliability,
    sharding, tensor,
)
from ppedu.cluster.cases import deepseek_v3
from ppedu.cluster.published import LLAMA3_TABLE4
from ppedu.costs import EQUAL, Costs
from ppedu.critical import critical_path
from ppedu.design import frontier
from ppedu.errata import deepseek_table
from ppedu.search import bound_arguments
from ppedu.formulas import bubble_ratio
from ppedu.idle import SORTS
from ppedu.layout import layout
from ppedu.lesson import hand_overs, parameter_copies
from ppedu.schedules import build, dualpipe, dualpipe_v, gpipe, interleaved_1f1b, one_f_one_b, zero_bubble_h1
from ppedu.ops import Schedule
from ppedu.schedules.one_f_one_b import with_warmups
from ppedu.sheet import Markdown
from ppedu.simulate import Timeline, simulate
from ppedu.staleness import staleness
from ppedu.text import render_grid


@dataclass(frozen=True)
class Item:
    """One question, its computed answer, the worked answer in words, and the objectives it practises (the
    identifiers of docs/lecture-plans.md, as a graded question's tags)."""

    label: str
    question: str
    answer: object
    working: str
    objectives: tuple[str, ...] = ()


def _frac(x: float, limit: int = 1000) -> str:
    return str(Fraction(x).limit_denominator(limit))


def _gs(values: Iterable[float]) -> str:
    return ", ".join(f"{x:g}" for x in values)


def practice_set() -> tuple[Item, ...]:
    """The exam-style questions, P1 … P27, each tagged with the objectives it practises."""
    items = []

    # P1: counting by hand with f ≠ b.
    t = simulate(gpipe(3, 4), Costs(f=1, b=2))
    busy = t.busy_per_stage[0]
    items.append(Item(
        "P1", "GPipe with *p* = 3 GPUs and *m* = 4 micro-batches; a forward takes 1 time unit, a backward 2. "
        "Without the simulator: the makespan *T*, the total slots *p·T*, the idle slots. (Answer as a triple.)",
        (t.makespan, t.total_slots, t.idle_slots),
        f"The last forward leaves GPU 0 at *m* = 4 and reaches GPU 2 after *p* − 1 = 2 more units, so the forwards "
        f"end at {4 + 2}. The backward wave then needs *m·b* = 8 units on GPU 2 and *(p − 1)·b* = 4 more to reach "
        f"GPU 0's last backward: *T* = (*m* + *p* − 1)(*f* + *b*) = {t.makespan:g}. Total slots *p·T* = "
        f"{t.total_slots:g}. Each GPU is busy *m*(*f* + *b*) = {busy:g}, so idle = {t.total_slots:g} − 3 × {busy:g} "
        f"= {t.idle_slots:g}; the ratio {_frac(t.bubble_ratio)} is (*p* − 1)/(*m* + *p* − 1) = "
        f"{_frac(bubble_ratio(3, 4))} — unequal costs do not change it when every stage has the same *f* and *b*.",
        ('01.1', '02.1')))

    # P2: 1F1B under the same costs, and what it saves.
    o, g = simulate(one_f_one_b(4, 8), Costs(f=1, b=2)), simulate(gpipe(4, 8), Costs(f=1, b=2))
    items.append(Item(
        "P2", "*p* = 4, *m* = 8, *f* = 1, *b* = 2. Give 1F1B's makespan, and the peak number of micro-batches "
        "whose activations GPU 0 holds under 1F1B and under GPipe. (Answer as a triple.)",
        (o.makespan, o.peak_activations[0], g.peak_activations[0]),
        f"1F1B reorders work but keeps every dependency chain of GPipe, and with equal stages its idle time per GPU is "
        f"the same (*p* − 1)(*f* + *b*) = {(4 - 1) * 3}: *T* = *m*(*f* + *b*) + {(4 - 1) * 3} = {o.makespan:g}, as "
        f"GPipe ({g.makespan:g}). The saving is memory: GPU 0 runs *p* − 1 = 3 warm-up forwards, then one forward "
        f"before each backward, so at most {o.peak_activations[0]} micro-batches are in flight, against all "
        f"{g.peak_activations[0]} under GPipe.",
        ('03.2', '03.3')))

    # P3: the O(p) memory argument.
    p, m = 6, 12
    peaks = simulate(one_f_one_b(p, m)).peak_activations
    items.append(Item(
        "P3", "Prove that under 1F1B GPU *j* never holds more than min(*p* − *j*, *m*) micro-batches' activations, "
        "and give the peaks of GPUs 0 … 5 for *p* = 6, *m* = 12.",
        peaks,
        f"GPU *j* runs min(*p* − *j* − 1, *m*) warm-up forwards and then alternates one forward with one backward. A "
        f"micro-batch's activations live from its forward to its backward on that GPU, so the count rises by one per "
        f"forward and falls by one per backward: it reaches warm-up + 1 = *p* − *j* at the first steady-state forward "
        f"and never exceeds it, since every later forward is followed by a backward before the next forward. It "
        f"cannot exceed *m* either. The bound does not grow with *m* — O(*p*), not GPipe's O(*m*). Here: {peaks}.",
        ('03.2',)))

    # P4: why the textbook's 11 steps are impossible.
    g4 = simulate(gpipe(4, 4))
    busy4 = int(g4.busy_slots)
    items.append(Item(
        "P4", "The textbook says GPipe at *p* = 4, *m* = 4 (each op one step) takes 11 steps with 18 idle of 44 "
        "slots. How many busy slots does the work need, how many does the textbook's count leave, and what is the "
        "least possible *T*? (Answer as a triple.)",
        (busy4, 44 - 18, g4.makespan),
        f"Each of 4 GPUs runs 4 forwards and 4 backwards: {busy4} busy slots. 44 − 18 leaves only {44 - 18}, so the "
        f"textbook's figures cannot describe a run that does all the work. A lower bound: GPU 3 cannot start before "
        f"step 4 (the first forward climbs 3 GPUs), then has 8 ops of its own, and the last backward it produces must "
        f"still go down 3 GPUs: *T* ≥ 3 + 8 + 3 = 2(*m* + *p* − 1) = {g4.makespan:g}, which GPipe and 1F1B reach.",
        ("01.1", "01.2")))

    # P5: interleaving on the same model.
    i = simulate(interleaved_1f1b(4, 8, 2), Costs(f=1, b=2).per_chunk(2))
    one = simulate(one_f_one_b(4, 8), Costs(f=1, b=2))
    idle_i = i.makespan - i.busy_per_stage[0]
    items.append(Item(
        "P5", "The model of P2 (*p* = 4, *m* = 8, a whole stage's forward 1, backward 2), interleaved with *v* = 2 "
        "chunks per GPU. Give the idle time per GPU, the makespan, and the hand-overs per step against 1F1B's. "
        "(Answer as (idle, makespan, interleaved hand-overs, 1F1B hand-overs).)",
        (idle_i, i.makespan, hand_overs(i.schedule), hand_overs(one.schedule)),
        f"Each chunk costs half a stage, so the warm-up and cooldown, still *p* − 1 chunk-steps each way, take half as "
        f"long: idle per GPU = (*p* − 1)(*f* + *b*)/*v* = {idle_i:g}, makespan = *m*(*f* + *b*) + {idle_i:g} = "
        f"{i.makespan:g} (1F1B: {one.makespan:g}). The price: a micro-batch now crosses *p·v* − 1 = 7 chunk "
        f"boundaries each way, every one between GPUs: 2*m*(*p·v* − 1) = {hand_overs(i.schedule)} hand-overs per step "
        f"against 2*m*(*p* − 1) = {hand_overs(one.schedule)}. Parameters per GPU are unchanged (*v* chunks of 1/*v*).",
        ('04.2', '04b.1')))

    # P6: ZB-H1 and DualPipe under DeepSeek's accounting.
    unit = Costs(f=1, b=1, w=1, fb=3)
    zb, dp = simulate(zero_bubble_h1(8, 20), unit), simulate(dualpipe(8, 20), unit)
    zb_idle = max(zb.makespan - x for x in zb.busy_per_stage)
    dp_idle = max(dp.makespan - x for x in dp.busy_per_stage)
    long_w = simulate(zero_bubble_h1(8, 20), Costs(f=1, b=0.5, w=1.5))  # W = 1.5 of a full backward of 2
    long_w_idle = max(long_w.makespan - x for x in long_w.busy_per_stage)
    items.append(Item(
        "P6", "*p* = 8, *m* = 20; forward, input-gradient and weight-gradient passes take 1 each (a full backward 2), "
        "and an overlapped F&B pair takes F plus a full B (3). Using DeepSeek-V3's formulas, give the idle time per "
        "GPU of ZB1P (ZB-H1) and of DualPipe, and DualPipe's parameter copies and peak activations per GPU (in "
        "stages). Then with *W* = 1.5 (*F* = 1, *B* = 2 full): what does the ZB1P formula give, what does ZB-H1 "
        "idle, and which path sets it? (Answer as a 6-tuple.)",
        (zb_idle, dp_idle, parameter_copies(dp.schedule), max(dp.peak_activations), 7 * (1 + 2 - 2 * 1.5),
         long_w_idle),
        f"ZB1P: (*p* − 1)(*F* + *B* − 2*W*) = 7 × (1 + 2 − 2) = {zb_idle:g}. DualPipe: (*p*/2 − 1)(*F&B* + *B* − 3*W*) "
        f"= 3 × (3 + 2 − 3) = {dp_idle:g} — the simulator agrees with both. DualPipe holds both directions' stages "
        f"on every GPU: {parameter_copies(dp.schedule):g} parameter copies, and *p* + 1 = {max(dp.peak_activations)} "
        f"micro-batches of activations at its peak, against ZB-H1's {max(zb.peak_activations)} on GPU 0. With "
        f"*W* = 1.5 the formula books 7 × (1 + 2 − 3) = {7 * (1 + 2 - 2 * 1.5):g}, but no schedule idles less than the "
        f"first forward's climb: the last GPU cannot start before micro-batch 0 has passed *p* − 1 GPUs, (*p* − 1)*F* "
        f"= 7, and has no W yet to fill that wait: the forward path sets it, {long_w_idle:g}, as simulated (the "
        f"formula holds only while *W* ≤ min(*F*, *B* − *W*), chapter 6b).",
        ('05.1', '06.3', '06b.1')))

    # P7: DualPipeV against DualPipe.
    v_shape = dualpipe_v(4, 8)
    items.append(Item(
        "P7", "DualPipeV folds DualPipe at *p* = 4 onto a V. Which chunks of its 2*p* = 8 does GPU 1 hold, how many "
        "parameter copies is that, and where does every micro-batch enter and leave? (Answer as (chunks, copies, "
        "GPU).)",
        (tuple(c for c, s in enumerate(v_shape.placement[0]) if s == 1), parameter_copies(v_shape), v_shape.placement[0][0]),
        f"GPU *j* holds chunks *j* and 2*p* − 1 − *j*: for GPU 1, {tuple(c for c, s in enumerate(v_shape.placement[0]) if s == 1)}. "
        f"Each is half a stage, so {parameter_copies(v_shape):g} copy in all — half DualPipe's memory for parameters. "
        f"A micro-batch goes down chunks 0 … 3 (GPUs 0 … 3) and back up 4 … 7 (GPUs 3 … 0): it enters and leaves at "
        f"GPU {v_shape.placement[0][0]}.",
        ('06.1',)))

    # P8: the batch caps m; and a layout chosen between two pipeline depths.
    row, half = (layout(gpus=2048, t=8, p=depth, global_batch=1024, microbatch=2) for depth in (16, 8))
    state = {x.p: 175e9 * 16 / (x.t * x.p) / 1e9 for x in (row, half)}  # 16 bytes a parameter, no ZeRO
    items.append(Item(
        "P8", "2,048 GPUs, tensor-parallel *t* = 8, pipeline *p* = 16, global batch 1,024 sequences in micro-batches of 2. "
        "How many data-parallel replicas *d*, and micro-batches *m* per pipeline? Why can raising *m* not make the "
        "bubble vanish here? The model has 175B parameters, 16 bytes of state each (no ZeRO), on 80 GB GPUs: would "
        "you rather run *p* = 8? Give its *d*, *m*, 1F1B bubble and state per GPU against *p* = 16's, and choose. "
        "(Answer as (d, m, bubble, state GB, d at p = 8, m, bubble, state GB).)",
        (row.d, row.m, row.idle_total, state[16], half.d, half.m, half.idle_total, state[8]),
        f"*d* = 2048 / (8 · 16) = {row.d}; *m* = 1024 / ({row.d} · 2) = {row.m}; 1F1B's bubble is then "
        f"{row.idle_total} of all slots. *m* is fixed by the batch: raising it needs fewer replicas (slower training "
        f"per GPU added), micro-batches of one sequence, or a larger global batch, which changes the optimisation. "
        f"At *p* = 8: *d* = {half.d}, *m* = {half.m}, bubble {half.idle_total} — the shorter pipeline gains little, "
        f"because halving *p* also halves *m*. Its price: {state[8]:.4g} GB of state on each GPU against "
        f"{state[16]:.4g}, and about twice the data-parallel gradient bytes per GPU (it holds twice the parameters); "
        f"activations do not change (1F1B's GPU 0 holds *p* micro-batches of 1/*p* of the layers at either depth). "
        f"So *p* = 16: a bubble {100 * (bubble_ratio(16, row.m) - bubble_ratio(8, half.m)):.1f} points larger "
        f"buys {state[8] - state[16]:.4g} GB per GPU of headroom and about half the gradient traffic — unless that "
        f"headroom is not needed and the pipeline's hand-overs cost more than the data-parallel ones.",
        ('09.1', '14.6')))

    s = one_f_one_b(4, 8)
    items.append(Item(
        "P9", "PipeDream runs 1F1B without a flush, updating each stage after every backward. At *p* = 4, how many "
        "updates old is each GPU's weight version when a gradient computed on it is applied? (Answer per GPU.)",
        staleness(s),
        f"Between micro-batch *k*'s forward and its backward on GPU *j*, the GPU runs the backwards of the "
        f"micro-batches already in flight: min(*p* − *j*, *m*) − 1 of them: {staleness(s)}. Weight stashing keeps "
        f"one version per micro-batch in flight so that forward and backward agree; GPipe and 1F1B with a flush "
        f"have staleness 0 everywhere.",
        ('09.2',)))
    # P10: a ring all-reduce by hand, and what NCCL-tests print for it.
    ring = collectives.cost("all-reduce", 2e9, 16, LINKS["ib-400"])
    items.append(Item(
        "P10", "An all-reduce of 2 GB over 16 GPUs in a ring, each link 50 GB/s each way with α = 10 µs. Give the steps, "
        "the GB each GPU sends, the time in ms, and the busbw NCCL-tests would print in GB/s. (Answer as a 4-tuple.)",
        (ring.steps, ring.sent / 1e9, ring.seconds * 1e3, ring.busbw / 1e9),
        f"A reduce-scatter then an all-gather: 2(*n* − 1) = {ring.steps} steps, each GPU sending 2·15/16 × 2 GB = "
        f"{ring.sent / 1e9:g} GB. Time {ring.steps} × 10 µs + {ring.sent / 1e9:g} GB ÷ 50 GB/s = "
        f"{ring.seconds * 1e3:.4g} ms. algbw = 2 GB ÷ that = {ring.algbw / 1e9:.4g} GB/s; busbw multiplies by "
        f"2(*n* − 1)/*n* = 1.875: {ring.busbw / 1e9:.4g} GB/s, just under the link's 50 — the latency's share.",
        ('12.1', '12.2')))

    # P11: an MoE model's state under ZeRO beside expert parallelism.
    model = Model("MoE", layers=4, hidden=4096, vocab=32000, heads=32, gated=True, experts=64, top_k=2, expert_ffn=1408)
    per_block, used = model.layer_params()[1], model.layer_active_params()[1]
    bf16 = sharding.PRECISIONS["bf16"]
    experts_per_gpu = sum(model.layer_expert_params()) / 8
    dense = 4 * 4096 ** 2 + 4096 * 64 + 2 * 4096  # a block's attention, router and norms
    dense_zero = sharding.zero_stages(4 * dense, 8, bf16)
    items.append(Item(
        "P11", "A block of width 4,096 (attention 4·h², norms 2·h) with 64 routed SwiGLU experts of width 1,408, 2 per "
        "token, and a router (h × 64). Give its parameters, those a token uses, and the GB of bf16 mixed-precision "
        "state (16 bytes a parameter) each of 8 GPUs holds for 4 such blocks' experts under 8-way expert "
        "parallelism, without sharding. The attention, router and norms of the 4 blocks are replicated on the 8 GPUs: "
        "how many GB of their state does each hold under ZeRO-1, -2 and -3 over those 8 replicas? (Answer as (params, "
        "used, expert GB, ZeRO-1 GB, ZeRO-2 GB, ZeRO-3 GB).)",
        (per_block, used, experts_per_gpu * bf16.total / 1e9, *(z.total_gb for z in dense_zero[1:])),
        f"Attention 4 × 4096² = {4 * 4096 ** 2:,}; experts 64 × 3 × 4096 × 1408 = {64 * 3 * 4096 * 1408:,}; router "
        f"{4096 * 64:,}; norms {2 * 4096:,}: {per_block:,} in all. A token passes the attention, 2 experts, the router "
        f"and the norms: {used:,}. Each GPU holds 8 of the 64 experts of each block: "
        f"{experts_per_gpu:,.0f} parameters × 16 bytes = {experts_per_gpu * bf16.total / 1e9:.4g} GB. The rest, "
        f"Ψ = 4 × {dense:,.0f} = {4 * dense:,.0f}, is on every GPU: 2Ψ bytes of weights, 2Ψ of gradients and 12Ψ of "
        f"fp32 master weights and moments. ZeRO-1 divides the 12Ψ by 8, ZeRO-2 the gradients too, ZeRO-3 the weights "
        f"too: " + ", ".join(f"{z.total_gb:.4g} GB" for z in dense_zero[1:]) + f" (unsharded "
        f"{dense_zero[0].total_gb:.4g}).",
        ('13.1', '13.4')))

    # P12: MFU from a published throughput.
    v3 = deepseek_v3()
    items.append(Item(
        "P12", "DeepSeek-V3's report gives 180K H800 GPU hours per trillion tokens. A token costs "
        f"{v3.flops_per_token / 1e9:.0f} GFLOP of model FLOPs (three times the forward of the 37B used parameters' "
        "matrices, and attention). Give the tokens per second per GPU, the TFLOP/s that is, and the MFU against the "
        "H800's 989 TFLOP/s BF16 peak. (Answer as a triple.)",
        (v3.tokens_per_second_per_gpu, v3.achieved_tflops, v3.mfu),
        f"10¹² tokens ÷ (180,000 h × 3,600 s) = {v3.tokens_per_second_per_gpu:.4g} tokens/s per GPU. Each costs "
        f"{v3.flops_per_token / 1e9:.4g} GFLOP (three times the forward of the matrices it passes, 37B of 671B, and "
        f"the attention core): {v3.achieved_tflops:.4g} TFLOP/s, {v3.mfu:.1%} of 989. Against the FP8 peak its "
        "matrices ran at, half that.",
        ('14.3',)))
    # P13: what a step averages, with micro-batches of unequal size.
    sizes = (4, 3, 3)
    weights = tuple(Fraction(k, sum(sizes)) for k in sizes)
    items.append(Item(
        "P13", "A batch of 10 sequences is cut into micro-batches of 4, 3 and 3, each micro-batch's loss the mean over "
        "its sequences. With what weight must each micro-batch's gradient enter the update so that it equals the whole "
        "batch's, and by what factor is a plain sum of the three gradients off? (Answer as (weights, factor).)",
        (tuple(str(w) for w in weights), "none: not a multiple"),
        f"The batch's loss is the mean over its 10 sequences: Σ_k (B_k/B)·L_k, so each gradient is weighted by its "
        f"share of the sequences: {', '.join(map(str, weights))}. With equal micro-batches the plain sum is *m* times "
        f"the batch's gradient (chapter 2's erratum); here no factor fixes it: the sum weights the two small "
        f"micro-batches as much as the large one, so each of their sequences counts 4/3 times as much as one of the "
        f"first micro-batch's. Only the weights do, and they are what GPipe's accumulation must use.",
        ("02.3",)))

    # P14: tensor parallelism's collectives and bytes, with and without sequence parallelism.
    big, tp = MODELS["70b"], 8
    plain, seq = tensor.block_collectives(big, tp), tensor.block_collectives(big, tp, sequence=True)
    sent = [sum(collectives.bus_factor(c.kind, tp) * c.nbytes for c in kind) / 1e9 for kind in (plain, seq)]
    items.append(Item(
        "P14", f"Llama 2 70B's block (*h* = {big.hidden:,}, one sequence of {big.seq:,} tokens, 16-bit activations) on "
        f"*t* = {tp} GPUs of tensor parallelism. How many collectives does one block run per micro-batch, forward and "
        "backward, without and with sequence parallelism, and how many GB does each GPU send for them in a ring? "
        "(Answer as (collectives, collectives with SP, GB, GB with SP).)",
        (len(plain), len(seq), sent[0], sent[1]),
        f"Without it: an all-reduce after attention and after the MLP in the forward, and their conjugates before them "
        f"in the backward — {len(plain)}, each of the block's *s·b·h*·2 bytes = {big.hand_over_bytes / 1e6:.4g} MB, "
        f"each GPU sending 2(*t* − 1)/*t* of it: {sent[0]:.4g} GB. With it each all-reduce becomes a reduce-scatter "
        f"and an all-gather ((*t* − 1)/*t* each: the same bytes), and the backward gathers each column-parallel "
        f"layer's input again for its weight gradient, since only *s*/*t* of it was kept: {len(seq)} collectives, "
        f"{sent[1]:.4g} GB, a quarter more — the price of keeping only a *t*-th of the QKV and first MLP layers' "
        f"input, which each weight gradient must gather again (dividing the norms' and dropouts' activations is free: a "
        f"reduce-scatter and an all-gather carry an all-reduce's bytes).",
        ("12.3", "12.4")))

    # P15: ring attention's overlap, and the causal mask's balance.
    llama, h100 = MODELS["405b"], GPUS["h100-80gb"]
    nv, ib = (context.min_block_tokens(llama, h100, LINKS[name]) for name in ("nvlink", "ib-400"))
    items.append(Item(
        "P15", f"Llama 3 405B (*h* = {llama.hidden:,}, {llama.heads} query heads, {llama.kv_heads} key–value heads) "
        f"with its sequence cut over GPUs for ring attention on H100s, each achieving "
        f"{h100.flops_per_second / 1e12:.4g} TFLOP/s ({h100.efficiency:.0%} of {h100.tflops:g}), in 16 bits. Each step "
        "a GPU sends on its block's keys and values while it computes attention with the block it holds, a full "
        "block pair per step (no attention mask; leave latency out). Above how many tokens per GPU does the transfer hide, on NVLink "
        f"({LINKS['nvlink'].bandwidth / 1e9:g} GB/s each way) and on InfiniBand NDR "
        f"({LINKS['ib-400'].bandwidth / 1e9:g} GB/s each way)? And how much causal work do 4 GPUs get with "
        "contiguous blocks and with "
        "zigzag ones (in block pairs)? (Answer as (tokens NVLink, tokens InfiniBand, contiguous, zigzag).)",
        (nv, ib, context.causal_work(4), context.causal_work(4, "zigzag")),
        f"A block of *n* tokens sends 2·*n*·*w*_kv·2 bytes (keys and values, *w*_kv = {llama.kv_heads} × 128) and "
        f"computes 4·*n*²·*h* FLOPs: the transfer hides when *n* ≥ *F*·*w*_kv·2/(2·*h*·*B*) — {nv:,.0f} tokens on "
        f"NVLink, {ib:,.0f} on InfiniBand. Grouped-query attention divides it by {llama.heads // (llama.kv_heads or llama.heads)}, "
        f"the ratio of heads to key–value heads. Under the causal mask contiguous blocks give the last GPU "
        f"{context.causal_work(4)[-1]} block pairs and the first {context.causal_work(4)[0]}; zigzag pairs a piece "
        f"from each end on every GPU: {context.causal_work(4, 'zigzag')[0]} each.",
        ("12.5",)))

    # P16: an expert's capacity, and what a factor drops and pads, on loads given as data (a hand-sized router).
    tokens, n_experts, top_k = 40, 8, 2
    load = experts.route(tokens, n_experts, top_k, skew=0.8, seed=0)
    trade = experts.capacity_trade(load, top_k, (1.0, 1.25, 2.0))
    even = tokens * top_k / n_experts
    no_drop = experts.capacity_trade(load, top_k, (max(load) / even,))[0]
    items.append(Item(
        "P16", f"A batch of {tokens} tokens, each routed to {top_k} of {n_experts} experts; the experts receive "
        f"{', '.join(map(str, load))} token copies. Give an expert's capacity at factors 1.0, 1.25 and 2.0, the share "
        "of token copies dropped at 1.0 and at 1.25, the share of buffer slots computed on padding at 2.0, and the "
        "least factor that drops nothing, with its padding share. (Answer as (capacities, dropped 1.0, dropped 1.25, "
        "padding 2.0, factor, its padding).)",
        (tuple(r.capacity for r in trade), trade[0].dropped, trade[1].dropped, trade[2].padding, max(load) / even,
         no_drop.padding),
        f"An even share is *T*·*k*/*E* = {tokens} × {top_k} / {n_experts} = {even:g} copies; capacity "
        f"⌈*f* × {even:g}⌉ = {', '.join(str(r.capacity) for r in trade)}. Copies above an expert's capacity are "
        f"dropped: at {trade[0].capacity} the experts over it lose "
        f"{' + '.join(str(x - trade[0].capacity) for x in load if x > trade[0].capacity)} of the {sum(load)} copies, "
        f"{trade[0].dropped:.2%}; at {trade[1].capacity}, "
        f"{' + '.join(str(x - trade[1].capacity) for x in load if x > trade[1].capacity)}: {trade[1].dropped:.2%}. At "
        f"2.0 nothing is dropped, but 1 − {sum(load)}/({n_experts} × {trade[2].capacity}) = {trade[2].padding:.0%} of "
        f"the buffers are padding, paid whether the slots are filled or not. The least factor that drops nothing "
        f"makes the capacity the busiest expert's {max(load)}: {max(load)}/{even:g} = {max(load) / even:g}, padding "
        f"1 − {sum(load)}/({n_experts} × {max(load)}) = {no_drop.padding:.1%} — the skew decides it, not the mean.",
        ("13.2",)))

    # P17: FSDP2 with and without resharding after the forward; gathers beside a pipeline.
    bf16 = sharding.PRECISIONS["bf16"]
    once, kept = (sharding.fsdp_step([1e9] * 8, 8, bf16, reshard_after_forward=r) for r in (True, False))
    unit_weights, unit_grads = 1e9 * bf16.weights, 1e9 * bf16.grads
    held = [round((x.gathered_at_peak - unit_grads) / unit_weights) for x in (once, kept)]  # one unit's gradient too
    again = [sharding.regathers(build(name, 4, 16, 2))[0] for name in ("interleaved", "looped-bfs")]
    order = build("interleaved", 4, 16, 2).stages[0]
    runs = [len(list(ops)) for _, ops in groupby(order, key=lambda op: op.chunk)]
    items.append(Item(
        "P17", "FSDP2 over 8 GPUs, 8 units of 1B parameters each in bf16. How many all-gathers does a step run with "
        "the default (reshard after the forward) and without it, how much do they send relative to each other, and "
        "how many units' weights does the second hold at its peak? Then beside a pipeline of 4 GPUs with 2 chunks each "
        "and 16 micro-batches: how often must GPU 0 gather a chunk per step under interleaved 1F1B and under looped "
        "BFS? (Answer as (gathers, gathers kept, traffic ratio, units held kept, interleaved, looped BFS).)",
        (once.gathers, kept.gathers, kept.sent / once.sent, held[1], again[0], again[1]),
        f"Resharding after the forward gathers each unit twice, for its forward and its backward: {once.gathers}; "
        f"keeping the weights gathers each once: {kept.gathers}, and sends {kept.sent / once.sent:.3g} of the bytes "
        f"(2Ψ instead of 3Ψ), but holds every unit's weights from its forward to its backward: at its peak, the first "
        f"backward, all {held[1]} units' bf16 weights ({held[1] * unit_weights / 1e9:.3g} GB) plus the gradient of "
        f"the unit being reduced ({unit_grads / 1e9:.3g} GB): {kept.gathered_at_peak / 1e9:.3g} GB, against "
        f"{once.gathered_at_peak / 1e9:.3g} GB ({held[0]} units' weights and one gradient) when resharding. Beside "
        f"a pipeline a sharded chunk is gathered each time the GPU turns to it. Interleaved 1F1B's GPU 0 runs its "
        f"{len(order)} operations in {len(runs)} runs of one chunk: groups of up to *p* forwards at the start, then "
        f"runs of up to "
        f"{max(runs)} (forwards and backwards alternating) split by single operations of the other chunk — "
        f"{again[0]} gathers. Looped BFS runs every micro-batch through one chunk "
        f"first ({again[1]}).",
        ("13.5", "13.6")))

    # P18: Llama 3's Table 4, second row: its groups, its micro-batches, its bubble without interleaving.
    printed = LLAMA3_TABLE4[1]
    groups = printed.gpus // (printed.tp * printed.cp * printed.pp)
    sequences = int(printed.tokens_per_batch // printed.seq)
    m = sequences // groups
    items.append(Item(
        "P18", f"Llama 3 405B's Table 4, second printed: {printed.gpus:,} GPUs, TP {printed.tp}, CP {printed.cp}, PP {printed.pp}, "
        f"{printed.tokens_per_batch / 2 ** 20:.0f}M tokens a batch of sequences of {printed.seq:,}. How many data-parallel "
        "groups, how many micro-batches of one sequence per pipeline, and what would plain 1F1B's bubble (idle ÷ "
        "total) be there? If its kernels ran at 50 % of peak while busy and nothing else were lost, what MFU would "
        "that bubble leave, and what with interleaving over *v* = 2 chunks? (Answer as (groups, m, bubble, MFU, MFU "
        "with v = 2).)",
        (groups, m, _frac(bubble_ratio(printed.pp, m)), 0.5 * (1 - bubble_ratio(printed.pp, m)),
         0.5 * (1 - bubble_ratio(printed.pp, m, 2))),
        f"{printed.gpus:,} / ({printed.tp} × {printed.cp} × {printed.pp}) = {groups} groups, as the table prints. "
        f"{printed.tokens_per_batch / 2 ** 20:.0f}M / {printed.seq:,} = {sequences:,} sequences, {m} per group: *m* = {m} = "
        f"*p*, where 1F1B idles (*p* − 1)/(*m* + *p* − 1) = {_frac(bubble_ratio(printed.pp, m))} of the time. Hence "
        f"Llama 3's interleaving (it divides the bubble by *v*), and its care over a schedule that runs *m* = *p*. "
        f"MFU is the kernels' share of peak times the share of the step they run: 0.5 × (1 − "
        f"{_frac(bubble_ratio(printed.pp, m))}) = {0.5 * (1 - bubble_ratio(printed.pp, m)):.3g}; with *v* = 2 the "
        f"bubble is (*p* − 1)/(*vm* + *p* − 1) = {_frac(bubble_ratio(printed.pp, m, 2))} and MFU "
        f"{0.5 * (1 - bubble_ratio(printed.pp, m, 2)):.3g} — before communication, recomputation and imbalance take "
        "their own shares.",
        ("14.2", "14.1")))

    # P19: failures at scale, checkpoints and goodput; and what a bigger batch buys.
    mtbf = reliability.job_mtbf_s(4096, 419, 54, 16384)
    tau = reliability.young_daly(60, mtbf)
    good = reliability.goodput(tau, 60, mtbf, 600)
    rows = steps_and_examples(1024, (256, 4096))
    items.append(Item(
        "P19", "Llama 3 saw 419 interruptions in 54 days on 16,384 GPUs. For a job on 4,096 GPUs: its MTBF in hours, "
        "the Young–Daly checkpoint interval in minutes for 60-second checkpoints, and the goodput with 10-minute "
        "restarts. Then for a gradient noise scale of 1,024 examples: the steps and examples a batch of 256 and one of "
        "4,096 need, relative to the least. (Answer as (MTBF h, interval min, goodput, steps 256, examples 4096).)",
        (mtbf / 3600, tau / 60, good, rows[0].steps_over_min, rows[1].examples_over_min),
        f"Each GPU fails once every 54 d × 16,384 / 419; a job of 4,096 GPUs fails 4,096 times as often as one GPU: "
        f"MTBF {mtbf / 3600:.3g} h. √(2 × 60 s × MTBF) = {tau / 60:.3g} min. Goodput 1 − *C*/τ − (τ/2 + *R*)/MTBF "
        f"= {good:.3f}: at the Young–Daly interval the checkpoints and the work lost since the last one cost the same, "
        f"{60 / tau:.1%} each, the restarts {600 / mtbf:.1%}. Batch size: *S*/*S*_min = 1 + 1024/256 = {rows[0].steps_over_min:g} — "
        f"five times the fewest steps; *E*/*E*_min = 1 + 4096/1024 = {rows[1].examples_over_min:g} — five times the fewest "
        f"examples: past the noise scale a bigger batch buys few steps for many examples.",
        ("14.4", "14.5")))

    # P20: how far a token's copies travel, with and without node-limited routing. Under the limit the token's 6
    # experts are drawn among the 24 of its 3 nodes, so they may miss one: ps7 Q5d's average, not nodes_crossed's bound.
    nodes, per_node, top_k, allowed = 8, 8, 6, 3
    free = experts.nodes_crossed(nodes * per_node, top_k, nodes)
    bound = experts.nodes_crossed(nodes * per_node, top_k, nodes, limit=allowed)
    miss = comb((allowed - 1) * per_node, top_k) / comb(allowed * per_node, top_k)
    limited = (nodes - 1) / nodes * allowed * (1 - miss)
    items.append(Item(
        "P20", "64 routed experts spread evenly over 8 nodes, each token sent to 6 distinct experts chosen as if at "
        "random. How many other nodes do a token's copies reach on average? With routing limited to 3 nodes per token "
        "(the 3 chosen as if at random, the 6 experts then at random among those nodes' 24), how many on average? By "
        "what factor does the limit cut the bytes a token's dispatch sends over InfiniBand? "
        "(Answer as (nodes, nodes limited, factor).)",
        (free, limited, free / limited),
        f"A node holds 8 of the 64 experts; it is missed by all 6 choices with chance C(56, 6)/C(64, 6), so each of the "
        f"7 other nodes is reached with chance 1 − that: {free:.4g} other nodes on average. Limited to 3 nodes, the "
        f"token's own among them with chance 3/8, and the 6 experts miss one of the 3 nodes with chance "
        f"C(16, 6)/C(24, 6) = {miss:.3g}: 3 × (1 − {miss:.3g}) × 7/8 = {limited:.4g} other nodes (at most "
        f"3 × 7/8 = {bound:g}). A copy crosses InfiniBand once per other node reached (it is forwarded within the "
        f"node over NVLink), so the limit cuts the dispatch's InfiniBand bytes {free / limited:.3g} times — less than "
        f"the 6 copies against 3 nodes suggests.",
        ("13.3",)))
    items += [_p21(), _p22(), _p23(), _p24(), _p25(), _p26(), _p27()]
    return tuple(items)


def _p21() -> Item:
    # P21: a GPU slow at its backward only: the two lower bounds no order beats, what 1F1B loses, and how far ahead
    # the slow GPU must run its forwards for an order to reach the bound.
    p, m, s, k, f, b = 5, 8, 2, 3, 1, 2
    slow = Costs(f=f, b=tuple(k * b if j == s else b for j in range(p)))
    work = s * (f + b) + m * (f + k * b)
    trip = p * f + (p - 1) * b + m * k * b
    above = (p - 1 - s) * (f + b)  # micro-batch 0's trip above the slow GPU, which it must fill with forwards
    ahead = min(m, 1 + -(-above // f))
    best = simulate(with_warmups([m - 1] * s + [ahead - 1] + [p - 1 - j for j in range(s + 1, p)], m), slow)
    plain = simulate(one_f_one_b(p, m), slow)
    return Item(
        "P21", f"*p* = {p} GPUs, one stage each, *m* = {m} micro-batches, whole backwards; every forward takes {f}, "
        f"every backward {b} except on GPU {s} (from 0), whose backward takes {k * b}: its forward is as fast as the "
        "others'. Give the lower bound on the makespan that GPU 2's own work sets (with what must run before and after "
        "it), the one micro-batch 0's round trip sets, 1F1B's makespan and how long GPU 2 idles under it, and the "
        "fewest forwards GPU 2 can run before its first backward in an order that reaches the larger bound. (Answer "
        "as (work bound, trip bound, 1F1B's makespan, GPU 2's idle under 1F1B, fewest forwards).)",
        (work, trip, plain.makespan, plain.makespan - plain.busy_per_stage[s], ahead),
        f"*Its work*: GPU {s} starts once micro-batch 0 has passed the {s} GPUs below it ({s * f}), then runs {m} "
        f"forwards of {f} and {m} backwards of {k * b}, {m * (f + k * b)}, and its last gradient still crosses the "
        f"{s} GPUs below ({s * b}): {work}. *The trip*: micro-batch 0's forward climbs all {p} GPUs ({p * f}), its "
        f"gradient comes down the {p - 1 - s} above GPU {s} ({(p - 1 - s) * b}), then GPU {s} runs its {m} "
        f"backwards ({m * k * b}) and the last gradient crosses the {s} below ({s * b}): {trip}. The larger, "
        f"{max(work, trip)}, is the best any order can do, and reaching it leaves GPU {s} no idle between its first "
        f"forward and its last backward. 1F1B "
        f"takes {plain.makespan:g}: GPU {s} runs its {p - s} forwards and then waits for micro-batch 0's gradient; "
        f"it idles {plain.makespan - plain.busy_per_stage[s]:g}, the {s * f} before its first forward and the "
        f"{s * b} after its last backward that every order pays, and {plain.makespan - max(work, trip):g} more "
        f"while micro-batch 0 is above it. To wait for nothing, it must be running forwards during the whole trip "
        f"above it, {p - 1 - s} × ({f} + {b}) = {above} (no gradient reaches it before micro-batch 0's), after its "
        f"first: {ahead} forwards before its first backward at least, fed by the GPUs below. With GPUs 0 … {s - 1} "
        f"running every forward first and the GPUs above as in 1F1B, the simulator gives {best.makespan:g}. Fewer "
        f"forwards leave GPU {s} idle, and every unit it idles there adds one to the makespan.",
        ("05.5", "10.5"))


def _p22() -> Item:
    # P22: blocking sends under an order with an uneven warm-up, where ordering the sends of an exchange is no cure.
    p, m, warm = 4, 6, (3, 2, 2, 0)
    order = with_warmups(list(warm), m)
    stuck = _blocking(order)
    cycle = tuple(j for j, (_, to, _), _ in stuck if any(k == to and dst == j for k, (_, dst, _), _ in stuck))
    at = {j: message for j, (_, _, message), _ in stuck}
    parity, upper = (_blocking(order, rule) for rule in (lambda j, k: j % 2 == 0, lambda j, k: j > k))
    wide = next(j for j in range(p - 1) if warm[j] - warm[j + 1] > 1)
    return Item(
        "P22", f"{p} processes run, at *m* = {m}, the order whose warm-ups (forwards before the steady state, 1F1B's "
        f"*p* − *j* − 1) are {warm}: the simulator runs it in {simulate(order).makespan:g}. Every activation and "
        "gradient goes by a blocking send, one that returns only once the receiver has posted the matching receive; "
        "each process receives an operation's input, computes, then sends its output, in its order. Which two "
        "processes wait on each other first, each sending what? Wherever two neighbours must send to each other and "
        "then receive, (i) the even-numbered one sends first, the odd one receives first; (ii) the one higher in the "
        "pipeline sends first. Does either let the step finish, and why? What must hold between neighbours' warm-ups "
        "for such a rule to be enough? (Answer as (the pair, finishes with (i), finishes with (ii), the largest "
        "warm-up difference w(j) − w(j + 1) any two neighbours may have).)",
        (cycle, not parity, not upper, 1),
        f"GPU {p - 1} runs F0 and at once B0, and sends B0's gradient down; GPU {p - 2}, with {warm[p - 2]} warm-up "
        f"forwards to run, has run F{at[p - 2][1]} and is sending that activation up. Each blocking send waits for "
        f"a receive the other side posts only after its own send returns: GPUs {cycle[0]} and {cycle[1]} wait on "
        "each other forever, and the GPUs below stop behind them, "
        + ", ".join(f"GPU {j} sending F{at[j][1]} up" for j in range(p - 2)) +
        f". Neither rule helps: each reorders a send and the receive that follows it from the same neighbour, and "
        f"GPU {wide}'s next receive after its send up is F{at[wide][1] + 1}'s input from GPU {wide - 1} — it warms up "
        f"{warm[wide] - warm[wide + 1]} forwards more than GPU {wide + 1}, so it still has forwards to pass up "
        f"when the first gradient comes down. There is no exchange on that link to reorder, and both rules leave the "
        "order stuck where it was. A rule of this kind is enough exactly when no GPU warms up more than one forward "
        "beyond the GPU above it (checked over every order of this kind the simulator runs, *p* up to 5, *m* up to "
        f"7): here GPU {wide} at {warm[wide + 1] + 1}, or GPU {wide + 1} at {warm[wide] - 1}. "
        "Otherwise only sends that do not wait for their receiver (isend and irecv) finish it.",
        ("11.3",))


def _p23() -> Item:
    # P23: a Llama-style block's activations, part by part, and what recomputation buys and pays.
    block = Model("Llama-style", layers=1, hidden=5120, vocab=32000, seq=4096, microbatch=2, heads=40, kv_heads=8,
                  ffn=13824, gated=True)
    parts, kept = block.block_activations("none"), block.block_activations("full")
    (_, plain_b), (_, full_b) = (block.layer_backward_flops(mode)[0][:2] for mode in ("none", "full"))
    forward = block.layer_flops()[1]
    return Item(
        "P23", "A Llama-style block: width *h* = 5,120, 40 query heads and 8 key–value heads of 128, a SwiGLU MLP of "
        "width 13,824, RMSNorm, no dropout, FlashAttention, bf16, micro-batches of 2 sequences of 4,096 tokens. How "
        "many GB does it keep for its backward with no recomputation (part by part), with selective recomputation of "
        "the attention core, and with full recomputation; and what does full recomputation add to the block's "
        "backward in FLOPs (as a share of its forward) and in transient memory? (Answer as (GB none, GB selective, GB "
        "full, extra FLOPs ÷ forward, transient GB).)",
        (sum(parts.values()) / 1e9, sum(block.block_activations("selective").values()) / 1e9,
         sum(kept.values()) / 1e9, (full_b - plain_b) / forward, block.recompute_transient_bytes("full") / 1e9),
        f"In units of *sbh* = {block.tokens * block.hidden / 1e6:.4g} M values (2 bytes each): "
        + "; ".join(f"{name} {v / 1e9:.4g} GB" for name, v in parts.items() if v) +
        f": {sum(parts.values()) / 1e9:.4g} GB. The two norms' inputs are 2 *sbh* each; keys and values are a fifth of "
        "the queries (8 of 40 heads); SwiGLU keeps its gate, its up projection and their product (3 × 13,824 wide); "
        "no dropout, no masks; FlashAttention keeps one fp32 statistic per query and head instead of the *s* × *s* "
        "scores. Selective recomputation drops what the attention core keeps beyond that — with FlashAttention "
        "nothing — so it keeps the same bytes and runs no more FLOPs. Full recomputation keeps the block's input "
        f"alone, 2 *sbh* = {sum(kept.values()) / 1e9:.4g} GB, and runs the block's forward again inside its backward: "
        f"{(full_b - plain_b) / forward:.0%} of the forward's FLOPs more, and while it does, the block's "
        f"{block.recompute_transient_bytes('full') / 1e9:.4g} GB are there again (one block at a time).",
        ("08.1", "08.2"))


def _p24() -> Item:
    # P24: ZB-H1 where W is longer than F: which chain of passes sets the idle (ps4 Q1 asks for every cost).
    p, m, F, B, W = 5, 10, 1, 3.5, 1.25
    h1 = simulate(zero_bubble_h1(p, m), Costs(f=F, b=B - W, w=W))
    h1_idle = max(h1.makespan - x for x in h1.busy_per_stage)
    passes = {"forward": F, "input-gradient": B - W, "weight-gradient": W}
    setter = next(name for name, x in passes.items() if (p - 1) * x == h1_idle)
    return Item(
        "P24", f"ZB-H1 at *p* = {p}, *m* = {m}: a forward takes *F* = {F}, a full backward *B* = {B}, of which the "
        f"weight-gradient pass *W* = {W}. What does DeepSeek's ZB1P formula (*p* − 1)(*F* + *B* − 2*W*) give, what "
        "does each GPU idle (simulate it), which pass, repeated *p* − 1 times in a chain nothing can fill, gives that "
        "idle, and up to which *W* (*F* and *B* as they are) does the formula hold? (Answer as (formula, idle, pass, "
        "largest W).)",
        ((p - 1) * (F + B - 2 * W), h1_idle, setter, min(F, B / 2)),
        f"The formula books {p - 1} × ({F:g} + {B:g} − {2 * W:g}) = {(p - 1) * (F + B - 2 * W):g}; the simulator "
        f"idles each GPU {h1_idle:g} = {p - 1} × {passes[setter]:g}, the step less each GPU's *m*(*F* + *B*) of "
        f"work. That is a chain of *p* − 1 = {p - 1} {setter} passes (*B* − *W* = {B - W:g} each): micro-batch 0's "
        f"gradient coming down from the last GPU to GPU 0, which has nothing left to run while it waits. The formula "
        f"holds where chapter 6b says, *W* ≤ min(*F*, *B* − *W*): here up to *W* = min(*F*, *B*/2) = {min(F, B / 2):g}. "
        f"Why, and what each GPU idles for every cost, is problem set 4's question 1.",
        ("06b.2",))


def _p25() -> Item:
    # P25: a vendor's bubble figure read under both definitions.
    p, v, claim = 5, 2, Fraction(1, 16)
    megatron = next(m for m in range(1, 1000) if Fraction(p - 1, v * m) == claim)
    textbook = next(m for m in range(1, 1000) if Fraction(p - 1, v * m + p - 1) == claim)
    runs = {m: simulate(interleaved_1f1b(p, m, v)) for m in (megatron, textbook)}
    return Item(
        "P25", f"A vendor's slide says interleaved 1F1B with *v* = {v} chunks per GPU \"has a {float(claim):.2%} "
        f"bubble\" on a {p}-stage pipeline, every chunk's forward and backward equally long. How many micro-batches "
        "does that mean if the figure is Megatron-LM's bubble time ÷ ideal time, and if it is the textbook's idle ÷ "
        "total slots? What would each of those two runs show under the other definition? (Answer as (m Megatron-LM, "
        "m textbook, the first run's idle ÷ total, the second's bubble ÷ ideal).)",
        (megatron, textbook, _frac(runs[megatron].bubble_ratio), _frac(runs[textbook].bubble_over_ideal)),
        f"Megatron-LM's (*p* − 1)/(*vm*) = 1/16 gives *m* = 16 × {p - 1}/{v} = {megatron}; the textbook's "
        f"(*p* − 1)/(*vm* + *p* − 1) = 1/16 gives *vm* + {p - 1} = {16 * (p - 1)}, *m* = {textbook}. The same run "
        f"reads lower as idle ÷ total than as bubble ÷ ideal (the total includes the idle): at *m* = {megatron}, "
        f"*r*/(1 + *r*) = {_frac(runs[megatron].bubble_ratio)} ({runs[megatron].bubble_ratio:.2%}); at *m* = "
        f"{textbook}, *r*/(1 − *r*) = {_frac(runs[textbook].bubble_over_ideal)} "
        f"({runs[textbook].bubble_over_ideal:.2%}) — simulated. A figure without its definition leaves *m* uncertain "
        "by a few micro-batches, and a comparison of two vendors meaningless until both are on one definition.",
        ("01.3", "04.3"))


def _p26() -> Item:
    # P26: a ring all-reduce from messages, and DDP's buckets for one model and cap.
    n, vector = 6, 96e6
    ring6 = collectives.cost("all-reduce", vector, n, LINKS["nvlink"])
    width, layers, cap = 1024, 6, 10 * 2 ** 20
    sizes = [(width * width + width) * 4] * layers  # fp32 weights and biases, layer by layer
    buckets: list[list[int]] = [[]]
    held = 0
    for i in reversed(range(layers)):  # gradients ready from the last layer back; a bucket closes at the cap
        buckets[-1].append(i + 1)
        held += sizes[i]
        if held >= cap and i:
            buckets.append([])
            held = 0
    return Item(
        "P26", f"(a) You write a ring all-reduce from point-to-point messages for {n} ranks and a gradient of "
        f"{vector / 1e6:g} MB: how many messages does each rank send, how many MB in each, and how many MB in all? "
        f"(b) DDP trains an MLP of {layers} layers of {width:,} × {width:,} (fp32 weights and biases) with every "
        f"bucket's cap, the first's included, {cap // 2 ** 20} MiB. How many all-reduces does it launch in its "
        "first step and in every later one, and which layers share a bucket? (Answer as (messages, MB each, MB "
        "in all, first step, later steps, buckets).)",
        (ring6.steps, vector / n / 1e6, ring6.sent / 1e6, 1, len(buckets), tuple(map(tuple, buckets))),
        f"The vector is cut into {n} pieces of {vector / n / 1e6:g} MB. Reduce-scatter: in *n* − 1 = {n - 1} steps "
        f"each rank sends one piece to the next and adds the piece it receives; all-gather: {n - 1} more steps pass "
        f"the finished pieces round. {ring6.steps} messages of {vector / n / 1e6:g} MB, "
        f"2(*n* − 1)/*n* × {vector / 1e6:g} = {ring6.sent / 1e6:g} MB per rank, less than twice the vector "
        f"at any *n*. DDP's first step all-reduces every gradient as one bucket (it records the "
        f"order in which they become ready); then it rebuilds its buckets in that order — for an MLP the last layer "
        f"first — closing each once it holds at least the cap: a layer is "
        f"{sizes[0] / 2 ** 20:.4g} MiB, so a bucket closes once {-(-cap // sizes[0])} layers are in: "
        + ", ".join("layers " + "+".join(map(str, x)) for x in buckets) +
        f", {len(buckets)} all-reduces a step, each launched as soon as its last gradient is in, while the backward "
        "still runs below it.",
        ("15.2", "15.3"))


def _p27() -> Item:
    # P27: micro-batches under a memory budget when every pass has a fixed overhead.
    p, batch, f, bw, overhead, act = 4, 48, 1, 2, 0.5, 1
    plans = {}
    for m in (m for m in range(1, batch + 1) if batch % m == 0):
        s = batch // m
        t = simulate(one_f_one_b(p, m), Costs(f=overhead + s * f, b=overhead + s * bw))
        plans[m] = (t.makespan, max(t.peak_activations) * s * act)
    gpipe_gb = max(simulate(gpipe(p, 4)).peak_activations) * (batch // 4) * act
    chosen = {room: min((t, m) for m, (t, gb) in plans.items() if gb <= room) for room in (30, 6)}
    return Item(
        "P27", f"1F1B on *p* = {p} GPUs, a batch of {batch} samples cut into *m* micro-batches of {batch}/*m* (*m* "
        f"dividing {batch}). A forward costs {overhead} (its launch and hand-over, whatever its size) plus {f} per "
        f"sample; a backward {overhead} plus {bw} per sample. A sample's activations take {act} GB on a GPU from its "
        "forward to its backward. Which *m* gives the shortest step when each GPU has room for 30 GB of "
        "activations, and which when it has 6 GB, with their makespans? Could GPipe run under 30 GB? (Answer as "
        "(m at 30 GB, makespan, m at 6 GB, makespan, GPipe's GB).)",
        (chosen[30][1], chosen[30][0], chosen[6][1], chosen[6][0], gpipe_gb),
        f"1F1B's makespan is (*m* + *p* − 1)(*F* + *B*) with *F* + *B* = {2 * overhead:g} + {f + bw}·{batch}/*m*: "
        + ", ".join(f"*m* = {m}: {t:g}" for m, (t, _) in plans.items()) +
        f". More micro-batches shrink the bubble but pay the overhead {2 * overhead:g} once more each (the "
        f"continuous optimum is *m* = √({p - 1}·{(f + bw) * batch}/{2 * overhead:g}) ≈ "
        f"{((p - 1) * (f + bw) * batch / (2 * overhead)) ** 0.5:.1f}). GPU 0 holds min(*p*, *m*) micro-batches of "
        f"{batch}/*m* samples: " + ", ".join(f"{gb:g} GB at *m* = {m}" for m, (_, gb) in plans.items()) +
        f". Under 30 GB the fastest that fits is *m* = {chosen[30][1]} ({chosen[30][0]:g}); under 6 GB memory "
        f"forces *m* = {chosen[6][1]} ({chosen[6][0]:g}), the overhead paid in time. GPipe keeps every micro-batch "
        f"until its backward: all {batch} samples, {gpipe_gb:g} GB at any *m* — it fits neither budget.",
        ("10.3", "02.4"))


def _blocking(schedule: Schedule,
              sends_first: Callable[[int, int], bool] | None = None) -> list[tuple[int, tuple, float]]:
    """Where each process of ``schedule`` (one stage per GPU, forwards and whole backwards: a W would be read as
    sending a gradient) stops when every send blocks until the receiver has posted its receive: per stuck GPU, its
    action (``("send" | "recv", peer, (kind, micro-batch))``) and the time it got there (each operation one unit);
    empty if the step finishes. With ``sends_first(j, k)``, GPU ``j`` sends before it receives wherever it and its
    neighbour ``k`` would each send to the other and then receive."""
    p, programs = schedule.p, []
    for j, ops in enumerate(schedule.stages):
        acts: list[tuple] = []
        for op in ops:
            source, target = (j - 1, j + 1) if op.kind == "F" else (j + 1, j - 1)
            acts += [("recv", source, (op.kind, op.microbatch))] if 0 <= source < p else []
            acts += [("run", j, op)] + ([("send", target, (op.kind, op.microbatch))] if 0 <= target < p else [])
        programs.append(acts)
    if sends_first:
        exchanges = [{(a[1], a[2], b[2]) for a, b in zip(acts, acts[1:]) if (a[0], b[0]) == ("send", "recv")
                      and a[1] == b[1]} for acts in programs]
        for j, acts in enumerate(programs):
            for i, (a, b) in enumerate(zip(acts, acts[1:])):
                if (a[0], b[0]) == ("send", "recv") and (j, b[2], a[2]) in exchanges[a[1]] and not sends_first(j, a[1]):
                    acts[i], acts[i + 1] = b, a
    at, clock, moved = [0] * p, [0.0] * p, True
    while moved:
        moved = False
        for j in range(p):
            while at[j] < len(programs[j]):
                kind, k, what = programs[j][at[j]]
                if kind == "run":
                    clock[j], at[j], moved = clock[j] + 1, at[j] + 1, True
                elif at[k] < len(programs[k]) and programs[k][at[k]] == ("recv" if kind == "send" else "send", j, what):
                    clock[j] = clock[k] = max(clock[j], clock[k])  # a rendezvous: both move on together
                    at[j], at[k], moved = at[j] + 1, at[k] + 1, True
                else:
                    break
    return [(j, programs[j][at[j]], clock[j]) for j in range(p) if at[j] < len(programs[j])]


def self_check_answers() -> tuple[Item, ...]:
    """Written answers to the self-check questions of every chapter (the two labs' excepted where a question reads
    a run of the lab: their answers are what the run printed, and the reasoning is given here)."""
    unit = Costs(f=1, b=1)
    g32, g44 = simulate(gpipe(3, 2), unit), simulate(gpipe(4, 4), unit)
    o44 = simulate(one_f_one_b(4, 4), unit)
    i22 = simulate(interleaved_1f1b(2, 2, 2), unit)
    d48 = simulate(dualpipe(4, 8), EQUAL)
    zb = simulate(zero_bubble_h1(4, 8), Costs(f=1, b=1, w=1))
    full = simulate(one_f_one_b(4, 8), Costs(f=1, b=1, w=1))  # its backward runs b + w in one
    g416, o48, g48 = simulate(gpipe(4, 16)), simulate(one_f_one_b(4, 8)), simulate(gpipe(4, 8))
    chunks = [c + 1 for c, s in enumerate(interleaved_1f1b(4, 8, 2).placement[0]) if s == 1]
    o_peaks = simulate(one_f_one_b(4, 8)).peak_activations
    row = layout(gpus=1024, t=8, p=8, global_batch=512)
    trade = recomputation.trade(MODELS["7b"], Cluster(GPUS["a100-80gb"], 4, LINKS["nvlink"]), m=16)
    slowdown = next(r.slowdown for r in trade if (r.schedule, r.recompute) == ("1f1b", "full"))
    zb_row = deepseek_table(8, 20, Costs(f=1, b=2, w=1))[1]
    dp_off = {x / 4: deepseek_table(8, 20, Costs(f=1, b=2, w=1, fb=x / 4))[2] for x in range(4, 33)}  # b ≠ f
    dp_on = {(p, x / 4): deepseek_table(p, 20, Costs(f=2, b=2, w=1, fb=x / 4))[2]  # f = b = B − W: F = 2, B = 3, W = 1
             for p in (6, 8) for x in range(6, 29)}
    agree = {x for (_, x), r in dp_on.items() if r.formula_bubble == r.simulated_bubble}
    held = sorted(x for x in agree if all(dp_on[p, x].formula_bubble == dp_on[p, x].simulated_bubble for p in (6, 8)))
    first, off_on = (1, 2, 3, 4), [(x, dp_on[8, x]) for x in (2.5, 5.5)]
    by_link = interleaving_by_link(MODELS["7b"], Cluster(GPUS["h100-80gb"], 4, LINKS["pcie-gen4"]), m=8)
    slow_link = next(link.name for link, one, inter in by_link if one < inter)
    front = [x.schedule for x in frontier(4, 8)]
    arguments = bound_arguments(4, 8, Costs(f=1, b=1, w=1, fb=1))
    llama, base = MODELS["70b"], Parallel(t=4, d=4, sequence=True)
    zero = {z: plan(llama, Cluster(GPUS["h100-80gb"], 8, LINKS["nvlink"]), [32], ["1f1b"], recompute="none",
                    parallel=replace(base, zero=z))[0] for z in (0, 1, 2, 3)}
    best_zero = min(zero, key=lambda z: (-round(zero[z].mfu, 6), z))
    volumes = zero[0].traffic[1].gigabytes()
    loudest = max(volumes, key=lambda kind: volumes[kind])
    edge = collectives.crossover(64, LINKS["ib-400"])
    sp, sp4 = (tensor.block_collectives(llama, t, sequence=True) for t in (8, base.t))
    zero3 = sharding.zero_stages(7.5e9, 64, sharding.PRECISIONS["bf16"])[3]
    fsdp8 = sharding.fsdp_step([1.0] * 8, 2, sharding.PRECISIONS["bf16"])
    third = LLAMA3_TABLE4[2]
    groups = third.gpus // (third.tp * third.cp * third.pp)
    return (
        Item("Chapter 1, question 1", "Count GPipe's grid at *p* = 3, *m* = 2 (*f* = *b* = 1): total slots, idle "
             "slots, bubble ratio.", (g32.total_slots, g32.idle_slots, _frac(g32.bubble_ratio)),
             f"*T* = 2(*m* + *p* − 1) = {g32.makespan:g} steps, so {g32.total_slots:g} slots; {g32.busy_slots:g} are "
             f"busy (3 GPUs × 2 micro-batches × F and B), {g32.idle_slots:g} idle, ratio {_frac(g32.bubble_ratio)} = "
             f"(*p* − 1)/(*m* + *p* − 1). Count both halves of the grid: the warm-up's dots and the cooldown's."),
        Item("Chapter 1, question 2", "Build a schedule for *p* = 2, *m* = 2 in as few steps as possible.",
             simulate(gpipe(2, 2), unit).makespan,
             f"No schedule beats 2(*m* + *p* − 1) = {simulate(gpipe(2, 2), unit).makespan:g} steps: GPU 1 cannot "
             f"start before step 2, has 4 ops, and its last backward must still run on GPU 0. GPipe's and 1F1B's "
             f"orders both reach it."),
        Item("Chapter 2, question 1", "Count GPipe's grid at *p* = 4, *m* = 4.",
             (g44.total_slots, g44.idle_slots, _frac(g44.bubble_ratio)),
             f"*T* = {g44.makespan:g}, {g44.total_slots:g} slots, {g44.busy_slots:g} busy, {g44.idle_slots:g} idle, "
             f"ratio {_frac(g44.bubble_ratio)} — not the textbook's 11, 44, 18 (practice question P4 shows why)."),
        Item("Chapter 2, question 2", "GPU 0's peak activations under GPipe, *p* = 4, *m* = 16.",
             g416.peak_activations[0],
             f"All {g416.peak_activations[0]}: GPU 0 runs every forward before its first backward."),
        Item("Chapter 3, question 1", "Mark 1F1B's idle cells at *p* = 4, *m* = 4.", o44.idle_slots,
             f"{o44.idle_slots:g} idle cells, as many as GPipe's: 1F1B moves work, not the bubble, on equally fast stages with free hand-overs."),
        Item("Chapter 3, question 2", "What does 1F1B save against GPipe: time or memory?", "memory",
             f"Memory: both take {o48.makespan:g} = {g48.makespan:g} steps at *p* = 4, *m* = 8, but GPU 0 holds "
             f"{o48.peak_activations[0]} micro-batches instead of {g48.peak_activations[0]}."),
        Item("Chapter 4, question 1", "Which chunks (numbered from 1) does GPU 1 hold for *p* = 4, *v* = 2?", chunks,
             f"Chunk *c* (from 0) lives on GPU *c* mod *p*: chunks 1 and 5 from 0, that is {chunks} from 1."),
        Item("Chapter 4, question 2", "Idle slots of interleaved 1F1B at *p* = 2, *m* = 2, *v* = 2, each chunk one "
             "step.", i22.idle_slots,
             f"*T* = {i22.makespan:g} steps × 2 GPUs = {i22.total_slots:g} slots, {i22.busy_slots:g} busy (2 GPUs × 2 "
             f"chunks × 2 micro-batches × F and B): {i22.idle_slots:g} idle."),
        Item("Chapter 4b, question 1", "At *p* = 2, *v* = 2, how many times 1F1B's hand-overs does interleaving make?",
             hand_overs(interleaved_1f1b(2, 4, 2)) / hand_overs(one_f_one_b(2, 4)),
             "A micro-batch crosses *pv* − 1 = 3 chunk boundaries each way, all between GPUs, against *p* − 1 = 1: "
             "(*pv* − 1)/(*p* − 1) = *v* + (*v* − 1)/(*p* − 1) = 3 = 2*v* − 1 — more than *v*, most so on a short pipeline."),
        Item("Chapter 4b, question 2", "The link preset on which 1F1B beats interleaving for Llama 2 7B on four "
             "H100s at *m* = 8.", slow_link,
             "A hand-over carries a whole activation at any *v*; only on a link slow enough that (*pv* − 1)/(*p* − 1) times "
             "the hand-overs cost more than the halved bubble saves does interleaving lose."),
        Item("Chapter 5, question 1", "Idle time per GPU under ZB-H1, *f* = *b* = *w* = 1, *p* = 4, *m* = 8.",
             zb.makespan - zb.busy_per_stage[0],
             f"(*p* − 1)(*F* + *B* − 2*W*) with a full backward *B* = 2: {zb.p - 1} × 1 = "
             f"{zb.makespan - zb.busy_per_stage[0]:g}, against 1F1B's (*p* − 1)(*F* + *B*) = "
             f"{full.makespan - full.busy_per_stage[0]:g}."),
        Item("Chapter 5, question 2", "A GPU is twice as slow: fix the schedule or the partition?", "partition",
             "The partition: in the steady state every schedule runs at the slowest stage's pace."),
        Item("Chapter 6, question 1", "Parameter copies per GPU under DualPipe and DualPipeV.",
             (parameter_copies(dualpipe(4, 8)), parameter_copies(dualpipe_v(4, 8))),
             f"DualPipe: {parameter_copies(dualpipe(4, 8)):g} (stage *j* for one direction, *p* − 1 − *j* for the "
             f"other); DualPipeV: {parameter_copies(dualpipe_v(4, 8)):g} (two chunks of half a stage)."),
        Item("Chapter 6, question 2", "Count DualPipe's grid at *p* = 4, *m* = 8 on the shared cost model.",
             (d48.total_slots, d48.idle_slots, _frac(d48.bubble_ratio)),
             f"*T* = {d48.makespan:g}, {d48.total_slots:g} slots, {d48.busy_slots:g} busy (each GPU runs 8 F, 8 B "
             f"and its W's: a split backward still costs *b* + *w*), {d48.idle_slots:g} idle — part of it pairs "
             f"waiting, since a pair booked as one unit waits for both inputs."),
        Item("Chapter 6b, question 1", "ZB1P's bubble at *p* = 8, *F* = 1, *B* = 3 (full), *W* = 1: the formula's "
             "value, and whether the simulation agrees.", (zb_row.formula_bubble, zb_row.formula_bubble == zb_row.simulated_bubble),
             f"(*p* − 1)(*F* + *B* − 2*W*) = 7 × 2 = {zb_row.formula_bubble:g}; *W* = 1 is no longer than *F* or "
             f"*B* − *W* = 2, so the postponed W's fit the drain and the simulation agrees."),
        Item("Chapter 6b, question 2", "Below which *F&B* can DeepSeek's DualPipe formula not hold when *F* = 2, "
             "*B* = 3 (full), *W* = 1, and over which *F&B* does it hold? (Answer as (floor, from, to).)",
             (2 + 3 * 1 - 3, min(held), max(held)),
             "The middle rank idles at least its fill, (*p*/2 − 1)*F*; the formula (*p*/2 − 1)(*F&B* + *B* − 3*W*) "
             "drops below that when *F&B* + *B* − 3*W* < *F*, that is below *F* + 3*W* − *B* = 2. That is a floor, "
             "not where the row holds. Simulated at *p* = 8 and *p* = 6 (*m* = 20), *F&B* from 1.5 to 7 in quarters, "
             f"the row agrees from *F&B* = {min(held):g} = *F* + *W* to {max(held):g} = *F* + *B* and nowhere else: "
             f"at {_gs(x for x, _ in off_on)} the simulation idles {_gs(r.simulated_bubble for _, r in off_on)} "
             f"against {_gs(r.formula_bubble for _, r in off_on)} (*p* = 8). Here "
             "the input-gradient pass, *B* − *W* = 2, is as long as the forward; with *F* = 1 (*B* − *W* ≠ *F*) "
             f"the row is off almost everywhere: at *p* = 8, *F&B* = {_gs(first)} the simulation idles "
             f"{_gs(dp_off[x].simulated_bubble for x in first)} against the formula's "
             f"{_gs(dp_off[x].formula_bubble for x in first)}, and of *F&B* from 1 to 8 in quarters it agrees at "
             f"{_gs(x for x, r in dp_off.items() if r.formula_bubble == r.simulated_bubble) or 'none'} only."),
        Item("Chapter 7, question 1", "Which simulated GPU holds the most activation bytes under 1F1B?",
             o_peaks.index(max(o_peaks)),
             f"The first: it starts *p* micro-batches before its first backward returns (counts {o_peaks}); "
             f"weighted by the lab's chunk sizes GPU 0 stays ahead unless its layers keep far fewer bytes."),
        Item("Chapter 7, question 2", "Does the schedule change a step's gradients?", "no",
             "No: every schedule runs the same forwards and backwards on the same weights and averages the same "
             "micro-batch gradients; the lab's largest difference is rounding."),
        Item("Chapter 8, question 1", "The least recomputation that lets GPipe fit (7B, 4 × A100 80 GB, *m* = 16).",
             recomputation.cheapest_fit(trade, "gpipe"),
             f"{str(recomputation.cheapest_fit(trade, 'gpipe')).capitalize()}: GPipe keeps all 16 micro-batches in flight; 1F1B, with "
             f"at most 4, fits with {recomputation.cheapest_fit(trade, '1f1b')} recomputation (FlashAttention keeps no "
             f"s × s scores)."),
        Item("Chapter 8, question 2", "Full recomputation's slowdown of 1F1B there.", slowdown,
             f"{slowdown:g}: per block and micro-batch the step runs F, then B and W; full recomputation runs F once "
             f"more inside B. Not 4/3: with FlashAttention a block's backward is a little more than twice its forward, "
             f"and the output layer is not recomputed."),
        Item("Chapter 9, question 1", "*m* per pipeline: 1,024 GPUs, *t* = 8, *p* = 8, global batch 512.", row.m,
             f"*d* = 1024 / 64 = {row.d}, *m* = 512 / {row.d} = {row.m}."),
        Item("Chapter 9, question 2", "Staleness of GPU 0 under asynchronous 1F1B, *p* = 4, *m* = 8.",
             staleness(one_f_one_b(4, 8))[0], f"*p* − 1 = {staleness(one_f_one_b(4, 8))[0]} updates."),
        Item("Chapter 9, question 3", "The first bidirectional pipeline schedule.", "Chimera",
             "Chimera (Li and Hoefler, SC 2021), three years before DualPipe."),
        Item("Chapter 10, question 1", "The frontier at *p* = 4, *m* = 8 on the shared model.", front,
             "No other schedule is faster and lighter at once: "
             + ", ".join(front) + " tie on makespan and peak with one weight copy."),
        Item("Chapter 10, question 2", "From which *m* does ZB-H2 at *p* = 6 run every GPU without a gap?", 2 * 6 - 1,
             "Stage 0 warms up with 2(*p* − 1) + 1 forwards, so from *m* = 2*p* − 1 on every GPU has work until its "
             "first backward returns."),
        Item("Chapter 10, question 3", "Which argument sets the lower bound at *p* = 4, *m* = 8, *F&B* = 1, "
             "*f* = *b* = *w* = 1?", max(arguments, key=lambda name: arguments[name]),
             f"Work *m*·min(*f* + *b* + *w*, *F&B*) = {arguments['work']:g}; front Σ*f* + *m*·min(*b* + *w*, *F&B*) = "
             f"{arguments['front']:g}: no pair runs before the first forward pass is through."),
        Item("Chapter 11, question 1", "In the crossed order, which GPU waits for a gradient?", 0,
             "GPU 0 runs B0 right after F0 and waits for micro-batch 0's gradient from GPU 1; GPU 1 waits for "
             "micro-batch 1's activation, which GPU 0 sends only after that gradient: a cycle."),
        Item("Chapter 11, question 2", "Does 1F1B with blocking sends finish on two processes?", "no",
             "No: in the steady state each GPU sends (an activation up, a gradient down) while the other sends too, "
             "and gloo's send waits for the receiver to post its receive."),
        Item("Chapter 12, question 1", "Below which all-reduce size (GB) does the tree beat the ring over 64 GPUs "
             "on InfiniBand NDR?", edge / 1e9,
             f"Where 2(*n* − 1)α + 2(*n* − 1)/*n*·*M*β = 2⌈log₂ *n*⌉α + 2*M*β: *M* = *n*(*n* − 1 − ⌈log₂ *n*⌉)·α·*B* = "
             f"64 × (63 − 6) × 10 µs × 50 GB/s = {edge / 1e9:.3g} GB. Below it the ring's 126 latencies cost more than "
             "the tree's extra bytes, 2*M* against 2*M*·63/64; the tree pays 12."),
        Item("Chapter 12, question 2", "NCCL-tests report an all-gather over 16 GPUs at an algbw of 40 GB/s: what busbw "
             "do they print?", 40 * collectives.bus_factor("all-gather", 16),
             f"All-gather's factor is (*n* − 1)/*n* = 15/16: {40 * collectives.bus_factor('all-gather', 16):g} GB/s, "
             "the bandwidth each link of a ring would carry."),
        Item("Chapter 12, question 3", "Collectives per block and micro-batch with *t* = 8 and sequence parallelism?",
             len(sp), f"{len(sp)}: each of tensor parallelism's four all-reduces (two forward, two backward) becomes a "
             "reduce-scatter and an all-gather; the backward also gathers each column-parallel layer's input again "
             "for its weight gradient (two more), since only each GPU's tokens of it were kept."),
        Item("Chapter 13, question 1", "In the 70B setting, which ZeRO stage gives the highest MFU?", best_zero,
             "Stages 0 and 1 reduce the gradients once per step and tie; 2 and 3 pay per micro-batch beside a "
             "pipeline. The lowest of the tie is the answer."),
        Item("Chapter 13, question 2", "One of 256 experts' capacity in a 4,096-token batch, *k* = 8, factor 1.5.",
             experts.capacity(4096, 256, 8, 1.5),
             f"⌈1.5 × 4096 × 8 / 256⌉ = {experts.capacity(4096, 256, 8, 1.5)}: an even share of the token copies, "
             "times the factor."),
        Item("Chapter 13, question 3", "GB each of 64 GPUs sends per step under ZeRO-3 for 7.5B bf16 parameters.",
             zero3.sent_gb, f"Two all-gathers of the 15 GB of bf16 weights and one reduce-scatter of as "
             f"many bytes of gradients, each 63/64 of it: 3 × 15 × 63/64 = {zero3.sent_gb:.4g} GB, 1.5 times "
             "stages 0–2."),
        Item("Chapter 14, question 1", "Which parallelism sends the most bytes per GPU and step in the 70B setting?",
             loudest, f"Tensor parallelism with sequence parallelism: {len(sp4)} collectives of a block's "
             "activations (reduce-scatters and all-gathers, the backward's two re-gathers included) per block and "
             f"micro-batch: {volumes['tensor']:.3g} GB a step against data parallelism's {volumes['data']:.2g} and "
             f"the pipeline's {volumes['pipeline']:.2g}."),
        Item("Chapter 14, question 2", "The data-parallel degree of 16,384 GPUs at TP 8, CP 16, PP 16?", groups,
             f"16384 / (8 × 16 × 16) = {groups}, not the 4 Table 4 prints: with 4 the row would use 8,192 GPUs "
             "and 8M tokens a batch."),
        Item("Chapter 14, question 3", "The Young–Daly interval (minutes) for 30 s checkpoints and a 3-hour MTBF.",
             reliability.young_daly(30, 3 * 3600) / 60,
             f"√(2 × 30 × 10800) = {reliability.young_daly(30, 3 * 3600):.0f} s, about "
             f"{reliability.young_daly(30, 3 * 3600) / 60:.0f} minutes."),
        Item("Chapter 15, question 1", "On two ranks, what factor turns an all-gather's algbw into its busbw?",
             collectives.bus_factor("all-gather", 2),
             f"(*n* − 1)/*n* = {collectives.bus_factor('all-gather', 2):g}: each rank receives the other's half, "
             "so the link carries half the gathered buffer in the time the whole is reported over."),
        Item("Chapter 15, question 2", "How many buckets did DDP all-reduce in its last step, at the lab's cap?",
             "the number the run's table shows",
             "Read it off the DDP row. The first step runs as one bucket; from the second step on the reducer packs "
             "the gradients in the order the first step's gradients became ready (for the lab's MLP, the reverse of "
             "its parameters), each bucket closed once it holds the cap (`bucket_cap_mb`; the first bucket has a cap "
             "of its own, equal to it when the cap is set), a parameter never split, and all-reduces each as soon as "
             "every gradient in it is ready; the count depends on the model's sizes and the cap, not on the run."),
        Item("Chapter 15, question 3", "How many all-gathers does FSDP2 issue in one step of the eight-unit MLP when "
             "it reshards after the forward?", "two per unit that holds weights",
             f"Each unit's weights are gathered before its forward and, having been freed after it, again before its "
             f"backward: for eight units that all hold weights, {fsdp8.gathers} (chapter 13's walk of the units); "
             f"without resharding, {fsdp8.gathers // 2}, the weights staying until the backward. A unit without "
             "weights (an activation) is gathered never: count the run's own from its table."),
    )


@dataclass(frozen=True)
class CountingPractice:
    """Grids of the counting exam's kinds to practise on, drawn from ``seed`` (the browser edition's practice draws
    new ones each run): a course schedule whose backward takes twice a forward (``count``), another under equal costs
    (``mark``), and an order no chapter draws (``read``: each GPU's warm-up drawn apart, a backward one or two
    forwards long). Simulated here, so the exercises check answers at once — the
    exam's own grids are pictures made on the instructors' side, and nothing relates the two.

    >>> x = CountingPractice.draw(7)
    >>> x, x.count.p == len(x.count.busy_per_stage)
    (counting practice, seed 7, True)
    """

    seed: int
    count: Timeline
    mark: Timeline
    read: Timeline

    @classmethod
    def draw(cls, seed: int) -> CountingPractice:
        pick = Random(seed).choice
        first, second = pick((("gpipe", "1f1b"), ("1f1b", "gpipe")))
        p, q, r = pick((3, 4, 5)), pick((3, 4)), pick((3, 4))
        count = simulate(build(first, p, pick(range(3, 7))), Costs(f=1, b=2))
        mark = simulate(build(second, q, pick(range(2, 5))))
        m, costs = pick((5, 6)), Costs(f=1, b=pick((1, 2)))
        plain = simulate(one_f_one_b(r, m), costs).makespan
        while True:  # each GPU's warm-up from 1F1B's up to every forward first: one that runs, and slower than 1F1B
            warm = tuple(pick(range(r - j - 1, m)) for j in range(r))
            try:
                read = simulate(with_warmups(warm, m, "uneven warm-up"), costs)
            except ValueError:  # the order deadlocks: draw again
                continue
            if read.makespan > plain:
                return cls(seed, count, mark, read)

    def __repr__(self) -> str:
        return f"counting practice, seed {self.seed}"

    def reading(self) -> tuple[Item, ...]:
        """The timed exams' questions on the ``read`` grid (drawn in the first): its count, a critical path
        (:mod:`ppedu.critical`), its idle cells sorted by cause (:mod:`ppedu.idle`), and the idle its order adds.

        >>> [x.label for x in CountingPractice.draw(9).reading()]
        ['G1', 'G2', 'G3', 'G4']
        """
        t = self.read
        p, m = t.p, t.schedule.microbatches
        path = critical_path(t)
        sorts = tuple({kind: sum(v for cause, v in gpu.items() if SORTS.get(cause) == kind)
                       for kind in ("fill", "drain", "order")} for gpu in t.idle_causes().per_stage())
        ahead = tuple(next(i for i, op in enumerate(ops) if op.kind == "B") for ops in t.schedule.stages)
        f, b = t.costs.forward(0), t.costs.backward(0, full=True)
        fewest, best = p * (p - 1) * (f + b), simulate(one_f_one_b(p, m), t.costs)
        order = sum(x["order"] for x in sorts)
        return (
            Item("G1", f"An order no chapter draws, on *p* = {p} GPUs with *m* = {m} micro-batches, a forward "
                 f"one step and a backward {b:g} (each GPU runs its forwards, and its backwards, in micro-batch "
                 f"order):\n\n```text\n"
                 f"{render_grid(t)}\n```\n\nCount its steps *T*, its slots and its idle slots. (Answer as (T, "
                 "slots, idle).)", (t.makespan, t.total_slots, t.idle_slots),
                 f"*T* = {t.makespan:g}; {p} × {t.makespan:g} = {t.total_slots:g} slots; each GPU is busy "
                 f"*m*(*f* + *b*) = {m * (f + b):g} steps, so {t.total_slots:g} − {p} × {m * (f + b):g} = "
                 f"{t.idle_slots:g} idle.", ("01.1",)),
            Item("G2", "On the same grid, trace a critical path: a chain of operations from the first step to the "
                 "last, each starting as the one before ends — the next on its GPU, or the one that takes its output. "
                 "(Answer as the operations, each with its GPU.)",
                 " ".join(f"{e.op.kind}{e.op.microbatch}@{e.stage}" for e in path),
                 f"Walk back from the operation that ends last, at each step to what it waited for: its input (a "
                 f"forward from the GPU below, a gradient from the one above) or, if that was there already, the "
                 f"operation before it on its GPU. This chain has {len(path)} operations whose lengths add up to "
                 f"*T*: lengthen any of them and the step lengthens. Where several chains are that long, any of them "
                 f"is right.", ("10.4",)),
            Item("G3", "Sort its idle cells, GPU by GPU: the pipeline **filling** (before the GPU's first backward), "
                 "**draining** (once it has run its last forward and its first backward), or the **order's own** "
                 "(after its first backward, with a forward still to run). (Answer per GPU as (fill, drain, order).)",
                 tuple(tuple(x.values()) for x in sorts),
                 "; ".join(f"GPU {j}: {x['fill']:g} filling, {x['drain']:g} draining, {x['order']:g} the order's"
                           for j, x in enumerate(sorts)) + f". In all {order:g} of the {t.idle_slots:g} idle cells "
                 "are the order's own" + (": a GPU waits, between its backwards, for an input its neighbour was late "
                 "to send because its own order put something else first." if order else "; the order's cost here "
                 "is a longer filling and draining."), ("10.4",)),
            Item("G4", f"No order of {p} GPUs and {m} micro-batches idles fewer than *p*(*p* − 1)(*f* + *b*) slots. "
                 "How many more does this one idle, how many forwards does each GPU run before its first backward, "
                 "and what would 1F1B's counts make *T*? (Answer as (extra idle, forwards per GPU, T).)",
                 (t.idle_slots - fewest, ahead, best.makespan),
                 f"{t.idle_slots:g} − {p}·{p - 1}·{f + b:g} = {t.idle_slots - fewest:g} idle slots more than any order "
                 f"needs: *p* times the {t.makespan - best.makespan:g} steps by which *T* exceeds (*m* + *p* − 1)(*f* "
                 f"+ *b*) = "
                 f"{best.makespan:g} — the order's own {order:g} and the rest lengthening the filling and draining. "
                 f"Its GPUs run {', '.join(map(str, ahead))} forwards before their first backward, against 1F1B's "
                 f"{', '.join(str(min(p - j, m)) for j in range(p))} (*p* − *j*): a GPU that runs more sends its first "
                 f"gradient down late, and the GPUs below wait for it. With 1F1B's counts every backward runs as its "
                 f"gradient arrives: *T* = {best.makespan:g}.", ("10.4", "03.1")),
        )


def questions(items: tuple[Item, ...]) -> Markdown:
    """The questions alone, as Markdown."""
    return Markdown("\n\n".join(f"**{x.label}.** {x.question}" for x in items))


def key(items: tuple[Item, ...]) -> Markdown:
    """Questions with their answers and worked answers, as Markdown, folded away until the student opens it
    (a student who meant to work the questions first does not read the answers by scrolling past them).

    >>> key(practice_set()).startswith("<details><summary><strong>Show the answers</strong>")
    True
    """
    body = "\n\n".join(f"**{x.label}.** {x.question}\n\n*Answer:* `{_show(x.answer)}`. {x.working}"
                       + (f" *(Objectives {', '.join(x.objectives)}.)*" if x.objectives else "") for x in items)
    return Markdown(f"<details><summary><strong>Show the answers</strong> ({len(items)}, worked): try each one "
                    f"first</summary>\n\n{body}\n\n</details>")


def _show(x: object) -> str:
    if isinstance(x, float):
        return f"{x:g}"
    if isinstance(x, tuple):
        return "(" + ", ".join(_show(v) for v in x) + ")"
    return str(x)
