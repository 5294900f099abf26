"""The app's work as plain functions (no Gradio): load or build a model, run it with masks and
head toggles, and build the Plotly figures. The UI module only wires components to these.

Shapes: B batch (1 or 2 sentences), L layers, H heads, S source / T target length, N generated.

A session is a small dict (kept by the UI in gr.State): which model source, on which device.
Models live in a shared `ModelRegistry`, are only read, and every run is under
torch.inference_mode(). User mistakes raise `AppError` with a message meant for the page.
"""

from __future__ import annotations

import html
import json
import logging
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import plotly.graph_objects as go
import torch

from .. import viz
from ..checkpoints import CheckpointError, LoadedModel, estimate_parameters
from ..device import available_devices, describe_devices, pick_device
from ..model import PRESETS, Transformer, TransformerConfig
from ..model import masks as M
from .registry import ModelRegistry

log = logging.getLogger(__name__)

# ---------------------------------------------------------------------------------------- limits
MAX_CHARS = 1000  # characters of one input sentence
MAX_TOKENS = 128  # tokens of one input (also bounded by the model's max_len)
MAX_NEW_TOKENS = 40  # generated tokens
MAX_LOAD_PARAMETERS = 250_000_000  # a model the UI may load (MiniLM: 22.7M)
MAX_BUILD_PARAMETERS = 60_000_000  # a fresh model the UI may build (the Annotated base model: ~44M)
MAX_BUILD_LEN = 512  # position table of a built model
POSITIONAL_MAX = dict(d_model=1024, length=512)
KIND_TITLES = {"encoder": "encoder self-attention", "decoder": "decoder self-attention",
               "cross": "cross-attention (decoder → encoder)"}
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
PAD_LABEL = "[PAD]"
DATE_TASKS = ("date-translation", "date-gpt")
_BUILD_LOCK = threading.Lock()  # model init draws from torch's global RNG: one build at a time


class AppError(Exception):
    """A problem the person using the app can fix; the message is shown in the page."""


def escape_md(text: Any) -> str:
    """Text for a Markdown box: HTML shown literally, Markdown syntax characters neutralised."""
    s = html.escape(str(text), quote=False)
    return re.sub(r"([\\`*_{}\[\]()#+!|~])", r"\\\1", s)


# ---------------------------------------------------------------------------------------- sessions
def default_source() -> str:
    """date-translator if shipped, else another shipped checkpoint, else MiniLM (offline copy)."""
    try:
        from ..loading import shipped_names
        names = shipped_names()
    except Exception:  # pragma: no cover - loading.py missing or broken
        names = []
    for preferred in ("date-translator", "date-gpt"):
        if preferred in names:
            return preferred
    return names[0] if names else MINILM


def new_session(source: str | None = None, device: str = "auto") -> dict[str, Any]:
    return {"kind": "load", "source": source or default_source(), "device": device, "build": None}


def session_key(session: dict[str, Any]) -> str:
    device = str(session.get("device") or "auto")
    if session.get("kind") == "build":
        return f"build:{json.dumps(session['build'], sort_keys=True)}@{device}"
    return f"load:{session['source']}@{device}"


@dataclass
class Bundle:
    """What the registry keeps for one model: the loaded model and, for date tasks, the task object."""

    loaded: LoadedModel
    task: Any | None  # explorer.tasks.DateTask for the date models, else None
    built: bool = False

    @property
    def model(self) -> Transformer:
        return self.loaded.model

    @property
    def config(self) -> TransformerConfig:
        return self.loaded.config

    @property
    def task_name(self) -> str:
        return str(self.loaded.task.get("name", ""))

    @property
    def max_tokens(self) -> int:
        return int(min(MAX_TOKENS, self.config.max_len))


def device_choices() -> list[str]:
    return ["auto", *available_devices()]


def resolve_device(device: str | None) -> torch.device:
    try:
        return pick_device(device or "auto")
    except ValueError as err:
        raise AppError(str(err)) from err


def _date_task(loaded: LoadedModel) -> Any | None:
    if loaded.task.get("name") not in DATE_TASKS:
        return None
    try:
        from ..tasks import task_from_dict
        return task_from_dict(loaded.task, loaded.tokenizer)
    except Exception as err:  # a task the tokenizer does not fit: fall back to plain tokens
        log.warning("date task not usable: %s", err)
        return None


def _load_bundle(source: str, device: torch.device, allowed_dirs: Sequence[str],
                 progress: Callable[[float, str], Any]) -> Bundle:
    try:
        from ..loading import load
    except ImportError as err:  # pragma: no cover
        raise AppError("model loading (explorer/loading.py) is not available in this installation") from err
    progress(0.2, f"loading {source} …")
    try:
        loaded = load(source, device, allowed_dirs=list(allowed_dirs), max_parameters=MAX_LOAD_PARAMETERS)
    except CheckpointError as err:
        raise AppError(f"Could not load {source!r}: {err}") from err
    progress(0.9, "ready")
    return Bundle(loaded, _date_task(loaded))


# ---------------------------------------------------------------------------------------- building
BUILD_FIELDS = ("arch", "preset", "n_layers", "n_heads", "d_model", "d_ff", "norm", "positional", "seed")


def preset_settings(name: str) -> dict[str, Any]:
    """UI field values of a preset (arch, layers, heads, widths, norm, positional)."""
    if name not in PRESETS:
        raise AppError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}")
    c = TransformerConfig(**PRESETS[name]["config"])
    return dict(arch=c.arch, n_layers=c.n_layers, n_heads=c.n_heads, d_model=c.d_model, d_ff=c.d_ff,
                norm="pre-norm" if c.norm_first else "post-norm", positional=c.positional)


