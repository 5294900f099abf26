"""Shared harness of the importer tests: tiny random-weight models made with `transformers`, saved in
the Hugging Face layout with a tokenizer built with `tokenizers`, loaded with `explorer.load(path)`,
and compared with transformers' eager implementation (`output_attentions=True`).

"Equal" means: logits and every layer's per-head attention within TOLERANCE on every query row that
has at least one key it may attend to. A row whose keys are all masked (a left-padding position) has
no defined attention: transformers returns a uniform row there, ours is 0 by convention, and the
tests check that ours is exactly 0 (such rows never reach a real token: they are masked as keys).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import tokenizers
import torch
from tokenizers import decoders, models, pre_tokenizers, processors, trainers

import explorer
from explorer.checkpoints import LoadedModel

TOLERANCE = 1e-4
VOCAB = 320  # the models' vocabulary; the tokenizers use fewer ids
CORPUS = ["The cat sat on the mat.", "A dog ran in the park!", "Once upon a time there was a little fox.",
          "Attention is all you need.\nNew lines too.", "1, 2, 3, 4, 5, 6", "Déjà vu: naïve café 🙂"] * 4
SHAPE_LLAMA = dict(vocab_size=VOCAB, hidden_size=48, num_attention_heads=6, num_key_value_heads=2,
                   num_hidden_layers=2, intermediate_size=96, max_position_embeddings=64)
TEXTS = ["The cat sat on the mat and the dog ran.", "Once upon a time", "A fox!\nThe end"]


def byte_level_tokenizer(vocab_size: int = 300) -> tokenizers.Tokenizer:
    """GPT-2 / GPT-NeoX / Qwen2 style: byte-level BPE, "<|endoftext|>" as BOS = EOS, no BOS added."""
    tk = tokenizers.Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.post_processor = processors.ByteLevel(trim_offsets=False)
    tk.train_from_iterator(CORPUS, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    return tk


def sentencepiece_tokenizer(vocab_size: int = 300) -> tokenizers.Tokenizer:
    """Llama / Mistral style: "▁" for spaces, byte fallback (<0x0A> for a newline), <unk> <s> </s> first.
    BOS is not in the template: tokenizer_config.json's add_bos_token asks for it (see `save_folder`)."""
    trainer = tokenizers.Tokenizer(models.BPE())
    trainer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    trainer.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=vocab_size - 259, show_progress=False))
    learned = json.loads(trainer.to_str())["model"]
    pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    pieces += [p for p in sorted(learned["vocab"], key=learned["vocab"].get) if p not in pieces]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in learned["merges"]]
    tk = tokenizers.Tokenizer(models.BPE(vocab={p: i for i, p in enumerate(pieces)}, merges=merges,
                                         unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tk.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    tk.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                    decoders.Strip(" ", 1, 0)])
    tk.add_special_tokens(["<unk>", "<s>", "</s>"])
    return tk


def perturb(model: torch.nn.Module, std: float = 0.15, seed: int = 0) -> torch.nn.Module:
    """Move every parameter off its default init (norms at 1, biases at 0 would hide mistakes)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * std)
    return model


def save_folder(model, tokenizer: tokenizers.Tokenizer, folder: Path, tokenizer_config: dict | None = None,
                **save_kwargs) -> Path:
    model.save_pretrained(folder, **save_kwargs)
    tokenizer.save(str(folder / "tokenizer.json"))
    if tokenizer_config is not None:
        (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    return folder


@dataclass
class Case:
    """One tiny model of a family, saved and loaded both ways."""

    hf: torch.nn.Module  # transformers' model, eager attention, float32, eval
    loaded: LoadedModel  # explorer.load(folder)
    folder: Path
    out_proj: Callable[[torch.nn.Module, int], torch.nn.Module]  # transformers' W_o of layer l
    window: int | None = None  # sliding window, if the family has one


def make_case(model_class, config, tokenizer: tokenizers.Tokenizer, folder: Path,
              out_proj: Callable, tokenizer_config: dict | None = None, window: int | None = None) -> Case:
    hf = perturb(model_class(config)).eval()
    hf.set_attn_implementation("eager")
    save_folder(hf, tokenizer, folder, tokenizer_config)
    return Case(hf, explorer.load(folder, "cpu"), folder, out_proj, window)


def out_proj_llama(hf, layer: int) -> torch.nn.Module:
    return hf.model.layers[layer].self_attn.o_proj


def batch(case: Case, texts=TEXTS, side: str = "right") -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids (B, T) and key mask (B, T), True = real token, padded on `side` with id 0."""
    rows = [case.loaded.tokenizer.encode(t).ids for t in texts]
    width = max(map(len, rows))
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    mask = torch.zeros(len(rows), width, dtype=torch.bool)
    for b, row in enumerate(rows):
        start = width - len(row) if side == "left" else 0
        ids[b, start:start + len(row)] = torch.tensor(row)
        mask[b, start:start + len(row)] = True
    return ids, mask


