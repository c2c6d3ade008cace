"""The published figures the course's case studies start from, each once, with where it was read. They are inputs:
everything the chapters say about them is computed by ppedu (:mod:`ppedu.cluster.cases`). A figure marked
*unchecked* was taken from memory or a secondary source and not read in the primary one here.

Sources: "The Llama 3 Herd of Models" (Llama Team, AI @ Meta, arXiv 2407.21783, 2024) and Meta's Llama 3.1 model
card (``models/llama3_1/MODEL_CARD.md`` in meta-llama/llama-models); the "DeepSeek-V3 Technical Report"
(DeepSeek-AI, arXiv 2412.19437, 2024) and its model's ``inference/configs/config_671B.json``
(deepseek-ai/DeepSeek-V3).

>>> [row.consistent for row in LLAMA3_TABLE4]  # the third row's DP = 4 does not multiply out to its 16,384 GPUs
[True, True, False]
"""

from __future__ import annotations

from dataclasses import dataclass

from ppedu.cluster.hardware import GB, MODELS, Link, Model


@dataclass(frozen=True)
class Layout4D:
    """One row of the Llama 3 report's Table 4: a stage of pre-training's parallelism and what it achieved."""

    gpus: int
    tp: int
    cp: int
    pp: int
    dp: int
    seq: int
    batch_per_dp: int
    tokens_per_batch: float
    tflops_per_gpu: float
    mfu: float

    @property
    def product(self) -> int:
        """``TP·CP·PP·DP``: the GPUs the row's degrees use."""
        return self.tp * self.cp * self.pp * self.dp

    @property
    def tokens(self) -> int:
        """Tokens per step the row's sequence length, batch per DP group and DP give."""
        return self.seq * self.batch_per_dp * self.dp

    @property
    def consistent(self) -> bool:
        """Whether the degrees use the row's GPUs and give its tokens per batch (16M: 2²⁴, within 5 %)."""
        return self.product == self.gpus and abs(self.tokens / self.tokens_per_batch - 1) < 0.05


#: Table 4 of the Llama 3 report (section 3.3.2): 8K-token pre-training on 8,192 and 16,384 H100s, then long-context
#: pre-training at 131,072 tokens with 16-way context parallelism. Tokens per batch "16M", read as 2²⁴.
LLAMA3_TABLE4 = (
    Layout4D(8192, 8, 1, 16, 64, 8192, 32, 2 ** 24, 430, 0.43),
    Layout4D(16384, 8, 1, 16, 128, 8192, 16, 2 ** 24, 400, 0.41),
    Layout4D(16384, 8, 16, 16, 4, 131072, 16, 2 ** 24, 380, 0.38),
)

#: The ZeRO paper's worked example (Rajbhandari et al., "ZeRO", SC 2020, Figure 1): a 7.5B-parameter model over 64
#: GPUs with mixed-precision Adam (K = 12) keeps 120, 31.4, 16.6 and 1.9 GB per GPU at stages 0, 1, 2 and 3.
ZERO_FIGURE_1 = {"params": 7.5e9, "d": 64, "gb": (120.0, 31.4, 16.6, 1.9)}

#: Llama 3.1 405B as trained (section 3.2, Table 3): :data:`ppedu.cluster.MODELS`'s preset.
LLAMA3_405B = MODELS["405b"]
#: Tokens of pre-training, "15.6T" (the report, sections 1 and 2, the latter of the 8K-context stage; the model card
#: says "~15 trillion"); GPU hours of the 405B model's training, 30.84M (the model card: "the total GPU time required
#: for training each model", stages not named).
LLAMA3_TOKENS = 15.6e12
LLAMA3_GPU_HOURS = 30.84e6
#: Reliability (section 3.3.4): 466 job interruptions in a 54-day snapshot of pre-training, 47 planned, 419 unexpected;
#: "higher than 90 %" effective training time, said of Llama 3's training as a whole (not of the snapshot alone); on
#: "up to 16K" GPUs — ``gpus`` takes all 16,384 as running through the snapshot, an assumption.
LLAMA3_INTERRUPTIONS = {"days": 54, "planned": 47, "unexpected": 419, "effective_training_time": 0.90, "gpus": 16384}
#: Storage (section 3.3.1): Tectonic sustains 2 TB/s (7 TB/s peak); a checkpoint holds 1 MB to 4 GB per GPU.
LLAMA3_STORAGE = {"sustained": 2e12, "peak": 7e12, "checkpoint_per_gpu_max": 4e9}
#: The batch schedule (section 3.4.1): 4M tokens of 4,096-token sequences, 8M of 8,192 after 252M tokens, 16M after
#: 2.87T tokens ("M" read as 2²⁰).
LLAMA3_BATCHES = ((0.0, 4 * 2 ** 20, 4096), (252e6, 8 * 2 ** 20, 8192), (2.87e12, 16 * 2 ** 20, 8192))


