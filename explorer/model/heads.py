"""What sits on top of the last stack: the language-model head (seq2seq / causal LM), seed 001's
classifier, and the masked-LM head of BERT-family encoders.

Shapes: B batch, T length, D model width, V vocabulary, C classes.
    Generator(x (B, T, D))         -> (B, T, V) log-probabilities; .logits(x) the raw scores
    ClassifierHead(x (B, T, D))    -> (B, C) from the first token
    MaskedLMHead(x (B, T, D))      -> (B, T, V) scores: proj(norm(act(dense x))) + bias
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .layers import ACTIVATION_FUNCTIONS
from .norms import make_norm


class Generator(nn.Module):
    """Linear projection to the vocabulary + log-softmax (The Annotated Transformer's Generator).

    `scale` multiplies the hidden state first (T5 with tied embeddings: d_model ** -0.5)."""

    def __init__(self, d_model: int, vocab_size: int, bias: bool = True, scale: float = 1.0):
        super().__init__()
        self.proj = nn.Linear(d_model, vocab_size, bias=bias)
        self.scale = scale

    def logits(self, x: Tensor) -> Tensor:
        return self.proj(x * self.scale if self.scale != 1.0 else x)  # (B, T, V)

    def forward(self, x: Tensor) -> Tensor:
        return self.logits(x).log_softmax(dim=-1)  # (B, T, V) log-probabilities


class ClassifierHead(nn.Module):
    """Seed 001's head on the first token: Linear(D, hidden) -> ReLU -> Linear(hidden, C)."""

    def __init__(self, d_model: int, hidden: int, num_classes: int):
        super().__init__()
        self.fc1 = nn.Linear(d_model, hidden)
        self.final = nn.Linear(hidden, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        return self.final(torch.relu(self.fc1(x[:, 0])))  # (B, D) first token -> (B, C)


class MaskedLMHead(nn.Module):
    """BERT's `cls.predictions`, RoBERTa's `lm_head`, DistilBERT's vocab_transform / vocab_layer_norm /
    vocab_projector: dense (D -> D) -> activation -> norm -> projection to the vocabulary with a bias.
    The projection's weight is usually the token embedding (tied by the model)."""

    def __init__(self, d_model: int, vocab_size: int, activation: str, norm: str, eps: float):
        super().__init__()
        self.dense = nn.Linear(d_model, d_model)
        self.activation = ACTIVATION_FUNCTIONS[activation]
        self.norm = make_norm(norm, d_model, eps)
        self.proj = nn.Linear(d_model, vocab_size)

    def forward(self, x: Tensor) -> Tensor:
        return self.proj(self.norm(self.activation(self.dense(x))))  # (B, T, V)
