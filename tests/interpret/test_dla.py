"""Direct logit attribution (explorer.interpret.dla): the parts add up EXACTLY to the model's own logit (within
1e-4, float32) on tiny random models of every family, made by transformers in the Hugging Face layout and
loaded with explorer.load (GPT-2, Llama with grouped-query attention, GPT-NeoX with parallel residual and
partial rotary, Qwen2, T5, BART, Marian, BERT / RoBERTa / DistilBERT masked LMs at a mask position), on the
seed presets built here and on the shipped checkpoints; heads switched off contribute exactly 0; the logit
difference mode; a head's promoted / suppressed tokens by hand; bad input."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

import explorer
from explorer.interpret import direct_logit_attribution, head_tokens, residual_parts
from explorer.model import PRESETS, Record, Transformer, TransformerConfig

from tests.importers.harness import (SHAPE_LLAMA, VOCAB, byte_level_tokenizer, make_case, perturb, save_folder,
                                     sentencepiece_tokenizer)
from tests.importers.seq2seq_harness import (make_seq2seq_case, roberta_tokenizer, save_marian_tokenizer,
                                             set_logits_bias, unigram_metaspace_tokenizer, wordpiece_tokenizer)

TOLERANCE = 1e-4
TEXT = "The cat sat on the mat and the dog ran."
SOURCE = "The cat sat on the mat and the dog ran in the park."


# ------------------------------------------------------------------------------------------------ families
class Family:
    """A loaded model and the one sequence (and decoder input) the tests attribute."""

    def __init__(self, loaded, ids: torch.Tensor, tgt: torch.Tensor | None = None, positions=(-1,)):
        self.loaded, self.model, self.ids, self.tgt, self.positions = loaded, loaded.model, ids, tgt, positions

    def logits(self, head_mask=None) -> torch.Tensor:
        """The model's own logits from its normal forward pass, (T, V)."""
        with torch.no_grad():
            out = self.model(self.ids[None], None if self.tgt is None else self.tgt[None], head_mask=head_mask)
        return out.logits[0]

    def dla(self, **kw):
        return direct_logit_attribution(self.model, self.ids, tgt=self.tgt, **kw)


def decoder_only(case) -> Family:
    return Family(case.loaded, torch.tensor(case.loaded.tokenizer.encode(TEXT).ids), positions=(-1, 3))


def seq2seq(case, start: int) -> Family:
    src = torch.tensor(case.loaded.tokenizer.encode(SOURCE).ids)
    tgt = torch.cat([torch.tensor([start]), torch.randint(3, 60, (6,), generator=torch.Generator().manual_seed(1))])
    return Family(case.loaded, src, tgt, positions=(-1, 2))


def masked_lm(model_class, config, tokenizer, folder, **tok_cfg) -> Family:
    torch.manual_seed(0)
    hf = perturb(model_class(config)).eval()
    save_folder(hf, tokenizer, folder, tok_cfg or None)
    loaded = explorer.load(folder, "cpu")
    ids = loaded.tokenizer.encode(f"The cat sat on the {loaded.task['mask_token']} and the dog ran.").ids
    position = ids.index(loaded.task["mask_id"])
    return Family(loaded, torch.tensor(ids), positions=(position, 1))


SHAPE_MLM = dict(vocab_size=VOCAB, hidden_size=48, num_attention_heads=6, num_hidden_layers=2, intermediate_size=96,
                 max_position_embeddings=40)
