"""Token attribution (explorer.interpret.attribution): completeness on the shipped models and on dates typed as people
type them, with the points chosen per request (equal to a fixed run at the chosen count; the limit's message);
input x gradient and integrated gradients (Captum's rules and our Simpson rule) equal hand computations that go
through the model's ordinary forward (the token embeddings replaced by a hook on the test's own model, so neither
Captum nor token_embeds is involved), and our rule equals Captum's at Captum's points; logit differences; the
padding-token baseline; the Hugging Face families against transformers' own gradients (inputs_embeds); head masks;
nothing stored on the shared model (no parameter .grad, no hook ever registered, concurrent calls equal lone ones);
grad and inference modes; refusals."""

from __future__ import annotations

import threading

import pytest
import torch

import explorer
from explorer.training.dates import TYPED_DATES
from explorer.interpret import TokenAttribution, token_attribution
from explorer.interpret.attribution import MAX_AUTO_STEPS, MAX_STEPS, _path_values, simpson_rule
from explorer.model import Transformer, TransformerConfig
from explorer.training.tasks import task_from_dict

V = 40
SHIPPED = ("date-translator", "date-gpt", "induction-gpt")


def built(arch: str = "decoder", seed: int = 0, **options) -> Transformer:
    """A tiny float64 model with learned positions (so the token embedding is not the embedding layer's output)
    and a smooth activation (GELU: the path integral converges fast), weights off their init."""
    torch.manual_seed(seed)
    fields = dict(arch=arch, vocab_size=V, d_model=32, n_heads=4, n_layers=2, d_ff=64, dropout=0.0, max_len=16,
                  norm_first=True, positional="learned", activation="gelu", pad_id=0)
    model = Transformer(TransformerConfig(**{**fields, **options})).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.9 * p.shape[-1] ** -0.5)
    return model.double()


IDS = torch.tensor([1, 7, 12, 5, 0, 9, 21, 3])  # a padding token (0) inside: pad baseline = itself there
TGT = torch.tensor([1, 14, 6, 30, 2])


# ---------------------------------------------------------------- hand computations (no Captum, no token_embeds)
def table(model, side):
    return (model.src_embed if side == "src" else model.tgt_embed).token


def logit_with_embeddings(model, ids, tgt, position, token, embeds, head_mask=None):
    """(N,) logits of `token` at `position` from the model's own forward, with the token-embedding modules'
    outputs replaced by `embeds` {"src" | "tgt": (N, T, D)} (a hook on the test's own model)."""
    n = next(iter(embeds.values())).shape[0]
    handles = [table(model, side).register_forward_hook(lambda mod, inp, out, e=e: e) for side, e in embeds.items()]
    try:
        out = model(ids[None].expand(n, -1), None if tgt is None else tgt[None].expand(n, -1), head_mask=head_mask)
    finally:
        for h in handles:
            h.remove()
    return out.logits[:, position, token]  # (N,)


def sides(model, tgt):
    return ["tgt"] if model.config.arch == "decoder" else (["src", "tgt"] if tgt is not None else ["src"])


def seq(side, ids, tgt, model):
    return tgt if side == "tgt" and model.config.arch == "encoder-decoder" else ids


def hand_input_x_gradient(model, ids, tgt, position, token, head_mask=None):
    x = {s: table(model, s)(seq(s, ids, tgt, model))[None].detach().requires_grad_() for s in sides(model, tgt)}
    logit = logit_with_embeddings(model, ids, tgt, position, token, x, head_mask).sum()
    grads = torch.autograd.grad(logit, list(x.values()))
    return {s: (x[s] * g)[0].sum(-1) for s, g in zip(x, grads)}  # (T,) each


def hand_integrated_gradients(model, ids, tgt, position, token, baseline, steps, keep=(), rule=None):
    """Riemann midpoint sum: (x - b) * mean over alpha_k = (k - 1/2) / steps of the gradient at b + alpha_k (x - b);
    or, with `rule` = (alphas, weights), (x - b) * sum_k w_k gradient at b + alpha_k (x - b)."""
    alphas = (torch.arange(steps, dtype=torch.float64) + 0.5) / steps
    weights = torch.full((steps,), 1.0 / steps, dtype=torch.float64)
    if rule is not None:
        alphas, weights = rule
    x, b, path = {}, {}, {}
    for s in sides(model, tgt):
        tokens = seq(s, ids, tgt, model)
        x[s] = table(model, s)(tokens).detach()  # (T, D)
        base = torch.zeros_like(x[s]) if baseline == "zeros" else table(model, s).weight[0].detach().expand_as(x[s])
        b[s] = torch.where(torch.isin(tokens, torch.tensor(list(keep) or [-1]))[:, None], x[s], base)
        path[s] = (b[s] + alphas[:, None, None] * (x[s] - b[s])).requires_grad_()  # (steps, T, D)
    logit = logit_with_embeddings(model, ids, tgt, position, token, path).sum()
    grads = torch.autograd.grad(logit, list(path.values()))
    return {s: ((x[s] - b[s]) * (weights[:, None, None] * g).sum(0)).sum(-1) for s, g in zip(path, grads)}


