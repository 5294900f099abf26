"""Sampling (explorer.outputs.sampling, generate(sampling=...)): the filtered, renormalised distribution equals a hand
computation (temperature, then top-k, then top-p; ties at the cut-offs; top-p reached by the first token; top-k past
the vocabulary; a tiny temperature is greedy); the draw is the inverse CDF of one uniform per row and step; generation
equals a hand loop of full forward passes (no cache) drawing from the same seeded stream, with suppressed tokens and
rows that finish early; the same seed replays, a toggle that changes nothing upstream draws the same tokens; bad
settings are refused by name."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from explorer.outputs.generate import generate
from explorer.outputs.causal_lm import continue_text
from explorer.model import Transformer, TransformerConfig
from explorer.model.cache import DecoderCache
from explorer.outputs.sampling import (MAX_SEED, Sampling, draw, next_token_distribution, sampling_probs)


# ---------------------------------------------------------------- the hand computation (plain Python)
def hand_filter(logits, temperature=1.0, top_k=0, top_p=1.0):
    """The distribution drawn from, written out: softmax(logits / T); keep the top k (ties with the k-th kept),
    renormalise; keep the smallest most-probable-first prefix reaching p (ties with the crossing token kept),
    renormalise. -> (probs, order)."""
    scores = [x / temperature for x in logits]
    high = max(s for s in scores if s != -math.inf)
    e = [math.exp(s - high) if s != -math.inf else 0.0 for s in scores]
    probs = [v / sum(e) for v in e]
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    keep = [s != -math.inf for s in scores]
    if 0 < top_k < len(scores):
        kth = scores[order[top_k - 1]]
        keep = [k and s >= kth for k, s in zip(keep, scores)]
    total = sum(p for p, k in zip(probs, keep) if k)
    probs = [p / total if k else 0.0 for p, k in zip(probs, keep)]
    if top_p < 1:
        cumulative = 0.0
        for i in order:
            cumulative += probs[i]
            if cumulative >= top_p - 1e-9:
                crossing = scores[i]
                break
        keep = [k and s >= crossing for k, s in zip(keep, scores)]
        total = sum(p for p, k in zip(probs, keep) if k)
        probs = [p / total if k else 0.0 for p, k in zip(probs, keep)]
    return probs, order


def hand_draw(probs, order, u):
    cumulative = 0.0
    for i in order:
        cumulative += probs[i]
        if cumulative > u:
            return i
    return max((i for i in order if probs[i] > 0), key=order.index)


def filtered(logits, **settings):
    return sampling_probs(torch.tensor([logits], dtype=torch.float64), Sampling(**settings)).probs[0].tolist()


LOG = [math.log(p) for p in (0.4, 0.3, 0.2, 0.1)]


@pytest.mark.parametrize("settings, expected", [
    (dict(), [0.4, 0.3, 0.2, 0.1]),
    (dict(top_k=3), [0.4 / 0.9, 0.3 / 0.9, 0.2 / 0.9, 0.0]),
    (dict(top_k=1), [1.0, 0.0, 0.0, 0.0]),
    (dict(top_p=0.7), [0.4 / 0.7, 0.3 / 0.7, 0.0, 0.0]),  # 0.4 + 0.3 reaches 0.7 (in float: 0.7000000000000001)
    (dict(top_p=0.71), [0.4 / 0.9, 0.3 / 0.9, 0.2 / 0.9, 0.0]),  # the token that crosses p is kept
    (dict(top_p=0.3), [1.0, 0.0, 0.0, 0.0]),  # reached by the first token
    (dict(top_p=0.4), [1.0, 0.0, 0.0, 0.0]),  # exactly the first token's probability
    (dict(top_k=10), [0.4, 0.3, 0.2, 0.1]),  # top-k beyond the vocabulary keeps every token
    (dict(temperature=2.0), [math.sqrt(p) / sum(map(math.sqrt, (0.4, 0.3, 0.2, 0.1))) for p in (0.4, 0.3, 0.2, 0.1)]),
    (dict(temperature=0.5), [p * p / sum(q * q for q in (0.4, 0.3, 0.2, 0.1)) for p in (0.4, 0.3, 0.2, 0.1)]),
    # top-p reads the distribution after top-k: 0.4 / 0.7 = 0.571 reaches 0.55 alone (before top-k it would not)
    (dict(top_k=2, top_p=0.55), [1.0, 0.0, 0.0, 0.0]),
    # temperature first: at T = 0.5 the first token has 0.16 / 0.30 = 0.533, which reaches 0.5 alone
    (dict(temperature=0.5, top_p=0.5), [1.0, 0.0, 0.0, 0.0]),
])
def test_filtered_distribution_equals_the_hand_computation(settings, expected):
    assert filtered(LOG, **settings) == pytest.approx(expected, abs=1e-12)
    assert hand_filter(LOG, **settings)[0] == pytest.approx(expected, abs=1e-12)


def test_ties_at_the_cut_offs_are_kept_together():
    tied = [math.log(p) for p in (0.4, 0.2, 0.2, 0.2)]
    assert filtered(tied, top_k=2) == pytest.approx([0.4, 0.2, 0.2, 0.2], abs=1e-12)  # three tie with the 2nd
    assert filtered(tied, top_k=1) == pytest.approx([1, 0, 0, 0], abs=1e-12)
    assert filtered(tied, top_p=0.5) == pytest.approx([0.4, 0.2, 0.2, 0.2], abs=1e-12)  # the crossing token ties
    # a tie the other way round: the higher ids are not dropped for being later in the vocabulary
    assert filtered([0.0, 1.0, 1.0], top_k=1) == pytest.approx([0, 0.5, 0.5], abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_random_logits_equal_the_hand_computation(seed):
    g = torch.Generator().manual_seed(seed)
    logits = (torch.randn(12, generator=g, dtype=torch.float64) * 2).round(decimals=1)  # rounding makes ties
    settings = dict(temperature=[0.3, 0.7, 1.0, 1.5, 3.0, 1.0][seed], top_k=[0, 3, 5, 20, 1, 4][seed],
                    top_p=[0.9, 1.0, 0.5, 0.8, 0.3, 0.95][seed])
    probs, order = hand_filter(logits.tolist(), **settings)
    dist = sampling_probs(logits[None], Sampling(**settings))
    assert dist.probs[0].tolist() == pytest.approx(probs, abs=1e-12)
    assert dist.order[0].tolist() == order
    for u in torch.rand(50, generator=g, dtype=torch.float64):
        assert int(draw(dist, u[None])) == hand_draw(probs, order, float(u))


def test_a_tiny_temperature_is_greedy():
    logits = torch.tensor([[0.3, 2.0, 1.999, -1.0]])
    dist = sampling_probs(logits, Sampling(temperature=1e-6))  # a gap of 1e-3 becomes e^-1000
    assert dist.probs[0].tolist() == pytest.approx([0, 1, 0, 0], abs=1e-12)
    assert int(draw(dist, torch.tensor([0.999999]))) == 1
    model = built("decoder")
    prompt = torch.tensor([[3, 4, 5]])
    greedy = generate(model, prompt, max_new_tokens=8)
    cold = generate(model, prompt, max_new_tokens=8, sampling=Sampling(temperature=1e-6, seed=5))
    assert torch.equal(greedy.tokens, cold.tokens)
    torch.testing.assert_close(greedy.log_probs, cold.log_probs)  # the model's own probability, not the tempered one
    assert torch.all(cold.sampled_probs == 1.0)


@pytest.mark.parametrize("temperature", [2e-308, 1e-320])
def test_the_smallest_temperatures_are_greedy_not_an_overflow(temperature):
    """Each score divided by 2e-308 (a normal float) or a subnormal one would be -inf for a flat distribution (top
    log-probability -10.4): the top token, shifted to 0 first, keeps probability 1."""
    log_probs = torch.log_softmax(torch.linspace(0, 0.5, 50_000, dtype=torch.float64), -1)[None]
    assert float(log_probs.max()) / temperature == -math.inf  # what dividing first gave
    dist = sampling_probs(log_probs, Sampling(temperature=temperature))
    assert dist.probs[0, -1] == 1 and int(draw(dist, torch.tensor([0.5]))) == 49_999


def test_the_draw_is_the_inverse_cdf_most_probable_first():
    dist = sampling_probs(torch.tensor([[math.log(0.2), math.log(0.5), math.log(0.3)]]), Sampling())
    for u, token in ((0.0, 1), (0.4999, 1), (0.5001, 2), (0.7999, 2), (0.8001, 0), (0.9999999999999999, 0)):
        assert int(draw(dist, torch.tensor([u], dtype=torch.float64))) == token, u


def test_underflowed_and_suppressed_tokens_are_never_drawn():
    logits = torch.tensor([[0.0, 50.0, -math.inf, 49.0]], dtype=torch.float64)
    dist = sampling_probs(logits, Sampling(temperature=0.01))  # token 3 underflows to 0 (e^-100)
    assert dist.probs[0, 2] == 0 and int(dist.top_k_kept) == 3
    assert int(draw(dist, torch.tensor([1.0 - 1e-16], dtype=torch.float64))) == 1
    with pytest.raises(ValueError, match="all suppressed"):
        sampling_probs(torch.full((1, 3), -math.inf), Sampling())


def test_next_token_distribution_reports_each_stage_and_the_cut_offs():
    logits = torch.tensor([math.log(p) for p in (0.1, 0.4, 0.05, 0.3, 0.15)])
    d = next_token_distribution(logits, Sampling(temperature=0.8, top_k=4, top_p=0.6), suppress_ids=[2])
    probs = [0.1, 0.4, 0.0, 0.3, 0.15]
    total = sum(probs)
    assert d.order.tolist()[:4] == [1, 3, 4, 0] and d.order.tolist()[-1] == 2
    assert d.probs.tolist() == pytest.approx([p / total for p in probs], abs=1e-7)
    tempered = [p ** 1.25 for p in probs]
    assert d.tempered.tolist() == pytest.approx([t / sum(tempered) for t in tempered], abs=1e-7)
    assert d.after_top_k.tolist() == pytest.approx(d.tempered.tolist(), abs=1e-12)  # 4 tokens left after suppression
    assert d.top_k_kept == 4
    expected, _ = hand_filter([math.log(p) if p else -math.inf for p in probs], 0.8, 4, 0.6)
    assert d.final.tolist() == pytest.approx(expected, abs=1e-7)
    assert d.top_p_kept == 2 and d.top_p_mass == pytest.approx(sum(d.tempered[[1, 3]].tolist()))
    assert d.top(2).tolist() == [1, 3]
    with pytest.raises(ValueError, match=r"\(V,\)"):
        next_token_distribution(logits[None], Sampling())


# ---------------------------------------------------------------- settings
@pytest.mark.parametrize("settings, message", [
    (dict(temperature=0), "temperature must be a finite number above 0, got 0 .*sampling=None"),
    (dict(temperature=-0.5), "temperature .* got -0.5"),
    (dict(temperature=float("inf")), "temperature .* got inf"),
    (dict(temperature=float("nan")), "temperature .* got nan"),
    (dict(temperature="hot"), "temperature must be a number, got 'hot'"),
    (dict(top_k=-1), "top_k must be 0 .* got -1"),
    (dict(top_k=2.5), "top_k must be a whole number, got 2.5"),
    (dict(top_k=True), "top_k must be a whole number, got True"),
    (dict(top_p=2), "top_p must be above 0 and at most 1 .* got 2"),
    (dict(top_p=0), "top_p .* got 0"),
    (dict(top_p=float("nan")), "top_p .* got nan"),
    (dict(seed=-1), f"seed must be a whole number from 0 to {MAX_SEED}, got -1"),
    (dict(seed=MAX_SEED + 1), f"got {MAX_SEED + 1}"),
    (dict(seed=1.0), "seed must be a whole number, got 1.0"),
])
def test_bad_settings_are_refused_by_name(settings, message):
    with pytest.raises(ValueError, match=message):
        Sampling(**settings)


def test_settings_from_numpy_and_a_link():
    s = Sampling(temperature=np.float32(0.5), top_k=np.int64(3), top_p=np.float64(0.9), seed=np.int64(MAX_SEED))
    assert (s.temperature, s.top_k, s.top_p, s.seed) == (0.5, 3, pytest.approx(0.9), MAX_SEED)
    assert type(s.seed) is int and type(s.top_k) is int
    assert Sampling(seed=int(str(MAX_SEED))) == Sampling(seed=MAX_SEED)  # a seed read back from a query string
    assert s.describe() == "temperature 0.5, top-k 3, top-p 0.9, seed 2147483647"
    with pytest.raises(ValueError, match="sampling must be"):
        generate(built("decoder"), torch.tensor([[3, 4]]), sampling={"temperature": 1.0})


# ---------------------------------------------------------------- generation
def built(arch, seed=0, **options):
    torch.manual_seed(seed)
    fields = dict(arch=arch, vocab_size=20, d_model=16, n_heads=2, n_layers=2, d_ff=32, dropout=0.0, max_len=32)
    model = Transformer(TransformerConfig(**{**fields, **options})).eval()
    with torch.no_grad():  # flatter than the default init would be: many tokens get drawn
        model.generator.proj.weight.mul_(0.3)
    return model


def hand_generation(model, src, sampling, steps, *, bos_id=None, eos_id=None, suppress_ids=(), head_mask=None):
    """Full forward passes over the whole prefix (no cache) and the hand filter and draw, reading one uniform per row
    per step from a generator seeded as the sampling says."""
    rng = torch.Generator().manual_seed(sampling.seed)
    B = src.shape[0]
    prefix = torch.full((B, 1), bos_id) if bos_id is not None else src.clone()
    finished = [False] * B
    tokens = []
    for _ in range(steps):
        u = torch.rand(B, generator=rng, dtype=torch.float64)
        if model.config.arch == "decoder":
            out = model(prefix, head_mask=head_mask, key_mask=torch.ones_like(prefix, dtype=torch.bool))
        else:
            out = model(src, prefix, head_mask=head_mask, tgt_key_mask=torch.ones_like(prefix, dtype=torch.bool))
        log_probs = out.logits[:, -1].double().log_softmax(-1)
        row = []
        for b in range(B):
            scores = log_probs[b].tolist()
            for i in suppress_ids:
                scores[i] = -math.inf
            probs, order = hand_filter(scores, sampling.temperature, sampling.top_k, sampling.top_p)
            token = hand_draw(probs, order, float(u[b])) if not finished[b] else (model.config.pad_id or 0)
            finished[b] = finished[b] or token == eos_id
            row.append(token)
        tokens.append(row)
        prefix = torch.cat([prefix, torch.tensor(row)[:, None]], 1)
        if all(finished):
            break
    return torch.tensor(tokens).T


SETTINGS = [Sampling(seed=1), Sampling(temperature=0.7, top_k=5, seed=2), Sampling(temperature=1.3, top_p=0.8, seed=3),
            Sampling(temperature=2.0, top_k=8, top_p=0.9, seed=MAX_SEED)]


@pytest.mark.parametrize("sampling", SETTINGS, ids=lambda s: s.describe())
def test_cached_sampling_equals_a_hand_loop_without_cache(sampling):
    """A decoder-only model decodes with its key/value cache; the hand loop reruns the prefix at each step."""
    model = built("decoder", positional="rotary", norm_first=True)
    prompt = torch.tensor([[3, 4, 5, 9], [7, 1, 2, 2]])
    gen = generate(model, prompt, max_new_tokens=12, sampling=sampling, suppress_ids=[6, 11])
    assert torch.equal(gen.tokens, hand_generation(model, prompt, sampling, 12, suppress_ids=[6, 11]))
    assert not bool(torch.isin(gen.tokens, torch.tensor([6, 11])).any())
    assert torch.equal(gen.uniforms, torch.rand(12, 2, generator=sampling.generator(), dtype=torch.float64).T)
    prefix = gen.prefix[:, :-1]  # a generated token equal to the padding id is a real token
    full = model(prefix, key_mask=torch.ones_like(prefix, dtype=torch.bool)).logits.log_softmax(-1)[:, 3:]  # (B, N, V)
    torch.testing.assert_close(gen.log_probs, full.gather(-1, gen.tokens[..., None])[..., 0], atol=1e-5, rtol=0)
    assert gen.sampling == sampling and bool((gen.sampled_probs > 0).all())


def test_encoder_decoder_sampling_equals_a_hand_loop():
    model = built("encoder-decoder")
    src = torch.tensor([[5, 6, 7, 8], [9, 10, 11, 12]])
    sampling = Sampling(temperature=1.5, top_k=10, seed=11)
    gen = generate(model, src, bos_id=1, max_new_tokens=10, sampling=sampling)
    assert torch.equal(gen.tokens, hand_generation(model, src, sampling, 10, bos_id=1))


def test_a_given_prompt_cache_changes_nothing():
    """The app's language-model Run fills a cache over the prompt with weights, then continues from it."""
    model = built("decoder")
    prompt = torch.tensor([[3, 4, 5, 9, 2]])
    sampling = Sampling(temperature=1.2, seed=7)
    cache = DecoderCache(len(model.decoder.layers))
    model(prompt, cache=cache)
    given = generate(model, prompt, max_new_tokens=10, sampling=sampling, cache=cache.select(0, 4))
    own = generate(model, prompt, max_new_tokens=10, sampling=sampling)
    assert torch.equal(given.tokens, own.tokens) and torch.equal(given.uniforms, own.uniforms)


