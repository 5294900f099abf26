"""From-scratch Transformer: config, masks, positional encodings (added, or rotary inside attention),
norms, attention, layers, stacks, model.

Knows nothing of tokenizers, Plotly or Gradio.
"""

from .attention import MultiHeadAttention
from .config import PRESETS, TransformerConfig
from .layers import DecoderLayer, EncoderLayer, FeedForward, SublayerConnection
from .masks import (block_keys_mask, causal_mask, combine_masks, local_window_mask, no_self_mask,
                    padding_mask, sliding_window_mask)
from .heads import ClassifierHead, Generator, MaskedLMHead
from .model import Transformer
from .returns import AttentionMasks, Attentions, DecoderResult, EncoderResult, HiddenStates, TransformerOutput
from ..sinusoid import sinusoidal_table
from .positional import Embeddings, position_ids
from .record import Record, RecordSlot
from .relative import RelativePositionBias, relative_buckets
from .rotary import RotaryTables, apply_rotary, rotary_tables
from .stacks import (RESID_POINTS, Decoder, Encoder, EncoderDecoderStacks, Receivers, ResidHook, StackAttentions,
                     StackHeadHook, StackOutput)

__all__ = [
    "AttentionMasks", "Attentions", "ClassifierHead", "Decoder", "DecoderLayer", "DecoderResult", "Embeddings", "Encoder",
    "EncoderDecoderStacks", "EncoderLayer", "EncoderResult", "FeedForward", "Generator", "HiddenStates", "MaskedLMHead", "RelativePositionBias",
    "MultiHeadAttention", "PRESETS", "RESID_POINTS", "Receivers", "Record", "RecordSlot", "ResidHook",
    "StackAttentions", "StackHeadHook", "StackOutput", "SublayerConnection", "Transformer",
    "TransformerConfig", "TransformerOutput", "block_keys_mask", "causal_mask", "combine_masks",
    "local_window_mask", "no_self_mask", "padding_mask", "sinusoidal_table", "sliding_window_mask", "position_ids",
    "RotaryTables", "apply_rotary", "rotary_tables", "relative_buckets",
]
