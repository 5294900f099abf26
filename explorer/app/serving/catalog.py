"""The models the page offers by name: the shipped checkpoints and a curated list of Hub models people come to
look inside, each with its size, so a person knows what they pick. Any other Hub id can be typed."""

from __future__ import annotations

from dataclasses import dataclass

from .session import MINILM


@dataclass(frozen=True)
class KnownModel:
    repo: str  # Hugging Face Hub id
    family: str
    parameters: str  # size, as people say it
    note: str  # what is worth looking at

    @property
    def label(self) -> str:
        return f"{self.repo} · {self.family}, {self.parameters}"


CURATED = (
    KnownModel("openai-community/gpt2", "GPT-2", "124M", "the classic decoder; tied embeddings"),
    KnownModel("distilbert/distilgpt2", "GPT-2", "82M", "6 layers distilled from GPT-2"),
    KnownModel("EleutherAI/pythia-70m", "GPT-NeoX", "70M", "partial rotary positions, parallel residual"),
    KnownModel("HuggingFaceTB/SmolLM2-135M", "Llama", "135M", "grouped-query attention (9 heads, 3 K/V), RMSNorm"),
    KnownModel("Qwen/Qwen2.5-0.5B", "Qwen2", "494M", "q/k/v biases, 14 heads sharing 2 K/V heads"),
    KnownModel(MINILM, "BERT", "23M", "sentence embeddings (offline copy in the test requirements)"),
    KnownModel("Helsinki-NLP/opus-mt-en-de", "Marian", "74M", "English to German translation; cross-attention"),
    KnownModel("google-t5/t5-small", "T5", "60M", "translate / summarize by prefix; relative position bias"),
    KnownModel("google/flan-t5-small", "T5", "77M", "instruction-tuned T5, gated-GELU feed-forward"),
    KnownModel("facebook/bart-base", "BART", "139M", "denoising encoder-decoder: fills <mask> spans"),
    KnownModel("distilbert/distilbert-base-uncased", "DistilBERT", "66M", "masked LM: fillers of [MASK]"),
    KnownModel("FacebookAI/roberta-base", "RoBERTa", "125M", "masked LM: fillers of <mask>"),
)


def model_choices(shipped: list[str], start: str) -> list[tuple[str, str]]:
    """(label, name) pairs for the model dropdown: shipped checkpoints first, then the curated Hub models."""
    choices = [(f"{name} · shipped", name) for name in shipped]
    choices += [(m.label, m.repo) for m in CURATED]
    if start not in {name for _, name in choices}:
        choices.insert(0, (start, start))
    return choices
