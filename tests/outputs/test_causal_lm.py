"""Language-model outputs (explorer.outputs.causal_lm) on tiny random models made with transformers: top-k and
surprisal from the same logits transformers computes, baseline vs toggled, and greedy continuation
that gives transformers' own greedy `generate` tokens, with each step's attention equal to a full run."""

from __future__ import annotations

import math

import pytest
import torch

transformers = pytest.importorskip("transformers")

from explorer.outputs.generate import generate
from explorer.outputs.causal_lm import compare_next_tokens, continue_text, next_tokens, surprisal

from tests.importers.harness import (SHAPE_LLAMA, VOCAB, batch, byte_level_tokenizer, head_mask_with, make_case,
                                     out_proj_llama, sentencepiece_tokenizer)
from tests.importers.test_gpt_neox import pythia  # noqa: F401 - fixtures the continuation test uses by name
from tests.importers.test_llama import mistral, qwen2  # noqa: F401 - (Mistral's window of 4 < the prompt)


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    config = transformers.LlamaConfig(**SHAPE_LLAMA, bos_token_id=1, eos_token_id=2)
    return make_case(transformers.LlamaForCausalLM, config, sentencepiece_tokenizer(), tmp_path_factory.mktemp("l"),
                     out_proj_llama, {"add_bos_token": True, "bos_token": "<s>", "eos_token": "</s>"})


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=48, n_head=6, n_layer=2, n_positions=64,
                                     bos_token_id=0, eos_token_id=0)
    return make_case(transformers.GPT2LMHeadModel, config, byte_level_tokenizer(), tmp_path_factory.mktemp("g"),
                     lambda hf, layer: hf.transformer.h[layer].attn.c_proj, {"eos_token": "<|endoftext|>"})


def test_task(llama):
    task = llama.loaded.task
    assert task["name"] == "causal-lm" and task["examples"] and task["bos_id"] == 1 and task["eos_id"] == 2
    assert task["model_type"] == "llama" and task["ignored_tensors"] == []


def test_next_tokens_are_transformers_probabilities(llama):
    tok = llama.loaded.tokenizer
    ids = torch.tensor([tok.encode("The cat sat on the").ids])
    with torch.no_grad():
        logits = llama.loaded.model(ids).logits[0]
        reference = llama.hf(ids).logits[0].softmax(-1)
    top = next_tokens(logits, tok, k=10)
    assert top.position == ids.shape[1] - 1 and len(top.ids) == 10
    assert top.ids == reference[-1].topk(10).indices.tolist()
    assert top.probs == pytest.approx(reference[-1].topk(10).values.tolist(), abs=1e-5)
    assert top.labels == tok.labels(top.ids)
    assert next_tokens(logits, tok, position=2, k=3).ids == reference[2].topk(3).indices.tolist()
    with pytest.raises(ValueError, match="outside"):
        next_tokens(logits, tok, position=ids.shape[1])


def test_toggled_top_k_reports_the_change_of_the_baseline_favourite(llama):
    tok, model = llama.loaded.tokenizer, llama.loaded.model
    ids = torch.tensor([tok.encode("Once upon a time").ids])
    off = {"decoder": torch.zeros(2, 6)}  # every head of both layers off
    with torch.no_grad():
        base, toggled = model(ids).logits[0], model(ids, head_mask=off).logits[0]
    change = compare_next_tokens(base, toggled, tok)
    p_base, p_toggled = base[-1].softmax(-1), toggled[-1].softmax(-1)
    assert change.top_id == int(p_base.argmax()) == change.baseline.ids[0]
    assert change.baseline_prob == pytest.approx(p_base.max().item())
    assert change.toggled_prob == pytest.approx(p_toggled[change.top_id].item())
    assert change.change == pytest.approx(change.toggled_prob - change.baseline_prob)
    assert change.toggled.ids == p_toggled.topk(10).indices.tolist() and change.change != 0


def test_surprisal_of_each_token(gpt2):
    ids, mask = batch(gpt2)
    with torch.no_grad():
        logits = gpt2.loaded.model(ids, key_mask=mask).logits
        reference = gpt2.hf(ids, attention_mask=mask.long()).logits.log_softmax(-1)
    s = surprisal(logits, ids, mask)
    assert s.shape == (ids.shape[0], ids.shape[1] - 1)
    for b in range(ids.shape[0]):
        n = int(mask[b].sum())
        expected = [-reference[b, t, ids[b, t + 1]].item() for t in range(n - 1)]
        assert s[b, : n - 1].tolist() == pytest.approx(expected, abs=1e-4)
        assert all(math.isnan(x) for x in s[b, n - 1:].tolist())  # padding has no surprisal


