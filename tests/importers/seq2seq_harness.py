"""Harness of the encoder and encoder-decoder importer tests (T5, BART, Marian; RoBERTa, DistilBERT and the
masked-LM heads): the tokenizers those families ship, built here (tokenizers' trainers; for Marian two
SentencePiece models trained with the `sentencepiece` library and a shared vocab.json, as opus-mt repos
ship them), and the comparison of every attention kind and the logits with transformers' eager
implementation, with source padding and heads switched off by a hook on transformers' side.

"Equal" means within TOLERANCE on every query row that has a key it may attend to (a padded source row
attends to the real keys, so it is compared too, except where a family gives padding its own position
row: RoBERTa, compared on real rows).
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import tokenizers
import torch
from tokenizers import decoders, models, normalizers, pre_tokenizers, processors, trainers

import explorer
from explorer.checkpoints import LoadedModel

from tests.importers.harness import CORPUS, TOLERANCE, byte_level_tokenizer, perturb

ENGLISH = ["The cat sat on the mat.", "A dog ran in the park!", "Once upon a time there was a little fox.",
           "The weather is lovely today.", "Where is the nearest train station?", "I would like a cup of tea.",
           "The house is wonderful and the garden is green.", "My friends are coming for dinner tonight.",
           "Machine translation has improved a lot.", "Please close the window, it is cold."] * 3
GERMAN = ["Die Katze saß auf der Matte.", "Ein Hund lief im Park!", "Es war einmal ein kleiner Fuchs.",
          "Das Wetter ist heute schön.", "Wo ist der nächste Bahnhof?", "Ich hätte gern eine Tasse Tee.",
          "Das Haus ist wunderbar und der Garten ist grün.", "Meine Freunde kommen heute zum Abendessen.",
          "Maschinelle Übersetzung ist viel besser geworden.", "Bitte schließ das Fenster, es ist kalt."] * 3
SOURCES = ["The cat sat on the mat and the dog ran in the park.", "Where is the station?", "A fox!"]


def unigram_metaspace_tokenizer(vocab_size: int = 200) -> tokenizers.Tokenizer:
    """T5 style: SentencePiece Unigram with "▁", <pad>=0 </s>=1 <unk>=2, "</s>" appended."""
    tk = tokenizers.Tokenizer(models.Unigram())
    tk.normalizer = normalizers.NFKC()
    tk.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tk.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    tk.train_from_iterator(CORPUS + ENGLISH + GERMAN, trainers.UnigramTrainer(
        vocab_size=vocab_size, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>", show_progress=False))
    tk.post_processor = processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>",
                                                      special_tokens=[("</s>", 1)])
    return tk


def roberta_tokenizer(vocab_size: int = 300) -> tokenizers.Tokenizer:
    """BART / RoBERTa style: byte-level BPE, <s>=0 <pad>=1 </s>=2 <unk>=3 ... <mask> last, <s> $A </s>."""
    tk = byte_level_tokenizer(vocab_size)
    base = json.loads(tk.to_str())["model"]
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for piece in sorted(base["vocab"], key=base["vocab"].get):
        if piece != "<|endoftext|>":
            vocab.setdefault(piece, len(vocab))
    vocab["<mask>"] = len(vocab)
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in base["merges"]]
    out = tokenizers.Tokenizer(models.BPE(vocab=vocab, merges=merges))
    out.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    out.decoder = decoders.ByteLevel()
    out.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True)
    out.add_special_tokens(["<s>", "<pad>", "</s>", "<unk>"])
    out.add_special_tokens([tokenizers.AddedToken("<mask>", lstrip=True)])
    return out


def wordpiece_tokenizer(vocab_size: int = 300) -> tokenizers.Tokenizer:
    """BERT / DistilBERT style (uncased WordPiece, [CLS] $A [SEP], [MASK])."""
    tk = tokenizers.Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tk.normalizer = normalizers.BertNormalizer(lowercase=True)
    tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tk.decoder = decoders.WordPiece()
    tk.train_from_iterator(CORPUS + ENGLISH, trainers.WordPieceTrainer(
        vocab_size=vocab_size, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False))
    tk.post_processor = processors.BertProcessing(("[SEP]", 3), ("[CLS]", 2))
    return tk


def train_spm(texts: list[str], vocab_size: int) -> bytes:
    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(texts), model_writer=model, model_type="unigram",
                                   vocab_size=vocab_size, hard_vocab_limit=False, character_coverage=1.0,
                                   unk_id=0, bos_id=1, eos_id=2, pad_id=-1, minloglevel=2)
    return model.getvalue()


def save_marian_tokenizer(folder: Path, source_size: int = 120, target_size: int = 120) -> dict[str, int]:
    """source.spm (English) and target.spm (German) trained here, and vocab.json: </s> 0, <unk> 1, the pieces
    of both models, <pad> last, as opus-mt repos ship them. Returns the vocabulary."""
    import sentencepiece as spm

    models_ = {"source.spm": train_spm(ENGLISH + CORPUS, source_size), "target.spm": train_spm(GERMAN, target_size)}
    vocab = {"</s>": 0, "<unk>": 1}
    for name, data in models_.items():
        (folder / name).write_bytes(data)
        proc = spm.SentencePieceProcessor(model_proto=data)
        for i in range(proc.get_piece_size()):
            if not (proc.is_control(i) or proc.is_unknown(i)):
                vocab.setdefault(proc.id_to_piece(i), len(vocab))
    vocab["<pad>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    (folder / "tokenizer_config.json").write_text(json.dumps({"source_lang": "en", "target_lang": "de",
                                                              "unk_token": "<unk>", "eos_token": "</s>",
                                                              "pad_token": "<pad>", "model_max_length": 512}))
    return vocab


@dataclass
class Seq2SeqCase:
    hf: torch.nn.Module  # transformers' model, eager attention, float32, eval
    loaded: LoadedModel
    folder: Path
    self_out: Callable[[torch.nn.Module, str, int], torch.nn.Module]  # (hf, "encoder"|"decoder"|"cross", layer) -> W_o


def make_seq2seq_case(model_class, config, folder: Path, save_tokenizer: Callable[[Path], None], out_proj: Callable,
                      config_extra: dict | None = None) -> Seq2SeqCase:
    torch.manual_seed(0)
    hf = perturb(model_class(config)).eval()
    hf.set_attn_implementation("eager")
    hf.save_pretrained(folder)
    if config_extra:
        path = folder / "config.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **config_extra}))
    save_tokenizer(folder)
    return Seq2SeqCase(hf, explorer.load(folder, "cpu"), folder, out_proj)


def source_batch(loaded: LoadedModel, texts=SOURCES) -> tuple[torch.Tensor, torch.Tensor]:
    """Source ids (B, S) right-padded with the padding id, and the key mask (B, S), True = real token."""
    rows = [loaded.tokenizer.encode(t).ids for t in texts]
    width = max(map(len, rows))
    pad = loaded.config.pad_id if loaded.config.pad_id is not None else 0
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros(len(rows), width, dtype=torch.bool)
    for b, row in enumerate(rows):
        ids[b, : len(row)], mask[b, : len(row)] = torch.tensor(row), True
    return ids, mask


def target_batch(loaded: LoadedModel, start: int, batch: int, length: int = 6, seed: int = 1) -> torch.Tensor:
    """Decoder inputs (B, T): the start token, then random ids (teacher forcing needs no real text)."""
    gen = torch.Generator().manual_seed(seed)
    rest = torch.randint(3, loaded.config.resolved_tgt_vocab_size, (batch, length - 1), generator=gen)
    return torch.cat([torch.full((batch, 1), start), rest], dim=1)


class zero_heads:
    """Hand computation on transformers' side: zero head h's slice of the W_o input of (kind, layer)."""

    def __init__(self, case: Seq2SeqCase, off: list[tuple[str, int, int]]):
        self.case, self.off, self.handles = case, off, []

    def __enter__(self):
        Dh = self.case.loaded.config.resolved_head_dim
        for kind, layer, h in self.off:
            def hook(module, args, h=h):
                x = args[0].clone()
                x[..., h * Dh:(h + 1) * Dh] = 0
                return (x, *args[1:])
            self.handles.append(self.case.self_out(self.case.hf, kind, layer).register_forward_pre_hook(hook))
        return self

    def __exit__(self, *exc):
        for handle in self.handles:
            handle.remove()


def head_masks(config, off: list[tuple[str, int, int]]) -> dict[str, torch.Tensor]:
    masks = {kind: torch.ones(layers, heads) for kind, (layers, heads) in config.attention_kinds().items()}
    for kind, layer, h in off:
        masks[kind][layer, h] = 0.0
    return masks


def compare_seq2seq(case: Seq2SeqCase, src: torch.Tensor, src_mask: torch.Tensor, tgt: torch.Tensor,
                    off: list[tuple[str, int, int]] = ()) -> dict[str, float]:
    """Encoder, decoder and cross attention and the logits of both implementations, on live rows."""
    config = case.loaded.config
    with torch.no_grad():
        ours = case.loaded.model(src, tgt, key_mask=src_mask, tgt_key_mask=torch.ones_like(tgt, dtype=torch.bool),
                                 head_mask=head_masks(config, list(off)) if off else None)
        with zero_heads(case, list(off)):
            ref = case.hf(input_ids=src, attention_mask=src_mask.long(), decoder_input_ids=tgt,
                          output_attentions=True)
    B, S, T = src.shape[0], src.shape[1], tgt.shape[1]
    diffs = {}
    for kind, mine, theirs, shape in (("encoder", ours.attentions.encoder, ref.encoder_attentions, (B, S, S)),
                                      ("decoder", ours.attentions.decoder, ref.decoder_attentions, (B, T, T)),
                                      ("cross", ours.attentions.cross, ref.cross_attentions, (B, T, S))):
        assert len(mine) == len(theirs) > 0, kind
        keys = src_mask if kind != "decoder" else torch.ones(B, T, dtype=torch.bool)
        diff = 0.0
        for a, b in zip(mine, theirs):
            assert a.shape == b.shape == (shape[0], config.n_heads, *shape[1:]), kind
            diff = max(diff, (a - b).abs().max().item())
            assert torch.all(a.masked_select(~keys[:, None, None, :].expand_as(a)) == 0), kind  # padding keys
        diffs[kind] = diff
    assert ours.logits.shape == ref.logits.shape
    diffs["logits"] = (ours.logits - ref.logits).abs().max().item()
    assert max(diffs.values()) < TOLERANCE, diffs
    return diffs


def check_seq2seq(case: Seq2SeqCase, start: int) -> None:
    """Source padding, a head of each kind off, fast path == weights path."""
    src, mask = source_batch(case.loaded)
    tgt = target_batch(case.loaded, start, src.shape[0])
    compare_seq2seq(case, src, mask, tgt)
    last = case.loaded.config.decoder_layers - 1
    compare_seq2seq(case, src, mask, tgt, [("cross", last, 1)])
    compare_seq2seq(case, src, mask, tgt, [("encoder", 0, 2), ("decoder", last, 0), ("cross", 0, 3)])
    hm = head_masks(case.loaded.config, [("cross", 0, 1), ("encoder", case.loaded.config.encoder_layers - 1, 0)])
    ones = torch.ones_like(tgt, dtype=torch.bool)
    with torch.no_grad():
        slow = case.loaded.model(src, tgt, key_mask=mask, tgt_key_mask=ones, head_mask=hm)
        fast = case.loaded.model(src, tgt, key_mask=mask, tgt_key_mask=ones, head_mask=hm, need_weights=False)
    assert fast.attentions.cross == () and torch.allclose(slow.logits, fast.logits, atol=1e-5)


def check_greedy_generation(case: Seq2SeqCase, max_new_tokens: int = 8, **hf_kwargs) -> list[list[int]]:
    """Our greedy generation (explorer.outputs.seq2seq.translate) equals transformers' greedy generate, one source at a
    time; each step's cross-attention row equals a full teacher-forced run's row."""
    from explorer.outputs.seq2seq import translate

    task = case.loaded.task
    outputs = []
    for text in SOURCES:
        ours = translate(case.loaded, text, max_new_tokens)
        src = torch.tensor([ours.source_ids])
        with torch.no_grad():
            theirs = case.hf.generate(input_ids=src, attention_mask=torch.ones_like(src), max_new_tokens=max_new_tokens,
                                      do_sample=False, num_beams=1, decoder_start_token_id=task["bos_id"],
                                      eos_token_id=task["eos_id"], forced_eos_token_id=None, forced_bos_token_id=None,
                                      **hf_kwargs)
        assert theirs[0, 0].item() == task["bos_id"]
        expected = theirs[0, 1:].tolist()
        if task["eos_id"] in expected:
            expected = expected[: expected.index(task["eos_id"]) + 1]
        assert ours.ids == expected, (text, ours.ids, expected)
        prefix = torch.tensor([[task["bos_id"], *ours.ids[:-1]]])
        with torch.no_grad():
            full = case.loaded.model(src, prefix, tgt_key_mask=torch.ones_like(prefix, dtype=torch.bool))
        for n, step in enumerate(ours.generation.steps[: len(ours.ids)]):
            for layer, row in enumerate(step.cross):
                assert torch.allclose(row[0], full.attentions.cross[layer][0, :, n], atol=1e-5)
        outputs.append(ours.ids)
    return outputs


def set_logits_bias(case, std: float = 0.05):
    """A final_logits_bias that is not zero (a buffer: the harness did not perturb it), in both models."""
    gen = torch.Generator().manual_seed(3)
    bias = torch.randn(case.hf.final_logits_bias.shape, generator=gen) * std
    case.hf.final_logits_bias.copy_(bias)
    case.loaded.model.generator.proj.bias.copy_(bias[0])