def top_token(model, ids, tgt, position):
    with torch.no_grad():
        return int(model(ids[None], None if tgt is None else tgt[None]).logits[0, position].argmax())


# ---------------------------------------------------------------- completeness on the shipped models
def shipped_examples(name):
    """(model, tokenizer, [(ids, tgt)]): each example's own prediction, as the app makes it: induction-gpt the
    next token after the example, date-gpt the first answer character after '[BOS] date [SEP]', date-translator
    the first output character after [BOS]."""
    bundle = explorer.load(name, "cpu")
    tok = bundle.tokenizer
    if name == "induction-gpt":
        return bundle.model, tok, [(tok.encode(t).ids, None) for t in bundle.task["examples"]]
    task = task_from_dict(bundle.task, tok)
    tgt = [task.bos_id] if name == "date-translator" else None
    return bundle.model, tok, [(task.encode_source(t)[0], tgt) for t in bundle.task["examples"]]


LEVELS = tuple(2**m + 1 for m in range(2, 9))  # the automatic rule's point counts: 5, 9, ..., 257
assert LEVELS[-1] == MAX_AUTO_STEPS


def assert_complete_and_equal_to_a_fixed_run(model, ids, tgt, keep, **kwargs):
    """The default (points chosen for the request): under 2% of the change within the limit, the identities hold,
    and a fixed Simpson run at the chosen count gives the same numbers. -> the result."""
    a = token_attribution(model, ids, tgt=tgt, keep_ids=keep, **kwargs)
    assert (a.method, a.baseline, a.integration, a.adaptive) == ("integrated_gradients", "pad", "simpson", True)
    assert a.steps in LEVELS and a.evaluations == a.steps  # every level reuses the points of the one before
    assert a.reached and a.message is None and a.relative_delta < 0.02, (ids, a.steps, a.relative_delta)
    total = float(a.attributions.double().sum())
    if a.target_attributions is not None:
        total += float(a.target_attributions.double().sum())
    change = a.logit - a.baseline_logit
    assert total - a.delta == pytest.approx(change, abs=1e-4 * max(1.0, abs(a.logit)))
    assert a.relative_delta == pytest.approx(abs(a.delta) / abs(change))
    alphas, weights = simpson_rule(a.steps)
    assert torch.equal(a.alphas, alphas) and float(weights @ a.integrand) == pytest.approx(total, rel=1e-5)
    fixed = token_attribution(model, ids, tgt=tgt, keep_ids=keep, steps=a.steps, integration="simpson", **kwargs)
    assert not fixed.adaptive and fixed.steps == a.steps
    assert torch.allclose(fixed.attributions, a.attributions, rtol=1e-5, atol=1e-6)
    assert fixed.delta == pytest.approx(a.delta, abs=1e-5 * max(1.0, abs(change)))
    if smaller := [n for n in LEVELS if n < a.steps]:  # the level before did not reach the target
        before = token_attribution(model, ids, tgt=tgt, keep_ids=keep, steps=smaller[-1], integration="simpson",
                                   **kwargs)
        assert before.relative_delta >= 0.02 and not before.reached
    return a


@pytest.mark.parametrize("name", SHIPPED)
def test_completeness_on_the_shipped_models(name):
    """Default integrated gradients (points chosen per request, padding-token baseline, the tokenizer's special
    tokens kept): |delta| < 2% of |f(x) - f(baseline)| on every example, Captum's identity
    sum(attributions) - delta == f(x) - f(baseline) holds, and a fixed run at the chosen count is the same."""
    model, tok, examples = shipped_examples(name)
    assert len(examples) >= 4
    for ids, tgt in examples:
        a = assert_complete_and_equal_to_a_fixed_run(model, ids, tgt, tok.special_ids)
        assert torch.equal(a.kept, torch.isin(a.ids, torch.tensor(sorted(tok.special_ids))))
        assert torch.all(a.attributions[a.kept] == 0)
        with torch.no_grad():  # f(x) is the model's own logit, for its own top token
            logits = model(torch.tensor([ids]), None if tgt is None else torch.tensor([tgt])).logits[0, -1]
        assert a.token == int(logits.argmax()) and a.logit == pytest.approx(float(logits[a.token]), abs=1e-4)


def test_dates_typed_as_people_type_them_on_date_gpt():
    """The first answer token of date-gpt on 12 dates typed by hand (7 languages; no CLDR rendering): each reaches 2%
    within the limit, each at its own count of points."""
    bundle = explorer.load("date-gpt", "cpu")
    task = task_from_dict(bundle.task, bundle.tokenizer)
    assert len(TYPED_DATES) == 12
    steps = []
    for text in TYPED_DATES:
        ids = task.encode_source(text)[0]
        steps.append(assert_complete_and_equal_to_a_fixed_run(bundle.model, ids, None, bundle.tokenizer.special_ids
                                                              ).steps)
    assert len(set(steps)) > 1  # chosen per request


