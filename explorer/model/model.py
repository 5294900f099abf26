"""The whole model: embeddings, stacks and heads for the three architectures.

Shapes: B batch, H heads, L layers, S source length, T target length, D model width,
V vocabulary, C classes.

    Transformer(config)(src (B, S), tgt (B, T) | None, *, padding, causal, attn_mask, head_mask)
        -> TransformerOutput(logits, attentions(.encoder/.decoder/.cross), hidden_states, ...)

    arch "encoder":          src -> encoder -> classifier on token 0 -> logits (B, C)
                                            | masked-LM head -> logits (B, S, V) | no head: logits None
    arch "decoder":          src -> causal decoder (no cross-attention) -> logits (B, S, V)
    arch "encoder-decoder":  src -> encoder -> memory; tgt + memory -> decoder -> logits (B, T, V)

`head_mask` is a dict with optional keys "encoder", "decoder", "cross", each (L, H) or (B, L, H)
with 1 = head on (H = query heads). `attn_mask` is an extra boolean mask (True = may attend) for
encoder self-attention, or for the self-attention of a decoder-only model. `key_mask` (B, S), True
= real token, marks the padding of `src` explicitly (models without a padding token, left padding);
without it, padding is wherever src == config.pad_id. `tgt_key_mask` (B, T) does the same for the
target of an encoder-decoder; without it, padding is wherever tgt == pad_id except the first column:
a target starts with the decoder start token, a real token even when it is the padding id (T5,
Marian). `head_hook`, per call like head_mask and never stored, is a callable (kind, layer, z) -> z
called with every attention block's head outputs z (B, H, T, Dh) (H = query heads, before the
head mask and W_o; kind "encoder", "decoder" or "cross", layer from 0) on both attention paths: it
may read z (capture a run's head outputs) or return a replacement of the same shape (activation
patching, explorer.interpret.patching). `record`, per call too, is a Record (record.py) that the run fills
with every layer's head outputs, values, feed-forward outputs and norm divisors (direct logit attribution
reads it). `resid_hook`, per call too, is a callable (site, x) -> x called with the residual stream x (B, T, D) at
every site "{stack}.{layer}.{point}" of TransformerLens's hook_resid_pre / _mid / _mid_cross / _post (see
stacks.py): it may read x or return a replacement (an SAE splice, a steering vector: explorer.interpret.sae).
`receivers`, per call too, is a callable (site, x) -> input called at every reader of the residual stream (each
attention block's query, key and value input, per query head if it likes, each feed-forward block's input, each
stack's last stream before its final norm; see stacks.py): it gives each reader its own input, the residual stream
plus whatever it adds (edge patching and edge attribution, explorer.interpret.circuits).
`encode` and `decode` take `token_embeds` (B, T, D), also per call: the token embeddings to use instead of
looking the ids up (before the x sqrt(D) scale and positions), so gradients with respect to the tokens need no
hook on a shared module (explorer.interpret.attribution). Token positions count from each row's first real token
(`position_ids`), so a left-padded row computes what the unpadded one does.
"""

from __future__ import annotations

from typing import Any, Mapping

import torch
from torch import Tensor, nn

from .cache import DecoderCache
from .config import TransformerConfig
from .heads import ClassifierHead, Generator, MaskedLMHead
from .masks import causal_mask, combine_masks, normalize_mask
from .returns import AttentionMasks, Attentions, DecoderResult, EncoderResult, HiddenStates, TransformerOutput
from .positional import Embeddings, position_ids
from .record import Record
from .stacks import Decoder, Encoder, Receivers, ResidHook, StackHeadHook

HEAD_MASK_KINDS = ("encoder", "decoder", "cross")


