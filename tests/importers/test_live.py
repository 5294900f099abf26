"""explorer.from_transformers on a tiny random model of every family the explorer imports: the LoadedModel equals
`explorer.load` of the folder the same model and tokenizer were saved to (type, config, tensors, tokenizer, task), its
outputs equal transformers' own within 1e-4 (the family harnesses' checks: padding, heads off), the tensors the plan
takes unchanged share the transformers model's memory (data_ptr) and the built ones do not; float16, training mode,
the meta device, no tokenizer, another family and a slow tokenizer each do what the docs say."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")  # Marian's tokenizer

import explorer
from explorer.checkpoints import CheckpointError
from tests.importers.harness import TEXTS, TOLERANCE, VOCAB, byte_level_tokenizer, check_family, perturb
from tests.importers.seq2seq_harness import (
    SOURCES,
    check_seq2seq,
    make_seq2seq_case,
    roberta_tokenizer,
    save_marian_tokenizer,
    set_logits_bias,
    wordpiece_tokenizer,
)
from tests.importers.test_bart import bart_case
from tests.importers.test_bart import out_proj as bart_out_proj
from tests.importers.test_gpt2 import gpt2_case
from tests.importers.test_gpt_neox import neox_case
from tests.importers.test_llama import llama_case, mistral_case, qwen2_case
from tests.importers.test_masked_lm import DISTIL, SHAPE
from tests.importers.test_masked_lm import case as mlm_case
from tests.importers.test_masked_lm import compare as mlm_compare
from tests.importers.test_t5 import t5_case


def marian_case(folder: Path):
    vocab = save_marian_tokenizer(folder)
    pad = vocab["<pad>"]
    config = transformers.MarianConfig(vocab_size=len(vocab), d_model=48, encoder_layers=2, decoder_layers=2,
                                       encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=96,
                                       decoder_ffn_dim=96, max_position_embeddings=64, pad_token_id=pad,
                                       eos_token_id=0, decoder_start_token_id=pad, scale_embedding=True,
                                       activation_function="swish", bad_words_ids=[[pad]])
    case = make_seq2seq_case(transformers.MarianMTModel, config, folder, lambda f: None, bart_out_proj)
    with torch.no_grad():  # the harness perturbed their fixed sinusoid tables too: restore them
        for stack in (case.hf.model.encoder, case.hf.model.decoder):
            stack.embed_positions.weight.copy_(stack.embed_positions.create_weight())
        set_logits_bias(case)
    return case


@dataclasses.dataclass
class MLMCase:  # the masked-LM harness works on (hf, loaded) pairs
    hf: torch.nn.Module
    loaded: explorer.checkpoints.LoadedModel
    folder: Path


def mlm(name: str, folder: Path) -> MLMCase:
    if name == "bert":
        made = mlm_case(transformers.BertForMaskedLM, transformers.BertConfig(**SHAPE), wordpiece_tokenizer(), folder)
    elif name == "roberta":
        config = transformers.RobertaConfig(**SHAPE, pad_token_id=1, bos_token_id=0, eos_token_id=2)
        made = mlm_case(transformers.RobertaForMaskedLM, config, roberta_tokenizer(), folder, mask_token="<mask>")
    else:
        made = mlm_case(transformers.DistilBertForMaskedLM, transformers.DistilBertConfig(**DISTIL),
                        wordpiece_tokenizer(), folder)
    return MLMCase(*made, folder)


FAMILIES = {"gpt2": gpt2_case, "gpt_neox": neox_case, "llama": llama_case, "mistral": mistral_case,
            "qwen2": qwen2_case, "bert": lambda f: mlm("bert", f), "roberta": lambda f: mlm("roberta", f),
            "distilbert": lambda f: mlm("distilbert", f), "bart": bart_case, "marian": marian_case, "t5": t5_case}


def hf_tokenizer(folder: Path):
    """What a practitioner holds: transformers' tokenizer of the saved folder (fast, or Marian's SentencePiece one)."""
    if (folder / "source.spm").exists():
        return transformers.MarianTokenizer(str(folder / "source.spm"), str(folder / "target.spm"),
                                            str(folder / "vocab.json"))
    path = folder / "tokenizer_config.json"
    cfg = json.loads(path.read_text()) if path.exists() else {}
    return transformers.PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"),
                                                **{k: v for k, v in cfg.items() if v is not None})


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family(request, tmp_path_factory):
    case = FAMILIES[request.param](tmp_path_factory.mktemp(request.param))
    live = explorer.from_transformers(case.hf, hf_tokenizer(case.folder))
    return request.param, case, live


def test_outputs_equal_transformers(family):
    name, case, live = family
    live_case = dataclasses.replace(case, loaded=live)
    if isinstance(case, MLMCase):
        for side in ("right", "left"):
            mlm_compare(case.hf, live, side)
        mlm_compare(case.hf, live, off=(1, 2))
    elif live.arch == "encoder-decoder":
        check_seq2seq(live_case, start={"bart": 2, "t5": 0, "marian": live.config.pad_id}[name])
    else:
        check_family(live_case)


def test_same_as_load_of_the_saved_folder(family):
    _, case, live = family
    saved = case.loaded
    assert type(live) is type(saved) and type(live.model) is type(saved.model)
    assert live.config.to_dict() == saved.config.to_dict()
    ours, theirs = live.model.state_dict(), saved.model.state_dict()
    assert ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours)
    assert live.task.keys() == saved.task.keys()
    assert {k: v for k, v in live.task.items() if k != "description"} == \
        {k: v for k, v in saved.task.items() if k != "description"}
    assert not live.model.training and live.source == f"transformers object {type(case.hf).__name__}"
    for mine, folder_side in ((live.tokenizer, saved.tokenizer), (live.target_tokenizer, saved.target_tokenizer)):
        assert mine.specials == folder_side.specials and mine.vocab_size == folder_side.vocab_size
        for text in TEXTS + SOURCES:
            assert mine.encode(text).ids == folder_side.encode(text).ids
    assert live.notes[:len(saved.notes)] == saved.notes


def storages(module_or_state) -> set[int]:
    values = module_or_state.values() if isinstance(module_or_state, dict) else module_or_state.state_dict().values()
    return {t.untyped_storage().data_ptr() for t in values}


def test_tensors_taken_unchanged_are_shared(family):
    name, case, live = family
    theirs = storages(case.hf)
    shared = {n for n, p in live.model.named_parameters() if p.untyped_storage().data_ptr() in theirs}
    params = dict(live.model.named_parameters())
    embedding = next(n for n in params if n.endswith("embed.token.weight"))
    assert embedding in shared
    assert params[embedding].data_ptr() == case.hf.get_input_embeddings().weight.data_ptr()
    in_proj = [n for n in params if n.endswith("in_proj.weight")]
    assert in_proj and not shared & set(in_proj)  # q, k, v stacked (GPT-2: transposed, NeoX: regrouped): copies
    ff = [n for n in params if n.endswith("feed_forward.linear2.weight")]
    assert ff and (set(ff) <= shared if name != "gpt2" else not shared & set(ff))  # GPT-2's Conv1D: transposed
    norms = [n for n in params if ".norm." in n and n.endswith("weight")]
    assert norms and set(norms) <= shared
    ptrs = {p.untyped_storage().data_ptr() for p in params.values()}
    assert live.notes[-1].startswith(f"{len(ptrs & theirs)} of {len(ptrs)} weight tensors share memory")


def tiny_gpt2():
    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=48, n_head=6, n_layer=2, n_positions=64, bos_token_id=0,
                                     eos_token_id=0)
    hf = perturb(transformers.GPT2LMHeadModel(config)).eval()
    hf.set_attn_implementation("eager")
    return hf


IDS = torch.tensor([[5, 17, 3, 99, 250, 7], [1, 2, 3, 4, 5, 6]])


def test_a_shared_weight_changed_in_place_shows_in_both():
    hf = tiny_gpt2()
    live = explorer.from_transformers(hf)
    with torch.no_grad():
        hf.transformer.wte.weight[5] += 1.0
        assert torch.equal(live.model.tgt_embed.token.weight[5], hf.transformer.wte.weight[5])
        assert (live.model(IDS).logits - hf(IDS).logits).abs().max() < TOLERANCE


def test_half_precision_is_copied_to_float32():
    hf = tiny_gpt2()
    reference = copy.deepcopy(hf)  # float32, the same values as the float16 model once rounded
    hf.half()
    with torch.no_grad():
        for p, q in zip(reference.parameters(), hf.parameters()):
            p.copy_(q.float())
    live = explorer.from_transformers(hf)
    assert all(p.dtype == torch.float32 for p in live.model.parameters())
    assert not storages(live.model) & storages(hf)  # every tensor converted: nothing shared
    assert live.notes[-2].startswith("0 of ")  # the last: no tokenizer given
    with torch.no_grad():
        assert (live.model(IDS).logits - reference(IDS).logits).abs().max() < TOLERANCE


def test_training_mode_is_left_alone_and_ours_is_in_eval():
    hf = tiny_gpt2().train()
    live = explorer.from_transformers(hf)
    assert hf.training and not live.model.training
    with torch.no_grad():
        first, second = live.model(IDS).logits, live.model(IDS).logits  # no dropout: the same twice
        assert torch.equal(first, second)
        assert (first - hf.eval()(IDS).logits).abs().max() < TOLERANCE


def test_device_is_the_models_own_or_the_one_asked():
    hf = tiny_gpt2()
    for device in (None, "cpu"):
        live = explorer.from_transformers(hf, device=device)
        assert {p.device.type for p in live.model.parameters()} == {"cpu"}
        assert live.model.tgt_embed.token.weight.data_ptr() == hf.transformer.wte.weight.data_ptr()
    with pytest.raises(ValueError, match="not available here"):
        explorer.from_transformers(hf, device="cuda:7" if not torch.cuda.is_available() else "mps")


def test_a_model_on_the_meta_device_is_refused():
    with torch.device("meta"):
        hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=VOCAB, n_embd=48, n_head=6, n_layer=2,
                                                                  n_positions=64))
    with pytest.raises(CheckpointError, match="meta device") as err:
        explorer.from_transformers(hf)
    assert "GPT2LMHeadModel (in memory)" in str(err.value)


def test_without_a_tokenizer_the_model_takes_ids():
    hf = tiny_gpt2()
    live = explorer.from_transformers(hf)
    assert live.tokenizer is None and live.task["name"] == "ids-only" and live.task["eos_id"] == 0
    assert "token ids only" in live.notes[-1]
    with torch.no_grad():
        assert (live.model(IDS).logits - hf(IDS).logits).abs().max() < TOLERANCE


def test_a_tokenizers_tokenizer_is_accepted_and_never_changed():
    hf, tk = tiny_gpt2(), byte_level_tokenizer()
    before = tk.to_str()
    live = explorer.from_transformers(hf, tk)
    assert live.tokenizer.encode("The cat sat.").ids == tk.encode("The cat sat.").ids
    live.tokenizer.encode_batch(["a", "longer text"])  # padding the batch must not reach the caller's tokenizer
    assert tk.to_str() == before


def test_another_family_is_named():
    config = transformers.OPTConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, ffn_dim=64,
                                    num_attention_heads=4, max_position_embeddings=32, word_embed_proj_dim=32)
    with pytest.raises(CheckpointError, match="model_type 'opt' is not supported") as err:
        explorer.from_transformers(transformers.OPTForCausalLM(config))
    assert "OPTForCausalLM" in str(err.value) and "GPT-2 (gpt2)" in str(err.value)


def test_what_is_not_a_transformers_model_or_tokenizer_is_refused():
    with pytest.raises(TypeError, match="takes a transformers model .* got Linear"):
        explorer.from_transformers(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="tokenizer object is neither"):
        explorer.from_transformers(tiny_gpt2(), object())
