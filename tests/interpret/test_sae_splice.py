"""explorer.interpret.sae in a model: with nothing switched the spliced model is the model (the design's formula
decode(f') + (x - decode(f)) within 1e-5, the hook itself exactly) on GPT-2, Llama, GPT-NeoX, BERT, T5 and BART tiny
models at every kind of hook point; off / clamp / add change x by exactly the switched decoder rows; steering (a
latent added, a contrast vector) changes the output, a zero coefficient changes nothing, and generation applies it at
every step; the Features tab's reading, a latent's tokens (cross-checked with direct logit attribution on pre- and
post-norm models), SAELens's metrics on an SAE that reconstructs exactly, and the dashboards against brute force."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

import explorer
from explorer.interpret.dla import direction_tokens, residual_parts
from explorer.interpret.sae import (SAE, LatentSwitches, add_hook, capture_site, contrast_steering, contrast_vector,
                                    features_view, hook_site, latent_activations, latent_dashboards, latent_examples,
                                    latent_tokens, layer_site, random_sae, read_latents, sae_hook, sae_metrics,
                                    splice_sae, switch_outputs)
from explorer.outputs.causal_lm import next_tokens
from tests.interpret.test_dla import build

TOLERANCE = 1e-5
FAMILIES = ["gpt2", "llama-gqa", "neox-parallel", "bert-mlm", "t5", "bart"]


@pytest.fixture(scope="module", params=FAMILIES)
def family(request, tmp_path_factory):
    return build(request.param, tmp_path_factory.mktemp(request.param))


def hook_names(model) -> list[str]:
    """A hook of every kind this model has: first block's input, a middle point, the last block's output."""
    c = model.config
    if c.arch == "encoder-decoder":
        return ["encoder.0.hook_resid_pre", "encoder.1.hook_resid_post", "decoder.0.hook_resid_mid",
                "decoder.1.hook_resid_mid_cross", "decoder.1.hook_resid_post"]
    last = (c.decoder_layers or c.encoder_layers) - 1
    mid = [] if c.parallel_residual else [f"blocks.{last}.hook_resid_mid"]
    return ["blocks.0.hook_resid_pre", *mid, f"blocks.{last}.hook_resid_post"]


def output(family, hook=None):
    with torch.no_grad():
        out = family.model(family.ids[None], None if family.tgt is None else family.tgt[None], resid_hook=hook,
                           need_weights=False)
    return out.logits if out.logits is not None else out.last_hidden_state


def sae_for(family, hook_name: str, architecture: str = "standard", seed: int = 0) -> SAE:
    return random_sae(family.model.config.d_model, 4 * family.model.config.d_model, hook_name,
                      architecture=architecture, seed=seed)


def test_nothing_switched_is_the_model_itself(family):
    base = output(family)
    for name in hook_names(family.model):
        for architecture in ("standard", "topk"):
            sae = sae_for(family, name, architecture)
            site = hook_site(family.model.config, name)

            def formula(s, x, sae=sae, site=site):  # the design's words: decode(f') + (x - decode(f)), f' = f
                if s != site:
                    return x
                f = sae.encode(x)
                return sae.decode(f, x) + (x - sae.decode(f, x))

            torch.testing.assert_close(output(family, formula), base, rtol=0, atol=TOLERANCE)
            for switches in (None, "", f"{sae.d_sae - 1}:add=0"):
                assert torch.equal(output(family, sae_hook(family.model, sae, switches)), base), (name, switches)


def captured(family, sae: SAE) -> torch.Tensor:
    return capture_site(family.model, family.ids, hook_site(family.model.config, sae.hook_name),
                        tgt=family.tgt)


@pytest.mark.parametrize("architecture", ["standard", "jumprelu", "topk"])
def test_off_clamp_and_add_change_x_by_exactly_the_switched_decoder_rows(family, architecture):
    name = hook_names(family.model)[1]
    sae = sae_for(family, name, architecture, seed=1)
    site = hook_site(family.model.config, name)
    x = captured(family, sae)
    f = sae.encode(x)
    on = (f[0] != 0).sum(0).argsort(descending=True)
    a, b, c = (int(i) for i in on[:3])  # latents that fire on this sentence
    switches = LatentSwitches.parse(f"{a}:off,{b}:clamp=2.5,{c}:add=-1.5")
    want = x - f[..., a:a + 1] * sae.W_dec[a] + (2.5 - f[..., b:b + 1]) * sae.W_dec[b] - 1.5 * sae.W_dec[c]
    torch.testing.assert_close(sae_hook(family.model, sae, switches)(site, x), want, rtol=0, atol=TOLERANCE)
    # in the model: the same as adding that change by hand at the site
    change = want - x
    by_hand = output(family, lambda s, x: x + change if s == site else x)
    torch.testing.assert_close(output(family, sae_hook(family.model, sae, switches)), by_hand, rtol=0, atol=TOLERANCE)
    assert not torch.allclose(by_hand, output(family), atol=1e-4)
    # without the error term: x replaced by decode(f') itself
    f2 = f.clone()
    f2[..., a], f2[..., b] = 0.0, 2.5
    want = sae.decode(f2, x) - 1.5 * sae.W_dec[c]
    torch.testing.assert_close(sae_hook(family.model, sae, switches, keep_error=False)(site, x), want, rtol=0,
                               atol=TOLERANCE)


def test_off_under_a_run_time_normalisation_removes_the_rescaled_row():
    sae = random_sae(16, 64, "blocks.0.hook_resid_pre", seed=2)
    sae = SAE(**{**sae.__dict__, "normalize_activations": "constant_norm_rescale"})
    model = explorer.Transformer(explorer.TransformerConfig(arch="decoder", vocab_size=30, d_model=16, n_heads=2,
                                                            n_layers=1, d_ff=32, norm_first=True)).eval()
    x = torch.randn(1, 5, 16) * 3
    f = sae.encode(x)
    latent = int(f[0].sum(0).argmax())
    coeff = 4.0 / x.norm(dim=-1, keepdim=True)  # sqrt(d_in) / ||x||
    want = x - f[..., latent:latent + 1] * sae.W_dec[latent] / coeff
    got = sae_hook(model, sae, f"{latent}:off")("decoder.0.resid_pre", x)
    torch.testing.assert_close(got, want, rtol=0, atol=TOLERANCE)


def test_a_latent_off_is_its_own_reconstruction_removed_in_splice_sae(family):
    name = hook_names(family.model)[0]
    sae = sae_for(family, name, seed=3)
    latent = int(sae.encode(captured(family, sae))[0].sum(0).argmax())
    out = splice_sae(family.model, family.ids, sae, f"{latent}:off", tgt=family.tgt)
    got = out.logits if out.logits is not None else out.last_hidden_state
    torch.testing.assert_close(got, output(family, sae_hook(family.model, sae, f"{latent}:clamp=0")), rtol=0,
                               atol=0)


def test_bad_switches_and_hooks_are_refused(family):
    sae = sae_for(family, hook_names(family.model)[0])
    with pytest.raises(ValueError, match=f"latent {sae.d_sae} is not a latent of this SAE"):
        sae_hook(family.model, sae, f"{sae.d_sae}:off")
    wrong = "blocks.0.hook_resid_pre" if family.model.config.arch == "encoder-decoder" else "encoder.0.hook_resid_pre"
    with pytest.raises(ValueError, match="names"):
        sae_hook(family.model, sae_for(family, wrong), None)


def test_capture_stops_at_the_site_and_reads_the_hidden_state(family):
    model = family.model
    with torch.no_grad():
        out = model(family.ids[None], None if family.tgt is None else family.tgt[None], need_weights=False)
    stack = "encoder" if model.config.arch != "decoder" else "decoder"
    hidden = out.hidden_states.encoder if stack == "encoder" else out.hidden_states.decoder
    for layer in range(len(hidden) - 1):
        got = capture_site(model, family.ids, f"{stack}.{layer}.resid_pre", tgt=family.tgt)
        torch.testing.assert_close(got, hidden[layer], rtol=0, atol=TOLERANCE)
        if model.config.arch == "encoder-decoder":  # the encoder alone: no decoder input needed
            torch.testing.assert_close(capture_site(model, family.ids, f"encoder.{layer}.resid_pre"), hidden[layer],
                                       rtol=0, atol=TOLERANCE)


# ------------------------------------------------------------------------------------------ reading
def test_read_latents_is_the_encoding_of_the_captured_stream(family):
    name = hook_names(family.model)[-1]
    sae = sae_for(family, name, "jumprelu", seed=4)
    reading = read_latents(family.model, family.ids, sae, k=5, tgt=family.tgt, chunk=4)  # several chunks
    x = captured(family, sae)[0]
    f = sae.encode(x)
    top = f.topk(5, dim=-1)
    torch.testing.assert_close(reading.top_values, top.values, rtol=0, atol=TOLERANCE)
    assert torch.equal(reading.l0, (f != 0).sum(-1))
    torch.testing.assert_close(reading.error_norm, (x - sae.decode(f, x)).norm(dim=-1), rtol=0, atol=TOLERANCE)
    x_hat = sae.decode(f, x).double()
    ev = 1 - (x.double() - x_hat).pow(2).sum(-1).mean() / (x.double() - x.double().mean(0)).pow(2).sum(-1).mean()
    assert abs(reading.explained_variance - float(ev)) < 1e-6 * max(1.0, abs(float(ev)))
    assert reading.site == hook_site(family.model.config, name)
    latent = int(reading.top_latents[0, 0])
    torch.testing.assert_close(latent_activations(family.model, family.ids, sae, latent, tgt=family.tgt),
                               f[:, latent], rtol=1e-6, atol=TOLERANCE)


def test_features_view_is_the_reading_the_activations_and_the_tokens_in_one_pass(family):
    model = family.model
    for name in hook_names(model)[::2]:
        sae = sae_for(family, name, "topk", seed=10)
        view = features_view(model, family.ids, sae, k=3, tgt=family.tgt, chunk=5)
        reading = read_latents(model, family.ids, sae, k=3, tgt=family.tgt)
        torch.testing.assert_close(view.reading.top_values, reading.top_values, rtol=0, atol=TOLERANCE)
        assert view.latent == int(reading.top_latents[-1, 0]) and view.position == len(reading.l0) - 1
        torch.testing.assert_close(view.activations, latent_activations(model, family.ids, sae, view.latent,
                                                                        tgt=family.tgt), rtol=0, atol=TOLERANCE)
        if name.startswith("encoder") and model.config.arch == "encoder-decoder":
            assert view.tokens is None
            continue
        want = latent_tokens(model, family.ids, sae, view.latent, tgt=family.tgt, k=10)
        torch.testing.assert_close(view.tokens.promoted_logits, want.promoted_logits, rtol=0, atol=TOLERANCE)
        assert torch.equal(view.tokens.suppressed_ids, want.suppressed_ids)
    chosen = features_view(model, family.ids, sae, latent=5, position=0, tgt=family.tgt)
    assert chosen.latent == 5 and chosen.position == 0


def test_a_latents_tokens_by_hand_on_a_pre_norm_model(tmp_path):
    family = build("gpt2", tmp_path)
    model = family.model
    sae = sae_for(family, "blocks.1.hook_resid_mid", seed=5)
    with torch.no_grad():
        x = model(family.ids[None], need_weights=False).hidden_states.decoder[-1][0, -1]  # (D,) before the final norm
    norm = model.decoder.norm
    sigma = (x.var(unbiased=False) + norm.eps).sqrt()
    row = sae.W_dec[7]
    logits = model.generator.proj.weight @ (norm.weight * (row - row.mean()) / sigma)  # frozen LayerNorm, no beta
    got = latent_tokens(model, family.ids, sae, 7, k=4)
    torch.testing.assert_close(got.promoted_logits, logits.topk(4).values, rtol=0, atol=TOLERANCE)
    assert torch.equal(got.promoted_ids, logits.topk(4).indices)
    torch.testing.assert_close(got.suppressed_logits, logits.topk(4, largest=False).values, rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize("name", ["gpt2", "bert-mlm", "bart", "neox-parallel"])
def test_a_heads_output_as_a_direction_has_its_direct_logit_tokens(name, tmp_path):
    """A head writes z_h W_o^h into the residual stream where resid_mid is read: its tokens as a direction at that
    site are its tokens in direct logit attribution (post-norm BERT and BART: through every norm after the site)."""
    family = build(name, tmp_path)
    model = family.model
    position = family.positions[0]
    parts = residual_parts(model, family.ids, position=position, tgt=family.tgt)
    kind = parts.kind
    layer, head = 0, 1
    block = (model.encoder if kind == "encoder" else model.decoder).layers[layer]
    from explorer.model import Record
    record = Record(only={"z"})
    with torch.no_grad():
        model(family.ids[None], None if family.tgt is None else family.tgt[None], record=record, need_weights=False)
    z = record[f"{kind}.{layer}.z"][0, head, position]  # (Dh,)
    Dh = z.shape[0]
    direction = z @ block.self_attn.out_proj.weight[:, head * Dh:(head + 1) * Dh].T  # (D,)
    point = "resid_post" if model.config.parallel_residual else "resid_mid"  # NeoX: no resid_mid; pre-norm: same path
    got = direction_tokens(model, family.ids, f"{kind}.{layer}.{point}", direction, position=position, tgt=family.tgt,
                           k=5)
    want = parts.head_tokens(kind, layer, head, k=5)
    torch.testing.assert_close(got.promoted_logits, want.promoted_logits, rtol=0, atol=1e-4)
    assert torch.equal(got.promoted_ids, want.promoted_ids)
    torch.testing.assert_close(got.suppressed_logits, want.suppressed_logits, rtol=0, atol=1e-4)


def test_an_encoder_site_of_an_encoder_decoder_has_no_direct_tokens(tmp_path):
    family = build("t5", tmp_path)
    sae = sae_for(family, "encoder.1.hook_resid_post")
    with pytest.raises(ValueError, match="only through cross-attention"):
        latent_tokens(family.model, family.ids, sae, 0, tgt=family.tgt)


# ------------------------------------------------------------------------------------------ steering
@pytest.fixture(scope="module")
def date_gpt():
    return explorer.load("date-gpt")


def test_a_zero_coefficient_changes_nothing_and_steering_applies_at_every_generated_step(date_gpt):
    model, tokenizer = date_gpt.model, date_gpt.tokenizer
    text = "March 3, 2021 ->"
    sae = random_sae(model.config.d_model, 256, "blocks.2.hook_resid_pre", seed=6)
    none = switch_outputs(model, tokenizer, text, sae, "5:add=0", max_new_tokens=6)
    assert none.steered == none.baseline and none.next.toggled == none.next.baseline
    ids = torch.tensor([tokenizer.encode(text).ids])
    with torch.no_grad():
        plain = model(ids, need_weights=False).logits[0]
    assert none.next.baseline == next_tokens(plain, tokenizer, -1, 10)
    latent = int(sae.W_dec.norm(dim=-1).argmax())
    switches = f"{latent}:add=8"
    out = switch_outputs(model, tokenizer, text, sae, switches, max_new_tokens=6)
    assert out.steered != out.baseline
    hook = sae_hook(model, sae, switches)
    prefix = ids
    for _ in range(6):  # greedy by hand, every step a full forward (no cache) with the hook
        with torch.no_grad():
            step = model(prefix, resid_hook=hook).logits[:, -1]
        prefix = torch.cat([prefix, step.argmax(-1, keepdim=True)], 1)
    assert out.steered.ids == prefix[0, ids.shape[1]:].tolist()[:len(out.steered.ids)]


def test_contrast_vector_is_the_difference_of_the_last_tokens_residual_streams(date_gpt):
    model, tokenizer = date_gpt.model, date_gpt.tokenizer
    plus, minus = (torch.tensor(tokenizer.encode(t).ids) for t in ("2021-12-24", "1999-01-01 x"))
    with torch.no_grad():
        hp = model(plus[None]).hidden_states.decoder[2][0, -1]
        hm = model(minus[None]).hidden_states.decoder[2][0, -1]
    torch.testing.assert_close(contrast_vector(model, plus, minus, layer_site(model, 2)), hp - hm, rtol=0,
                               atol=TOLERANCE)


def test_contrast_steering_adds_the_vector_at_every_position(date_gpt):
    model, tokenizer = date_gpt.model, date_gpt.tokenizer
    result = contrast_steering(model, tokenizer, "March 3, 2021 ->", "December", "January", layer=1, coefficient=4.0,
                               max_new_tokens=5)
    assert result.site == "decoder.1.resid_pre" and result.vector_norm > 0
    vector = contrast_vector(model, torch.tensor(result.plus_ids), torch.tensor(result.minus_ids), result.site)
    ids = torch.tensor([tokenizer.encode("March 3, 2021 ->").ids])
    with torch.no_grad():
        steered = model(ids, resid_hook=add_hook(result.site, vector, 4.0), need_weights=False).logits[0]
    assert result.outputs.next.toggled == next_tokens(steered, tokenizer, -1, 10)
    zero = contrast_steering(model, tokenizer, "March 3, 2021 ->", "December", "January", layer=1, coefficient=0.0,
                             max_new_tokens=5)
    assert zero.outputs.steered == zero.outputs.baseline
    with pytest.raises(ValueError, match="layer 9 is not a layer of this model: layers 0..3"):
        contrast_steering(model, tokenizer, "x", "a", "b", layer=9, coefficient=1.0)
    with pytest.raises(ValueError, match="finite"):
        contrast_steering(model, tokenizer, "x", "a", "b", layer=1, coefficient=float("nan"))
    with pytest.raises(ValueError, match="contrast text gives no tokens"):
        contrast_steering(model, tokenizer, "x", "a", "", layer=1, coefficient=1.0)


# ------------------------------------------------------------------------------------------ metrics
def exact_sae(d: int, hook_name: str) -> SAE:
    """relu(x) - relu(-x) = x: a standard SAE of 2D latents that reconstructs every x exactly."""
    eye = torch.eye(d)
    return SAE(torch.cat([eye, -eye], 1), torch.zeros(2 * d), torch.cat([eye, -eye], 0), torch.zeros(d), "standard",
               hook_name)


def test_metrics_on_an_exact_sae_and_by_hand(date_gpt):
    model, tokenizer = date_gpt.model, date_gpt.tokenizer
    batches = [torch.tensor([tokenizer.encode(t).ids for t in ("2021-12-24", "1999-01-01")]),
               torch.tensor(tokenizer.encode("March 3, 2021 -> 2021-03-03").ids)]
    D = model.config.d_model
    exact = sae_metrics(model, batches, exact_sae(D, "blocks.2.hook_resid_pre"))
    assert exact.tokens == sum(b.numel() for b in batches)
    assert abs(exact.explained_variance - 1) < 1e-6 and exact.mse < 1e-9
    assert abs(exact.ce_sae - exact.ce_clean) < 1e-5 and abs(exact.ce_loss_recovered - 1) < 1e-4
    assert exact.l0 == D  # one of relu(x_i), relu(-x_i) fires for every non-zero coordinate
    # a random SAE, by hand: cross-entropies of the three runs, and the ratio
    sae = random_sae(D, 256, "blocks.2.hook_resid_pre", seed=7)
    got = sae_metrics(model, batches, sae)
    site = "decoder.2.resid_pre"
    totals = {"clean": [], "sae": [], "zero": []}
    for ids in batches:
        ids = ids[None] if ids.dim() == 1 else ids
        hooks = {"clean": None, "sae": lambda s, x: sae.decode(sae.encode(x)) if s == site else x,
                 "zero": lambda s, x: torch.zeros_like(x) if s == site else x}
        for name, hook in hooks.items():
            with torch.no_grad():
                logits = model(ids, resid_hook=hook).logits
            totals[name].append(torch.nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:],
                                                                  reduction="none").flatten())
    ce = {name: float(torch.cat(v).mean()) for name, v in totals.items()}
    for name in ce:
        assert abs(getattr(got, {"clean": "ce_clean", "sae": "ce_sae", "zero": "ce_zero_ablation"}[name]) - ce[name]) \
            < 1e-5
    assert abs(got.ce_loss_recovered - (ce["zero"] - ce["sae"]) / (ce["zero"] - ce["clean"])) < 1e-4


def test_ignored_tokens_are_left_out(date_gpt):
    model, tokenizer = date_gpt.model, date_gpt.tokenizer
    ids = torch.tensor(tokenizer.encode("2021-12-24").ids)
    sae = random_sae(model.config.d_model, 128, "blocks.1.hook_resid_post", seed=8)
    ignore = int(ids[3])
    got = sae_metrics(model, [ids], sae, ignore_ids=[ignore])
    assert got.tokens == int((ids != ignore).sum())
    x = capture_site(model, ids, "decoder.1.resid_post")[0][ids != ignore]
    assert abs(got.l0 - float((sae.encode(x) != 0).sum(-1).float().mean())) < 1e-9


# ------------------------------------------------------------------------------------------ dashboards
def test_dashboards_against_brute_force(date_gpt):
    model, tokenizer = date_gpt.model, date_gpt.tokenizer
    texts = [torch.tensor(tokenizer.encode(t).ids) for t in
             ("2021-12-24", "March 3, 2021 -> 2021-03-03", "1999-01-01", "the 4th of July, 1976", "12/25/2020")]
    sae = random_sae(model.config.d_model, 128, "blocks.2.hook_resid_pre", seed=9)
    dash = latent_dashboards(model, texts, sae, k=4, bins=8, chunk=7)  # chunks that cut texts
    X = torch.cat([capture_site(model, t, "decoder.2.resid_pre")[0] for t in texts])
    where = [(i, p) for i, t in enumerate(texts) for p in range(len(t))]
    f = sae.encode(X)  # (N, F)
    assert dash.tokens == len(where)
    torch.testing.assert_close(dash.density, (f != 0).float().mean(0), rtol=0, atol=1e-7)
    torch.testing.assert_close(dash.max_activation, f.max(0).values, rtol=0, atol=TOLERANCE)
    top = f.topk(4, dim=0)
    torch.testing.assert_close(dash.top_values, top.values.T, rtol=0, atol=TOLERANCE)
    for latent in range(sae.d_sae):
        fired = f[:, latent][f[:, latent] > 0]
        assert int(dash.hist_counts[latent].sum()) == len(fired)
        if len(fired):
            edges, counts = dash.histogram(latent)
            want = torch.histc(fired, bins=8, min=0, max=float(f[:, latent].max()))
            assert torch.equal(counts, want.long()) or int((counts - want.long()).abs().sum()) <= 2  # edge rounding
        for (text, position, value), want in zip(dash.examples(latent), top.values[:, latent]):
            assert value == pytest.approx(float(want), abs=TOLERANCE)  # ties (equal prefixes) may swap examples
            assert f[where.index((text, position)), latent] == pytest.approx(value, abs=TOLERANCE)
    latent = int(dash.density.argmax())
    examples = latent_examples(model, texts, sae, dash, latent, window=3)
    for ex in examples:
        assert ex.activations[ex.position - ex.start] == pytest.approx(ex.value, abs=1e-5)
        assert ex.token_ids == texts[ex.text][ex.start:ex.start + len(ex.token_ids)].tolist()
    with pytest.raises(ValueError, match="pass fewer texts or latents"):
        latent_dashboards(model, texts, sae, max_bytes=1000)
    some = latent_dashboards(model, texts, sae, latents=[5, 9], k=2)
    torch.testing.assert_close(some.top_values, dash.top_values[[5, 9], :2], rtol=0, atol=TOLERANCE)


def test_dashboards_of_an_encoder_decoders_decoder_read_its_decoder_inputs():
    """tgts: each text's decoder input; the examples' positions and tokens are the decoder's (brute force)."""
    bundle = explorer.load("date-translator", "cpu")
    model, tokenizer, task = bundle.model, bundle.tokenizer, bundle.task
    dates = [("3 May 2024", "2024-05-03"), ("21/11/2026", "2026-11-21"), ("1 janvier 1999", "1999-01-01"),
             ("4. Juli 1976", "1976-07-04")]
    texts = [torch.tensor(tokenizer.encode(d, add_special_tokens=False).ids + [task["eos_id"]]) for d, _ in dates]
    tgts = [torch.tensor([task["bos_id"], *tokenizer.encode(iso, add_special_tokens=False).ids]) for _, iso in dates]
    sae = random_sae(model.config.d_model, 96, "decoder.1.hook_resid_post", seed=3)
    dash = latent_dashboards(model, texts, sae, k=3, bins=8, tgts=tgts)
    X = torch.cat([capture_site(model, s, "decoder.1.resid_post", tgt=t)[0] for s, t in zip(texts, tgts)])
    where = [(i, p) for i, t in enumerate(tgts) for p in range(len(t))]
    f = sae.encode(X)
    assert dash.tokens == len(where) == X.shape[0]
    torch.testing.assert_close(dash.density, (f != 0).float().mean(0), rtol=0, atol=1e-7)
    torch.testing.assert_close(dash.top_values, f.topk(3, dim=0).values.T, rtol=0, atol=TOLERANCE)
    latent = int(dash.density.argmax())
    for ex in latent_examples(model, texts, sae, dash, latent, window=3, tgts=tgts):
        assert ex.token_ids == tgts[ex.text][ex.start:ex.start + len(ex.token_ids)].tolist()
        assert ex.activations[ex.position - ex.start] == pytest.approx(ex.value, abs=1e-5)
    encoder = random_sae(model.config.d_model, 96, "encoder.0.hook_resid_post", seed=3)  # reads the sources
    assert latent_dashboards(model, texts, encoder, k=2, tgts=tgts).tokens == sum(len(t) for t in texts)
    with pytest.raises(ValueError, match="one decoder input per text"):
        latent_dashboards(model, texts, sae, tgts=tgts[:2])


