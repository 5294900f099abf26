"""Logit lens: the last layer's lens is the model's own output (shipped and built models, pre- and
post-norm); earlier layers go through the same final norm and LM head; ranks and top tokens agree."""

from pathlib import Path

import pytest
import torch

from explorer.checkpoints import load_checkpoint
from explorer.interpret.lens import lens_logits, logit_lens, unembed
from explorer.model import Transformer, TransformerConfig

CHECKPOINTS = Path(__file__).resolve().parents[2] / "checkpoints"


def built(norm_first: bool, final_norm: bool | None = None, arch: str = "decoder", **options) -> Transformer:
    config = TransformerConfig(arch=arch, vocab_size=40, d_model=32, n_heads=4, n_layers=3, d_ff=64, dropout=0.0,
                               max_len=16, norm_first=norm_first, final_norm=final_norm, **options)
    model = Transformer(config).eval()
    with torch.no_grad():  # norms off their identity init, so applying one too many or too few shows
        for name, p in model.named_parameters():
            if "norm" in name:
                p.normal_(0.5 if name.endswith("weight") else 0.0, 0.3)
    return model


@pytest.mark.parametrize("norm_first,final_norm", [(True, None), (False, None), (False, True)],
                         ids=["pre-norm", "post-norm", "post-norm+final-norm"])
def test_last_layer_lens_is_the_models_output(norm_first, final_norm):
    model = built(norm_first, final_norm)
    ids = torch.randint(4, 40, (2, 9))
    out = model(ids)
    logits = lens_logits(model, out.hidden_states.decoder)
    assert logits.shape == (4, 2, 9, 40)
    torch.testing.assert_close(logits[-1], out.logits, rtol=0, atol=1e-6)
    # every other layer goes through the same readout: for a pre-norm model, norm then LM head
    head, norm = model.generator.proj, model.decoder.norm
    first = head(norm(out.hidden_states.decoder[0])) if norm is not None else head(out.hidden_states.decoder[0])
    torch.testing.assert_close(logits[0], first, rtol=0, atol=1e-6)


def test_post_norm_layers_are_not_normalised_again():
    model = built(norm_first=False)
    assert model.decoder.norm is None  # each post-norm layer ends with its own norm
    h = torch.randn(1, 3, 32)
    torch.testing.assert_close(unembed(model, h), model.generator.proj(h), rtol=0, atol=0)


def test_logit_lens_top_tokens_probabilities_and_ranks():
    model = built(norm_first=True)
    ids = torch.randint(4, 40, (2, 7))
    lens = logit_lens(model, ids)
    out = model(ids)
    assert lens.top_ids.shape == lens.top_probs.shape == lens.final_rank.shape == (4, 2, 7)
    assert torch.equal(lens.final_ids, out.logits.argmax(-1))
    assert torch.equal(lens.top_ids[-1], lens.final_ids) and (lens.final_rank[-1] == 0).all()
    probs = lens_logits(model, out.hidden_states.decoder).softmax(-1)  # (L+1, B, T, V)
    torch.testing.assert_close(lens.top_probs, probs.max(-1).values)
    final = lens.final_ids[None, ..., None].expand(4, -1, -1, 1)  # (L+1, B, T, 1)
    torch.testing.assert_close(lens.final_probs, probs.gather(-1, final)[..., 0])
    # rank = position of the final prediction when each layer's tokens are sorted by probability
    order = probs.argsort(-1, descending=True)
    want = (order == lens.final_ids[None, ..., None]).float().argmax(-1)
    assert torch.equal(lens.final_rank, want)
    # the lens of one sequence alone equals its row of the batch
    single = logit_lens(model, ids[1])
    assert torch.equal(single.top_ids[:, 0], lens.top_ids[:, 1])


def test_t5_like_output_scale_is_part_of_the_readout():
    """T5 with tied embeddings scales the last hidden state by d_model ** -0.5 before its LM head."""
    model = built(norm_first=True, arch="encoder-decoder", output_scale=32 ** -0.5, norm="rmsnorm",
                  positional="relative", tie_embeddings=True, share_embeddings=True)
    src, tgt = torch.randint(4, 40, (2, 6)), torch.randint(4, 40, (2, 5))
    out = model(src, tgt)
    torch.testing.assert_close(lens_logits(model, out.hidden_states.decoder)[-1], out.logits, rtol=0, atol=1e-6)
    h = torch.randn(1, 3, 32)
    torch.testing.assert_close(unembed(model, h), model.generator.proj(model.decoder.norm(h) * 32 ** -0.5))


def test_encoder_decoder_lens_reads_the_decoder_and_encoders_have_none():
    model = built(norm_first=True, arch="encoder-decoder")
    src, tgt = torch.randint(4, 40, (1, 6)), torch.randint(4, 40, (1, 5))
    lens = logit_lens(model, src, tgt)
    assert lens.top_ids.shape == (4, 1, 5)
    torch.testing.assert_close(lens.logits, model(src, tgt).logits)
    with pytest.raises(ValueError, match="tgt"):
        logit_lens(model, src)
    with pytest.raises(ValueError, match="encoder-only"):
        logit_lens(built(norm_first=True, arch="encoder"), src)


@pytest.mark.parametrize("name", ["date-gpt", "date-translator"])
def test_shipped_checkpoints_last_layer_lens_is_their_output(name):
    loaded = load_checkpoint(CHECKPOINTS / name, device="cpu")
    model, tok = loaded.model, loaded.tokenizer
    src = torch.tensor([[tok.bos_id] + tok.encode("21 novembre 2026", add_special_tokens=False).ids])
    tgt = torch.tensor([[tok.bos_id] + tok.encode("2026-11", add_special_tokens=False).ids])
    if loaded.arch == "decoder":
        out = model(src)
        lens = logit_lens(model, src)
    else:
        out = model(src, tgt)
        lens = logit_lens(model, src, tgt)
    logits = lens_logits(model, out.hidden_states.decoder)
    assert logits.shape[0] == model.config.decoder_layers + 1
    torch.testing.assert_close(logits[-1], out.logits, rtol=0, atol=1e-5)
    assert torch.equal(lens.top_ids[-1], out.logits.argmax(-1)) and (lens.final_rank[-1] == 0).all()
