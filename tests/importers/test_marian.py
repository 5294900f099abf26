"""Marian import: a tiny random MarianMT model with two SentencePiece models trained here (English source.spm,
German target.spm) and a shared vocab.json, as opus-mt repositories ship them. Our tokenizers equal
transformers' MarianTokenizer (ids, decoding) and the sentencepiece library's own segmentation; the model
(sinusoidal positions in Marian's sin | cos layout, shared embeddings, final_logits_bias, scaled embeddings,
SiLU) equals transformers' eager MarianMTModel with source padding and heads off; greedy translation equals
transformers' generate, with the padding token never generated (bad_words_ids); switching cross-attention
heads off changes the translation."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")
spm = pytest.importorskip("sentencepiece")

import explorer
from explorer.checkpoints import CheckpointError, estimate_parameters
from explorer.model import sinusoidal_table
from explorer.outputs.seq2seq import compare_outputs, translate

from tests.importers.seq2seq_harness import (ENGLISH, GERMAN, SOURCES, check_greedy_generation, check_seq2seq,
                                             make_seq2seq_case, save_marian_tokenizer, set_logits_bias)

TEXTS = SOURCES + ["  Extra   spaces,\ttabs and ünïcödé — “quotes” ½ ﬁ!", "Straße, Grüße", "", "The cat."]


def out_proj(hf, kind: str, layer: int):
    model = hf.model
    if kind == "encoder":
        return model.encoder.layers[layer].self_attn.out_proj
    return model.decoder.layers[layer].self_attn.out_proj if kind == "decoder" else \
        model.decoder.layers[layer].encoder_attn.out_proj


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    folder = tmp_path_factory.mktemp("marian")
    vocab = save_marian_tokenizer(folder)
    pad = vocab["<pad>"]
    config = transformers.MarianConfig(vocab_size=len(vocab), d_model=48, encoder_layers=2, decoder_layers=2,
                                       encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=96,
                                       decoder_ffn_dim=96, max_position_embeddings=64, pad_token_id=pad,
                                       eos_token_id=0, decoder_start_token_id=pad, scale_embedding=True,
                                       activation_function="swish")
    case = make_seq2seq_case(transformers.MarianMTModel, config, folder, lambda f: None, out_proj,
                             config_extra={"bad_words_ids": [[pad]]})
    with torch.no_grad():  # the harness perturbed every parameter, their fixed sinusoid tables too: restore them
        for stack in (case.hf.model.encoder, case.hf.model.decoder):
            stack.embed_positions.weight.copy_(stack.embed_positions.create_weight())
        set_logits_bias(case)
    return case


@pytest.fixture(scope="module")
def reference_tokenizer(marian):
    return transformers.MarianTokenizer(str(marian.folder / "source.spm"), str(marian.folder / "target.spm"),
                                        str(marian.folder / "vocab.json"))


def test_config_and_task(marian):
    c, model = marian.loaded.config, marian.loaded.model
    assert (c.positional, c.sinusoid_layout, c.scale_embeddings, c.embedding_norm, c.activation, c.norm_first) == \
        ("sinusoidal", "split", True, False, "silu", False)
    assert model.tgt_embed.token.weight is model.src_embed.token.weight is model.generator.proj.weight
    theirs = sum(p.numel() for p in marian.hf.parameters()) - 2 * 64 * 48  # their sinusoid tables are parameters
    assert model.num_parameters() == estimate_parameters(c) == theirs + marian.hf.final_logits_bias.numel()
    task = marian.loaded.task
    pad = c.pad_id
    assert task["name"] == "seq2seq" and task["bos_id"] == pad and task["eos_id"] == 0 and task["suppress_ids"] == [pad]
    assert marian.loaded.tgt_tokenizer is not None


def test_positions_are_marians_table(marian):
    theirs = marian.hf.model.encoder.embed_positions.weight
    ours = marian.loaded.model.src_embed.position_matrix()[:64]
    assert torch.equal(ours, theirs)
    assert np.array_equal(sinusoidal_table(64, 48, layout="split")[:, :24], sinusoidal_table(64, 48)[:, 0::2])


def test_source_tokens_equal_marian_tokenizer(marian, reference_tokenizer):
    ours = marian.loaded.tokenizer
    processor = spm.SentencePieceProcessor(model_file=str(marian.folder / "source.spm"))
    unknown = processor.unk_id()
    for text in TEXTS + ENGLISH[:10]:
        enc, theirs = ours.encode(text), reference_tokenizer(text)["input_ids"]
        assert enc.tokens[:-1] == processor.encode(text, out_type=str), text  # sentencepiece's own pieces
        pieces = processor.encode(text)
        # where source.spm knows every character: MarianTokenizer's ids; where it does not, <unk> (MarianTokenizer
        # looks the character up in the shared vocab.json, see explorer/importers/marian_tokens.py)
        assert [1 if p == unknown else i for i, p in zip(theirs, pieces + [None])] == enc.ids, text
        if unknown not in pieces:
            assert enc.ids == theirs
    enc = ours.encode("the cat sat.")
    labels = ours.labels(enc.ids)
    assert labels[0] == "␣the" and labels[-1] == "</s>"


def test_target_tokens_and_decoding_equal_marian_tokenizer(marian, reference_tokenizer):
    ours = marian.loaded.tgt_tokenizer
    processor = spm.SentencePieceProcessor(model_file=str(marian.folder / "target.spm"))
    for text in GERMAN[:10] + ["Straße, Grüße", "Die Katze."]:  # characters target.spm knows (see marian_tokens)
        enc = ours.encode(text)
        assert enc.ids == reference_tokenizer(text_target=text)["input_ids"], text
        assert enc.tokens[:-1] == processor.encode(text, out_type=str), text
        assert ours.decode(enc.ids) == reference_tokenizer.decode(enc.ids, skip_special_tokens=True)
        assert ours.decode(enc.ids) == text or 1 in enc.ids  # round trip unless a character is unknown (<unk>)


def test_equals_transformers(marian):
    check_seq2seq(marian, start=marian.loaded.config.pad_id)


def test_greedy_translation_equals_transformers(marian):
    outputs = check_greedy_generation(marian, bad_words_ids=[[marian.loaded.config.pad_id]])
    assert all(marian.loaded.config.pad_id not in ids for ids in outputs)


def test_cross_attention_heads_off_change_the_translation(marian):
    """Every cross-attention head off: the decoder no longer reads the source, so the output changes; the
    toggled output equals transformers' generate with those heads' slices of W_o's input zeroed."""
    from tests.importers.seq2seq_harness import zero_heads

    c = marian.loaded.config
    off = [("cross", layer, h) for layer in range(c.decoder_layers) for h in range(c.n_heads)]
    heads = {"cross": torch.zeros(c.decoder_layers, c.n_heads)}
    change = compare_outputs(marian.loaded, SOURCES[0], heads, max_new_tokens=8)
    assert change.first_difference is not None and change.baseline.ids != change.toggled.ids
    src = torch.tensor([change.toggled.source_ids])
    with torch.no_grad(), zero_heads(marian, off):
        theirs = marian.hf.generate(input_ids=src, max_new_tokens=8, do_sample=False, num_beams=1,
                                    forced_eos_token_id=None, bad_words_ids=[[c.pad_id]])
    expected = theirs[0, 1:].tolist()
    assert change.toggled.ids == expected[: len(change.toggled.ids)] and len(expected) >= len(change.toggled.ids)
    one = translate(marian.loaded, SOURCES[0], 8, head_mask={"cross": torch.ones(c.decoder_layers, c.n_heads)})
    assert one.ids == change.baseline.ids  # all heads on == no mask


