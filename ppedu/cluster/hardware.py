"""The hardware and models a plan is made for: transformer shapes, GPUs, links and a cluster of
them, with published presets (see :mod:`ppedu.cluster` for the arithmetic)."""

from __future__ import annotations

from dataclasses import dataclass

from ppedu.costs import Comm
from ppedu.validate import whole

#: A gigabyte, 10⁹ bytes: every size the course computes and prints in GB or GB/s (never a GiB, 2³⁰ bytes).
GB = 1e9
#: How much of the forward pass a backward recomputes: nothing, the attention core (Korthikanti et al.'s selective
#: mode: the scores, which FlashAttention never keeps, so with it ``selective`` is ``none``), a whole block.
RECOMPUTE = ("none", "selective", "full")
#: Adam in mixed precision keeps fp32 master weights, momentum and variance: 3 × 4 bytes per parameter.
ADAM_BYTES = 12.0


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer: ``layers`` blocks of width ``hidden``, an embedding and an
    untied output layer over ``vocab`` tokens, trained on micro-batches of ``microbatch``
    sequences of ``seq`` tokens in ``dtype_bytes``-byte precision (2: bf16).

    ``ffn`` is the MLP width (default ``4·hidden``); ``gated`` MLPs (SwiGLU) have three matrices
    instead of two; ``kv_heads`` below ``heads`` is grouped-query attention. ``flash_attention``
    (the default, as every current framework trains) computes attention without keeping its
    ``s × s`` scores; without it attention is "eager" and keeps them. ``dropout`` keeps a byte mask
    per dropped element (GPT-3 used dropout; Llama's released model code has none, and its papers name none).

    A mixture of experts (:mod:`ppedu.cluster.experts`): every block after the first ``dense_layers`` replaces its MLP by
    ``experts`` routed experts, each an MLP of width ``expert_ffn`` (default ``ffn``), of which a token uses ``top_k``,
    beside ``shared_experts`` that every token uses, and a router (``hidden × experts``). Its parameters count every
    expert (:meth:`layer_params`, what memory holds); its FLOPs only those a token passes through
    (:meth:`layer_active_params`). ``attention_params`` replaces the count of ``Q, K, V, O`` for an attention of
    another shape (DeepSeek's multi-head latent attention), and ``attention_width`` the attention core's width
    (default ``hidden``: ``QKᵀ`` and scores × ``V`` cost ``2·b·s²`` FLOPs per unit of it each).

    >>> toy = Model("toy", layers=2, hidden=8, vocab=10, seq=4, heads=2)
    >>> toy.block_params, toy.params  # 12·h² + 2·h per block; embedding and head h·V each, + a norm
    (784, 1736)
    >>> moe = Model("moe", layers=2, hidden=8, vocab=10, seq=4, heads=2, experts=4, top_k=1, dense_layers=1)
    >>> moe.layer_params()[1:3], moe.layer_active_params()[1:3]  # a dense block, then 4 experts (+ a router)
    ((784, 2352), (784, 816))
    """

    name: str
    layers: int
    hidden: int
    vocab: int
    seq: int = 4096
    microbatch: int = 1
    heads: int = 1
    kv_heads: int | None = None
    ffn: int | None = None
    gated: bool = False
    dtype_bytes: int = 2
    flash_attention: bool = True
    dropout: bool = False
    experts: int = 0
    top_k: int = 0
    expert_ffn: int | None = None
    shared_experts: int = 0
    dense_layers: int = 0
    attention_params: int | None = None
    attention_width: int | None = None

    def __post_init__(self) -> None:
        for name in ("layers", "hidden", "vocab", "seq", "microbatch", "heads", "dtype_bytes"):
            whole(name, getattr(self, name))
        for name in ("kv_heads", "ffn", "expert_ffn", "attention_params", "attention_width"):
            if getattr(self, name) is not None:
                whole(name, getattr(self, name))
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")
        if (self.experts > 0) != (self.top_k > 0) or self.top_k > self.experts:
            raise ValueError(f"a mixture of experts needs 1 ≤ top_k ≤ experts (got experts={self.experts}, "
                             f"top_k={self.top_k})")
        if not 0 <= self.dense_layers <= self.layers or self.shared_experts < 0:
            raise ValueError(f"dense_layers lies in 0…layers and shared_experts is ≥ 0 (got {self.dense_layers}, "
                             f"{self.shared_experts})")

    @property
    def tokens(self) -> int:
        """Tokens in one micro-batch."""
        return self.seq * self.microbatch

    @property
    def kv_share(self) -> float:
        """The keys' and values' width as a share of ``hidden`` (1 without grouped-query attention)."""
        return (self.kv_heads or self.heads) / self.heads

    @property
    def ffn_width(self) -> int:
        return self.ffn or 4 * self.hidden

    @property
    def block_params(self) -> int:
        """Parameters of a dense block (with its two norms)."""
        return self._block_params(moe=False, active=False)

    def _block_params(self, moe: bool, active: bool) -> int:
        h, kv = self.hidden, (self.kv_heads or self.heads) * (self.hidden // self.heads)
        attention = self.attention_params if self.attention_params is not None else 2 * h * h + 2 * h * kv
        matrices = 3 if self.gated else 2
        if not moe:
            return attention + matrices * h * self.ffn_width + 2 * h
        used = (self.top_k if active else self.experts) + self.shared_experts
        return attention + used * matrices * h * (self.expert_ffn or self.ffn_width) + h * self.experts + 2 * h

    def is_moe(self, block: int) -> bool:
        """Whether block ``block`` (from 0) holds experts."""
        return self.experts > 0 and block >= self.dense_layers

    @property
    def params(self) -> int:
        return sum(self.layer_params())

    @property
    def active_params(self) -> int:
        """Parameters one token passes through (all of them, without experts)."""
        return sum(self.layer_active_params())

    def layer_params(self) -> tuple[int, ...]:
        """Parameters of each unit a partition may cut between: embedding, the blocks, output layer
        (with the final norm)."""
        return self._units(active=False)

    def layer_active_params(self) -> tuple[int, ...]:
        """As :meth:`layer_params`, counting only the experts a token uses (the FLOPs' count)."""
        return self._units(active=True)

    def layer_expert_params(self) -> tuple[int, ...]:
        """Per unit, the routed experts' parameters: what expert parallelism divides."""
        per = self.experts * (3 if self.gated else 2) * self.hidden * (self.expert_ffn or self.ffn_width)
        return (0, *(per if self.is_moe(i) else 0 for i in range(self.layers)), 0)

    def _units(self, active: bool) -> tuple[int, ...]:
        h = self.hidden
        return (self.vocab * h, *(self._block_params(self.is_moe(i), active) for i in range(self.layers)),
                self.vocab * h + h)

    def layer_blocks(self) -> tuple[float, ...]:
        """Per unit, 1 for a transformer block, 0 for the embedding and the output layer."""
        return (0.0, *(1.0,) * self.layers, 0.0)

    def layer_moe(self) -> tuple[float, ...]:
        """Per unit, 1 for a block with experts, 0 for the rest."""
        return (0.0, *(float(self.is_moe(i)) for i in range(self.layers)), 0.0)

    @property
    def attention_flops(self) -> float:
        """Forward FLOPs of one block's attention core on one micro-batch: ``QKᵀ`` and scores × ``V``,
        ``2·b·s²·h`` each (every query against every key: the convention of MFU figures, causal or not)."""
        return 4.0 * self.microbatch * self.seq ** 2 * (self.attention_width or self.hidden)

    def layer_flops(self) -> tuple[float, ...]:
        """Forward FLOPs of one micro-batch through each unit: ``2 · params · tokens`` for the matrices
        (the embedding is a lookup), plus a block's attention core."""
        return (0.0, *(2.0 * p * self.tokens + (self.attention_flops if 0 < i <= self.layers else 0.0)
                       for i, p in enumerate(self.layer_active_params()[1:], start=1)))

    def layer_backward_flops(self, recompute: str = "none") -> tuple[tuple[float, ...], tuple[float, ...]]:
        """Per unit, the FLOPs of its input-gradient pass ``b`` and its weight-gradient pass ``w`` on one
        micro-batch. Every matrix costs as much again for each: ``2 · params · tokens`` in ``b`` and in
        ``w``. The attention core has no weights: its backward is all ``b``, twice its forward eagerly
        and two and a half times with FlashAttention (which recomputes the scores ``QKᵀ``). What a mode
        recomputes runs inside ``b``: the attention core's forward (``selective``, without FlashAttention,
        which recomputes it anyway) or the whole block's (``full``).

        >>> toy = Model("toy", layers=1, hidden=8, vocab=10, seq=4, heads=2)
        >>> toy.layer_backward_flops("none")[0][1], toy.layer_backward_flops("full")[0][1]
        (7552.0, 14336.0)
        """
        _check(recompute)
        a = self.attention_flops
        b, w = [0.0], [0.0]
        for i, params in enumerate(self.layer_active_params()[1:], start=1):
            matrices = 2.0 * params * self.tokens
            if i > self.layers:  # the output layer
                b.append(matrices)
                w.append(matrices)
                continue
            again = {"none": 0.0, "selective": 0.0 if self.flash_attention else a, "full": matrices + a}[recompute]
            b.append(matrices + (2.5 if self.flash_attention else 2.0) * a + again)
            w.append(matrices)
        return tuple(b), tuple(w)

    @property
    def hand_over_bytes(self) -> int:
        """Bytes of activations (or gradients) one micro-batch carries between two stages."""
        return self.tokens * self.hidden * self.dtype_bytes

    def block_activations(self, recompute: str = "none", t: int = 1, sequence: bool = False,
                          moe: bool = False) -> dict[str, float]:
        """What one block keeps for its backward on one micro-batch, part by part, in bytes; with ``t``-way
        tensor parallelism on one GPU's share, and with ``sequence`` parallelism too; ``moe``: a block with
        experts, whose MLP input is kept once more for each expert a token is sent to and whose hidden
        activations are those of the ``top_k`` routed and the shared experts it passes through.

        The inventory of Korthikanti et al. ("Reducing Activation Recomputation in Large Transformer
        Models", 2022), for any width of keys, values and MLP: the two norms' inputs; attention's input,
        its queries, keys and values, and its output projection's input; the MLP's input and its hidden
        activations (two for a plain MLP, three gated); a byte per element for each dropout mask;
        and, unless FlashAttention is on or the attention core is recomputed, the ``s × s`` softmax
        output (and its dropout). FlashAttention keeps one fp32 statistic per query instead. Tensor
        parallelism divides what lies inside its regions by ``t``; the norms', attention's and the MLP's
        inputs and the dropout masks after them stay whole unless ``sequence`` parallelism divides
        them too. ``full`` recomputation keeps only the block's input.

        >>> toy = Model("toy", layers=1, hidden=8, vocab=10, seq=4, heads=2, dropout=True, flash_attention=False)
        >>> sum(toy.block_activations("none").values()) == 4 * 8 * (34 + 5 * 2 * 4 / 8)  # s·b·h·(34 + 5as/h)
        True
        """
        _check(recompute)
        e = self.tokens * self.hidden * self.dtype_bytes / 2  # s·b·h: bytes per "sbh" at 16 bits, scaled
        whole_, split = (t, t) if sequence else (1, t)
        if recompute == "full":
            return {"block input": 2 * e / whole_}
        mask = 1.0 if self.dropout else 0.0
        kv, copies = self.kv_share, (1 + self.top_k) if moe else 1
        f_share = ((self.top_k + self.shared_experts) * (self.expert_ffn or self.ffn_width) if moe else self.ffn_width) \
            / self.hidden
        scores = self.microbatch * self.heads * self.seq ** 2 * self.dtype_bytes / 2  # a·s²·b at 16 bits
        parts = {
            "norm inputs": 4 * e / whole_,
            "attention input": 2 * e / whole_,
            "queries, keys, values": (2 + 4 * kv) * e / split,
            "output projection input": 2 * e / split,
            "MLP input": 2 * copies * e / whole_,
            "MLP hidden": (6 if self.gated else 4) * f_share * e / split,
            "dropout masks": 2 * mask * e / whole_,
        }
        if self.flash_attention:
            parts["softmax statistics"] = 4.0 * self.microbatch * self.heads * self.seq / split
        elif recompute == "none":
            parts["attention scores (s × s)"] = (2 + 3 * mask) * scores / split
        return parts

    def layer_activation_bytes(self, recompute: str = "none", t: int = 1, sequence: bool = False) -> tuple[float, ...]:
        """Activation bytes each unit keeps for one micro-batch until its backward (see
        :meth:`block_activations`); the output layer keeps its input and the fp32 logits for the loss
        (a vocabulary-parallel output layer splits the logits ``t`` ways)."""
        kinds = {moe: sum(self.block_activations(recompute, t, sequence, moe).values()) for moe in (False, True)}
        head = self.tokens * (self.hidden * self.dtype_bytes / (t if sequence else 1) + 4 * self.vocab / t)
        return (0.0, *(kinds[self.is_moe(i)] for i in range(self.layers)), float(head))

    def recompute_transient_bytes(self, recompute: str, t: int = 1, sequence: bool = False) -> float:
        """The most bytes recomputation rebuilds at once during a backward, on top of what is kept: one
        block's activations again (``full``, one block at a time as Megatron-LM recomputes), or its
        attention core's scores (``selective`` without FlashAttention); nothing otherwise."""
        moe = self.experts > 0 and self.dense_layers < self.layers  # the larger kind of block, if there are two
        if recompute == "full":
            return sum(self.block_activations("none", t, sequence, moe).values())
        if recompute == "selective" and not self.flash_attention:
            none, kept = (self.block_activations(mode, t, sequence, moe) for mode in ("none", "selective"))
            return sum(none.values()) - sum(kept.values())
        return 0.0


def _check(recompute: str) -> None:
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute is one of {', '.join(RECOMPUTE)} (got {recompute!r})")


@dataclass(frozen=True)
class GPU:
    """An accelerator: dense 16-bit peak ``tflops`` (TFLOP/s, without sparsity), ``memory`` in
    bytes (its marketed size taken in :data:`GB`: an "80 GB" card holds 80 GiB, about 85.9 GB, so a
    plan that fits here has that much to spare), and ``efficiency``, the fraction of peak its kernels reach while they compute. What a
    whole step achieves (MFU) is lower still: the bubble, recomputation and communication come off
    it (:attr:`ppedu.cluster.PlanRow.mfu`). ``fp8_tflops`` is its dense FP8 peak (0: none)."""

    name: str
    tflops: float
    memory: float
    efficiency: float = 0.4
    fp8_tflops: float = 0.0

    @property
    def flops_per_second(self) -> float:
        """What it achieves: peak × efficiency."""
        return self.tflops * 1e12 * self.efficiency

    def seconds(self, flops: float) -> float:
        return flops / self.flops_per_second


@dataclass(frozen=True)
class Link:
    """A GPU-to-GPU link: ``bandwidth`` in bytes/s each way, ``latency`` in seconds per message."""

    name: str
    bandwidth: float
    latency: float

    def seconds(self, nbytes: float) -> float:
        return self.latency + nbytes / self.bandwidth


#: Dense BF16 peaks and memory from NVIDIA's data sheets (A100: "NVIDIA A100 Tensor Core GPU"
#: data sheet, 312 TFLOP/s; H100 SXM and PCIe: "NVIDIA H100 Tensor Core GPU" data sheet, 989 and
#: 756 TFLOP/s, the sheet's 1,979/1,513 being with sparsity; H200 SXM: "NVIDIA H200" data sheet,
#: 989 TFLOP/s, 141 GB; L4: "NVIDIA L4" data sheet, 121 TFLOP/s, 242 with sparsity; H800 SXM, the export
#: variant DeepSeek-V3 trained on: the H100 SXM's compute with NVLink cut to 400 GB/s, NVIDIA's H800 product
#: brief, not checked here). FP8 peaks are the same sheets' dense figures (half those with sparsity). Memory in
#: 10⁹ bytes. Efficiency 0.4, an assumption: Meta reports 38–43 % BF16 MFU for a whole step of
#: Llama 3 405B on H100s ("The Llama 3 Herd of Models", 2024), and a step's MFU, after the bubble
#: and communication, is below what its kernels reach. Edit with ``dataclasses.replace``.
GPUS: dict[str, GPU] = {
    "a100-40gb": GPU("A100 40GB SXM", 312, 40 * GB),
    "a100-80gb": GPU("A100 80GB SXM", 312, 80 * GB),
    "h100-80gb": GPU("H100 80GB SXM", 989, 80 * GB, fp8_tflops=1979),
    "h100-pcie": GPU("H100 80GB PCIe", 756, 80 * GB),
    "h200": GPU("H200 141GB SXM", 989, 141 * GB, fp8_tflops=1979),
    "h800": GPU("H800 80GB SXM", 989, 80 * GB, fp8_tflops=1979),
    "l4": GPU("L4 24GB", 121, 24 * GB),
}

#: Per-direction bandwidths: NVLink 4 (H100) 900 GB/s and NVLink 3 (A100) 600 GB/s in both
#: directions together (NVIDIA's data sheets); PCIe x16 at 16 and 32 GT/s with 128b/130b
#: coding; InfiniBand HDR and NDR at 200 and 400 Gb/s per port. Latencies are round
#: order-of-magnitude figures for one small point-to-point message through NCCL, not
#: measurements: measure your own and ``replace`` them. Ethernet at 10 and 1 Gb/s (nominal IEEE
#: 802.3 rates, TCP-class latencies) is there to show where interleaving stops paying.
LINKS: dict[str, Link] = {
    "nvlink": Link("NVLink 4", 450 * GB, 3e-6),
    "nvlink3": Link("NVLink 3", 300 * GB, 3e-6),
    "pcie-gen5": Link("PCIe Gen5 x16", 63 * GB, 5e-6),
    "pcie-gen4": Link("PCIe Gen4 x16", 31.5 * GB, 5e-6),
    "ib-400": Link("InfiniBand NDR 400 Gb/s", 50 * GB, 10e-6),
    "ib-200": Link("InfiniBand HDR 200 Gb/s", 25 * GB, 10e-6),
    "eth-10g": Link("Ethernet 10 Gb/s", 1.25 * GB, 50e-6),
    "eth-1g": Link("Ethernet 1 Gb/s", 0.125 * GB, 50e-6),
}

#: Published shapes: Llama 2 7B, 13B and 70B (Touvron et al., "Llama 2", 2023; 4,096-token
#: context, 32,000-token vocabulary, SwiGLU, grouped-query attention in 70B) and Llama 3.1 405B
#: ("The Llama 3 Herd of Models", 2024, Table 3; pre-trained on 8,192-token sequences).
MODELS: dict[str, Model] = {
    "7b": Model("Llama 2 7B", 32, 4096, 32000, 4096, heads=32, ffn=11008, gated=True),
    "13b": Model("Llama 2 13B", 40, 5120, 32000, 4096, heads=40, ffn=13824, gated=True),
    "70b": Model("Llama 2 70B", 80, 8192, 32000, 4096, heads=64, kv_heads=8, ffn=28672, gated=True),
    "405b": Model("Llama 3.1 405B", 126, 16384, 128256, 8192, heads=128, kv_heads=8, ffn=53248, gated=True),
}


@dataclass(frozen=True)
class Cluster:
    """``gpus`` GPUs in a pipeline, neighbours joined by ``link``; with ``node_size`` and
    ``between_nodes``, GPUs in different nodes of that size talk over ``between_nodes``.

    ``gpu`` is one kind for all, or a tuple with one per GPU (a mixed cluster: the partition then
    gives faster GPUs more layers, and each GPU's memory is checked against its own size).

    >>> c = Cluster(GPUS["h100-80gb"], 4, LINKS["nvlink"], node_size=2, between_nodes=LINKS["ib-400"])
    >>> comm = c.comm(50e9)  # 50 GB from GPU 1 to 2 over InfiniBand, from 0 to 1 over NVLink
    >>> round(comm[1][2], 4), round(comm[0][1], 4)
    (1.0, 0.1111)
    """

    gpu: GPU | tuple[GPU, ...]
    gpus: int
    link: Link
    node_size: int | None = None
    between_nodes: Link | None = None

    def __post_init__(self) -> None:
        whole("gpus", self.gpus)
        if isinstance(self.gpu, tuple) and len(self.gpu) != self.gpus:
            raise ValueError(f"{len(self.gpu)} GPUs named for a pipeline of {self.gpus}")
        if (self.node_size is None) != (self.between_nodes is None):
            raise ValueError("node_size and between_nodes go together")
        if self.node_size is not None:
            whole("node_size", self.node_size)

    def device(self, stage: int) -> GPU:
        """The GPU that runs pipeline stage ``stage``."""
        return self.gpu[stage] if isinstance(self.gpu, tuple) else self.gpu

    @property
    def mixed(self) -> bool:
        return len({self.device(s) for s in range(self.gpus)}) > 1

    def comm(self, nbytes: float) -> Comm:
        """Hand-over time of ``nbytes``: one number on a uniform cluster, else a GPU × GPU matrix."""
        if self.node_size is None or self.between_nodes is None or self.node_size >= self.gpus:
            return self.link.seconds(nbytes)
        n = self.node_size
        return tuple(tuple((self.link if a // n == b // n else self.between_nodes).seconds(nbytes)
                           for b in range(self.gpus)) for a in range(self.gpus))