def test_the_limit_says_so_in_words():
    """A limit below what the request needs: the last level's numbers, reached False and a message with the numbers;
    a fixed count that misses the target says so too."""
    bundle = explorer.load("date-gpt", "cpu")
    task = task_from_dict(bundle.task, bundle.tokenizer)
    ids = task.encode_source("8 mai 1945")[0]
    keep = bundle.tokenizer.special_ids
    free = token_attribution(bundle.model, ids, keep_ids=keep)
    assert free.steps > 9
    capped = token_attribution(bundle.model, ids, keep_ids=keep, max_steps=9)
    assert (capped.steps, capped.evaluations, capped.reached) == (9, 9, False) and capped.relative_delta >= 0.02
    assert capped.message == ("The attributions do not add up to within 2%: at the limit of 9 integration points their "
                              f"sum still misses f(input) − f(baseline) by {capped.relative_delta:.1%} of it. Read "
                              "them as approximate.")
    assert torch.equal(capped.attributions, token_attribution(bundle.model, ids, keep_ids=keep, steps=9,
                                                              integration="simpson").attributions)
    few = token_attribution(bundle.model, ids, keep_ids=keep, steps=2)
    assert not few.reached and not few.adaptive and few.message.startswith("With 2 integration points the "
                                                                          "attributions' sum misses")
    assert token_attribution(bundle.model, ids, keep_ids=keep, steps=64).message is None
    ixg = token_attribution(bundle.model, ids, method="input_x_gradient")
    assert ixg.reached is None and ixg.message is None and not ixg.adaptive  # no completeness promised


def test_input_x_gradient_identity_on_a_shipped_model():
    model, tok, examples = shipped_examples("date-translator")
    a = token_attribution(model, examples[0][0], tgt=examples[0][1], method="input_x_gradient")
    assert (a.baseline, a.steps, a.integration) == ("zeros", 1, None)
    total = float(a.attributions.sum() + a.target_attributions.sum())
    assert total - a.delta == pytest.approx(a.logit - a.baseline_logit, abs=1e-3)


# ---------------------------------------------------------------- against hand computations
@pytest.mark.parametrize("arch", ["decoder", "encoder-decoder", "masked-lm"])
def test_input_x_gradient_equals_autograd_by_hand(arch):
    model = built("encoder", mlm_head=True) if arch == "masked-lm" else built(arch)
    tgt = TGT if arch == "encoder-decoder" else None
    position = 3 if arch != "masked-lm" else 2
    token = 11
    a = token_attribution(model, IDS, tgt=tgt, position=position, token=token, method="input_x_gradient")
    hand = hand_input_x_gradient(model, IDS, tgt, position, token)
    main = hand["tgt"] if arch == "decoder" else hand["src"]
    assert torch.allclose(a.attributions.double(), main, atol=1e-6)
    if arch == "decoder":  # a causal model's logit at position 3 reads nothing after it: exactly 0 there
        assert torch.all(a.attributions[4:] == 0) and a.attributions[:4].abs().min() > 0
    if arch == "encoder-decoder":
        assert torch.allclose(a.target_attributions.double(), hand["tgt"], atol=1e-6)
        assert torch.all(a.target_attributions[4:] == 0)
    with torch.no_grad():
        logit = logit_with_embeddings(model, IDS, tgt, position, token,
                                      {s: table(model, s)(seq(s, IDS, tgt, model))[None] for s in sides(model, tgt)})
    assert a.logit == pytest.approx(float(logit), abs=1e-12)


@pytest.mark.parametrize("arch", ["decoder", "encoder-decoder", "masked-lm"])
@pytest.mark.parametrize("baseline", ["zeros", "pad"])
def test_integrated_gradients_equal_a_riemann_sum_by_hand(arch, baseline):
    """Captum's 32 Gauss-Legendre points on the smooth tiny model equal a 1,024-point midpoint sum of the
    gradients written out by hand: the right embedding, baseline and kept tokens are wired in."""
    model = built("encoder", mlm_head=True) if arch == "masked-lm" else built(arch)
    tgt = TGT if arch == "encoder-decoder" else None
    position = -1 if arch != "masked-lm" else 2
    keep = (1, 3)  # the sequences' first and last tokens keep their embedding
    token = top_token(model, IDS, tgt, position)
    a = token_attribution(model, IDS, tgt=tgt, position=position, baseline=baseline, keep_ids=keep, steps=32)
    hand = hand_integrated_gradients(model, IDS, tgt, position, token, baseline, 1024, keep)
    main = hand["tgt"] if arch == "decoder" else hand["src"]
    scale = float(main.abs().max())
    assert torch.allclose(a.attributions.double(), main, atol=2e-3 * scale)
    assert a.attributions[0] == 0 and a.attributions[-1] == 0  # kept (ids 1 and 3)
    if arch == "encoder-decoder":
        assert torch.allclose(a.target_attributions.double(), hand["tgt"], atol=2e-3 * scale)
        assert a.target_attributions[0] == 0
    assert a.relative_delta < 1e-3