def allowed_keys(mask: torch.Tensor, window: int | None) -> torch.Tensor:
    """(B, 1, T, T): causal, real keys, within the window; computed here, not taken from either model."""
    T = mask.shape[1]
    q, k = torch.arange(T)[:, None], torch.arange(T)[None, :]
    allowed = (k <= q) & ((q - k < window) if window else True)
    return allowed[None, None] & mask[:, None, None, :]


def hf_positions(mask: torch.Tensor) -> torch.Tensor:
    """Positions to give transformers: 0..T-1 from each row's first real token (transformers' forward
    counts from the first column, its generate() from the first real token: the same for right padding,
    the latter for left padding)."""
    first_real = mask.long().argmax(-1, keepdim=True)  # (B, 1)
    return (torch.arange(mask.shape[1])[None] - first_real).clamp(min=0)


def compare(case: Case, ids: torch.Tensor, mask: torch.Tensor, head_mask: torch.Tensor | None = None,
            hf_head_off: tuple[int, int] | None = None) -> dict[str, float]:
    """Run both; assert agreement on every live row; return the largest differences."""
    with torch.no_grad():
        ours = case.loaded.model(ids, key_mask=mask, head_mask=None if head_mask is None else {"decoder": head_mask})
        with zero_head(case, hf_head_off):
            ref = case.hf(input_ids=ids, attention_mask=mask.long(), position_ids=hf_positions(mask),
                          output_attentions=True)
    allowed = allowed_keys(mask, case.window)
    live = allowed.any(-1)[:, 0]  # (B, T) rows with a key to attend to
    assert len(ours.attentions.decoder) == len(ref.attentions) == case.hf.config.num_hidden_layers
    attention = 0.0
    for a, b in zip(ours.attentions.decoder, ref.attentions):
        assert a.shape == b.shape == (ids.shape[0], case.loaded.config.n_heads, ids.shape[1], ids.shape[1])
        attention = max(attention, (a - b).abs()[live[:, None].expand(a.shape[:3])].max().item())
        assert torch.all(a.masked_select(~allowed.expand_as(a)) == 0)  # masked keys and dead rows exactly 0
    logits = (ours.logits - ref.logits).abs()[live].max().item()
    assert ours.logits.shape == ref.logits.shape
    assert logits < TOLERANCE and attention < TOLERANCE, (logits, attention)
    return {"logits": logits, "attention": attention}


class zero_head:
    """Hand computation on transformers' side: zero head h's slice of layer l's W_o input."""

    def __init__(self, case: Case, head: tuple[int, int] | None):
        self.case, self.head, self.handle = case, head, None

    def __enter__(self):
        if self.head is not None:
            layer, h = self.head
            Dh = self.case.loaded.config.resolved_head_dim

            def hook(module, args):
                x = args[0].clone()
                x[..., h * Dh:(h + 1) * Dh] = 0
                return (x, *args[1:])
            self.handle = self.case.out_proj(self.case.hf, layer).register_forward_pre_hook(hook)
        return self

    def __exit__(self, *exc):
        if self.handle is not None:
            self.handle.remove()


def head_mask_with(config, layer: int, head: int) -> torch.Tensor:
    m = torch.ones(config.decoder_layers, config.n_heads)
    m[layer, head] = 0.0
    return m


def check_family(case: Case, *, left_padding: bool = True) -> None:
    """The checks every family passes: right / left padding, a head off, fast path == weights path."""
    for side in ("right", "left") if left_padding else ("right",):
        compare(case, *batch(case, side=side))
    ids, mask = batch(case)
    config = case.loaded.config
    last = config.n_layers - 1
    compare(case, ids, mask, head_mask_with(config, last, 1), hf_head_off=(last, 1))
    compare(case, ids, mask, head_mask_with(config, 0, 2), hf_head_off=(0, 2))
    hm = {"decoder": head_mask_with(config, 0, 1)}
    with torch.no_grad():
        slow = case.loaded.model(ids, key_mask=mask, head_mask=hm)
        fast = case.loaded.model(ids, key_mask=mask, head_mask=hm, need_weights=False)
    assert fast.attentions.decoder == () and torch.allclose(slow.logits, fast.logits, atol=1e-5)


def check_parameter_count(case: Case) -> None:
    from explorer.checkpoints import estimate_parameters

    theirs = sum(p.numel() for p in case.hf.parameters())  # tied weights counted once, as ours
    assert case.loaded.model.num_parameters() == estimate_parameters(case.loaded.config) == theirs