def build_config(settings: dict[str, Any], vocab_size: int) -> TransformerConfig:
    """The TransformerConfig of a UI build request; AppError naming the field if it is invalid."""
    preset = settings.get("preset") or "custom"
    base = dict(PRESETS[preset]["config"]) if preset in PRESETS else {}
    arch = settings.get("arch") or base.get("arch", "encoder-decoder")
    if base.get("arch") != arch:
        base = {k: v for k, v in base.items() if k not in ("num_classes",)}
    try:
        fields = dict(
            arch=arch, vocab_size=vocab_size, tgt_vocab_size=None,
            n_layers=int(settings["n_layers"]), n_heads=int(settings["n_heads"]), d_model=int(settings["d_model"]),
            d_ff=int(settings["d_ff"]), norm_first=settings.get("norm", "pre-norm") == "pre-norm",
            positional=str(settings.get("positional", "sinusoidal")), dropout=0.0,
            max_len=min(int(base.get("max_len", MAX_BUILD_LEN)), MAX_BUILD_LEN),
            n_encoder_layers=None, n_decoder_layers=None, final_norm=None,
        )
    except (KeyError, TypeError, ValueError) as err:
        raise AppError(f"invalid build setting: {err}") from err
    if base.get("head_dim") is not None and int(settings["d_model"]) != base.get("d_model"):
        base.pop("head_dim")  # the preset's head width belongs to its own d_model
    try:
        config = TransformerConfig(**{**base, **fields})
    except (ValueError, TypeError) as err:
        raise AppError(f"Invalid configuration: {err}") from err
    count = estimate_parameters(config)
    if count > MAX_BUILD_PARAMETERS:
        raise AppError(f"This configuration has {count:,} parameters; the app builds models of at most "
                       f"{MAX_BUILD_PARAMETERS:,}. Use fewer layers or a smaller d_model / d_ff.")
    return config


def _build_bundle(settings: dict[str, Any], device: torch.device, progress: Callable[[float, str], Any]) -> Bundle:
    from ..tasks import build_tokenizer, make_task

    tokenizer = build_tokenizer()  # the date tasks' character tokenizer: examples work out of the box
    config = build_config(settings, tokenizer.vocab_size)
    progress(0.3, f"building a {config.arch} model …")
    with _BUILD_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(settings.get("seed", 0)))
        model = Transformer(config).to(device).eval()
    if config.arch == "encoder-decoder":
        task = make_task("date-translation", tokenizer).to_dict()
    elif config.arch == "decoder":
        task = make_task("date-gpt", tokenizer).to_dict()
    else:
        examples = make_task("date-translation", tokenizer).examples
        if config.num_classes:
            task = {"name": "classification", "labels": [f"class {i}" for i in range(config.num_classes)],
                    "examples": examples, "description": "an untrained classifier (random weights)"}
        else:
            task = {"name": "sentence-embedding", "pooling": "mean", "examples": examples,
                    "description": "an untrained encoder (random weights)"}
    seed = int(settings.get("seed", 0))
    task["description"] = (f"Freshly built with random weights (seed {seed}): attention patterns and outputs are "
                           f"those of an untrained model. " + task.get("description", ""))
    preset = settings.get("preset") or "custom"
    loaded = LoadedModel(model, tokenizer, None, task, f"built in the app (preset {preset}, seed {seed})")
    progress(0.9, "ready")
    return Bundle(loaded, _date_task(loaded), built=True)


# ---------------------------------------------------------------------------------------- model info
@dataclass
class ModelInfo:
    session: dict[str, Any]
    markdown: str
    examples: list[str]
    heads: dict[str, list[str]]  # kind -> checkbox labels "L0 H3"
    n_layers: int
    n_heads: int
    kinds: list[str]


def head_labels(n_layers: int, n_heads: int) -> list[str]:
    return [f"L{l} H{h}" for l in range(n_layers) for h in range(n_heads)]