@pytest.mark.parametrize("arch", ["decoder", "encoder-decoder", "masked-lm"])
def test_simpson_equals_the_same_rule_by_hand(arch):
    """Our rule, fixed and chosen per request, equals the same points and weights written out by hand (through the
    model's own forward and a hook), and the automatic result is the fixed one at its count."""
    model = built("encoder", mlm_head=True) if arch == "masked-lm" else built(arch)
    tgt = TGT if arch == "encoder-decoder" else None
    position = -1 if arch != "masked-lm" else 2
    token = top_token(model, IDS, tgt, position)
    for steps in (9, "auto"):
        a = token_attribution(model, IDS, tgt=tgt, position=position, keep_ids=(1,), steps=steps,
                              integration="simpson")
        hand = hand_integrated_gradients(model, IDS, tgt, position, token, "pad", a.steps, (1,),
                                         rule=simpson_rule(a.steps))
        main = hand["tgt"] if arch == "decoder" else hand["src"]
        assert torch.allclose(a.attributions.double(), main, atol=1e-8, rtol=1e-6)  # returned in float32
        if arch == "encoder-decoder":
            assert torch.allclose(a.target_attributions.double(), hand["tgt"], atol=1e-8, rtol=1e-6)
        total = sum(float(v.sum()) for v in hand.values())
        assert a.delta == pytest.approx(total - (a.logit - a.baseline_logit), abs=1e-10)  # from the float64 sums
        assert a.integration == "simpson" and a.adaptive == (steps == "auto")
    assert a.steps == 5 and a.relative_delta < 0.02  # smooth: the first level is enough


def test_simpsons_rule():
    """Weights add up to 1, cubics are exact, and each level's points are the level before's plus the midpoints."""
    for n in (3, 5, 9, 257):
        alphas, weights = simpson_rule(n)
        assert float(weights.sum()) == pytest.approx(1.0, abs=1e-15)
        assert float(weights @ alphas**3) == pytest.approx(0.25, abs=1e-15)
        assert torch.equal(simpson_rule(2 * n - 1)[0][::2], alphas)
    with pytest.raises(ValueError, match="odd number of points"):
        simpson_rule(4)


def test_our_points_equal_captums_at_captums_points():
    """The per-point values our rule reuses, weighted by Captum's Gauss-Legendre weights at its points, give Captum's
    own attributions (Captum multiplies by its step sizes in float32: 1e-7)."""
    import numpy as np

    from explorer.interpret.attribution import _baseline, _logit_rows

    model = built()
    token = top_token(model, IDS, None, -1)
    ours_fixed = token_attribution(model, IDS, token=token, steps=16)  # Captum, Gauss-Legendre
    nodes, weights = np.polynomial.legendre.leggauss(16)
    rows = _logit_rows(model, "decoder", IDS[None], None, -1, {}, None, True)
    x = model.tgt_embed.token(IDS[None]).detach()
    b = _baseline(model.tgt_embed.token, x, "pad", 0, torch.zeros(1, len(IDS), dtype=torch.bool))
    with torch.enable_grad():
        values = _path_values(lambda e: rows(e)[:, token], (x,), (b,), torch.tensor(0.5 * (1 + nodes)), 5)[0]
    mine = torch.tensor(0.5 * weights) @ values  # (T,)
    assert torch.allclose(mine, ours_fixed.attributions.double(), rtol=1e-6, atol=1e-7)


def test_captums_trapezoid_weights_add_up_to_less_than_one():
    """Why the automatic rule is ours: Captum's riemann_trapezoid on n points weighs 1/n with halved ends, so a
    constant integrand (a linear f) comes out (n - 1) / n of its integral."""
    from captum.attr import IntegratedGradients

    x = torch.ones(1, 4, dtype=torch.float64)
    attrs, delta = IntegratedGradients(lambda v: 3.0 * v.sum(-1)).attribute(
        x, baselines=torch.zeros_like(x), n_steps=8, method="riemann_trapezoid", return_convergence_delta=True)
    assert float(attrs.sum()) == pytest.approx(12.0 * 7 / 8) and float(delta) == pytest.approx(-1.5)


@pytest.mark.parametrize("steps", [9, "auto"])
def test_a_logit_difference_is_one_function_on_the_same_points(steps):
    """minus: the attributions of logit(a) - logit(b) are those of a minus those of b at the same points; chosen per
    request, the points are chosen for the difference."""
    model = built("encoder-decoder")
    a, b = 11, 13
    diff = token_attribution(model, IDS, tgt=TGT, token=a, minus=b, steps=steps, integration="simpson")
    one, other = (token_attribution(model, IDS, tgt=TGT, token=t, steps=diff.steps, integration="simpson")
                  for t in (a, b))
    assert diff.minus == b and diff.token == a
    assert diff.logit == pytest.approx(one.logit - other.logit, abs=1e-12)
    assert diff.baseline_logit == pytest.approx(one.baseline_logit - other.baseline_logit, abs=1e-12)
    assert torch.allclose(diff.attributions, one.attributions - other.attributions, atol=1e-6)
    assert torch.allclose(diff.target_attributions, one.target_attributions - other.target_attributions, atol=1e-6)
    assert diff.delta == pytest.approx(one.delta - other.delta, abs=1e-9)
    captum = token_attribution(model, IDS, tgt=TGT, token=a, minus=b, steps=8)  # Captum's rule: one function too
    pair = [token_attribution(model, IDS, tgt=TGT, token=t, steps=8) for t in (a, b)]
    assert torch.allclose(captum.attributions, pair[0].attributions - pair[1].attributions, atol=1e-6)
    ixg = token_attribution(model, IDS, tgt=TGT, token=a, minus=b, method="input_x_gradient")
    assert ixg.minus == b and ixg.steps == 1


