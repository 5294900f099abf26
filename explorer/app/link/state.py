"""A link that reopens a view: the page's settings as a URL query, and back.

    state, notices = parse_link(request.query_params, check_model=..., tabs=...)   # opening a link
    state.to_query()   # "model=date-translator&s1=3%20May%202024&layer=1&off=decoder:L1H2,L1H3;cross:L0H0"

The page's keys (`KEYS`), in their canonical order: model, s1, s2, tab, kind, layer, head, sentence, measure, off,
padding, causal, mask, blocked, window, position, continue, sample, temperature, top_k, top_p, seed; then each
tab's own keys (`Tab.link_keys`: the Compare models tab's model2, the Contributions tab's position and tokens, ...),
in the order of the tabs. Each value goes
through the checks the same value goes through when typed on the page: a model name through `check_model` (the page
passes the allow-list of shipped names, allowed folders and Hub ids, explorer.app.serving.session.checked_source), the
numbers through the ranges of the page's fields, the choices through the page's choices. Parsing never raises: an
unknown key or an invalid value becomes a notice (one short phrase each, `notice_line` joins them) and is left out,
and the rest stands. Keys that start with "__" are Gradio's and Hugging Face's own (`__theme`, `__sign`): ignored.

What a value means for one model (a layer it has, a kind of attention, a tab it shows) is checked once the model is
known: `LinkState.fitted`. A copied link never exceeds `SAFE_QUERY` characters: its sentences are cut to fit
(`fit_length`). Pure: no Gradio, no files (the file system is reached only through `check_model`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any
from urllib.parse import quote, urlencode

from ..page.head_labels import parse_heads
from ..run.toggles import CUSTOM_MASKS, Head
from ..run.view import MEASURES, default_kind
from ..serving.limits import MAX_NAME_CHARS, MAX_NEW_TOKENS
from .values import (KINDS, Invalid, choice, flag, format_off, number_text, parse_off, query_pairs, sampling_value,
                     sentence_text, show, whole)

WINDOW = (0, 16)  # the "Window k" slider
SENTENCES = (1, 2)
BIG = 10**6  # blocked position / predict-after position: the page's fields have no bound; a link's are bounded
MAX_PAIRS = 64  # keys read from one link
SAFE = ":,;/@"  # left as they are in a link (valid in a query; `off` and Hub ids stay readable)
# Gradio answers a bare "Internal Server Error" for a URL over 65,536 characters (measured: its root route); a copied
# link's query stays this far below, with room for the longest address the page may be at.
SAFE_QUERY = 60_000

CheckModel = Callable[[str], str]  # a typed model name -> the name to load, or an exception naming the problem


@dataclass(frozen=True)
class LinkState:
    """The view a link asks for; None = not in the link (the page's default then). The names are the page's; the
    link's keys are `KEYS` (s1 = text1, continue = new_tokens, ...). `tab_values`: each tab's own keys -> values."""

    model: str | None = None  # shipped name, Hub id or allowed folder, as typed
    text1: str | None = None
    text2: str | None = None  # "" = no second sentence (a link says so: the model's example would be used)
    tab: str | None = None  # a tab id (tabs.TABS)
    kind: str | None = None  # encoder / decoder / cross
    layer: int | None = None
    head: int | None = None
    sentence: int | None = None  # 1 or 2
    measure: str | None = None  # run.view.MEASURES
    off: Mapping[str, frozenset[Head]] | None = None  # kind -> heads switched off (every other head on)
    padding: bool | None = None
    causal: bool | None = None
    mask: str | None = None  # run.toggles.CUSTOM_MASKS
    blocked: int | None = None  # "block token": the key position hidden
    window: int | None = None  # "local window": half-width k
    position: int | None = None  # a language model's next-token position (-1 = last)
    new_tokens: int | None = None  # tokens a language model continues with
    sample: bool | None = None  # generated tokens drawn (run.sampled) with the four below; off: greedy
    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    seed: int | None = None
    tab_values: Mapping[str, Any] = field(default_factory=dict)  # a tab's own key -> its value

    def to_query(self) -> str:
        """The query string (no "?"), keys in canonical order, values URL-encoded; fields that are None are left out,
        and so is an `off` that switches nothing off."""
        pairs = []
        for name, key in KEYS.items():
            value = getattr(self, name)
            if value is None:
                continue
            if name == "off":
                value = format_off(value)
                if not value:
                    continue
            elif isinstance(value, bool):
                value = "1" if value else "0"
            pairs.append((key, number_text(value)))
        pairs += [(key, number_text(value)) for key, value in self.tab_values.items()]
        return urlencode(pairs, quote_via=quote, safe=SAFE)

    def fitted(self, kinds: Mapping[str, tuple[int, int]], tabs: Collection[str]) -> tuple[LinkState, list[str]]:
        """This state for a model whose attention kinds are `kinds` (kind -> (layers, heads)) and whose page shows
        `tabs`: what that model does not have is left out, with a notice each."""
        notices: list[str] = []
        changes: dict[str, Any] = {}
        if self.kind is not None and self.kind not in kinds:
            notices.append(f"kind {self.kind!r}: this model has {', '.join(kinds)} attention")
            changes["kind"] = None
        kind = changes.get("kind", self.kind) or default_kind(kinds)
        n_layers, n_heads = kinds[kind]
        for name, n in (("layer", n_layers), ("head", n_heads)):
            value = getattr(self, name)
            if value is not None and not value < n:
                notices.append(f"{name} {value}: the {kind} attention has {name}s 0 to {n - 1}")
                changes[name] = None
        if self.off is not None:
            off = {}
            for k, heads in self.off.items():
                if k not in kinds:
                    notices.append(f"off {k!r}: this model has no {k} attention")
                    continue
                layers, per_layer = kinds[k]
                wrong = sorted(h for h in heads if not (h[0] < layers and h[1] < per_layer))
                if wrong:
                    notices.append(f"off {k}:{','.join(f'L{a}H{b}' for a, b in wrong)}: the {k} attention has "
                                   f"{layers} layers × {per_layer} heads")
                off[k] = frozenset(heads) - frozenset(wrong)
            changes["off"] = off
        if self.tab is not None and self.tab not in tabs:
            notices.append(f"tab {self.tab!r} is not shown for this model")
            changes["tab"] = None
        return replace(self, **changes), notices

    def heads_on(self, kinds: Mapping[str, tuple[int, int]]) -> dict[str, set[Head]] | None:
        """kind -> the heads on (every head but those `off`); None when the link has no `off`."""
        if self.off is None:
            return None
        return {k: {(la, h) for la in range(n_layers) for h in range(n_heads)} - set(self.off.get(k, ()))
                for k, (n_layers, n_heads) in kinds.items()}


# field name -> the link's key, in canonical order
KEYS = {"model": "model", "text1": "s1", "text2": "s2", "tab": "tab", "kind": "kind", "layer": "layer",
        "head": "head", "sentence": "sentence", "measure": "measure", "off": "off", "padding": "padding",
        "causal": "causal", "mask": "mask", "blocked": "blocked", "window": "window", "position": "position",
        "new_tokens": "continue", "sample": "sample", "temperature": "temperature", "top_k": "top_k", "top_p": "top_p",
        "seed": "seed"}
assert list(KEYS) == [f.name for f in fields(LinkState)][:-1]
FIELDS = {key: name for name, key in KEYS.items()}


def tab_keys(tabs: Iterable[Any]) -> dict[str, Any]:
    """Every tab's own link keys (`tabs.base.LinkKey`), by key, in the tabs' order; a key a tab shares with the
    page's or another tab's is an error of the page."""
    keys: dict[str, Any] = {}
    for t in tabs:
        for k in t.link_keys:
            if k.key in keys or k.key in FIELDS:
                raise ValueError(f"the link key {k.key!r} of tab {t.id!r} is taken")
            keys[k.key] = k
    return keys


def parse_value(key: str, text: str, check_model: CheckModel, tabs: Sequence[Any], notices: list[str]) -> Any:
    """One page key's value; Invalid when the key does not accept it (sentences are cut, with a notice)."""
    if key == "model":
        if len(text.strip()) > MAX_NAME_CHARS:
            raise Invalid(f"is longer than {MAX_NAME_CHARS} characters")
        try:
            return check_model(text)
        except Exception as err:  # noqa: BLE001 - any refusal becomes the notice
            why = str(err)
            raise Invalid(f"cannot be opened: {why[:160]}{'…' if len(why) > 160 else ''}") from err
    if key in ("s1", "s2"):
        return sentence_text(text, notices, key)
    if key == "tab":
        ids = [t.id for t in tabs]
        if text not in ids:
            raise Invalid(f"is not a tab of this page ({', '.join(ids)})")
        return text
    if key == "kind":
        return choice(text, KINDS)
    if key in ("layer", "head"):
        return whole(text, 0, 9999)
    if key == "sentence":
        return whole(text, *SENTENCES)
    if key == "measure":
        return choice(text, MEASURES)
    if key == "off":
        return parse_off(text)
    if key in ("padding", "causal", "sample"):
        return flag(text)
    if key == "mask":
        return choice(text, CUSTOM_MASKS)
    if key == "blocked":
        return whole(text, 0, BIG)
    if key == "window":
        return whole(text, *WINDOW)
    if key == "position":
        return whole(text, -BIG, BIG)
    if key == "continue":
        return whole(text, 0, MAX_NEW_TOKENS)
    if key in ("temperature", "top_k", "top_p", "seed"):
        return sampling_value(key, text)
    raise AssertionError(key)


def parse_link(query: Mapping[str, Any] | Iterable[tuple[str, Any]] | str, *, check_model: CheckModel,
               tabs: Sequence[Any]) -> tuple[LinkState, list[str]]:
    """The state a link asks for, and a notice for each key or value it could not take (unknown key, invalid value,
    a key given twice: the first stands). `tabs`: the page's tabs (`page.registry`, the page's tabs.TABS)."""
    own = tab_keys(tabs)
    notices: list[str] = []
    values: dict[str, Any] = {}
    tab_values: dict[str, Any] = {}
    seen: set[str] = set()
    pairs = [(k, v) for k, v in query_pairs(query) if not k.startswith("__")]
    if len(pairs) > MAX_PAIRS:
        notices.append(f"only the first {MAX_PAIRS} of its {len(pairs)} keys were read")
        pairs = pairs[:MAX_PAIRS]
    for key, text in pairs:
        if key not in FIELDS and key not in own:
            notices.append(f"unknown key {show(key)}")
            continue
        if key in seen:
            notices.append(f"{key} given twice (the first one is used)")
            continue
        seen.add(key)
        try:
            if key in FIELDS:
                values[FIELDS[key]] = parse_value(key, text, check_model, tabs, notices)
            else:
                tab_values[key] = own[key].parse(text, check_model)
        except Invalid as err:
            notices.append(f"{key} {show(text)} {err}")
    ordered = {k: tab_values[k] for k in own if k in tab_values}
    return LinkState(**values, tab_values=ordered), notices


def from_page(*, source: str | None, text1: Any, text2: Any, tab: Any, kind: Any, layer: Any, head: Any,
              sentence: Any, measure: Any, heads_on: Mapping[str, Any] | None, kinds: Mapping[str, tuple[int, int]],
              padding: Any, causal: Any, mask: Any, blocked: Any, window: Any, position: Any, new_tokens: Any,
              check_model: CheckModel, tabs: Sequence[Any], tab_values: Mapping[str, Any] | None = None,
              sampling: Sequence[Any] = ()) -> tuple[LinkState, list[str]]:
    """The link of what the page shows: its component values through the same parser as an opened link (a value the
    page holds that a link would refuse is left out, with its notice). `heads_on`: kind -> the labels on (None: all);
    `tab_values`: the shown tab's own keys -> its components' values; `sampling`: the page's sample, temperature,
    top_k, top_p, seed (carried when sample is on)."""
    off = {}
    for k, (n_layers, n_heads) in kinds.items():
        on = parse_heads((heads_on or {}).get(k, [])) if heads_on is not None and k in heads_on else None
        if on is not None:
            off[k] = {(la, h) for la in range(n_layers) for h in range(n_heads)} - on
    raw = {"model": source, "s1": text1, "s2": text2, "tab": tab or None, "kind": kind, "layer": layer, "head": head,
           "sentence": sentence, "measure": measure, "off": format_off(off),
           "padding": None if padding is None else "1" if padding else "0",
           "causal": None if causal is None else "1" if causal else "0", "mask": mask, "blocked": blocked,
           "window": window, "position": position, "continue": new_tokens,
           **(dict(zip(("sample", "temperature", "top_k", "top_p", "seed"), ("1", *sampling[1:])))
              if sampling and sampling[0] else {}), **(tab_values or {})}
    pairs = [(k, number_text(v)) for k, v in raw.items() if v is not None and not (k in ("model", "model2") and not v)
             and not (k == "off" and not v)]
    return parse_link(pairs, check_model=check_model, tabs=tabs)


def fit_length(state: LinkState, limit: int = SAFE_QUERY) -> tuple[LinkState, list[str]]:
    """The state with its sentences cut (at a character) until its query is at most `limit` characters, and a
    notice per sentence cut. The longer sentence is cut first."""
    notices: list[str] = []
    if len(state.to_query()) <= limit:
        return state, notices
    for name, key in sorted((("text1", "s1"), ("text2", "s2")), key=lambda nk: -len(getattr(state, nk[0]) or "")):
        text = getattr(state, name) or ""
        empty = len(replace(state, **{name: ""}).to_query())
        if empty > limit:  # even without it the link is too long: cut it whole, then the other one
            state = replace(state, **{name: ""})
        else:
            low, high = 0, len(text)  # the most characters that fit
            while low < high:
                mid = (low + high + 1) // 2
                if len(replace(state, **{name: text[:mid]}).to_query()) <= limit:
                    low = mid
                else:
                    high = mid - 1
            state = replace(state, **{name: text[:low]})
        kept = len(getattr(state, name) or "")
        notices.append(f"{key} was cut to its first {kept:,} of {len(text):,} characters so that the link opens")
        if len(state.to_query()) <= limit:
            break
    return state, notices


def notice_line(notices: list[str], ending: str = "The rest of the link was restored.") -> str:
    """The one-line notice of a link that could not be taken whole ("" when it was)."""
    if not notices:
        return ""
    return "Link: " + "; ".join(notices) + ". " + ending
