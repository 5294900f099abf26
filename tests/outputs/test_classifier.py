"""explorer.outputs.classifier: class probabilities by name, as the seed 001 classifier's head gives them."""

import pytest
import torch

from explorer.model import PRESETS, Transformer, TransformerConfig
from explorer.outputs.classifier import class_probabilities


def test_probabilities_sum_to_one_and_follow_the_logits():
    logits = torch.tensor([[2.0, 0.0, -1.0], [0.0, 0.0, 0.0]])
    probs = class_probabilities(logits, ["a", "b", "c"])
    assert [list(p) for p in probs] == [["a", "b", "c"]] * 2
    assert probs[0]["a"] == pytest.approx(float(logits[0].softmax(-1)[0]))
    assert sum(probs[1].values()) == pytest.approx(1.0) and probs[1]["b"] == pytest.approx(1 / 3)


def test_default_names_and_a_real_classifier():
    config = TransformerConfig(**{**PRESETS["seed001-classifier"]["config"], "dropout": 0.0})
    model = Transformer(config).eval()
    with torch.no_grad():
        logits = model(torch.randint(4, 100, (2, 7))).logits  # (2, 5)
    probs = class_probabilities(logits)
    assert list(probs[0]) == [f"class {i}" for i in range(5)]


def test_wrong_shapes_are_named():
    with pytest.raises(ValueError, match=r"\(B, C\)"):
        class_probabilities(torch.zeros(3))
    with pytest.raises(ValueError, match="2 class names for 3 classes"):
        class_probabilities(torch.zeros(1, 3), ["a", "b"])