def test_equals_captums_layer_integrated_gradients_on_the_embedding_module():
    """What the design card names (Captum's LayerIntegratedGradients on the token-embedding module, with hooks, on
    the test's own model; baseline ids all padding) gives what token_attribution gives without any hook."""
    from captum.attr import LayerIntegratedGradients

    model = built()
    token = top_token(model, IDS, None, -1)
    # Its delta runs the model on the baseline *ids*, whose padding masks differ (all padding): compared with the
    # padding masks off. (Ours keeps the input's ids, masks and positions at both ends of the path.)
    lig = LayerIntegratedGradients(lambda ids: model(ids, padding=False).logits[:, -1, token], model.tgt_embed.token)
    theirs, delta = lig.attribute(IDS[None], baselines=torch.zeros_like(IDS)[None], n_steps=32,
                                  return_convergence_delta=True)
    ours = token_attribution(model, IDS, baseline="pad", padding=False, token=token, steps=32)
    assert torch.allclose(ours.attributions.double(), theirs[0].sum(-1), atol=1e-6)
    assert ours.delta == pytest.approx(float(delta), abs=1e-6)
    assert all_hooks(model) == []  # Captum removed its own hooks (a concurrent caller would have seen them)


def test_more_steps_converge_and_the_step_limits():
    model = built()
    deltas = [abs(token_attribution(model, IDS, steps=n, integration="riemann_middle").delta) for n in (4, 32, 256)]
    assert deltas[2] < deltas[1] < deltas[0]
    for steps in (0, MAX_STEPS + 1, -1, 2.5, True, "many"):
        with pytest.raises(ValueError, match='steps must be "auto" or an int in 1..256'):
            token_attribution(model, IDS, steps=steps)
    with pytest.raises(ValueError, match='steps must be "auto" or an int in 1..257, got 259'):
        token_attribution(model, IDS, steps=259, integration="simpson")
    assert token_attribution(model, IDS, steps=None).adaptive
    assert token_attribution(model, IDS, steps=257, integration="simpson").steps == 257  # the automatic rule's limit


# ---------------------------------------------------------------- baselines
def test_pad_baseline_is_the_padding_embedding_and_differs_from_zeros():
    model = built()
    pad, zeros = (token_attribution(model, IDS, baseline=b) for b in ("pad", "zeros"))
    assert pad.baseline == "pad" and zeros.baseline == "zeros" and pad.notice is None
    assert pad.token == zeros.token and pad.logit == zeros.logit
    pad_row = model.tgt_embed.token.weight[0].detach()  # (D,) the padding token's embedding
    T = len(IDS)
    # f(baseline) is the model's logit with every token embedding replaced by the padding token's / by zeros
    with torch.no_grad():
        at_pad_row = logit_with_embeddings(model, IDS, None, -1, pad.token, {"tgt": pad_row.expand(1, T, -1)})
        at_zeros = logit_with_embeddings(model, IDS, None, -1, pad.token,
                                         {"tgt": torch.zeros(1, T, pad_row.shape[0], dtype=torch.float64)})
    assert pad.baseline_logit == pytest.approx(float(at_pad_row), abs=1e-9)
    assert zeros.baseline_logit == pytest.approx(float(at_zeros), abs=1e-9)
    assert pad.baseline_logit != pytest.approx(zeros.baseline_logit)
    # every real token's attribution changes with the baseline; the padding token in the input is masked as a key
    # (it cannot change the logit): 0 against both
    at_pad = IDS == 0
    assert torch.all(pad.attributions[at_pad] == 0) and torch.all(zeros.attributions[at_pad] == 0)
    assert torch.all((pad.attributions - zeros.attributions)[~at_pad].abs() > 1e-4)
    # a padding token that is not masked (padding masks off) is where x equals the "pad" baseline: 0 there only
    unmasked_pad, unmasked_zeros = (token_attribution(model, IDS, baseline=b, padding=False) for b in ("pad", "zeros"))
    assert torch.all(unmasked_pad.attributions[at_pad] == 0) and torch.all(unmasked_zeros.attributions[at_pad] != 0)


def test_a_model_without_padding_token_falls_back_to_zeros_and_says_so():
    model = built(pad_id=None)
    a = token_attribution(model, IDS)
    assert a.baseline == "zeros" and "no padding token" in a.notice
    b = token_attribution(model, IDS, baseline="zeros")
    assert b.notice is None and torch.equal(a.attributions, b.attributions)