def test_the_heatmaps_columns_are_the_strongest_latents_at_every_token(date_gpt):
    model, tokenizer = date_gpt.model, date_gpt.tokenizer
    ids = torch.tensor(tokenizer.encode("[BOS]21/11/2026[SEP]2026-11-21").ids)
    sae = random_sae(model.config.d_model, 128, "blocks.2.hook_resid_pre", seed=4)
    view = features_view(model, ids, sae, k=4, columns=6)
    f = sae.encode(capture_site(model, ids, "decoder.2.resid_pre")[0])  # (T, F)
    top = f.topk(4, dim=-1)
    best = {}
    for latents, values in zip(top.indices.tolist(), top.values.tolist()):
        for latent, value in zip(latents, values):
            if value > 0:
                best[latent] = max(best.get(latent, 0.0), value)
    want = sorted(best, key=lambda i: -best[i])[:6]
    assert view.latent not in want  # this sentence's dashboard latent is not among its strongest: the last column
    want = [*want[:5], view.latent]
    assert view.columns.tolist() == want
    torch.testing.assert_close(view.column_values, f[:, want], rtol=0, atol=TOLERANCE)
    assert features_view(model, ids, sae, k=4).columns is None


def test_the_chosen_latent_is_always_among_the_heatmaps_columns(date_gpt):
    """The latent the dashboard shows (the strongest at the last token, or one asked for) is a column of the heatmap,
    even when it is not among the sentence's strongest: it takes the last column, with its exact activations."""
    model, tokenizer = date_gpt.model, date_gpt.tokenizer
    ids = torch.tensor(tokenizer.encode("[BOS]21/11/2026[SEP]2026-11-21").ids)
    sae = random_sae(model.config.d_model, 128, "blocks.2.hook_resid_pre", seed=4)
    strongest = features_view(model, ids, sae, k=4, columns=128).columns.tolist()
    default = features_view(model, ids, sae, k=4, columns=3)
    assert default.latent in strongest and strongest.index(default.latent) >= 3  # not among the 3 strongest
    assert default.columns.tolist() == [*strongest[:2], default.latent]
    torch.testing.assert_close(default.column_values[:, -1], default.activations, rtol=0, atol=TOLERANCE)
    quiet = next(i for i in range(128) if i not in strongest)  # never among a token's top k here
    asked = features_view(model, ids, sae, k=4, latent=quiet, columns=3)
    assert asked.columns.tolist() == [*strongest[:2], quiet]
    assert features_view(model, ids, sae, k=4, latent=strongest[1], columns=3).columns.tolist() == strongest[:3]
