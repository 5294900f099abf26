"""The model panel: what the loaded model is (architecture, size, device, vocabulary, origin), its example
sentences, and which attention kinds and heads it has."""

from __future__ import annotations

from dataclasses import dataclass

from ...checkpoints import LoadedModel
from ..errors import escape_md
from ..runs import is_language_model

MAX_EXAMPLES = 12


@dataclass(frozen=True)
class ModelInfo:
    markdown: str  # the model panel, escaped
    headline: str  # one line for the top of the page, escaped
    examples: list[str]
    kinds: dict[str, tuple[int, int]]  # attention kind -> (layers, heads), in the model's order
    language_model: bool  # a causal LM: next-token and surprisal views


def architecture(loaded: LoadedModel) -> str:
    c = loaded.config
    layers = (f"{c.encoder_layers} encoder + {c.decoder_layers} decoder layers" if c.arch == "encoder-decoder"
              else f"{c.encoder_layers if c.arch == 'encoder' else c.decoder_layers} layers")
    return (f"{c.arch}, {layers}, {c.n_heads} heads, d_model {c.d_model}, d_ff {c.d_ff}, "
            f"{'pre' if c.norm_first else 'post'}-norm, {c.positional} positions")


def describe(loaded: LoadedModel) -> str:
    c = loaded.config
    rows = [("architecture", architecture(loaded)), ("parameters", f"{loaded.model.num_parameters():,}"),
            ("device", str(loaded.model.device)),
            ("vocabulary", f"{loaded.tokenizer.vocab_size:,} tokens (model: {c.vocab_size:,})"),
            ("weights from", loaded.source), ("task", loaded.task.get("name", "?"))]
    lines = [f"- **{k}**: {escape_md(v)}" for k, v in rows]
    if loaded.task.get("description"):
        lines += ["", escape_md(loaded.task["description"])]
    lines += [line for note in loaded.notes or [] for line in ("", f"_note:_ {escape_md(note)}")]
    return "\n".join(lines)


def headline(loaded: LoadedModel) -> str:
    c = loaded.config
    return escape_md(f"{loaded.source} · {c.arch} · {loaded.model.num_parameters():,} parameters · "
                     f"{loaded.task.get('name', '?')}")


def model_info(loaded: LoadedModel) -> ModelInfo:
    examples = [str(e) for e in loaded.task.get("examples", [])][:MAX_EXAMPLES]
    return ModelInfo(describe(loaded), headline(loaded), examples, loaded.config.attention_kinds(),
                     is_language_model(loaded))