def clicked_tile(message: str | None) -> tuple[int, int] | None:
    """(layer, head) from the page script's "layer,head,stamp" message for a clicked overview tile.

    The script reads the numbers from the clicked cell's category names ("layer 2 · query …", "head 5 · key …");
    anything else (a gap, a hand-typed value) gives None. Out-of-range numbers are clamped by `analyze`.
    """
    m = re.fullmatch(r"(\d{1,4}),(\d{1,4})(?:,\d+)?", (message or "").strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def describe_bundle(bundle: Bundle) -> str:
    c, loaded = bundle.config, bundle.loaded
    layers = (f"{c.encoder_layers} encoder + {c.decoder_layers} decoder layers" if c.arch == "encoder-decoder"
              else f"{c.encoder_layers if c.arch == 'encoder' else c.decoder_layers} layers")
    rows = [
        ("architecture", f"{c.arch}, {layers}, {c.n_heads} heads, d_model {c.d_model}, d_ff {c.d_ff}, "
                         f"{'pre' if c.norm_first else 'post'}-norm, {c.positional} positions"),
        ("parameters", f"{bundle.model.num_parameters():,}"),
        ("device", str(bundle.model.device)),
        ("vocabulary", f"{loaded.tokenizer.vocab_size:,} tokens (model: {c.vocab_size:,})"),
        ("weights from", loaded.source),
        ("task", loaded.task.get("name", "?")),
    ]
    lines = [f"- **{k}**: {escape_md(v)}" for k, v in rows]
    desc = loaded.task.get("description")
    if desc:
        lines += ["", escape_md(desc)]
    for note in loaded.notes or []:
        lines += ["", f"_note:_ {escape_md(note)}"]
    return "\n".join(lines)


def model_info(session: dict[str, Any], bundle: Bundle) -> ModelInfo:
    kinds = bundle.config.attention_kinds()
    heads = {k: head_labels(*lh) for k, lh in kinds.items()}
    examples = [str(e) for e in bundle.loaded.task.get("examples", [])][:12]
    first = next(iter(kinds.values()))
    return ModelInfo(session, describe_bundle(bundle), examples, heads, first[0], first[1], list(kinds))


def noop_progress(fraction: float, desc: str = "") -> None:
    return None


def get_bundle(session: dict[str, Any], registry: ModelRegistry, allowed_dirs: Sequence[str] = (),
               progress: Callable[[float, str], Any] = noop_progress) -> Bundle:
    device = resolve_device(session.get("device"))
    key = session_key(session)
    if session.get("kind") == "build":
        return registry.get(key, lambda: _build_bundle(session["build"], device, progress))
    return registry.get(key, lambda: _load_bundle(str(session["source"]), device, allowed_dirs, progress))


def load_model(source: str, device: str, registry: ModelRegistry, *, allowed_dirs: Sequence[str] = (),
               progress: Callable[[float, str], Any] = noop_progress) -> ModelInfo:
    """Load a shipped checkpoint name, an allowed local folder or a Hub id; -> the new session and its info."""
    source = (source or "").strip()
    if not source:
        raise AppError("Choose a shipped checkpoint or type a Hugging Face Hub id / local folder.")
    if len(source) > 300:
        raise AppError("That model name is too long.")
    session = new_session(source, device or "auto")
    progress(0.05, "resolving …")
    bundle = get_bundle(session, registry, allowed_dirs, progress)
    return model_info(session, bundle)


def build_model(settings: dict[str, Any], device: str, registry: ModelRegistry, *,
                progress: Callable[[float, str], Any] = noop_progress) -> ModelInfo:
    """Build a fresh model (random weights, date character tokenizer) from UI settings."""
    clean = {k: settings.get(k) for k in BUILD_FIELDS}
    from ..tasks import build_tokenizer
    build_config(clean, build_tokenizer().vocab_size)  # validate before touching the registry
    session = {"kind": "build", "source": "build", "device": device or "auto", "build": clean}
    bundle = get_bundle(session, registry, (), progress)
    return model_info(session, bundle)


# ---------------------------------------------------------------------------------------- inputs
@dataclass
class Inputs:
    """The sentences as model input: ids (B, T) padded with pad_id, per-row labels and lengths."""

    texts: list[str]
    rows: list[list[int]]  # unpadded ids per sentence
    labels: list[list[str]]  # display label per token, per sentence
    notices: list[str]

    def padded(self, pad_id: int, device: torch.device) -> torch.Tensor:
        width = max(len(r) for r in self.rows)
        return torch.tensor([r + [pad_id] * (width - len(r)) for r in self.rows], dtype=torch.long, device=device)

    def padded_labels(self) -> list[list[str]]:
        width = max(len(r) for r in self.rows)
        return [lab + [PAD_LABEL] * (width - len(lab)) for lab in self.labels]


_SURROGATES = re.compile("[\ud800-\udfff]")


def clean_texts(text1: str | None, text2: str | None) -> tuple[list[str], list[str]]:
    """Strip, refuse an empty first sentence, cut overlong ones (with a notice)."""
    notices: list[str] = []
    texts = []
    for i, t in enumerate((text1, text2)):
        # Lone surrogates (JSON "\ud800") are not text: the tokenizer raises TypeError on them.
        t = _SURROGATES.sub("\ufffd", str(t or "")).strip()
        if not t:
            if i == 0:
                raise AppError("Type a sentence first (the input is empty).")
            continue
        if len(t) > MAX_CHARS:
            notices.append(f"Sentence {i + 1} has {len(t):,} characters; only the first {MAX_CHARS:,} are used.")
            t = t[:MAX_CHARS]
        texts.append(t)
    return texts, notices


def encode_inputs(bundle: Bundle, text1: str | None, text2: str | None = None) -> Inputs:
    texts, notices = clean_texts(text1, text2)
    rows, labels = [], []
    limit = bundle.max_tokens
    if bundle.config.arch == "decoder":
        limit = max(4, limit - MAX_NEW_TOKENS // 2)  # leave room to generate
    for i, t in enumerate(texts):
        if bundle.task is not None:
            ids, notice = bundle.task.encode_source(t, max_len=min(limit, bundle.task.max_source_len))
            if notice:
                notices.append(f"Sentence {i + 1}: {notice}")
            lab = bundle.task.labels(ids)
        else:
            enc = bundle.loaded.tokenizer.encode(t, max_length=limit)
            if enc.truncated:
                notices.append(f"Sentence {i + 1} has {enc.original_length} tokens; this model reads at most "
                               f"{limit} here, so the rest was cut off.")
            ids, lab = list(enc.ids), [str(x) for x in enc.tokens]
        if not ids:
            raise AppError(f"Sentence {i + 1} gives no tokens for this model.")
        rows.append(list(ids))
        labels.append(lab)
    return Inputs(texts, rows, labels, notices)


def token_table(inputs: Inputs) -> tuple[list[str], list[list[Any]]]:
    """(headers, rows) of the token table: sentence, position, token text, id (text, never HTML)."""
    rows = []
    for s, (ids, labs) in enumerate(zip(inputs.rows, inputs.labels), start=1):
        for pos, (i, lab) in enumerate(zip(ids, labs)):
            rows.append([s, pos, lab, int(i)])
    return ["sentence", "position", "token", "id"], rows


# ---------------------------------------------------------------------------------------- masks and heads
@dataclass
class Settings:
    """What the person toggled. heads: kind -> labels "L0 H3" that are ON (None = all on)."""

    padding: bool = True
    causal: bool = True
    custom: str = "none"  # "none", "block token", "local window", "no self"
    block_token: int = 0
    window: int = 2
    heads: dict[str, list[str]] | None = None


CUSTOM_MASKS = ("none", "block token", "local window", "no self")


def head_mask_from_labels(config: TransformerConfig, heads: dict[str, Iterable[str]] | None
                          ) -> dict[str, torch.Tensor] | None:
    """kind -> list of ON labels  ->  kind -> (L, H) float mask; None when every head is on."""
    if heads is None:
        return None
    out = {}
    for kind, (n_layers, n_heads) in config.attention_kinds().items():
        if kind not in heads or heads[kind] is None:
            out[kind] = torch.ones(n_layers, n_heads)
            continue
        m = torch.zeros(n_layers, n_heads)
        for label in heads[kind]:
            try:
                l, h = (int(p[1:]) for p in str(label).split())
            except ValueError as err:
                raise AppError(f"head label {label!r} is not of the form 'L0 H1'") from err
            if not (0 <= l < n_layers and 0 <= h < n_heads):
                raise AppError(f"head {label!r} does not exist in the {kind} ({n_layers} layers x {n_heads} heads)")
            m[l, h] = 1.0
        out[kind] = m
    if all(bool(m.all()) for m in out.values()):
        return None
    return out


def custom_mask(settings: Settings, size: int, device: torch.device) -> tuple[torch.Tensor | None, str | None]:
    """(T, T) custom mask for the first self-attention stack, plus a notice if it was adjusted."""
    if settings.custom == "none":
        return None, None
    if settings.custom == "local window":
        return M.local_window_mask(size, max(0, int(settings.window)), device), None
    if settings.custom == "no self":
        return M.no_self_mask(size, device), None
    if settings.custom == "block token":
        k = int(settings.block_token)
        notice = None
        if not 0 <= k < size:
            notice = f"Position {k} does not exist (positions 0..{size - 1}); blocked position {size - 1} instead."
            k = size - 1
        return M.block_keys_mask(size, size, [k], device), notice
    raise AppError(f"unknown custom mask {settings.custom!r}; choose from {', '.join(CUSTOM_MASKS)}")


def effective_mask(kind: str, arch: str, settings: Settings, q_ids: torch.Tensor, k_ids: torch.Tensor,
                   pad_id: int, custom: torch.Tensor | None) -> np.ndarray:
    """(Tq, Tk) boolean mask one row of the batch sees in attention `kind` (True = may attend)."""
    tq, tk = q_ids.shape[0], k_ids.shape[0]
    m = torch.ones(tq, tk, dtype=torch.bool)
    if settings.padding:
        m &= (k_ids.cpu() != pad_id)[None, :]
    if kind == "decoder" and settings.causal:
        m &= M.causal_mask(tq)
    first_stack = "encoder" if arch != "decoder" else "decoder"
    if custom is not None and kind == first_stack:
        m &= custom.cpu()[:tq, :tk]
    return m.numpy()


# ---------------------------------------------------------------------------------------- runs
@dataclass
class RunResult:
    attentions: dict[str, list[torch.Tensor]]  # kind -> per layer (B, H, Tq, Tk)
    q_labels: dict[str, list[list[str]]]  # kind -> per row query labels
    k_labels: dict[str, list[list[str]]]
    q_ids: dict[str, torch.Tensor]  # kind -> (B, Tq) ids (for masks)
    k_ids: dict[str, torch.Tensor]
    outputs: list[dict[str, Any]]  # per sentence: text / probabilities / embedding
    extra: dict[str, Any] = field(default_factory=dict)


def _generate_rows(bundle: Bundle, inputs: Inputs, settings: Settings, hm, device) -> list[Any]:
    """Greedy generation, one Generation per sentence (decoder-only prompts of different lengths)."""
    from ..generate import generate

    model, c = bundle.model, bundle.config
    task = bundle.loaded.task
    bos = task.get("bos_id", bundle.loaded.target_tokenizer.bos_id)
    eos = task.get("eos_id", bundle.loaded.target_tokenizer.eos_id)
    max_new = int(min(task.get("max_new_tokens", MAX_NEW_TOKENS), MAX_NEW_TOKENS))
    gens = []
    if c.arch == "encoder-decoder":
        if bos is None:
            raise AppError("this model's task names no start token (bos_id): it cannot generate")
        src = inputs.padded(c.pad_id, device)
        mask, _ = custom_mask(settings, src.shape[1], device)
        g = generate(model, src, bos_id=bos, eos_id=eos, max_new_tokens=max_new, padding=settings.padding,
                     causal=settings.causal, attn_mask=mask, head_mask=hm)
        return [(g, b) for b in range(src.shape[0])]
    for row in inputs.rows:
        src = torch.tensor([row], dtype=torch.long, device=device)
        mask, _ = custom_mask(settings, src.shape[1], device)
        g = generate(model, src, eos_id=eos, max_new_tokens=max_new, padding=settings.padding,
                     causal=settings.causal, attn_mask=mask, head_mask=hm)
        gens.append((g, 0))
    return gens


def _answer(bundle: Bundle, gen, b: int) -> dict[str, Any]:
    ids = [int(i) for i in gen.tokens[b].tolist()]
    probs = gen.log_probs[b].exp().tolist()
    eos = bundle.loaded.task.get("eos_id")
    n = len(ids)
    if eos is not None and eos in ids:
        n = ids.index(eos) + 1
    ids, probs = ids[:n], probs[:n]
    tok = bundle.loaded.target_tokenizer
    if bundle.task is not None:
        text, labels = bundle.task.decode(ids), bundle.task.labels(ids)
    else:
        text, labels = tok.decode(ids), [tok.id_to_token(i) or "?" for i in ids]
    return {"text": text, "ids": ids, "labels": labels, "probs": probs}


def _labels_for(bundle: Bundle, ids: Sequence[int]) -> list[str]:
    if bundle.task is not None:
        return bundle.task.labels(ids)
    tok = bundle.loaded.target_tokenizer
    return [tok.id_to_token(int(i)) or "?" for i in ids]


@torch.inference_mode()
def run_model(bundle: Bundle, inputs: Inputs, settings: Settings, *, teacher: list[list[int]] | None = None
              ) -> tuple[RunResult, list[list[int]]]:
    """One full run under `settings`: outputs per sentence and every attention map.

    teacher: decoder tokens to show attention over (per sentence, the baseline's answer), so that the
    baseline and the toggled run attend over the same tokens and can be subtracted. Returns the
    run and the decoder token rows it used (for the next call's `teacher`).
    """
    model, c = bundle.model, bundle.config
    device = model.device
    hm = head_mask_from_labels(c, settings.heads)
    src = inputs.padded(c.pad_id, device)
    src_labels = inputs.padded_labels()
    outputs: list[dict[str, Any]] = []
    notices: list[str] = []
    att: dict[str, list[torch.Tensor]] = {}
    ql: dict[str, list[list[str]]] = {}
    kl: dict[str, list[list[str]]] = {}
    qi: dict[str, torch.Tensor] = {}
    ki: dict[str, torch.Tensor] = {}

    if c.arch == "encoder":
        mask, notice = custom_mask(settings, src.shape[1], device)
        notices += [notice] if notice else []
        out = model(src, padding=settings.padding, attn_mask=mask, head_mask=hm)
        att["encoder"] = [a.float().cpu() for a in out.attentions.encoder]
        ql["encoder"] = kl["encoder"] = src_labels
        qi["encoder"] = ki["encoder"] = src.cpu()
        key_mask = (src != c.pad_id)
        if out.logits is not None and c.num_classes:
            probs = out.logits.float().softmax(-1).cpu()
            names = bundle.loaded.labels or [f"class {i}" for i in range(c.num_classes)]
            outputs = [{"classes": dict(zip(names, p.tolist()))} for p in probs]
        else:
            from ..embeddings import cls_pool, mean_pool
            pool = cls_pool if bundle.loaded.task.get("pooling") == "cls" else mean_pool
            emb = pool(out.last_hidden_state.float(), key_mask).cpu()
            outputs = [{"embedding": e} for e in emb]
        return RunResult(att, ql, kl, qi, ki, outputs, {"notices": notices}), []

    gens = _generate_rows(bundle, inputs, settings, hm, device)
    outputs = [_answer(bundle, g, b) for g, b in gens]
    bos = bundle.loaded.task.get("bos_id", bundle.loaded.target_tokenizer.bos_id)
    if teacher is None:
        teacher = [o["ids"] for o in outputs]
    if c.arch == "encoder-decoder":
        dec_rows = [[bos] + list(t) for t in teacher]
        width = max(len(r) for r in dec_rows)
        tgt = torch.tensor([r + [c.pad_id] * (width - len(r)) for r in dec_rows], dtype=torch.long, device=device)
        mask, notice = custom_mask(settings, src.shape[1], device)
        notices += [notice] if notice else []
        out = model(src, tgt, padding=settings.padding, causal=settings.causal, attn_mask=mask, head_mask=hm)
        tgt_labels = [_labels_for(bundle, r) + [PAD_LABEL] * (width - len(r)) for r in dec_rows]
        att["encoder"] = [a.float().cpu() for a in out.attentions.encoder]
        att["decoder"] = [a.float().cpu() for a in out.attentions.decoder]
        att["cross"] = [a.float().cpu() for a in out.attentions.cross]
        ql["encoder"] = kl["encoder"] = src_labels
        ql["decoder"] = kl["decoder"] = ql["cross"] = tgt_labels
        kl["cross"] = src_labels
        qi["encoder"] = ki["encoder"] = ki["cross"] = src.cpu()
        qi["decoder"] = ki["decoder"] = qi["cross"] = tgt.cpu()
    else:
        seqs = [list(r) + list(t) for r, t in zip(inputs.rows, teacher)]
        width = max(len(s) for s in seqs)
        seq = torch.tensor([s + [c.pad_id] * (width - len(s)) for s in seqs], dtype=torch.long, device=device)
        mask, notice = custom_mask(settings, width, device)
        notices += [notice] if notice else []
        out = model(seq, padding=settings.padding, causal=settings.causal, attn_mask=mask, head_mask=hm)
        att["decoder"] = [a.float().cpu() for a in out.attentions.decoder]
        labels = [_labels_for(bundle, s) + [PAD_LABEL] * (width - len(s)) for s in seqs]
        ql["decoder"] = kl["decoder"] = labels
        qi["decoder"] = ki["decoder"] = seq.cpu()
    return RunResult(att, ql, kl, qi, ki, outputs, {"notices": notices, "gens": gens}), teacher


# ---------------------------------------------------------------------------------------- analysis
@dataclass
class View:
    kind: str = ""  # "" = the model's first attention kind
    layer: int = 0
    head: int = 0
    sentence: int = 1  # 1 or 2


@dataclass
class Analysis:
    status: str  # Markdown: notices and what changed
    tokens: tuple[list[str], list[list[Any]]]
    output: tuple[list[str], list[list[Any]]]
    output_summary: str
    mask_fig: go.Figure
    head_fig: go.Figure
    baseline_fig: go.Figure
    diff_fig: go.Figure
    overview_fig: go.Figure
    gen_self_fig: go.Figure
    gen_cross_fig: go.Figure
    rollout_fig: go.Figure
    changed: bool  # did the toggles change the output?
    view: View


def _fix_view(view: View, result: RunResult, n_rows: int) -> View:
    kinds = list(result.attentions)
    kind = view.kind if view.kind in kinds else kinds[0]
    layers = len(result.attentions[kind])
    heads = result.attentions[kind][0].shape[1]
    return View(kind, min(max(int(view.layer), 0), layers - 1), min(max(int(view.head), 0), heads - 1),
                min(max(int(view.sentence), 1), n_rows))


def _row_attention(result: RunResult, kind: str, b: int) -> np.ndarray:
    """(L, H, Tq, Tk) for one batch row."""
    return torch.stack([a[b] for a in result.attentions[kind]]).numpy()


def _output_rows(bundle: Bundle, base: RunResult, tog: RunResult) -> tuple[list[str], list[list[Any]], str, bool]:
    c = bundle.config
    changed = False
    if c.arch != "encoder":
        headers = ["#", "run", "output", "tokens (probability)", "mean p"]
        rows = []
        for s, (a, b) in enumerate(zip(base.outputs, tog.outputs), start=1):
            for name, o in (("baseline", a), ("toggled", b)):
                per = " ".join(f"{lab} ({p:.2f})" for lab, p in zip(o["labels"], o["probs"]))
                mean = float(np.mean(o["probs"])) if o["probs"] else 0.0
                rows.append([s, name, o["text"], per, round(mean, 4)])
            changed |= a["ids"] != b["ids"]
        summary = ("**The toggles changed the generated output.**" if changed else
                   "The generated output is the same with and without the toggles "
                   "(see the probabilities and heatmaps for smaller changes).")
        return headers, rows, summary, changed
    if "classes" in base.outputs[0]:
        headers = ["#", "class", "baseline p", "toggled p"]
        rows = []
        for s, (a, b) in enumerate(zip(base.outputs, tog.outputs), start=1):
            for name in a["classes"]:
                rows.append([s, name, round(a["classes"][name], 4), round(b["classes"][name], 4)])
            changed |= max(a["classes"], key=a["classes"].get) != max(b["classes"], key=b["classes"].get)
        summary = ("**The toggles changed the predicted class.**" if changed
                   else "The predicted class is the same with and without the toggles.")
        return headers, rows, summary, changed
    from ..embeddings import cosine_similarity
    headers = ["comparison", "baseline", "toggled"]
    rows = []
    if len(base.outputs) == 2:
        sb = float(cosine_similarity(base.outputs[0]["embedding"], base.outputs[1]["embedding"]))
        st = float(cosine_similarity(tog.outputs[0]["embedding"], tog.outputs[1]["embedding"]))
        rows.append(["cosine similarity of sentence 1 and 2", round(sb, 4), round(st, 4)])
        changed = abs(sb - st) > 1e-4
    for s, (a, b) in enumerate(zip(base.outputs, tog.outputs), start=1):
        self_sim = float(cosine_similarity(a["embedding"], b["embedding"]))
        rows.append([f"sentence {s}: embedding toggled vs baseline (cosine)", 1.0, round(self_sim, 4)])
        changed |= self_sim < 1 - 1e-4
    summary = ("Sentence embeddings are the mean of the last layer's token vectors. "
               + ("**The toggles changed the embeddings.**" if changed
                  else "The toggles did not change the embeddings."))
    return headers, rows, summary, changed


def analyze(bundle: Bundle, text1: str | None, text2: str | None, settings: Settings, view: View | None = None
            ) -> Analysis:
    """Baseline (all heads on, padding + causal masks, no custom mask) vs the toggled settings."""
    view = view or View()
    inputs = encode_inputs(bundle, text1, text2)
    c = bundle.config
    hm = head_mask_from_labels(c, settings.heads)
    no_toggle = settings.padding and settings.causal and settings.custom == "none" and hm is None
    with torch.inference_mode():
        base, teacher = run_model(bundle, inputs, Settings())
        # Without a toggle the toggled run is the baseline run: do the work once.
        tog = base if no_toggle else run_model(bundle, inputs, settings, teacher=teacher or None)[0]
    view = _fix_view(view, tog, len(inputs.rows))
    kind, layer, head, b = view.kind, view.layer, view.head, view.sentence - 1
    head_on = True if hm is None else bool(hm[kind][layer, head])
    q_lab, k_lab = tog.q_labels[kind][b], tog.k_labels[kind][b]
    device = bundle.model.device
    first = tog.q_ids["encoder" if c.arch != "decoder" else "decoder"]
    cmask, _ = custom_mask(settings, first.shape[1], device)
    mask = effective_mask(kind, c.arch, settings, tog.q_ids[kind][b], tog.k_ids[kind][b], c.pad_id, cmask)
    a_tog, a_base = _row_attention(tog, kind, b), _row_attention(base, kind, b)
    where = f"{KIND_TITLES[kind]}, layer {layer}, head {head}, sentence {b + 1}"
    mask_fig = viz.mask_heatmap(mask, q_lab, k_lab, title=f"Mask: {KIND_TITLES[kind]} (sentence {b + 1})")
    head_fig = viz.head_heatmap(a_tog[layer, head], q_lab, k_lab, mask=mask, head_off=not head_on,
                                title=f"Toggled: {where}")
    deltas = np.abs(a_tog - a_base).max(axis=(1, 2, 3))  # (L,)
    if no_toggle:  # the baseline would repeat the view above and the difference would be blank
        baseline_fig = viz.message_figure("No toggle is active, so the baseline is the view above. Switch a head "
                                          "off or change a mask to compare.")
        diff_fig = viz.message_figure("The difference (toggled − baseline) appears here once a toggle is active.")
    else:
        base_mask = effective_mask(kind, c.arch, Settings(), base.q_ids[kind][b], base.k_ids[kind][b], c.pad_id,
                                   None)
        baseline_fig = viz.head_heatmap(a_base[layer, head], base.q_labels[kind][b], base.k_labels[kind][b],
                                        mask=base_mask, title=f"Baseline: {where}")
        diff_fig = viz.difference_heatmap(a_tog[layer, head], a_base[layer, head], q_lab, k_lab,
                                          title=f"Toggled − baseline: {where}", a_name="toggled", b_name="baseline")
    overview_hm = None if hm is None else hm[kind].numpy()
    overview_fig = viz.attention_overview(a_tog, q_lab, k_lab, head_mask=overview_hm,
                                          title=f"All heads: {KIND_TITLES[kind]} (sentence {b + 1}, toggled)")
    gen_self_fig, gen_cross_fig = _generation_figures(bundle, tog, b, layer, head)
    self_kind = "encoder" if c.arch != "decoder" else "decoder"
    a_self = _row_attention(tog, self_kind, b)
    roll_hm = None if hm is None else hm[self_kind].numpy()
    rollout_fig = viz.rollout_heatmap(viz.attention_rollout(a_self, head_mask=roll_hm), tog.q_labels[self_kind][b],
                                      title=f"Attention rollout, {KIND_TITLES[self_kind]} (sentence {b + 1})")
    o_headers, o_rows, summary, changed = _output_rows(bundle, base, tog)
    notes = inputs.notices + base.extra.get("notices", []) + tog.extra.get("notices", [])
    per_layer = ", ".join(f"L{l}: {d:.3f}" for l, d in enumerate(deltas))
    status = []
    if notes:
        status += ["⚠️ " + escape_md(n) for n in dict.fromkeys(notes)]
    if no_toggle:
        status.append("No toggle is active: switch a head off or change a mask to compare.")
    summary += f"\n\nLargest change of any attention weight per layer ({KIND_TITLES[kind]}): {per_layer}"
    return Analysis("\n\n".join(status), token_table(inputs), (o_headers, o_rows), summary, mask_fig, head_fig,
                    baseline_fig, diff_fig, overview_fig, gen_self_fig, gen_cross_fig, rollout_fig, changed, view)


def _generation_figures(bundle: Bundle, run: RunResult, b: int, layer: int, head: int) -> tuple[go.Figure, go.Figure]:
    """Per generated token: its decoder self-attention row and its cross-attention row (toggled run)."""
    gens = run.extra.get("gens")
    if not gens:
        msg = "This model does not generate text (encoder only): see the attention tab."
        return viz.message_figure(msg), viz.message_figure(msg)
    gen, gb = gens[b]
    if not gen.steps:
        msg = "Nothing was generated."
        return viz.message_figure(msg), viz.message_figure(msg)
    out = run.outputs[b]
    n = len(out["ids"])
    queries = [f"→ {lab}" for lab in out["labels"]] or ["→"]
    self_m = gen.attention_matrix("decoder", layer, gb)[head, :n].float().cpu()  # (N, K)
    prefix = [int(i) for i in gen.prefix[gb, : self_m.shape[1]].tolist()]
    keys = _labels_for(bundle, prefix)
    start = gen.prefix.shape[1] - len(gen.steps)  # prefix length before the first step
    reach = np.array([[k < start + t for k in range(self_m.shape[1])] for t in range(n)])
    self_fig = viz.head_heatmap(self_m, queries, keys, mask=reach,
                                title=f"Decoder self-attention per generated token (layer {layer}, head {head})",
                                x_title="tokens so far (key)", y_title="generated token (query)")
    if bundle.config.arch != "encoder-decoder":
        return self_fig, viz.message_figure("A decoder-only model has no cross-attention: its prompt is part of "
                                            "the self-attention on the left.")
    cross = gen.attention_matrix("cross", layer, gb)[head, :n].float().cpu()  # (N, S)
    src_labels = run.k_labels["cross"][b][: cross.shape[1]]
    cross_fig = viz.cross_attention_heatmap(cross, queries, src_labels,
                                            title=f"Cross-attention per generated token (layer {layer}, head {head})")
    return self_fig, cross_fig


# ---------------------------------------------------------------------------------------- other views
def positional(bundle: Bundle | None, d_model: int, length: int, base: float
               ) -> tuple[go.Figure, go.Figure, go.Figure, go.Figure]:
    """Sinusoidal table (heatmap, curves, similarity) and the loaded model's own position table."""
    try:
        d_model, length, base = int(d_model), int(length), float(base)
    except (TypeError, ValueError) as err:
        raise AppError(f"d_model, length and base must be numbers: {err}") from err
    if not 2 <= d_model <= POSITIONAL_MAX["d_model"]:
        raise AppError(f"d_model must be between 2 and {POSITIONAL_MAX['d_model']}")
    if not 2 <= length <= POSITIONAL_MAX["length"]:
        raise AppError(f"length must be between 2 and {POSITIONAL_MAX['length']}")
    if not base > 1:
        raise AppError("base must be greater than 1")
    table = viz.sinusoidal_table(length, d_model, base)
    heat = viz.positional_heatmap(table, title=f"Sinusoidal encoding (base {base:g})")
    curves = viz.positional_curves(table)
    sim = viz.position_similarity(table)
    model_fig = viz.message_figure("No model loaded.")
    if bundle is not None:
        c = bundle.config
        embed = bundle.model.src_embed if bundle.model.src_embed is not None else bundle.model.tgt_embed
        if c.positional in ("learned", "sinusoidal"):
            with torch.inference_mode():
                own = embed.position_matrix()[: min(length, c.max_len)].float().cpu().numpy()
            what = "learned table" if c.positional == "learned" else f"sinusoidal, base {c.pos_base:g}"
            model_fig = viz.positional_heatmap(own, title=f"Loaded model ({what})")
        else:
            model_fig = viz.message_figure("The loaded model has no positional encoding (positional='none').")
    return heat, curves, sim, model_fig


def importance(bundle: Bundle, text1: str | None, text2: str | None, settings: Settings, kind: str = ""
               ) -> tuple[go.Figure, str]:
    """Exact head-importance sweep + gradient estimate (explorer.analysis), chart for one attention kind."""
    from ..analysis import Probe, head_importance

    inputs = encode_inputs(bundle, text1, text2)
    model, c = bundle.model, bundle.config
    device = model.device
    src = inputs.padded(c.pad_id, device)
    with torch.inference_mode():
        base, teacher = run_model(bundle, inputs, Settings())
    cmask = None
    if c.arch == "encoder-decoder":
        bos = bundle.loaded.task.get("bos_id")
        rows = [[bos] + list(t) for t in teacher]
        width = max(len(r) for r in rows)
        full = torch.tensor([r + [c.pad_id] * (width - len(r)) for r in rows], dtype=torch.long, device=device)
        cmask, _ = custom_mask(settings, src.shape[1], device)
        probe = Probe(src, "logprob", tgt_in=full[:, :-1], tgt_out=full[:, 1:], padding=settings.padding,
                      causal=settings.causal, attn_mask=cmask)
        what = "log-probability of the model's own answer"
    elif c.arch == "decoder":
        seqs = [list(r) + list(t) for r, t in zip(inputs.rows, teacher)]
        width = max(len(s) for s in seqs)
        full = torch.tensor([s + [c.pad_id] * (width - len(s)) for s in seqs], dtype=torch.long, device=device)
        out = full[:, 1:].clone()
        for i, r in enumerate(inputs.rows):
            out[i, : len(r) - 1] = c.pad_id  # measure only the answer
        cmask, _ = custom_mask(settings, width - 1, device)
        probe = Probe(full[:, :-1], "logprob", tgt_out=out, padding=settings.padding, causal=settings.causal,
                      attn_mask=cmask)
        what = "log-probability of the model's own answer"
    else:
        cmask, _ = custom_mask(settings, src.shape[1], device)
        if c.num_classes:
            objective, what = "class", "log-probability of the predicted class"
        elif len(inputs.rows) == 2:
            objective, what = "similarity", "cosine similarity of the two sentences"
        else:
            objective, what = "embedding", "the sentence embedding (projection on its baseline)"
        probe = Probe(src, objective, padding=settings.padding, attn_mask=cmask)
    result = head_importance(model, probe)
    kinds = list(result.exact)
    kind = kind if kind in kinds else kinds[0]
    fig = viz.head_importance_chart(result.exact[kind].cpu(), result.estimate[kind].cpu(), result.rank_correlation,
                                    title=f"Head importance: {KIND_TITLES[kind]}")
    ex = result.exact[kind]
    flat = int(ex.abs().flatten().argmax())
    top_l, top_h = divmod(flat, ex.shape[1])
    md = (f"Objective: {what}; baseline value {result.baseline:.4f}. The head whose removal changes it most in the "
          f"{KIND_TITLES[kind]} is **L{top_l} H{top_h}** (change {float(ex[top_l, top_h]):+.4f}). "
          f"Rank agreement of the gradient estimate with the exact sweep (Spearman, all kinds): "
          f"{result.rank_correlation:.2f}.")
    return fig, md


def device_note() -> str:
    return describe_devices()