# ---------------------------------------------------------------- Hugging Face families
@pytest.fixture(scope="module")
def families(tmp_path_factory):
    transformers = pytest.importorskip("transformers")
    from tests.importers.harness import (SHAPE_LLAMA, VOCAB, byte_level_tokenizer, make_case,
                                         sentencepiece_tokenizer)
    from tests.importers.seq2seq_harness import (make_seq2seq_case, unigram_metaspace_tokenizer,
                                                 wordpiece_tokenizer)
    from tests.importers.harness import perturb, save_folder

    out = {}
    gpt2 = transformers.GPT2Config(vocab_size=VOCAB, n_embd=48, n_head=6, n_layer=2, n_positions=64, bos_token_id=0,
                                   eos_token_id=0)
    out["gpt2"] = make_case(transformers.GPT2LMHeadModel, gpt2, byte_level_tokenizer(), tmp_path_factory.mktemp("gpt2"),
                            None, {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "add_bos_token": False})
    llama = transformers.LlamaConfig(**SHAPE_LLAMA, bos_token_id=1, eos_token_id=2)  # 6 query heads, 2 K/V heads
    out["llama"] = make_case(transformers.LlamaForCausalLM, llama, sentencepiece_tokenizer(),
                             tmp_path_factory.mktemp("llama"), None,
                             {"add_bos_token": True, "add_eos_token": False, "bos_token": "<s>", "eos_token": "</s>",
                              "unk_token": "<unk>"})
    t5 = transformers.T5Config(vocab_size=VOCAB, d_model=48, d_kv=8, d_ff=96, num_layers=2, num_decoder_layers=2,
                               num_heads=4, relative_attention_num_buckets=8, relative_attention_max_distance=20,
                               pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
    out["t5"] = make_seq2seq_case(transformers.T5ForConditionalGeneration, t5, tmp_path_factory.mktemp("t5"),
                                  lambda f: unigram_metaspace_tokenizer().save(str(f / "tokenizer.json")), None)
    bert = transformers.BertConfig(vocab_size=VOCAB, hidden_size=48, num_attention_heads=6, num_hidden_layers=2,
                                   intermediate_size=96, max_position_embeddings=40)
    torch.manual_seed(0)
    hf = perturb(transformers.BertForMaskedLM(bert)).eval()
    hf.set_attn_implementation("eager")
    folder = tmp_path_factory.mktemp("bert")
    save_folder(hf, wordpiece_tokenizer(), folder)
    out["bert"] = type("Case", (), {"hf": hf, "loaded": explorer.load(folder, "cpu")})
    return out


def hf_input_x_gradient(hf, name, ids, tgt, position, token):
    """transformers' own forward from inputs_embeds: the embedding-table output times its gradient, summed over D
    (the same for embeddings scaled inside the table: x * grad does not change when x is scaled)."""
    embed = hf.get_input_embeddings()
    x = embed(ids[None]).detach().requires_grad_()
    inputs = [x]
    kwargs = {"inputs_embeds": x}
    if name == "t5":
        y = embed(tgt[None]).detach().requires_grad_()
        inputs.append(y)
        kwargs["decoder_inputs_embeds"] = y
    logit = hf(**kwargs).logits[0, position, token]
    grads = torch.autograd.grad(logit, inputs)
    return [(v * g)[0].sum(-1) for v, g in zip(inputs, grads)]


@pytest.mark.parametrize("name", ["gpt2", "llama", "t5", "bert"])
def test_hugging_face_families(families, name):
    """On each family's tiny random model: input x gradient equals transformers' own (inputs_embeds + autograd:
    the same embedding, positions, masks and head); integrated gradients keep Captum's identity (the 2% bar is for
    trained models: these random ones move their logits by ~0.1, see test_completeness_on_the_shipped_models);
    BERT at its mask token."""
    case = families[name]
    loaded, model = case.loaded, case.loaded.model
    tok = loaded.tokenizer
    tgt = None
    if name == "bert":
        ids = tok.encode(f"The cat sat on the {loaded.task['mask_token']} and ran.").ids
        position = ids.index(loaded.task["mask_id"])
    else:
        ids = tok.encode("The cat sat on the mat and the dog ran.").ids
        position = len(ids) - 1
    if name == "t5":
        tgt = [loaded.task["bos_id"], 5, 9, 17]
        position = 2
    ids_t, tgt_t = torch.tensor(ids), None if tgt is None else torch.tensor(tgt)
    token = 7
    ours = token_attribution(model, ids, tgt=tgt, position=position, token=token, method="input_x_gradient")
    theirs = [t.detach() for t in hf_input_x_gradient(case.hf, name, ids_t, tgt_t, position, token)]
    scale = float(theirs[0].abs().max())
    assert torch.allclose(ours.attributions, theirs[0], atol=1e-4 * max(1.0, scale))
    if name == "t5":
        assert torch.allclose(ours.target_attributions[: position + 1], theirs[1][: position + 1],
                              atol=1e-4 * max(1.0, scale))
    a = token_attribution(model, ids, tgt=tgt, position=position, keep_ids=tok.special_ids)
    total = float(a.attributions.sum()) + (0.0 if a.target_attributions is None else float(a.target_attributions.sum()))
    assert total - a.delta == pytest.approx(a.logit - a.baseline_logit, abs=1e-5)
    assert torch.all(a.attributions[a.kept] == 0) and bool(a.kept.any()) == (name != "gpt2")  # GPT-2: no BOS
    # GPT-2 and Llama have no padding token: the baseline falls back to zeros, and says so
    assert (a.baseline, a.notice is None) == (("zeros", False) if name in ("gpt2", "llama") else ("pad", True))


# ---------------------------------------------------------------- head masks
@pytest.mark.parametrize("arch", ["decoder", "encoder-decoder"])
def test_head_mask_gives_the_toggled_models_attributions(arch):
    model = built(arch)
    tgt = TGT if arch == "encoder-decoder" else None
    kind = "decoder" if arch == "decoder" else "cross"
    heads = torch.ones(2, 4)
    heads[1, 2] = heads[0, 0] = 0
    mask = {kind: heads}
    token = 11
    on = token_attribution(model, IDS, tgt=tgt, token=token, method="input_x_gradient")
    off = token_attribution(model, IDS, tgt=tgt, token=token, method="input_x_gradient", head_mask=mask)
    hand = hand_input_x_gradient(model, IDS, tgt, -1, token, mask)
    main = hand["tgt"] if arch == "decoder" else hand["src"]
    assert torch.allclose(off.attributions.double(), main, atol=1e-6)
    assert not torch.allclose(on.attributions, off.attributions, atol=1e-3)
    with torch.no_grad():
        toggled = model(IDS[None], None if tgt is None else tgt[None], head_mask=mask).logits[0, -1, token]
    assert off.logit == pytest.approx(float(toggled))
    ig = token_attribution(model, IDS, tgt=tgt, head_mask=mask, steps=32)
    assert ig.token == top_token_masked(model, IDS, tgt, mask) and ig.relative_delta < 1e-3


def top_token_masked(model, ids, tgt, mask):
    with torch.no_grad():
        return int(model(ids[None], None if tgt is None else tgt[None], head_mask=mask).logits[0, -1].argmax())


# ---------------------------------------------------------------- nothing stored on the shared model
def all_hooks(model):
    found = []
    for name, m in model.named_modules():
        for attr in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks",
                     "_forward_hooks_with_kwargs", "_state_dict_hooks"):
            if getattr(m, attr, None):
                found.append((name, attr))
    mod = torch.nn.modules.module
    for attr in ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                 "_global_backward_pre_hooks"):
        if getattr(mod, attr, None):
            found.append(("global", attr))
    return found