@pytest.mark.parametrize("name", ["llama", "gpt2", "mistral", "pythia", "qwen2"])
def test_greedy_continuation_equals_transformers_generate(name, request):
    """Both decode with a key/value cache (ours: explorer.model.cache); the tokens agree, and each step's
    attention row equals a full forward over the prefix (Mistral's window of 4 is shorter than the prompt)."""
    case = request.getfixturevalue(name)
    tok = case.loaded.tokenizer
    out = continue_text(case.loaded.model, tok, "The cat sat on the mat and", max_new_tokens=12)
    prompt = torch.tensor([out.prompt_ids])
    assert prompt.shape[1] > 4
    with torch.no_grad():
        theirs = case.hf.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=12, do_sample=False,
                                  eos_token_id=tok.eos_id, pad_token_id=tok.eos_id)
    assert out.ids == theirs[0, prompt.shape[1]:].tolist()[: len(out.ids)]
    assert out.labels == tok.labels(out.ids) and out.text == tok.decode(out.ids)
    # each step's attention row is the last row of a full forward over the prefix
    full = torch.tensor([out.prompt_ids + out.ids[:-1]])
    with torch.no_grad():
        weights = case.loaded.model(full).attentions.decoder
    for n, step in enumerate(out.generation.steps):
        K = len(out.prompt_ids) + n
        for layer in range(2):
            assert torch.allclose(step.decoder[layer][0], weights[layer][0, :, K - 1, :K], atol=1e-5)


def test_left_padded_batch_generation_equals_one_prompt_at_a_time(gpt2):
    model, tok = gpt2.loaded.model, gpt2.loaded.tokenizer
    ids, mask = batch(gpt2, ["The cat sat on the mat", "A dog"], side="left")
    hm = {"decoder": head_mask_with(gpt2.loaded.config, 1, 3)}
    together = generate(model, ids, key_mask=mask, max_new_tokens=5, head_mask=hm)
    for b, text in enumerate(["The cat sat on the mat", "A dog"]):
        alone = generate(model, torch.tensor([tok.encode(text).ids]), max_new_tokens=5, head_mask=hm)
        assert together.tokens[b].tolist() == alone.tokens[0].tolist()
        assert torch.allclose(together.log_probs[b], alone.log_probs[0], atol=1e-5)
    with pytest.raises(ValueError, match="on the left"):
        generate(model, ids, key_mask=mask.flip(-1), max_new_tokens=1)


def test_predictions_in_chunks_equal_one_softmax():
    """predictions() works chunk by chunk of the vocabulary; every number equals the one-softmax computation, and
    head_predictions() (the vocabulary head run chunk by chunk) the same from the hidden states."""
    from explorer.outputs.causal_lm import head_predictions, predictions, surprisal
    from explorer.model.heads import Generator

    torch.manual_seed(0)
    logits = torch.randn(2, 9, 40)
    ids = torch.randint(0, 40, (2, 9))
    key_mask = torch.tensor([[True] * 9, [True] * 6 + [False] * 3])
    favourites = torch.randint(0, 40, (2, 9))
    whole = logits.log_softmax(-1)
    kept = logits.clone()
    for chunk in (1, 3, 4, 7, 40, 128):
        p = predictions(logits, ids, key_mask, 5, favourites, chunk=chunk)
        top = whole.topk(5, dim=-1)
        assert torch.equal(p.top_ids, top.indices) and torch.allclose(p.top_probs, top.values.exp())
        assert torch.allclose(p.surprisal, surprisal(logits, ids, key_mask), equal_nan=True)
        assert torch.isnan(p.surprisal).sum() == 3 and torch.isnan(p.surprisal[1, 5:]).all()
        assert torch.allclose(p.favourite_probs, whole.gather(-1, favourites[..., None])[..., 0].exp())
    assert torch.equal(logits, kept)  # the caller's logits are not changed
    for bias, scale in ((True, 1.0), (False, 0.5)):
        head = Generator(16, 40, bias=bias, scale=scale)
        hidden = torch.randn(2, 9, 16)
        with torch.no_grad():
            logits = head.logits(hidden)
            whole = logits.log_softmax(-1)
            for chunk in (3, 4096):
                p = head_predictions(head, hidden, ids, key_mask, 5, favourites, chunk=chunk)
                top = whole.topk(5, dim=-1)
                assert torch.equal(p.top_ids, top.indices)
                assert torch.allclose(p.top_probs, top.values.exp(), atol=1e-6)
                assert torch.allclose(p.surprisal, surprisal(logits, ids, key_mask), equal_nan=True, atol=1e-5)
                assert torch.allclose(p.favourite_probs, whole.gather(-1, favourites[..., None])[..., 0].exp(),
                                      atol=1e-6)