def test_missing_spm_and_bad_vocab_are_named(tmp_path, marian):
    folder = tmp_path / "m"
    folder.mkdir()
    for name in ("config.json", "model.safetensors", "vocab.json", "source.spm", "tokenizer_config.json"):
        (folder / name).write_bytes((marian.folder / name).read_bytes())
    with pytest.raises(CheckpointError, match="missing file target.spm"):
        explorer.load(folder, "cpu")
    (folder / "target.spm").write_bytes(b"\x0a\xff\xff\xff")
    with pytest.raises(CheckpointError, match="target.spm"):
        explorer.load(folder, "cpu")
    (folder / "target.spm").write_bytes((marian.folder / "target.spm").read_bytes())
    vocab = json.loads((folder / "vocab.json").read_text())
    del vocab["<unk>"]
    (folder / "vocab.json").write_text(json.dumps(vocab))
    with pytest.raises(CheckpointError, match="vocab.json.*<unk>"):
        explorer.load(folder, "cpu")


def test_hub_download_fetches_the_marian_files():
    from explorer.loading import HUB_FILES

    assert {"source.spm", "target.spm", "vocab.json"} <= set(HUB_FILES)


def test_explorer_checkpoint_round_trip_keeps_both_tokenizers(tmp_path, marian):
    from explorer.checkpoints import load_checkpoint, save_checkpoint

    loaded = marian.loaded
    save_checkpoint(tmp_path, loaded.model, loaded.tokenizer, tgt_tokenizer=loaded.tgt_tokenizer, task=loaded.task)
    again = load_checkpoint(tmp_path, "cpu")
    assert again.tokenizer.encode(SOURCES[0]).ids == loaded.tokenizer.encode(SOURCES[0]).ids
    assert again.tgt_tokenizer.labels(range(40)) == loaded.tgt_tokenizer.labels(range(40))
    assert translate(again, SOURCES[1], 6).ids == translate(loaded, SOURCES[1], 6).ids
