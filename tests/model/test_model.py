import threading

import pytest
import torch

from explorer.model import Transformer, TransformerConfig


def small(arch, **kw):
    base = dict(arch=arch, vocab_size=30, d_model=16, n_heads=4, n_layers=2, d_ff=32, dropout=0.0, max_len=32)
    return Transformer(TransformerConfig(**{**base, **kw})).eval()


def test_seed002_toy_example_gives_logits_2_8_10():
    model = Transformer(TransformerConfig.preset("seed002-transformer", n_layers=2)).eval()
    src = torch.tensor([[2, 4, 5, 1, 3, 7, 2, 1, 3], [1, 3, 6, 7, 2, 9, 2, 5, 8]])
    tgt = torch.tensor([[0, 3, 5, 4, 1, 3, 2, 5, 8], [2, 3, 1, 0, 5, 9, 4, 9, 7]])
    out = model(src, tgt[:, :-1])
    assert out.logits.shape == (2, 8, 10)
    assert out.attentions.encoder[0].shape == (2, 8, 9, 9)  # 8 heads, each d_model wide (head_dim=512)
    assert model.encoder.layers[0].self_attn.head_dim == 512


@pytest.mark.parametrize("arch", ["encoder", "decoder", "encoder-decoder"])
def test_attention_tuples_per_architecture(arch):
    model = small(arch, n_encoder_layers=3)
    src = torch.randint(1, 30, (2, 7))
    tgt = torch.randint(1, 30, (2, 5)) if arch == "encoder-decoder" else None
    out = model(src, tgt)
    enc, dec, cross = out.attentions
    if arch == "encoder":
        assert (len(enc), dec, cross) == (3, (), ()) and out.logits is None
    if arch == "decoder":
        assert (enc, len(dec), cross) == ((), 2, ()) and out.logits.shape == (2, 7, 30)
        assert (dec[0].triu(1) == 0).all()
    if arch == "encoder-decoder":
        assert (len(enc), len(dec), len(cross)) == (3, 2, 2)
        assert cross[0].shape == (2, 4, 5, 7) and out.logits.shape == (2, 5, 30)
    fast = model(src, tgt, need_weights=False)
    assert fast.attentions == ((), (), ())
    if out.logits is not None:
        assert torch.allclose(fast.logits, out.logits, atol=1e-5)


def test_padding_and_causal_switches():
    model = small("encoder-decoder")
    src = torch.tensor([[5, 6, 7, 0, 0]])
    tgt = torch.tensor([[3, 4, 5]])
    out = model(src, tgt)
    assert (out.attentions.encoder[0][..., 3:] == 0).all()
    assert (out.attentions.cross[0][..., 3:] == 0).all()
    no_pad = model(src, tgt, padding=False)
    assert (no_pad.attentions.encoder[0][..., 3:] > 0).all()
    no_causal = model(src, tgt, causal=False)
    upper = torch.ones(3, 3, dtype=torch.bool).triu(1)
    assert (no_causal.attentions.decoder[0][..., upper] > 0).all()
    # causal: the logits at step 0 do not depend on later target tokens
    changed = model(src, torch.tensor([[3, 9, 9]]))
    assert torch.allclose(changed.logits[:, 0], out.logits[:, 0], atol=1e-6)


def test_custom_attention_mask_reaches_encoder_self_attention():
    model = small("encoder")
    src = torch.randint(1, 30, (1, 4))
    block = torch.ones(4, 4, dtype=torch.bool)
    block[:, 2] = False
    out = model(src, attn_mask=block)
    assert all((w[..., 2] == 0).all() for w in out.attentions.encoder)


def test_model_head_mask_all_ones_is_exact_and_off_changes_output():
    model = small("encoder-decoder")
    src, tgt = torch.randint(1, 30, (2, 6)), torch.randint(1, 30, (2, 4))
    ones = {kind: torch.ones(2, 4) for kind in ("encoder", "decoder", "cross")}
    base = model(src, tgt)
    assert torch.equal(model(src, tgt, head_mask=ones).logits, base.logits)
    for kind in ones:
        off = {kind: torch.ones(2, 4)}
        off[kind][1, 2] = 0
        assert not torch.allclose(model(src, tgt, head_mask=off).logits, base.logits)
    with pytest.raises(ValueError, match="head_mask keys"):
        model(src, tgt, head_mask={"enc": torch.ones(2, 4)})
    with pytest.raises(ValueError, match="n_layers, n_heads"):
        model(src, tgt, head_mask={"encoder": torch.ones(3, 4)})


def test_encode_decode_generator_compose_to_forward():
    model = small("encoder-decoder")
    src, tgt = torch.randint(1, 30, (2, 6)), torch.randint(1, 30, (2, 4))
    enc = model.encode(src)
    dec = model.decode(tgt, enc.memory, enc.key_mask)
    log_probs = model.generator(dec.output)
    assert torch.allclose(log_probs, model(src, tgt).logits.log_softmax(-1), atol=1e-6)
    assert torch.allclose(log_probs.exp().sum(-1), torch.ones(2, 4), atol=1e-5)


def test_classifier_head_on_first_token():
    model = Transformer(TransformerConfig.preset("seed001-classifier", dropout=0.0)).eval()
    src = torch.randint(1, 1000, (3, 10))
    out = model(src)
    assert out.logits.shape == (3, 5)
    changed = src.clone()
    changed[:, 1:] = torch.randint(1, 1000, (3, 9))
    assert not torch.allclose(model(changed).logits, out.logits)


