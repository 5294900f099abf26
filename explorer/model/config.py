"""Validated configuration for the from-scratch Transformer, and presets of the seed systems.

One dataclass describes every shape the explorer can build: encoder-only (BERT, seed 000/001),
decoder-only (causal LM) and encoder-decoder (seeds 002/003). `validate()` runs on construction
and raises `ValueError` naming the offending field, so a bad configuration typed into the UI
gives a message a person can act on instead of a shape error deep inside a forward pass.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from ..sinusoid import LAYOUTS as SINUSOID_LAYOUTS

ARCHS = ("encoder", "decoder", "encoder-decoder")
POSITIONALS = ("sinusoidal", "learned", "rotary", "relative", "none")
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu")
NORMS = ("layernorm", "rmsnorm")
MLPS = ("standard", "gated")
# rope_scaling types and the fields each needs (transformers' names, so Hub configs map one to one)
ROPE_SCALINGS = {
    "linear": ("factor",),
    "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"),
}


@dataclass
class TransformerConfig:
    arch: str = "encoder-decoder"  # "encoder", "decoder" (decoder-only causal LM) or "encoder-decoder"
    vocab_size: int = 1000  # source vocabulary (the only one for encoder / decoder-only models)
    tgt_vocab_size: int | None = None  # target vocabulary of an encoder-decoder; None = vocab_size
    d_model: int = 128  # residual stream width D
    n_heads: int = 4  # heads per attention block H
    head_dim: int | None = None  # width Dh of each head; None = d_model // n_heads (seed 002 uses d_model)
    n_layers: int = 2  # layers per stack, unless overridden below
    n_encoder_layers: int | None = None  # None = n_layers
    n_decoder_layers: int | None = None  # None = n_layers
    d_ff: int = 512  # hidden width of the position-wise feed-forward block
    dropout: float = 0.1  # on sublayer outputs, and on what the three below leave as None
    embedding_dropout: float | None = None  # on the summed embeddings; None = dropout (seed 001 has none)
    attention_dropout: float | None = None  # on attention weights (returned weights are pre-dropout); None = dropout
    ffn_dropout: float | None = None  # inside the feed-forward block, after the activation; None = dropout
    max_len: int = 512  # longest sequence (size of the learned position table / sinusoidal cache)
    norm_first: bool = False  # False: post-norm (torch default, seed 001, BERT); True: pre-norm (seeds 000, 003)
    final_norm: bool | None = None  # norm after the last layer of each stack; None = norm_first
    norm: str = "layernorm"  # "layernorm" (mean, variance, gain, bias) or "rmsnorm" (root mean square, gain only)
    positional: str = "sinusoidal"  # "sinusoidal", "learned", "rotary" (q, k), "relative" (T5 score bias) or "none"
    sinusoid_layout: str = "interleaved"  # sinusoidal table: "interleaved" sin, cos, sin, ... or "split" sines | cosines (Marian)
    position_offset: int = 0  # learned table row of position 0 (BART: 2, RoBERTa: padding_idx + 1); rows = max_len + offset
    relative_buckets: int = 32  # "relative": buckets of signed distance per self-attention stack (T5)
    relative_max_distance: int = 128  # "relative": distances from here on share the last bucket
    pos_base: float = 10000.0  # base of the sinusoidal table, or of the rotary frequencies (rope_theta)
    rotary_fraction: float = 1.0  # share of each head's width that rotates (GPT-NeoX: 0.25); the rest passes
    rope_scaling: dict[str, Any] | None = None  # None, {"rope_type": "linear", "factor"} or "llama3" + its fields
    scale_embeddings: bool = False  # multiply token embeddings by sqrt(d_model) (seeds 000, 003)
    mlp: str = "standard"  # "standard": down(act(up x)); "gated": down(act(gate x) * up x) (SwiGLU)
    activation: str = "relu"  # "relu", "gelu" (exact, erf), "gelu_tanh" (tanh approximation) or "silu"
    layer_norm_eps: float = 1e-5  # epsilon of every norm (LayerNorm or RMSNorm)
    num_classes: int | None = None  # classification head on the first token (seed 001), else None
    classifier_hidden: int = 128  # hidden width of that head: Linear(D, 128) -> ReLU -> Linear(128, C)
    pad_id: int | None = 0  # padding token id, used to build padding masks; None = no padding token
    type_vocab_size: int = 0  # BERT token-type (segment) embeddings; 0 = none
    embedding_norm: bool = False  # LayerNorm on the summed embeddings (BERT)
    tie_embeddings: bool = False  # share the output projection (or the MLM decoder) with the token embedding
    share_embeddings: bool = False  # encoder and decoder read one token embedding Parameter (T5, BART, Marian)
    output_scale: float = 1.0  # multiplier of the last hidden state before the LM head (tied T5: d_model ** -0.5)
    mlm_head: bool = False  # encoder with a masked-LM head: dense -> activation -> norm -> vocabulary (+ bias)
    mlm_activation: str | None = None  # activation inside the MLM head; None = activation (RoBERTa: always gelu)
    n_kv_heads: int | None = None  # key/value heads Hkv (grouped-query attention); None = n_heads
    attn_scale: float | None = None  # multiplier of q.k before the softmax; None = 1/sqrt(head width)
    qkv_bias: bool = True  # biases in the query, key and value projections
    out_bias: bool = True  # bias in the attention output projection W_o
    mlp_bias: bool = True  # biases in the feed-forward linear layers
    lm_head_bias: bool = True  # bias in the projection to the vocabulary
    parallel_residual: bool = False  # pre-norm layers computing x + attn(norm1 x) + mlp(norm2 x) (GPT-NeoX)
    sliding_window: int | None = None  # decoder self-attention sees the last `sliding_window` keys (itself included)

    def __post_init__(self) -> None:
        self.validate()

    # ---------------------------------------------------------------- derived values
    @property
    def resolved_head_dim(self) -> int:
        return self.head_dim if self.head_dim is not None else self.d_model // self.n_heads

    @property
    def resolved_kv_heads(self) -> int:
        return self.n_kv_heads if self.n_kv_heads is not None else self.n_heads

    @property
    def rotary_dim(self) -> int:
        """Width of the rotating part of each head (0 without rotary positions), as transformers rounds it."""
        return int(self.resolved_head_dim * self.rotary_fraction) if self.positional == "rotary" else 0

    @property
    def resolved_attn_scale(self) -> float:
        return self.attn_scale if self.attn_scale is not None else self.resolved_head_dim ** -0.5

    @property
    def resolved_mlm_activation(self) -> str:
        return self.activation if self.mlm_activation is None else self.mlm_activation

    @property
    def position_rows(self) -> int:
        """Rows of a learned position table: max_len positions after `position_offset` unused rows."""
        return self.max_len + self.position_offset

    @property
    def resolved_tgt_vocab_size(self) -> int:
        return self.tgt_vocab_size if self.tgt_vocab_size is not None else self.vocab_size

    @property
    def encoder_layers(self) -> int:
        """Layers in the encoder stack (0 for a decoder-only model)."""
        if self.arch == "decoder":
            return 0
        return self.n_encoder_layers if self.n_encoder_layers is not None else self.n_layers

    @property
    def decoder_layers(self) -> int:
        """Layers in the decoder stack (0 for an encoder-only model)."""
        if self.arch == "encoder":
            return 0
        return self.n_decoder_layers if self.n_decoder_layers is not None else self.n_layers

    @property
    def resolved_embedding_dropout(self) -> float:
        return self.dropout if self.embedding_dropout is None else self.embedding_dropout

    @property
    def resolved_attention_dropout(self) -> float:
        return self.dropout if self.attention_dropout is None else self.attention_dropout

    @property
    def resolved_ffn_dropout(self) -> float:
        return self.dropout if self.ffn_dropout is None else self.ffn_dropout

    @property
    def resolved_final_norm(self) -> bool:
        return self.norm_first if self.final_norm is None else self.final_norm

    def attention_kinds(self) -> dict[str, tuple[int, int]]:
        """The attention blocks this architecture has: kind -> (layers, heads), in the order
        "encoder" (self), "decoder" (self), "cross"; the keys of a forward pass's head_mask."""
        kinds = {}
        if self.arch != "decoder":
            kinds["encoder"] = (self.encoder_layers, self.n_heads)
        if self.arch != "encoder":
            kinds["decoder"] = (self.decoder_layers, self.n_heads)
        if self.arch == "encoder-decoder":
            kinds["cross"] = (self.decoder_layers, self.n_heads)
        return kinds

    # ---------------------------------------------------------------- validation
    def fail(self, name: str, why: str) -> None:
        raise ValueError(f"TransformerConfig.{name}={getattr(self, name)!r}: {why}")

    def check_positive_int(self, name: str, allow_none: bool = False) -> None:
        value = getattr(self, name)
        if value is None and allow_none:
            return
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            self.fail(name, "must be a positive integer")

    def validate(self) -> None:
        fail, positive_int = self.fail, self.check_positive_int
        if self.arch not in ARCHS:
            fail("arch", f"must be one of {', '.join(ARCHS)}")
        for name in ("vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_len"):
            positive_int(name)
        for name in ("tgt_vocab_size", "head_dim", "n_encoder_layers", "n_decoder_layers", "num_classes"):
            positive_int(name, allow_none=True)
        if self.head_dim is None and self.d_model % self.n_heads:
            fail("d_model", f"is not divisible by n_heads={self.n_heads}; set head_dim explicitly")
        if not (isinstance(self.dropout, (int, float)) and 0.0 <= self.dropout < 1.0):
            fail("dropout", "must be in [0, 1)")
        for name in ("embedding_dropout", "attention_dropout", "ffn_dropout"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float)) and not isinstance(value, bool)
                                          and 0.0 <= value < 1.0):
                fail(name, "must be None or in [0, 1)")
        if self.positional not in POSITIONALS:
            fail("positional", f"must be one of {', '.join(POSITIONALS)}")
        if not (isinstance(self.pos_base, (int, float)) and math.isfinite(self.pos_base) and self.pos_base > 1):
            fail("pos_base", "must be a finite number greater than 1")
        if self.activation not in ACTIVATIONS:
            fail("activation", f"must be one of {', '.join(ACTIVATIONS)}")
        if not (isinstance(self.layer_norm_eps, (int, float)) and 0 < self.layer_norm_eps < 1):
            fail("layer_norm_eps", "must be a small positive number")
        if self.num_classes is not None and self.arch != "encoder":
            fail("num_classes", "a classification head needs arch='encoder'")
        positive_int("classifier_hidden")
        if isinstance(self.type_vocab_size, bool) or not isinstance(self.type_vocab_size, int) or self.type_vocab_size < 0:
            fail("type_vocab_size", "must be a non-negative integer")
        if self.pad_id is not None and (isinstance(self.pad_id, bool) or not isinstance(self.pad_id, int)
                                        or not 0 <= self.pad_id < self.vocab_size):
            fail("pad_id", f"must be None or a token id in [0, vocab_size={self.vocab_size})")
        if self.tie_embeddings and self.arch == "encoder" and not self.mlm_head:
            fail("tie_embeddings", "needs a language-model head (decoder, encoder-decoder, or mlm_head)")
        for name in ("norm_first", "scale_embeddings", "embedding_norm", "tie_embeddings", "qkv_bias", "out_bias",
                     "mlp_bias", "lm_head_bias", "parallel_residual", "share_embeddings", "mlm_head"):
            if not isinstance(getattr(self, name), bool):
                fail(name, "must be True or False")
        if self.final_norm is not None and not isinstance(self.final_norm, bool):
            fail("final_norm", "must be True, False or None")
        self.validate_options()

    def validate_options(self) -> None:
        """The options the Hub model families combine: norm, MLP, heads, rotary positions, residual, window."""
        fail, positive_int = self.fail, self.check_positive_int
        if self.norm not in NORMS:
            fail("norm", f"must be one of {', '.join(NORMS)}")
        if self.mlp not in MLPS:
            fail("mlp", f"must be one of {', '.join(MLPS)}")
        positive_int("n_kv_heads", allow_none=True)
        if self.n_heads % self.resolved_kv_heads:
            fail("n_kv_heads", f"must divide n_heads={self.n_heads} (each key/value head serves a group of query heads)")
        if self.attn_scale is not None and not (_number(self.attn_scale) and math.isfinite(self.attn_scale)
                                                and self.attn_scale > 0):
            fail("attn_scale", "must be None or a positive number")
        if not (_number(self.rotary_fraction) and 0 < self.rotary_fraction <= 1):
            fail("rotary_fraction", "must be in (0, 1]")
        if self.positional == "rotary" and (self.rotary_dim < 2 or self.rotary_dim % 2):
            fail("rotary_fraction", f"rotates {self.rotary_dim} of {self.resolved_head_dim} dimensions per head; "
                                    f"rotary positions need an even number >= 2")
        if self.rope_scaling is not None:
            if self.positional != "rotary":
                fail("rope_scaling", "applies to rotary positions only (positional='rotary')")
            self.validate_rope_scaling()
        if self.parallel_residual and (not self.norm_first or self.arch == "encoder-decoder"):
            fail("parallel_residual", "needs pre-norm layers (norm_first=True) without cross-attention")
        positive_int("sliding_window", allow_none=True)
        if self.sliding_window is not None and self.arch == "encoder":
            fail("sliding_window", "limits decoder self-attention; an encoder has none")
        self.validate_seq2seq_options()

    def validate_seq2seq_options(self) -> None:
        """The options of the encoder and encoder-decoder families: positions, shared embeddings, heads."""
        fail, positive_int = self.fail, self.check_positive_int
        if self.sinusoid_layout not in SINUSOID_LAYOUTS:
            fail("sinusoid_layout", f"must be one of {', '.join(SINUSOID_LAYOUTS)}")
        if isinstance(self.position_offset, bool) or not isinstance(self.position_offset, int) or self.position_offset < 0:
            fail("position_offset", "must be a non-negative integer")
        if self.position_offset and self.positional != "learned":
            fail("position_offset", "offsets rows of a learned position table (positional='learned')")
        positive_int("relative_buckets")
        positive_int("relative_max_distance")
        if self.positional == "relative" and self.relative_buckets < 4:
            fail("relative_buckets", "T5's bucketing needs at least 4 buckets")
        if self.share_embeddings and (self.arch != "encoder-decoder" or self.resolved_tgt_vocab_size != self.vocab_size):
            fail("share_embeddings", "needs an encoder-decoder with one vocabulary (tgt_vocab_size None or vocab_size)")
        if not (_number(self.output_scale) and math.isfinite(self.output_scale) and self.output_scale > 0):
            fail("output_scale", "must be a positive number")
        if self.mlm_head and (self.arch != "encoder" or self.num_classes is not None):
            fail("mlm_head", "is a head of an encoder without a classifier (arch='encoder', num_classes=None)")
        if self.mlm_activation is not None and self.mlm_activation not in ACTIVATIONS:
            fail("mlm_activation", f"must be None or one of {', '.join(ACTIVATIONS)}")

    def validate_rope_scaling(self) -> None:
        fail, scaling = self.fail, self.rope_scaling
        if not isinstance(scaling, dict):
            fail("rope_scaling", "must be None or a dict with a \"rope_type\"")
        kind = scaling.get("rope_type")
        if kind not in ROPE_SCALINGS:
            fail("rope_scaling", f"rope_type {kind!r} is not supported; supported types: {', '.join(ROPE_SCALINGS)}")
        unknown = sorted(set(scaling) - {"rope_type", *ROPE_SCALINGS[kind]})
        if unknown:
            fail("rope_scaling", f"unknown field(s) {', '.join(unknown)} for rope_type {kind!r}")
        for name in ROPE_SCALINGS[kind]:
            if not (_number(scaling.get(name)) and math.isfinite(scaling[name]) and scaling[name] > 0):
                fail("rope_scaling", f"{name} must be a positive number for rope_type {kind!r}")
        if kind == "llama3" and scaling["high_freq_factor"] <= scaling["low_freq_factor"]:
            fail("rope_scaling", "high_freq_factor must be larger than low_freq_factor")

    # ---------------------------------------------------------------- (de)serialisation
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TransformerConfig":
        data = migrate(data)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"TransformerConfig: unknown field(s) {', '.join(unknown)}")
        return cls(**data)

    def replace(self, **changes: Any) -> "TransformerConfig":
        return dataclasses.replace(self, **changes)

    # ---------------------------------------------------------------- presets
    @classmethod
    def preset(cls, name: str, **overrides: Any) -> "TransformerConfig":
        """A named configuration reproducing one of the seed systems (see PRESETS)."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}")
        return cls(**{**PRESETS[name]["config"], **overrides})


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Configs saved before a field was split: "bias" (attention projections) -> qkv_bias and out_bias."""
    data = dict(data)
    if "bias" in data:
        bias = data.pop("bias")
        data.setdefault("qkv_bias", bias)
        data.setdefault("out_bias", bias)
    return data


