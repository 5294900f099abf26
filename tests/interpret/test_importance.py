import pytest
import torch

from explorer.interpret.importance import Probe, exact_sweep, gradient_estimate, head_importance, run_objective
from explorer.model import Transformer, TransformerConfig


def model(arch, **kw):
    base = dict(arch=arch, vocab_size=20, d_model=18, n_heads=3, n_layers=3, d_ff=32, dropout=0.0, max_len=24)
    return Transformer(TransformerConfig(**{**base, **kw})).eval()


def probes():
    src = torch.tensor([[5, 6, 7, 8, 0], [9, 10, 11, 12, 13]])
    yield "encoder", {}, Probe(src, "similarity")
    yield "encoder", {}, Probe(src[:1], "embedding")
    yield "encoder", {"num_classes": 4}, Probe(src, "class")
    yield "decoder", {"norm_first": True}, Probe(src[1:], "logprob", tgt_out=torch.tensor([[10, 11, 12, 13, 3]]))
    yield "encoder-decoder", {"n_decoder_layers": 2}, Probe(src, "logprob", tgt_in=torch.tensor([[1, 4, 5], [1, 6, 0]]),
                                                           tgt_out=torch.tensor([[4, 5, 2], [6, 2, -100]]))


@pytest.mark.parametrize("arch, extra, probe", list(probes()))
def test_exact_sweep_equals_one_full_forward_per_head(arch, extra, probe):
    m = model(arch, **extra)
    exact, baseline = exact_sweep(m, probe)
    with torch.no_grad():
        assert baseline == pytest.approx(run_objective(m, probe).item(), abs=1e-5)
        for kind, change in exact.items():
            L, H = change.shape
            for layer in range(L):
                for head in range(H):
                    mask = torch.ones(L, H)
                    mask[layer, head] = 0
                    off = run_objective(m, probe, {kind: mask}).item()
                    assert change[layer, head].item() == pytest.approx(off - baseline, abs=1e-5)
    expected_kinds = {"encoder": {"encoder"}, "decoder": {"decoder"},
                      "encoder-decoder": {"encoder", "decoder", "cross"}}[arch]
    assert set(exact) == expected_kinds


@pytest.mark.parametrize("arch, extra, probe", list(probes()))
def test_gradient_estimate_is_the_derivative_of_the_objective(arch, extra, probe):
    m = model(arch, **extra)
    estimate = gradient_estimate(m, probe)
    eps = 1e-2
    for kind, est in estimate.items():
        L, H = est.shape
        mask_hi, mask_lo = torch.ones(L, H), torch.ones(L, H)
        mask_hi[1, 2] += eps
        mask_lo[1, 2] -= eps
        with torch.no_grad():
            derivative = (run_objective(m, probe, {kind: mask_hi}) - run_objective(m, probe, {kind: mask_lo})) / (2 * eps)
        assert est[1, 2].item() == pytest.approx(-derivative.item(), rel=2e-2, abs=1e-4)


def test_head_importance_reports_rank_agreement():
    m = model("encoder-decoder")
    probe = Probe(torch.tensor([[5, 6, 7, 8]]), "logprob", tgt_in=torch.tensor([[1, 4, 5]]),
                  tgt_out=torch.tensor([[4, 5, 2]]))
    result = head_importance(m, probe)
    assert -1.0 <= result.rank_correlation <= 1.0
    assert set(result.exact) == set(result.estimate) == {"encoder", "decoder", "cross"}


def test_similarity_needs_two_sentences():
    with pytest.raises(ValueError, match="two sentences"):
        run_objective(model("encoder"), Probe(torch.tensor([[3, 4]]), "similarity"))