def test_hidden_states_per_layer():
    model = small("encoder", norm_first=True)
    out = model(torch.randint(1, 30, (1, 5)))
    assert len(out.hidden_states.encoder) == 3  # embeddings + 2 layers
    assert torch.allclose(model.encoder.norm(out.hidden_states.encoder[-1]), out.last_hidden_state)


def test_tied_embeddings_share_the_weight():
    model = small("decoder", tie_embeddings=True)
    assert model.generator.proj.weight is model.tgt_embed.token.weight


def test_two_threads_with_different_head_masks_do_not_interfere():
    model = small("encoder-decoder", n_layers=3)
    src, tgt = torch.randint(1, 30, (2, 12)), torch.randint(1, 30, (2, 9))
    masks = [{"encoder": torch.ones(3, 4)}, {"encoder": torch.tensor([[1.0, 0, 0, 1]] * 3),
                                             "cross": torch.zeros(3, 4)}]
    with torch.inference_mode():
        expected = [model(src, tgt, head_mask=m) for m in masks]
    assert not torch.allclose(expected[0].logits, expected[1].logits)
    failures = []

    def worker(i):
        with torch.inference_mode():
            for _ in range(40):
                out = model(src, tgt, head_mask=masks[i])
                if not (torch.equal(out.logits, expected[i].logits)
                        and torch.equal(out.attentions.cross[2], expected[i].attentions.cross[2])):
                    failures.append(i)

    threads = [threading.Thread(target=worker, args=(i,)) for i in (0, 1, 0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    # and forward leaves no tensors behind on the modules
    assert not any(isinstance(v, torch.Tensor) for m in model.modules() for v in vars(m).values())


@pytest.mark.parametrize("arch", ["encoder", "decoder", "encoder-decoder"])
def test_forward_returns_the_masks_it_applied(arch):
    """The masks in the output are the ones attention used: masked keys get exactly 0 weight, allowed ones > 0."""
    model = small(arch)
    src = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, 0, 0]])  # row 1 padded
    tgt = torch.tensor([[1, 3, 4], [1, 3, 0]]) if arch == "encoder-decoder" else None
    custom = torch.ones(5, 5, dtype=torch.bool).fill_diagonal_(False)  # no attention to self
    out = model(src, tgt, attn_mask=custom if arch != "encoder-decoder" else None)
    for kind in ("encoder", "decoder", "cross"):
        weights, mask = getattr(out.attentions, kind), getattr(out.masks, kind)
        if not weights:
            assert mask is None
            continue
        full = mask.expand(weights[0].shape[0], 1, *weights[0].shape[-2:])  # (B, 1, Tq, Tk)
        for w in weights:
            assert (w.masked_select(~full.expand_as(w)) == 0).all()
            assert (w.masked_select(full.expand_as(w)) > 0).all()
    if arch == "decoder":
        assert not out.masks.decoder[0, 0, 1, 2] and not out.masks.decoder[0, 0, 1, 1]  # causal and no-self
    if arch == "encoder-decoder":
        assert out.masks.cross[1, 0, 0].tolist() == [True, True, True, False, False]
    assert model(src, tgt, padding=False).masks.encoder is None if arch == "encoder" else True


@pytest.mark.parametrize("arch", ["encoder", "decoder", "encoder-decoder"])
def test_weights_can_come_back_in_float16(arch):
    """weights_dtype casts each layer's returned weights; the output is the same (the weights used are not)."""
    model = small(arch)
    src = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, 0, 0]])
    tgt = torch.tensor([[1, 3, 4], [1, 3, 0]]) if arch == "encoder-decoder" else None
    full, half = model(src, tgt), model(src, tgt, weights_dtype=torch.float16)
    for a, b in zip(full.attentions, half.attentions):
        for w32, w16 in zip(a, b):
            assert w16.dtype == torch.float16 and torch.allclose(w16.float(), w32, atol=1e-3)
    assert torch.equal(full.last_hidden_state, half.last_hidden_state)


@pytest.mark.parametrize("scale", [False, True])
def test_token_embeds_stand_in_for_the_lookup(scale):
    """encode / decode with the token embeddings given compute what the ids' lookup computes (the scale, positions
    and padding still apply); a wrongly shaped token_embeds is refused."""
    model = small("encoder-decoder", scale_embeddings=scale, positional="learned")
    src, tgt = torch.tensor([[5, 6, 7, 0]]), torch.tensor([[1, 8, 9]])
    enc = model.encode(src)
    given = model.encode(src, token_embeds=model.src_embed.token(src))
    assert torch.equal(enc.memory, given.memory) and torch.equal(enc.key_mask, given.key_mask)
    dec = model.decode(tgt, enc.memory, enc.key_mask)
    given = model.decode(tgt, enc.memory, enc.key_mask, token_embeds=model.tgt_embed.token(tgt))
    assert torch.equal(dec.output, given.output)
    other = model.encode(src, token_embeds=torch.zeros(1, 4, 16))
    assert not torch.allclose(other.memory, enc.memory)
    with pytest.raises(ValueError, match="token_embeds must be"):
        model.encode(src, token_embeds=torch.zeros(1, 3, 16))