# Each preset records the system it reproduces; docs/models.md documents the same table.
PRESETS: dict[str, dict[str, Any]] = {
    "seed000-encoder": {
        "description": "Seed 000 (UmarJamil-style encoder): embeddings x sqrt(d_model), sinusoidal "
        "positions + dropout, pre-norm residual blocks, final LayerNorm.",
        "config": dict(arch="encoder", vocab_size=1000, d_model=512, n_heads=8, n_layers=6, d_ff=2048,
                       dropout=0.1, max_len=350, norm_first=True, positional="sinusoidal",
                       scale_embeddings=True, activation="relu"),
    },
    "seed001-classifier": {
        "description": "Seed 001 TextClassifier: post-norm encoder (2 layers, d_model 128, 8 heads, "
        "d_ff 256), sinusoidal positions, head Linear(128,128)-ReLU-Linear(128,5) on the first token; "
        "410,117 parameters with vocab 1000. Dropout 0.1 on the two sublayer outputs only, as the seed's "
        "EncoderLayer (its nn.MultiheadAttention keeps the default dropout 0; its feed-forward has none).",
        "config": dict(arch="encoder", vocab_size=1000, d_model=128, n_heads=8, n_layers=2, d_ff=256,
                       dropout=0.1, embedding_dropout=0.0, attention_dropout=0.0, ffn_dropout=0.0,
                       max_len=512, norm_first=False,
                       positional="sinusoidal", activation="relu", num_classes=5),
    },
    "seed002-transformer": {
        "description": "Seed 002 encoder-decoder: learned position embeddings, post-norm, 6 layers, "
        "8 heads each embed_size (512) wide, d_ff 4x512, source padding + causal target masks.",
        "config": dict(arch="encoder-decoder", vocab_size=10, d_model=512, n_heads=8, head_dim=512,
                       n_layers=6, d_ff=2048, dropout=0.0, max_len=100, norm_first=False,
                       positional="learned", activation="relu"),
    },
    "annotated": {
        "description": "Seed 003, The Annotated Transformer base model: 6+6 layers, d_model 512, 8 heads, "
        "d_ff 2048, pre-norm sublayer connections with final norms, sinusoidal positions, "
        "embeddings x sqrt(d_model), log-softmax generator.",
        "config": dict(arch="encoder-decoder", vocab_size=11, d_model=512, n_heads=8, n_layers=6,
                       d_ff=2048, dropout=0.1, max_len=5000, norm_first=True, positional="sinusoidal",
                       scale_embeddings=True, activation="relu"),
    },
    "tiny-gpt": {
        "description": "A small decoder-only causal language model (GPT-style, pre-norm, learned positions).",
        "config": dict(arch="decoder", vocab_size=1000, d_model=128, n_heads=4, n_layers=4, d_ff=512,
                       dropout=0.1, max_len=256, norm_first=True, positional="learned", activation="gelu"),
    },
}