@pytest.mark.parametrize("arch", ["decoder", "encoder-decoder", "masked-lm"])
def test_no_parameter_grad_no_hook_no_state(arch, monkeypatch):
    """Gradients are taken with respect to the embeddings only: every parameter's .grad stays None; no hook is
    registered on any module, not even for the time of the call (registering one raises here); the model stays
    in eval mode and its parameters unchanged."""
    model = built("encoder", mlm_head=True) if arch == "masked-lm" else built(arch)
    tgt = TGT if arch == "encoder-decoder" else None
    position = 2 if arch == "masked-lm" else -1
    before = {k: v.clone() for k, v in model.state_dict().items()}

    def refuse(*args, **kwargs):
        raise AssertionError("a hook was registered during the attribution")

    for name in ("register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
                 "register_full_backward_pre_hook", "register_backward_hook"):
        monkeypatch.setattr(torch.nn.Module, name, refuse)
    for fn in ("register_module_forward_hook", "register_module_forward_pre_hook",
               "register_module_full_backward_hook"):
        monkeypatch.setattr(torch.nn.modules.module, fn, refuse)
    for method in ("integrated_gradients", "input_x_gradient"):
        token_attribution(model, IDS, tgt=tgt, position=position, method=method)
    monkeypatch.undo()
    assert all(p.grad is None for p in model.parameters())
    assert all_hooks(model) == []
    assert not model.training
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_concurrent_calls_equal_lone_calls():
    """Two different attributions on one model, in two threads at once (several rounds, started together):
    each gets exactly what it gets alone."""
    model = built("encoder-decoder")
    jobs = {
        "a": dict(ids=IDS, tgt=TGT, position=-1, baseline="pad"),
        "b": dict(ids=IDS.flip(0), tgt=TGT, position=2, baseline="zeros", head_mask={"cross": torch.eye(2, 4)},
                  token=13),
    }
    alone = {k: token_attribution(model, **kw) for k, kw in jobs.items()}
    got, errors = {k: [] for k in jobs}, []
    start = threading.Barrier(len(jobs))

    def run(k):
        try:
            start.wait()
            for _ in range(5):
                got[k].append(token_attribution(model, **jobs[k]))
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=run, args=(k,)) for k in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for k in jobs:
        for r in got[k]:
            assert r.token == alone[k].token and r.logit == pytest.approx(alone[k].logit, abs=1e-12)
            assert torch.allclose(r.attributions, alone[k].attributions, atol=1e-6)
            assert torch.allclose(r.target_attributions, alone[k].target_attributions, atol=1e-6)
    assert not torch.allclose(alone["a"].attributions, alone["b"].attributions, atol=1e-3)
    assert all(p.grad is None for p in model.parameters()) and all_hooks(model) == []


