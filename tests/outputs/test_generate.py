import pytest
import torch

from explorer.outputs.generate import generate
from explorer.model import Transformer, TransformerConfig


def model(arch, **kw):
    base = dict(arch=arch, vocab_size=20, d_model=16, n_heads=2, n_layers=2, d_ff=32, dropout=0.0, max_len=24)
    return Transformer(TransformerConfig(**{**base, **kw})).eval()


@pytest.mark.parametrize("causal", [True, False])
def test_encoder_decoder_step_attention_equals_full_forward_over_prefix(causal):
    m = model("encoder-decoder")
    src = torch.tensor([[5, 6, 7, 8, 0], [9, 10, 11, 12, 13]])
    head_mask = {"cross": torch.tensor([[1.0, 0.0], [1.0, 1.0]])}
    out = generate(m, src, bos_id=1, max_new_tokens=6, causal=causal, head_mask=head_mask)
    assert out.tokens.shape == (2, 6) and len(out.steps) == 6
    for t, step in enumerate(out.steps):
        prefix = out.prefix[:, : t + 1]
        # generated tokens are real decoder tokens, even one equal to the padding id
        full = m(src, prefix, causal=causal, head_mask=head_mask, tgt_key_mask=torch.ones_like(prefix, dtype=torch.bool))
        for layer in range(2):
            assert torch.allclose(step.decoder[layer], full.attentions.decoder[layer][:, :, -1], atol=1e-6)
            assert torch.allclose(step.cross[layer], full.attentions.cross[layer][:, :, -1], atol=1e-6)
        assert torch.equal(out.tokens[:, t], full.logits[:, -1].argmax(-1))
        assert torch.allclose(out.log_probs[:, t], full.logits[:, -1].log_softmax(-1).max(-1).values, atol=1e-5)
    assert (out.steps[0].cross[0][0, :, 4] == 0).all()  # padded source key never attended


def test_decoder_only_continues_the_prompt():
    m = model("decoder")
    prompt = torch.tensor([[3, 4, 5]])
    out = generate(m, prompt, max_new_tokens=4)
    assert out.prefix.shape == (1, 7) and torch.equal(out.prefix[:, :3], prompt)
    last = m(out.prefix[:, :-1])
    assert torch.allclose(out.steps[-1].decoder[1], last.attentions.decoder[1][:, :, -1], atol=1e-6)
    assert out.steps[0].cross == ()
    assert out.attention_matrix("decoder", 0).shape == (2, 4, 6)


def test_stops_at_eos_and_pads_finished_rows():
    m = model("encoder-decoder")
    with torch.no_grad():
        m.generator.proj.bias.fill_(0)
        m.generator.proj.bias[2] = 100.0  # eos always wins
    out = generate(m, torch.tensor([[5, 6], [7, 8]]), bos_id=1, eos_id=2, max_new_tokens=5)
    assert out.tokens.tolist() == [[2], [2]] and out.finished.all()


def test_generation_is_bounded_by_max_len_and_refuses_encoders():
    m = model("decoder", max_len=6)
    assert generate(m, torch.tensor([[3, 4, 5, 6]]), max_new_tokens=10).tokens.shape == (1, 2)
    with pytest.raises(ValueError, match="does not generate"):
        generate(model("encoder"), torch.tensor([[3]]))
    with pytest.raises(ValueError, match="bos_id"):
        generate(model("encoder-decoder"), torch.tensor([[3]]))