class Transformer(nn.Module):
    def __init__(self, config: TransformerConfig):
        super().__init__()
        config.validate()
        self.config = config
        c = config
        has_encoder, has_decoder = c.arch != "decoder", c.arch != "encoder"
        self.src_embed = self.make_embeddings(c.vocab_size) if has_encoder else None
        self.encoder = Encoder(c) if has_encoder else None
        tgt_vocab = c.resolved_tgt_vocab_size if c.arch == "encoder-decoder" else c.vocab_size
        self.tgt_embed = self.make_embeddings(tgt_vocab) if has_decoder else None
        self.decoder = Decoder(c) if has_decoder else None
        self.generator = Generator(c.d_model, tgt_vocab, c.lm_head_bias, c.output_scale) if has_decoder else None
        self.classifier = ClassifierHead(c.d_model, c.classifier_hidden, c.num_classes) if c.num_classes else None
        self.mlm = (MaskedLMHead(c.d_model, c.vocab_size, c.resolved_mlm_activation, c.norm, c.layer_norm_eps)
                    if c.mlm_head else None)
        self.tie_weights()

    def make_embeddings(self, vocab_size: int) -> Embeddings:
        c = self.config
        return Embeddings(vocab_size, c.d_model, max_len=c.max_len, positional=c.positional, pos_base=c.pos_base,
                          scale=c.scale_embeddings, type_vocab_size=c.type_vocab_size,
                          norm=c.norm if c.embedding_norm else None, eps=c.layer_norm_eps,
                          dropout=c.resolved_embedding_dropout, offset=c.position_offset, layout=c.sinusoid_layout)

    def tie_weights(self) -> None:
        """One Parameter where the config shares weights: with share_embeddings the decoder's token
        embedding is the encoder's; with tie_embeddings the output projection (or the MLM head's) is the
        token embedding. Called again after weights are assigned into a model built on the meta device."""
        if self.config.share_embeddings:
            self.tgt_embed.token.weight = self.src_embed.token.weight
        if self.config.tie_embeddings:
            if self.generator is not None:
                self.generator.proj.weight = self.tgt_embed.token.weight
            if self.mlm is not None:
                self.mlm.proj.weight = self.src_embed.token.weight

    # ------------------------------------------------------------------ helpers
    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def head_masks(self, head_mask: Mapping[str, Any] | None) -> dict[str, Tensor]:
        """Validate the head-mask dict and bring each entry to a float tensor on the model's device."""
        if head_mask is None:
            return {}
        unknown = set(head_mask) - set(HEAD_MASK_KINDS)
        if unknown:
            raise ValueError(f"head_mask keys must be among {HEAD_MASK_KINDS}, got {sorted(unknown)}")
        return {kind: torch.as_tensor(m, dtype=torch.float32, device=self.device)
                for kind, m in head_mask.items() if m is not None}

    def key_mask(self, ids: Tensor, padding: bool, given: Tensor | None = None) -> Tensor | None:
        """(B, T) True = real token: `given` if any, else ids != pad_id; None when padding masks are
        switched off or the model has no padding token and none was marked."""
        if not padding:
            return None
        if given is not None:
            if given.dtype != torch.bool or tuple(given.shape) != tuple(ids.shape):
                raise ValueError(f"key_mask must be a boolean tensor shaped like the ids {tuple(ids.shape)}, got "
                                 f"{tuple(given.shape)} {given.dtype}")
            return given.to(ids.device)
        return None if self.config.pad_id is None else ids != self.config.pad_id

    def target_key_mask(self, tgt: Tensor, padding: bool, given: Tensor | None = None) -> Tensor | None:
        """An encoder-decoder's target key mask (B, T) as forward builds it: `given`, else tgt != pad_id except the
        first column, the decoder start token (T5 and Marian start with the padding id), always real."""
        if given is not None or not padding or self.config.pad_id is None:
            return given
        mask = tgt != self.config.pad_id
        mask[:, 0] = True
        return mask

    # ------------------------------------------------------------------ the Annotated Transformer's API
    def encode(self, src: Tensor, *, padding: bool = True, attn_mask: Tensor | None = None,
               head_mask: Tensor | None = None, token_type_ids: Tensor | None = None,
               need_weights: bool = True, key_mask: Tensor | None = None,
               weights_dtype: torch.dtype | None = None, head_hook: StackHeadHook | None = None,
               record: Record | None = None, token_embeds: Tensor | None = None,
               resid_hook: ResidHook | None = None, receivers: Receivers | None = None) -> EncoderResult:
        """src (B, S) -> memory (B, S, D) and the encoder's attention.

        token_embeds (B, S, D), per call like head_hook: the token embeddings of src (what `src_embed.token`
        gives, before scale and positions) to use instead of looking them up; src still gives the padding
        and the positions. Gradients with respect to tokens go through it (explorer.interpret.attribution)."""
        if self.encoder is None:
            raise ValueError("a decoder-only model has no encoder")
        key_mask = self.key_mask(src, padding, key_mask)
        positions = position_ids(key_mask, src.shape[1], src.device)
        x = self.src_embed(src, token_type_ids, positions, None if record is None else record.at("encoder"),
                           token_embeds=token_embeds)
        run = self.encoder.run(x, key_mask=key_mask, attn_mask=attn_mask, head_mask=head_mask,
                               need_weights=need_weights, positions=positions, weights_dtype=weights_dtype,
                               head_hook=head_hook, record=record, resid_hook=resid_hook, receivers=receivers)
        return EncoderResult(run.output, key_mask, run.attentions.self_attn, run.hidden_states, run.self_mask)

    def decode(self, tgt: Tensor, memory: Tensor | None = None, memory_key_mask: Tensor | None = None, *,
               padding: bool = True, causal: bool = True, attn_mask: Tensor | None = None,
               head_mask: Tensor | None = None, cross_head_mask: Tensor | None = None,
               need_weights: bool = True, key_mask: Tensor | None = None,
               weights_dtype: torch.dtype | None = None, head_hook: StackHeadHook | None = None,
               cache: DecoderCache | None = None, record: Record | None = None,
               token_embeds: Tensor | None = None, resid_hook: ResidHook | None = None,
               receivers: Receivers | None = None) -> DecoderResult:
        """tgt (B, T) (+ memory (B, S, D)) -> decoder output (B, T, D) and its attention.

        With a `cache` holding the first K tokens' keys and values, only tgt[:, K:] is run: the masks are those
        of the whole tgt, cut to the new query rows, and output, weights (B, H, T - K, T) and hidden states cover
        the new tokens alone. Exact for a causal decoder (generate() uses it only then).
        token_embeds (B, T, D): the token embeddings of the whole tgt, used instead of looking them up (see
        encode)."""
        if self.decoder is None:
            raise ValueError("an encoder-only model has no decoder")
        T = tgt.shape[1]
        past = 0 if cache is None else cache.length
        if T > self.config.max_len:
            raise ValueError(f"sequence of {T} tokens is longer than max_len={self.config.max_len}")
        if past >= T:
            raise ValueError(f"the cache already holds {past} tokens: tgt must be longer ({T}) to decode any")
        # (B|1, 1, T - past, T): the rows of the tokens run now (only those are built: a decoding step has one)
        rows = causal_mask(T, tgt.device, first_row=past) if causal else None
        given = normalize_mask(attn_mask)
        if given is not None and given.shape[-2] > 1:
            given = given[:, :, past:]
        self_mask = combine_masks(rows, given)
        key_mask = self.key_mask(tgt, padding, key_mask)
        positions = position_ids(key_mask, T, tgt.device)[:, past:]
        x = self.tgt_embed(tgt[:, past:], positions=positions, record=None if record is None else record.at("decoder"),
                           token_embeds=None if token_embeds is None else token_embeds[:, past:])
        run = self.decoder.run(x, memory, key_mask=key_mask, memory_key_mask=memory_key_mask,
                               attn_mask=self_mask, head_mask=head_mask, cross_head_mask=cross_head_mask,
                               need_weights=need_weights, positions=positions, weights_dtype=weights_dtype,
                               head_hook=head_hook, cache=cache, record=record, resid_hook=resid_hook,
                               receivers=receivers)
        return DecoderResult(run.output, run.attentions.self_attn, run.attentions.cross, run.hidden_states,
                             run.self_mask, run.memory_mask)

    # ------------------------------------------------------------------ forward
    def forward(self, src: Tensor, tgt: Tensor | None = None, *, padding: bool = True, causal: bool = True,
                attn_mask: Tensor | None = None, head_mask: Mapping[str, Any] | None = None,
                token_type_ids: Tensor | None = None, need_weights: bool = True,
                key_mask: Tensor | None = None, tgt_key_mask: Tensor | None = None,
                weights_dtype: torch.dtype | None = None, head_hook: StackHeadHook | None = None,
                cache: DecoderCache | None = None, record: Record | None = None,
                resid_hook: ResidHook | None = None, receivers: Receivers | None = None) -> TransformerOutput:
        """See the module docstring; weights_dtype: the returned attention in this dtype, cast layer by layer
        (float16 halves what a long input keeps; None = the compute dtype). cache (decoder-only, causal): an empty
        DecoderCache the run fills with every token's keys and values, so a continuation need not run them again."""
        masks = self.head_masks(head_mask)
        weights = dict(need_weights=need_weights, weights_dtype=weights_dtype, head_hook=head_hook, record=record,
                       resid_hook=resid_hook, receivers=receivers)
        arch = self.config.arch
        if cache is not None and (arch != "decoder" or not causal or cache.length):
            raise ValueError("forward fills an empty cache, for a causal decoder-only model only")
        if arch == "decoder":
            if tgt is not None:
                raise ValueError("a decoder-only model takes one sequence: pass it as src")
            dec = self.decode(src, padding=padding, causal=causal, attn_mask=attn_mask,
                              head_mask=masks.get("decoder"), key_mask=key_mask, cache=cache, **weights)
            return TransformerOutput(self.generator.logits(dec.output), Attentions((), dec.self_attentions, ()),
                                     HiddenStates((), dec.hidden_states), dec.output, None,
                                     AttentionMasks(decoder=dec.self_mask))
        enc = self.encode(src, padding=padding, attn_mask=attn_mask, head_mask=masks.get("encoder"),
                          token_type_ids=token_type_ids, key_mask=key_mask, **weights)
        if arch == "encoder":
            head = self.classifier if self.classifier is not None else self.mlm
            logits = head(enc.memory) if head is not None else None
            return TransformerOutput(logits, Attentions(enc.attentions, (), ()), HiddenStates(enc.hidden_states, ()),
                                     enc.memory, enc.memory, AttentionMasks(encoder=enc.mask))
        if tgt is None:
            raise ValueError("an encoder-decoder model needs a target sequence tgt")
        dec = self.decode(tgt, enc.memory, enc.key_mask, padding=padding, causal=causal,
                          head_mask=masks.get("decoder"), cross_head_mask=masks.get("cross"),
                          key_mask=self.target_key_mask(tgt, padding, tgt_key_mask), **weights)
        return TransformerOutput(self.generator.logits(dec.output),
                                 Attentions(enc.attentions, dec.self_attentions, dec.cross_attentions),
                                 HiddenStates(enc.hidden_states, dec.hidden_states), dec.output, enc.memory,
                                 AttentionMasks(enc.mask, dec.self_mask, dec.cross_mask))

    def log_probs(self, output: TransformerOutput) -> Tensor:
        """Log-softmax over the vocabulary (sequence models) or classes (classifier)."""
        if output.logits is None:
            raise ValueError("this model has no output head")
        return output.logits.log_softmax(dim=-1)
