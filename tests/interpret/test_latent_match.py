"""match_latents: each latent's best property by F1, its precision and recall counted by hand, the share of its top
activations with the property, and the checks on its input."""

import pytest
import torch

from explorer.interpret.sae.latent_match import LatentMatch, match_latents


def test_precision_recall_and_top_share_are_the_counts_by_hand():
    gen = torch.Generator().manual_seed(0)
    N = 400
    month = torch.rand(N, generator=gen) < 0.3  # (N,) the tokens with the property "month"
    digit = ~month
    acts = torch.zeros(N, 3)
    # latent 0: fires on every month token and on 10 digit tokens (weaker there)
    acts[month, 0] = 2.0 + torch.rand(int(month.sum()), generator=gen)
    stray = digit.nonzero()[:10, 0]
    acts[stray, 0] = 0.5
    # latent 1: fires on half the digit tokens only; latent 2 never fires
    half = digit.nonzero()[::2, 0]
    acts[half, 1] = 1.0
    props = [("month", "char a") if m else ("digit",) for m in month.tolist()]
    found = {m.latent: m for m in match_latents(acts, props, threshold=0.0, min_count=1, top=20)}
    assert set(found) == {0, 1}  # latent 2 never fires: not listed
    m0 = found[0]
    n_month = int(month.sum())
    assert m0.property in ("month", "char a")  # the two hold on the same tokens: the same F1
    assert m0.precision == pytest.approx(n_month / (n_month + 10))
    assert m0.recall == 1.0 and m0.top_share == 1.0  # its 20 strongest are all month tokens
    assert (m0.fires, m0.holds) == (n_month + 10, n_month)
    m1 = found[1]
    assert m1.property == "digit" and m1.precision == 1.0
    assert m1.recall == pytest.approx(len(half) / int(digit.sum()))
    assert m1.f1 == pytest.approx(2 * m1.precision * m1.recall / (m1.precision + m1.recall))
    assert list(found) == sorted(found, key=lambda i: -found[i].f1)  # best F1 first
    assert m0.precision_any == m0.precision and m1.precision_any == m1.precision
    # above a quarter of its largest activation (> 0.75), latent 0 is active on the month tokens only
    strong = {m.latent: m for m in match_latents(acts, props, min_count=1, top=20)}[0]
    assert (strong.precision, strong.recall, strong.fires) == (1.0, 1.0, n_month)
    assert strong.precision_any == pytest.approx(n_month / (n_month + 10))


def test_rare_properties_are_not_matched():
    acts = torch.tensor([[1.0], [0.0], [0.0], [1.0], [0.0], [0.0]])
    props = [("rare", "common"), *[("common",)] * 5]
    (m,) = match_latents(acts, props, min_count=2, threshold=0.0)
    assert m.property == "common" and m.recall == pytest.approx(1 / 3)  # "rare" has a better F1 but 1 token
    (m,) = match_latents(acts, props, min_count=1, threshold=0.0)
    assert m.property == "rare" and m.precision == 0.5 and m.recall == 1.0


def test_the_shapes_must_agree():
    with pytest.raises(ValueError, match="N=2"):
        match_latents(torch.zeros(3, 4), [("a",), ("b",)])
    with pytest.raises(ValueError, match="threshold"):
        match_latents(torch.zeros(2, 4), [("a",), ("b",)], threshold=1.0)
    assert LatentMatch(0, "a", 0.0, 0.0, 0.0, 0, 1, 0.0).f1 == 0.0
