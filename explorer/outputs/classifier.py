"""What a sequence classifier says: the probability of each class, by name.

Shapes: B sentences, C classes.
    class_probabilities(logits (B, C), names) -> one {name: probability} per sentence
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor


def class_probabilities(logits: Tensor, names: Sequence[str] | None = None) -> list[dict[str, float]]:
    """Softmax over the classes (in float32), keyed by `names` (default "class 0", "class 1", ...)."""
    if logits.dim() != 2:
        raise ValueError(f"classifier logits must be (B, C); got shape {tuple(logits.shape)}")
    n_classes = logits.shape[1]
    names = list(names) if names else [f"class {i}" for i in range(n_classes)]
    if len(names) != n_classes:
        raise ValueError(f"{len(names)} class names for {n_classes} classes")
    return [dict(zip(names, row.tolist())) for row in logits.float().softmax(-1).cpu()]