def test_rows_that_finish_still_draw_their_numbers():
    """With an end token a row stops early: its later numbers are drawn and unused, so the other row draws what it
    drew without the end token, and every token up to the end is the same."""
    model = built("decoder")
    prompt = torch.tensor([[3, 4, 5], [8, 9, 10]])
    sampling = Sampling(temperature=1.5, seed=4)
    free = generate(model, prompt, max_new_tokens=12, sampling=sampling)
    eos = int(free.tokens[0, 2])  # row 0 draws it at step 2
    ended = generate(model, prompt, max_new_tokens=12, sampling=sampling, eos_id=eos)
    for b in range(2):
        row = free.tokens[b].tolist()
        stop = row.index(eos) + 1 if eos in row else len(row)
        assert ended.tokens[b, :stop].tolist() == row[:stop]
        assert torch.all(ended.tokens[b, stop:] == (model.config.pad_id or 0))
        assert torch.all(ended.sampled_probs[b, stop:] == 1.0) and torch.all(ended.log_probs[b, stop:] == 0)
    n = ended.tokens.shape[1]
    assert torch.equal(ended.uniforms, free.uniforms[:, :n])
    assert torch.equal(ended.tokens, hand_generation(model, prompt, sampling, 12, eos_id=eos)[:, :n])