# ---------------------------------------------------------------- grad and inference modes
@pytest.mark.parametrize("mode", ["inference", "no_grad", "default"])
def test_works_under_any_grad_mode_and_leaves_it_as_it_was(mode):
    model = built()
    expected = token_attribution(model, IDS)
    result = {}

    def call():
        if mode == "inference":
            with torch.inference_mode():
                ids = IDS.clone()  # an inference tensor, as the app's other paths make them
                result["a"] = token_attribution(model, ids)
                result["modes"] = (torch.is_inference_mode_enabled(), torch.is_grad_enabled())
        elif mode == "no_grad":
            with torch.no_grad():
                result["a"] = token_attribution(model, IDS)
                result["modes"] = (torch.is_inference_mode_enabled(), torch.is_grad_enabled())
        else:
            result["a"] = token_attribution(model, IDS)
            result["modes"] = (torch.is_inference_mode_enabled(), torch.is_grad_enabled())
        result["after"] = (torch.is_inference_mode_enabled(), torch.is_grad_enabled())

    thread = threading.Thread(target=call)  # a fresh thread: grad mode is the default there
    thread.start()
    thread.join()
    assert result["modes"] == {"inference": (True, False), "no_grad": (False, False), "default": (False, True)}[mode]
    assert result["after"] == (False, True)
    assert torch.allclose(result["a"].attributions, expected.attributions, atol=1e-9)


# ---------------------------------------------------------------- refusals
def test_bad_input_is_refused_with_a_clear_message():
    model = built()
    with pytest.raises(ValueError, match=r"position 8 is outside the sequence of 8 tokens \(valid: -8..7\)"):
        token_attribution(model, IDS, position=8)
    with pytest.raises(ValueError, match=r"position -9 is outside"):
        token_attribution(model, IDS, position=-9)
    with pytest.raises(ValueError, match=r"token 40 is outside the vocabulary \(0..39\)"):
        token_attribution(model, IDS, token=V)
    with pytest.raises(ValueError, match=r"token -1 is outside"):
        token_attribution(model, IDS, token=-1)
    with pytest.raises(ValueError, match=r"ids holds token id 40, outside the vocabulary"):
        token_attribution(model, torch.tensor([1, 2, V]))
    with pytest.raises(ValueError, match="method must be one of"):
        token_attribution(model, IDS, method="saliency")
    with pytest.raises(ValueError, match="baseline must be one of"):
        token_attribution(model, IDS, baseline="mask")
    with pytest.raises(ValueError, match="integration must be one of"):
        token_attribution(model, IDS, integration="romberg")
    with pytest.raises(ValueError, match="automatic points use Simpson's rule .* for Captum's 'gausslegendre' give a"):
        token_attribution(model, IDS, integration="gausslegendre")
    with pytest.raises(ValueError, match="Simpson's rule takes an odd number of points, 3 or more .* got 8"):
        token_attribution(model, IDS, steps=8, integration="simpson")
    for target in (0, 1, -0.1, "2%", True):
        with pytest.raises(ValueError, match="target must be a number above 0 and below 1"):
            token_attribution(model, IDS, target=target)
    for cap in (4, 258, 9.0):
        with pytest.raises(ValueError, match="max_steps must be an int in 5..257"):
            token_attribution(model, IDS, max_steps=cap)
    with pytest.raises(ValueError, match=r"minus token 40 is outside the vocabulary \(0..39\)"):
        token_attribution(model, IDS, token=3, minus=V)
    with pytest.raises(ValueError, match="minus is the token itself"):
        token_attribution(model, IDS, token=3, minus=3)
    with pytest.raises(ValueError, match="one non-empty sequence"):
        token_attribution(model, torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="takes one sequence"):
        token_attribution(model, IDS, tgt=TGT)
    with pytest.raises(ValueError, match="keep_ids needs integrated gradients"):
        token_attribution(model, IDS, method="input_x_gradient", keep_ids=[1])
    with pytest.raises(ValueError, match="needs the decoder input tgt"):
        token_attribution(built("encoder-decoder"), IDS)
    with pytest.raises(ValueError, match="position 5 is outside the decoder input of 5 tokens"):
        token_attribution(built("encoder-decoder"), IDS, tgt=TGT, position=5)
    for encoder in (built("encoder"), built("encoder", num_classes=3)):
        with pytest.raises(ValueError, match="no logit to attribute"):
            token_attribution(encoder, IDS)
    model.train()
    with pytest.raises(ValueError, match="training mode"):
        token_attribution(model, IDS)


def test_result_fields():
    a = token_attribution(built(), IDS.tolist(), position=5, token=3)
    assert isinstance(a, TokenAttribution)
    assert a.attributions.shape == a.ids.shape == a.positions.shape == a.kept.shape == (8,)
    assert a.attributions.dtype == torch.float32 and torch.equal(a.positions, torch.arange(8))
    assert torch.equal(a.ids, IDS) and (a.position, a.token) == (5, 3)
    assert a.target_attributions is None and a.target_ids is None and a.target_kept is None
    assert torch.all(a.attributions[6:] == 0)