def latent_attention_params(hidden: int, heads: int, q_rank: int, kv_rank: int, head_dim: int, rope_dim: int,
                            v_dim: int) -> int:
    """Parameters of DeepSeek's multi-head latent attention (DeepSeek-V2, section 2.1): the query compressed to
    ``q_rank`` and expanded to ``heads × (head_dim + rope_dim)``; keys and values compressed to ``kv_rank`` (plus a
    shared ``rope_dim`` key) and expanded to ``heads × (head_dim + v_dim)``; the output projection; two norms."""
    return (hidden * q_rank + q_rank + q_rank * heads * (head_dim + rope_dim) + hidden * (kv_rank + rope_dim)
            + kv_rank + kv_rank * heads * (head_dim + v_dim) + heads * v_dim * hidden)


#: DeepSeek-V3 (its report, section 4.2; ``config_671B.json``): 61 layers of width 7168; multi-head latent attention,
#: 128 heads of 128 (query rank 1536, key-value rank 512, rotary 64); the first 3 layers dense with an MLP of 18432,
#: the rest 256 routed experts of 2048 and one shared, 8 routed per token; a 129,280-token vocabulary; 4,096-token
#: sequences. The multi-token-prediction module (depth 1, section 2.2) is left out, as the report's 671B leaves it.
#: The attention core's width: 128 heads × (192 + 128)/2, ``QKᵀ`` on 192 dimensions, scores × ``V`` on 128.
DEEPSEEK_V3 = Model(
    "DeepSeek-V3", 61, 7168, 129280, 4096, heads=128, ffn=18432, gated=True, experts=256, top_k=8, expert_ffn=2048,
    shared_experts=1, dense_layers=3, attention_params=latent_attention_params(7168, 128, 1536, 512, 128, 64, 128),
    attention_width=128 * (192 + 128) // 2)
#: The report's totals (abstract, section 4.2): 671B parameters, 37B activated per token.
DEEPSEEK_V3_PARAMS = {"total": 671e9, "activated": 37e9}
#: Training (section 3.2, 4.2 and Table 1): 2,048 H800s, nodes of 8; 16-way pipeline parallelism (DualPipe), 64-way
#: expert parallelism over 8 nodes, ZeRO-1 data parallelism, no tensor parallelism; a "batch size" of 15,360 (after
#: the first 469B tokens; no unit given, read as sequences of the 4K maximum length); 14.8T tokens; 180K H800 GPU hours
#: per trillion tokens, 2,664K for pre-training; each token sent to at most 4 nodes.
@dataclass(frozen=True)
class Run:
    """A published training run's layout and throughput."""

    gpus: int
    node: int
    pp: int
    ep: int
    ep_nodes: int
    batch: int
    seq: int
    tokens: float
    gpu_hours_per_trillion: float
    pretraining_gpu_hours: float
    node_limit: int


DEEPSEEK_V3_RUN = Run(gpus=2048, node=8, pp=16, ep=64, ep_nodes=8, batch=15360, seq=4096, tokens=14.8e12,
                      gpu_hours_per_trillion=180e3, pretraining_gpu_hours=2664e3, node_limit=4)
#: Section 3.2.2: "NVLink offers a bandwidth of 160 GB/s, roughly 3.2 times that of IB (50 GB/s)". Latencies as
#: :data:`ppedu.cluster.LINKS`'s (round figures, not the report's).
H800_NVLINK = Link("NVLink (H800, DeepSeek's figure)", 160 * GB, 3e-6)
H800_IB = Link("InfiniBand (DeepSeek's figure)", 50 * GB, 10e-6)