def test_the_same_seed_replays_and_another_seed_does_not():
    model = built("decoder")
    prompt = torch.tensor([[3, 4, 5]])
    runs = [generate(model, prompt, max_new_tokens=15, sampling=Sampling(temperature=1.5, seed=s)).tokens
            for s in (42, 42, 43)]
    assert torch.equal(runs[0], runs[1]) and not torch.equal(runs[0], runs[2])


def test_a_toggle_that_changes_nothing_upstream_draws_the_same_tokens():
    """Head 1 of layer 0 writes nothing (its rows of W_O are 0): switching it off changes no logit, so with the same
    seed the toggled run draws exactly the baseline's tokens. A head that matters changes the distributions, and
    both runs still read the same numbers."""
    model = built("decoder")
    dh = model.config.d_model // model.config.n_heads
    with torch.no_grad():
        model.decoder.layers[0].self_attn.out_proj.weight[:, dh:2 * dh] = 0
    prompt = torch.tensor([[3, 4, 5]])
    sampling = Sampling(temperature=1.5, top_p=0.95, seed=9)
    mask = torch.ones(2, 2)
    mask[0, 1] = 0
    base = generate(model, prompt, max_new_tokens=15, sampling=sampling)
    toggled = generate(model, prompt, max_new_tokens=15, sampling=sampling, head_mask={"decoder": mask})
    assert torch.equal(base.tokens, toggled.tokens) and torch.equal(base.uniforms, toggled.uniforms)
    mask = torch.ones(2, 2)
    mask[1, 0] = 0
    other = generate(model, prompt, max_new_tokens=15, sampling=sampling, head_mask={"decoder": mask})
    assert torch.equal(base.uniforms, other.uniforms)
    assert torch.equal(other.tokens, hand_generation(model, prompt, sampling, 15, head_mask={"decoder": mask}))