GPT2_TOKENS = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "add_bos_token": False}
SP_CONFIG = {"add_bos_token": True, "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}


def build(name: str, folder) -> Family:
    if name == "gpt2":
        config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=48, n_head=6, n_layer=2, n_positions=64,
                                         bos_token_id=0, eos_token_id=0)
        return decoder_only(make_case(transformers.GPT2LMHeadModel, config, byte_level_tokenizer(), folder,
                                      lambda hf, layer: hf.transformer.h[layer].attn.c_proj, GPT2_TOKENS))
    if name == "llama-gqa":
        config = transformers.LlamaConfig(**SHAPE_LLAMA, bos_token_id=1, eos_token_id=2)
        assert config.num_key_value_heads < config.num_attention_heads
        return decoder_only(make_case(transformers.LlamaForCausalLM, config, sentencepiece_tokenizer(), folder,
                                      lambda hf, layer: hf.model.layers[layer].self_attn.o_proj, SP_CONFIG))
    if name == "neox-parallel":
        config = transformers.GPTNeoXConfig(vocab_size=VOCAB, hidden_size=64, num_attention_heads=4,
                                            num_hidden_layers=2, intermediate_size=96, max_position_embeddings=64,
                                            rotary_pct=0.25, use_parallel_residual=True, bos_token_id=0,
                                            eos_token_id=0)
        return decoder_only(make_case(transformers.GPTNeoXForCausalLM, config, byte_level_tokenizer(), folder,
                                      lambda hf, layer: hf.gpt_neox.layers[layer].attention.dense, GPT2_TOKENS))
    if name == "qwen2":
        config = transformers.Qwen2Config(**SHAPE_LLAMA, tie_word_embeddings=True, bos_token_id=0, eos_token_id=0)
        return decoder_only(make_case(transformers.Qwen2ForCausalLM, config, byte_level_tokenizer(), folder,
                                      lambda hf, layer: hf.model.layers[layer].self_attn.o_proj,
                                      {"eos_token": "<|endoftext|>"}))
    if name == "t5":
        config = transformers.T5Config(vocab_size=VOCAB, d_model=48, d_kv=8, d_ff=96, num_layers=2, num_heads=4,
                                       relative_attention_num_buckets=8, relative_attention_max_distance=20,
                                       pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
        case = make_seq2seq_case(transformers.T5ForConditionalGeneration, config, folder,
                                 lambda f: unigram_metaspace_tokenizer().save(str(f / "tokenizer.json")), None)
        return seq2seq(case, start=0)
    if name == "bart":
        config = transformers.BartConfig(vocab_size=VOCAB, d_model=48, encoder_layers=2, decoder_layers=2,
                                         encoder_attention_heads=6, decoder_attention_heads=6, encoder_ffn_dim=96,
                                         decoder_ffn_dim=96, max_position_embeddings=64, pad_token_id=1,
                                         bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)
        case = make_seq2seq_case(transformers.BartForConditionalGeneration, config, folder,
                                 lambda f: roberta_tokenizer().save(str(f / "tokenizer.json")), None)
        with torch.no_grad():
            set_logits_bias(case)  # final_logits_bias not zero: it must land in rest
        return seq2seq(case, start=2)
    if name == "marian":
        vocab = save_marian_tokenizer(folder)
        pad = vocab["<pad>"]
        config = transformers.MarianConfig(vocab_size=len(vocab), d_model=48, encoder_layers=2, decoder_layers=2,
                                           encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=96,
                                           decoder_ffn_dim=96, max_position_embeddings=64, pad_token_id=pad,
                                           eos_token_id=0, decoder_start_token_id=pad, scale_embedding=True,
                                           activation_function="swish")
        case = make_seq2seq_case(transformers.MarianMTModel, config, folder, lambda f: None, None)
        with torch.no_grad():
            set_logits_bias(case)
        return seq2seq(case, start=pad)
    if name == "bert-mlm":
        return masked_lm(transformers.BertForMaskedLM, transformers.BertConfig(**SHAPE_MLM), wordpiece_tokenizer(),
                         folder)
    if name == "roberta-mlm":
        config = transformers.RobertaConfig(**SHAPE_MLM, pad_token_id=1, bos_token_id=0, eos_token_id=2)
        return masked_lm(transformers.RobertaForMaskedLM, config, roberta_tokenizer(), folder, mask_token="<mask>")
    if name == "distilbert-mlm":
        config = transformers.DistilBertConfig(vocab_size=VOCAB, dim=48, n_heads=6, n_layers=2, hidden_dim=96,
                                               max_position_embeddings=40)
        return masked_lm(transformers.DistilBertForMaskedLM, config, wordpiece_tokenizer(), folder)
    raise KeyError(name)


FAMILIES = ["gpt2", "llama-gqa", "neox-parallel", "qwen2", "t5", "bart", "marian", "bert-mlm", "roberta-mlm",
            "distilbert-mlm"]


@pytest.fixture(scope="module", params=FAMILIES)
def family(request, tmp_path_factory) -> Family:
    return build(request.param, tmp_path_factory.mktemp(request.param))


def test_family_options(family):
    """The tiny models have the options the tests claim to cover."""
    c = family.model.config
    name = {"gpt2": c.positional == "learned" and c.norm_first,
            "llama-gqa": c.resolved_kv_heads < c.n_heads and c.norm == "rmsnorm",
            "neox-parallel": c.parallel_residual and c.rotary_dim < c.resolved_head_dim,
            "qwen2": c.qkv_bias and not c.out_bias,
            "t5": c.positional == "relative" and c.output_scale != 1.0,
            "bart": c.embedding_norm and not c.norm_first,
            "marian": c.sinusoid_layout == "split" and not c.norm_first,
            "bert-mlm": c.mlm_head, "roberta-mlm": c.mlm_head and c.position_offset == 2,
            "distilbert-mlm": c.mlm_head and c.type_vocab_size == 0}
    assert sum(name.values()) >= 1
    bias = family.model.generator.proj.bias if family.model.generator is not None else family.model.mlm.proj.bias
    if c.lm_head_bias and c.arch == "encoder-decoder":  # BART / Marian: final_logits_bias set, not zero
        assert bias.abs().max() > 0


def test_parts_add_up_to_the_models_own_logit(family):
    logits = family.logits()
    for position in family.positions:
        for token in (None, 7):
            got = family.dla(position=position, token=token)
            want = logits[position, got.token]
            assert got.token == (int(logits[position].argmax()) if token is None else token)
            assert abs(got.logit - float(want)) < 1e-5  # .logit is the model's own
            assert abs(got.total() - got.logit) < TOLERANCE, (got.total(), got.logit)
            L, H = family.model.config.decoder_layers or family.model.config.encoder_layers, family.model.config.n_heads
            assert got.heads.shape == (L, H) and got.mlps.shape == (L,)
            assert (got.cross is not None) == (family.model.config.arch == "encoder-decoder")
            assert got.cross is None or got.cross.shape == (L, H)


def random_head_mask(model: Transformer, seed: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    masks = {kind: (torch.rand(shape, generator=gen) < 0.6).float() for kind, shape in
             model.config.attention_kinds().items()}
    for m in masks.values():
        m[0, 0] = 0.0
    return masks


def test_heads_switched_off_contribute_exactly_zero(family):
    head_mask = random_head_mask(family.model, seed=3)
    logits = family.logits(head_mask)
    got = family.dla(head_mask=head_mask)
    assert abs(got.logit - float(logits[-1, got.token])) < 1e-5  # the toggled model's own logit
    assert abs(got.total() - got.logit) < TOLERANCE
    kind = "decoder" if family.model.config.arch != "encoder" else "encoder"
    assert torch.all(got.heads[head_mask[kind] == 0] == 0.0)
    assert torch.all(got.heads[head_mask[kind] == 1] != 0.0)
    if got.cross is not None:
        assert torch.all(got.cross[head_mask["cross"] == 0] == 0.0)
    baseline = family.dla(token=got.token)
    assert not torch.equal(baseline.heads, got.heads)


def test_logit_difference(family):
    logits = family.logits()
    a, b = int(logits[-1].argmax()), 5
    diff = family.dla(token=a, minus=b)
    assert (diff.token, diff.minus) == (a, b)
    assert abs(diff.logit - float(logits[-1, a] - logits[-1, b])) < 1e-5
    assert abs(diff.total() - diff.logit) < TOLERANCE
    one, other = family.dla(token=a), family.dla(token=b)
    assert torch.allclose(diff.heads, one.heads - other.heads, atol=1e-5)
    assert abs(diff.rest - (one.rest - other.rest)) < 1e-5


def test_every_heads_tokens_equal_its_share(family):
    """all_head_tokens: one head's promoted values are its DLA shares of those tokens."""
    parts = residual_parts(family.model, family.ids, tgt=family.tgt)
    table = parts.all_head_tokens(k=5)
    kind = "decoder" if family.model.config.arch != "encoder" else "encoder"
    assert set(table) == ({kind, "cross"} if family.tgt is not None else {kind})
    L, H = parts.shapes[kind]
    assert table[kind].promoted_ids.shape == (L, H, 5)
    for token, value in zip(table[kind].promoted_ids[1, 2].tolist(), table[kind].promoted_logits[1, 2].tolist()):
        assert abs(parts.attribute(token).heads[1, 2].item() - value) < 1e-5
    one = parts.head_tokens(kind, 1, 2, k=5)
    assert torch.equal(one.promoted_ids, table[kind].promoted_ids[1, 2])
    assert torch.equal(one.suppressed_ids, table[kind].suppressed_ids[1, 2])
    assert (one.suppressed_logits <= one.promoted_logits.min()).all()


# ------------------------------------------------------------------------------------------------ by hand
@pytest.fixture(scope="module")
def gpt2(tmp_path_factory) -> Family:
    return build("gpt2", tmp_path_factory.mktemp("gpt2-hand"))


@torch.no_grad()  # the hand computations
def test_head_tokens_by_hand(gpt2):
    """Head (decoder, 1, 3)'s output at the last position through the frozen final LayerNorm (no beta) and the
    unembedding, computed here from its z and the final norm's input."""
    model, ids = gpt2.model, gpt2.ids
    z = {}
    with torch.no_grad():
        out = model(ids[None], head_hook=lambda kind, layer, heads: z.setdefault(layer, heads))
    Dh = model.config.resolved_head_dim
    W_o = model.decoder.layers[1].self_attn.out_proj.weight[:, 3 * Dh:4 * Dh]  # (D, Dh)
    vector = z[1][0, 3, -1] @ W_o.T  # (D,)
    resid = out.hidden_states.decoder[-1][0, -1]  # the final norm's input
    sigma = (resid.var(unbiased=False) + model.decoder.norm.eps).sqrt()
    normed = (vector - vector.mean()) / sigma * model.decoder.norm.weight
    logits = model.generator.proj.weight @ normed  # (V,)
    got = head_tokens(model, ids, "decoder", 1, 3, k=10)
    top, bottom = logits.topk(10), logits.topk(10, largest=False)
    assert torch.equal(got.promoted_ids, top.indices) and torch.equal(got.suppressed_ids, bottom.indices)
    assert torch.allclose(got.promoted_logits, top.values, atol=1e-5)
    assert torch.allclose(got.suppressed_logits, bottom.values, atol=1e-5)
    share = direct_logit_attribution(model, ids, token=int(top.indices[0])).heads[1, 3]
    assert abs(float(share) - float(top.values[0])) < 1e-5


@torch.no_grad()  # the hand computations
def test_embeddings_and_rest_by_hand(gpt2):
    """GPT-2 (pre-norm): embeddings = wte + wpe through the frozen final norm; rest = attention output biases and
    MLP-free biases through it, plus the final norm's beta (GPT-2's head has no bias)."""
    model, ids = gpt2.model, gpt2.ids
    got = direct_logit_attribution(model, ids)
    with torch.no_grad():
        out = model(ids[None])
    resid = out.hidden_states.decoder[-1][0, -1]
    norm = model.decoder.norm
    sigma = (resid.var(unbiased=False) + norm.eps).sqrt()
    u = model.generator.proj.weight[got.token]

    def through(v):
        return float(((v - v.mean()) / sigma * norm.weight) @ u)

    emb = model.tgt_embed.token.weight[ids[-1]] + model.tgt_embed.position.weight[len(ids) - 1]
    assert abs(got.embeddings - through(emb)) < 1e-5
    biases = sum(layer.self_attn.out_proj.bias for layer in model.decoder.layers)
    assert abs(got.rest - (through(biases) + float(norm.bias @ u))) < 1e-5


def test_grouped_query_attention_random_head_mask(tmp_path):
    """Per query head under GQA (6 query heads on 2 K/V heads): a random head mask, each head off exactly 0, the
    toggled model's logit, the identity."""
    fam = build("llama-gqa", tmp_path)
    model = fam.model
    for seed in range(3):
        head_mask = random_head_mask(model, seed)
        got = fam.dla(head_mask=head_mask, position=-2)
        assert abs(got.logit - float(fam.logits(head_mask)[-2, got.token])) < 1e-5
        assert torch.all((got.heads == 0) == (head_mask["decoder"] == 0))
        assert abs(got.total() - got.logit) < TOLERANCE


# ------------------------------------------------------------------------------------------------ presets
SMALL = dict(d_model=64, d_ff=128, n_layers=2, max_len=64, dropout=0.0)


def preset(name: str) -> Transformer:
    overrides = dict(SMALL)
    if name == "seed002-transformer":
        overrides["head_dim"] = 64  # each head as wide as d_model, as the preset
    model = Transformer(TransformerConfig.preset(name, **overrides)).eval()
    return perturb(model, seed=5)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets(name):
    model = preset(name)
    c = model.config
    ids = torch.randint(1, c.vocab_size, (9,), generator=torch.Generator().manual_seed(2))
    if c.arch == "encoder" and not c.num_classes and not c.mlm_head:  # seed 000: a bare encoder
        with pytest.raises(ValueError, match=r"no output head \(a bare encoder.*\): there is no logit to attribute"):
            direct_logit_attribution(model, ids)
        return
    tgt = torch.randint(1, c.vocab_size, (5,), generator=torch.Generator().manual_seed(3)) \
        if c.arch == "encoder-decoder" else None
    position = 0 if c.num_classes else -1
    with torch.no_grad():
        logits = model(ids[None], None if tgt is None else tgt[None]).logits[0]
    logits = logits if c.num_classes else logits[position]
    for token in (None, 1):
        got = direct_logit_attribution(model, ids, tgt=tgt, position=position, token=token)
        assert abs(got.logit - float(logits[got.token])) < 1e-5
        assert abs(got.total() - got.logit) < TOLERANCE, (name, got.total(), got.logit)
    head_mask = random_head_mask(model, 1)
    got = direct_logit_attribution(model, ids, tgt=tgt, position=position, head_mask=head_mask)
    assert abs(got.total() - got.logit) < TOLERANCE
    kind = "encoder" if c.arch == "encoder" else "decoder"
    assert torch.all(got.heads[head_mask[kind] == 0] == 0.0)


def test_classifier_reads_the_first_token_only():
    model = preset("seed001-classifier")
    ids = torch.randint(1, 1000, (6,))
    with pytest.raises(ValueError, match="first token only: pass position=0"):
        direct_logit_attribution(model, ids)


# ------------------------------------------------------------------------------------------------ shipped
def shipped_inputs(name: str) -> tuple[Transformer, torch.Tensor, torch.Tensor | None]:
    """A shipped checkpoint's model, its task's first example as ids and (an encoder-decoder) its own answer as the
    decoder input; date-gpt's prompt ends with its separator."""
    bundle = explorer.load(name, "cpu")
    model, tok = bundle.model, bundle.tokenizer
    text = bundle.task["examples"][0]
    ids = torch.tensor(tok.encode(text).ids)
    tgt = None
    if model.config.arch == "encoder-decoder":
        from explorer.outputs.seq2seq import translate

        answer = translate(bundle, text)
        tgt = torch.tensor([bundle.task["bos_id"], *answer.ids[:-1]])
    elif name == "date-gpt":
        ids = torch.cat([ids, torch.tensor([bundle.task["sep_id"]])])
    return model, ids, tgt


@pytest.mark.parametrize("name", ["date-translator", "date-gpt", "induction-gpt"])
def test_shipped_checkpoints(name):
    model, ids, tgt = shipped_inputs(name)
    with torch.no_grad():
        logits = model(ids[None], None if tgt is None else tgt[None]).logits[0]
    for position in (-1, 1):
        got = direct_logit_attribution(model, ids, tgt=tgt, position=position)
        assert got.token == int(logits[position].argmax())
        want = float(logits[position, got.token])
        assert abs(got.logit - want) < 1e-5 * max(1.0, abs(want))  # float32: 2e-5 apart at a logit of 7.8
        assert abs(got.total() - got.logit) < TOLERANCE


# ------------------------------------------------------------------------------------------------ bad input
def test_bad_input(gpt2):
    model, ids = gpt2.model, gpt2.ids
    T, V = len(ids), model.config.vocab_size
    with pytest.raises(ValueError, match=rf"position {T} is outside the sequence of {T} tokens: use 0..{T - 1}"):
        direct_logit_attribution(model, ids, position=T)
    with pytest.raises(ValueError, match=rf"-{T}..-1"):
        direct_logit_attribution(model, ids, position=-T - 1)
    with pytest.raises(ValueError, match=rf"token {V} is outside the vocabulary: ids are 0..{V - 1}"):
        direct_logit_attribution(model, ids, token=V)
    with pytest.raises(ValueError, match="minus -1 is outside the vocabulary"):
        direct_logit_attribution(model, ids, minus=-1)
    with pytest.raises(ValueError, match="token must be a token id"):
        direct_logit_attribution(model, ids, token="cat")
    with pytest.raises(ValueError, match="one sequence"):
        direct_logit_attribution(model, torch.stack([ids, ids]))
    with pytest.raises(ValueError, match="k must be a positive number of tokens"):
        head_tokens(model, ids, "decoder", 0, 0, k=0)
    with pytest.raises(ValueError, match="not a head of this model"):
        head_tokens(model, ids, "decoder", 2, 0)
    with pytest.raises(ValueError, match="no direct logit attribution for 'cross' heads"):
        head_tokens(model, ids, "cross", 0, 0)
    with pytest.raises(ValueError, match="only an encoder-decoder takes tgt"):
        direct_logit_attribution(model, ids, tgt=ids)
    model.train()
    try:
        with pytest.raises(ValueError, match="eval mode"):
            direct_logit_attribution(model, ids)
    finally:
        model.eval()


def test_encoder_decoder_needs_tgt_and_has_no_direct_encoder_heads():
    model = preset("annotated")
    src = torch.randint(1, 11, (6,))
    with pytest.raises(ValueError, match="needs the decoder input tgt"):
        direct_logit_attribution(model, src)
    with pytest.raises(ValueError, match="only through cross-attention"):
        head_tokens(model, src, "encoder", 0, 0, tgt=torch.tensor([1, 2, 3]))


def test_a_bare_encoder_has_no_logit():
    model = Transformer(TransformerConfig(arch="encoder", vocab_size=30, d_model=32, n_heads=4, n_layers=1, d_ff=32,
                                          dropout=0.0)).eval()
    with pytest.raises(ValueError, match="this model has no output head"):
        direct_logit_attribution(model, torch.tensor([3, 4, 5]))


def test_one_forward_pass_and_nothing_stored(gpt2, monkeypatch):
    """One pass through the stack (with a record), no (T, V) logits, nothing left on the model."""
    model = gpt2.model
    calls = []
    real_run = type(model.decoder).run

    def counting(self, *args, **kwargs):
        calls.append(kwargs.get("record"))
        return real_run(self, *args, **kwargs)

    monkeypatch.setattr(type(model.decoder), "run", counting)
    before = {name: set(vars(m)) for name, m in model.named_modules()}
    parts = residual_parts(model, gpt2.ids)
    assert len(calls) == 1 and isinstance(calls[0], Record)
    assert parts.logits.shape == (model.config.vocab_size,)
    assert {name: set(vars(m)) for name, m in model.named_modules()} == before