def test_continue_text_samples_with_a_seed():
    from tokenizers import Tokenizer as HFTokenizer, models, pre_tokenizers

    from explorer.tokenizer import Tokenizer

    words = ["[PAD]", "[UNK]", "[BOS]", "[EOS]"] + [f"w{i}" for i in range(16)]
    raw = HFTokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = Tokenizer(raw)
    model = built("decoder", pad_id=0)
    a, b = (continue_text(model, tok, "w3 w4 w5", 8, sampling=Sampling(temperature=1.5, seed=3)) for _ in range(2))
    assert a.ids == b.ids and a.generation.sampling.seed == 3
    greedy = continue_text(model, tok, "w3 w4 w5", 8)
    assert greedy.generation.sampling is None and greedy.generation.uniforms is None


def test_translate_and_compare_outputs_sample_with_one_seed():
    """The shipped date translator, sampled hot: the same seed gives the same output; compare_outputs gives both runs
    the seed, so a switched-off head that writes nothing changes nothing, and the uniforms are the same."""
    import explorer
    from explorer.outputs.seq2seq import compare_outputs, translate

    loaded = explorer.load("date-translator", "cpu")
    hot = Sampling(temperature=3.0, seed=5)
    a, b = (translate(loaded, "21 novembre 2026", sampling=hot) for _ in range(2))
    assert a.ids == b.ids and a.generation.sampling == hot
    assert a.ids != translate(loaded, "21 novembre 2026").ids  # so hot that it is not the greedy answer
    everything = {"decoder": torch.ones(loaded.config.decoder_layers, loaded.config.n_heads)}
    change = compare_outputs(loaded, "21 novembre 2026", everything, sampling=hot)
    assert change.first_difference is None and change.baseline.ids == a.ids
    assert torch.equal(change.baseline.generation.uniforms, change.toggled.generation.uniforms)
