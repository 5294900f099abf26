"""A link that reopens a view: the page's settings as a URL query, and back.

    state, notices = parse_link(request.query_params, check_model=..., tabs=...)   # opening a link
    state.to_query()   # "model=date-translator&s1=3%20May%202024&layer=1&off=decoder:L1H2,L1H3;cross:L0H0"

The keys, in their canonical order (docs/link.md): model, model2, s1, s2, tab, kind, layer, head, sentence, measure,
off, padding, causal, mask, blocked, window, position, continue. Each value goes through the checks the same value
goes through when typed on the page: a model name through `check_model` (the page passes the allow-list of shipped
names, allowed folders and Hub ids, explorer.app.session.checked_source), the numbers through the ranges of the
page's fields (`RunRequest.from_page`, `Toggles`), the choices through the page's choices. Parsing never raises: an
unknown key or an invalid value becomes a notice (one short phrase each, `notice_line` joins them) and is left out,
and the rest stands. Keys that start with "__" are Gradio's and Hugging Face's own (`__theme`, `__sign`): ignored.

What a value means for one model (a layer it has, a kind of attention, a tab it shows) is checked once the model is
known: `LinkState.fitted`. Pure: no Gradio, no files (the file system is reached only through `check_model`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from .head_labels import parse_heads
from .limits import MAX_CHARS, MAX_NAME_CHARS, MAX_NEW_TOKENS
from .toggles import CUSTOM_MASKS, Head
from .views import KIND_TITLES, MEASURES

# The link's name of each tab -> the page's tab id. "contributions" and "compare" are accepted only where the page has
# that tab.
LINK_TABS = {"attention": "attention", "overview": "overview", "roles": "roles", "patching": "patching",
             "lens": "lens", "generation": "generation", "positions": "positional", "importance": "importance",
             "rollout": "rollout", "contributions": "contributions", "compare": "compare"}
TAB_NAMES = {tab_id: name for name, tab_id in LINK_TABS.items()}
KINDS = tuple(KIND_TITLES)  # encoder, decoder, cross: the order `off` lists them in
WINDOW = (0, 16)  # the "Window k" slider
SENTENCES = (1, 2)
BIG = 10**6  # blocked position / predict-after position: the page's fields have no bound; a link's are bounded
MAX_PAIRS = 64  # keys read from one link (there are 18)
SHOWN_CHARS = 30  # of a rejected value, in its notice
_WHOLE = re.compile(r"[+-]?\d{1,7}")
_HEAD = re.compile(r"L(\d{1,4}) ?H(\d{1,4})")
_FLAGS = {"1": True, "true": True, "on": True, "yes": True, "0": False, "false": False, "off": False, "no": False}
SAFE = ":,;/@"  # left as they are in a link (valid in a query; `off` and Hub ids stay readable)

CheckModel = Callable[[str], str]  # a typed model name -> the name to load, or an exception naming the problem


def show(value: str) -> str:
    """A rejected value for its notice: quoted, control characters escaped, at most SHOWN_CHARS characters."""
    return repr(value[:SHOWN_CHARS] + ("…" if len(value) > SHOWN_CHARS else ""))


@dataclass(frozen=True)
class LinkState:
    """The view a link asks for; None = not in the link (the page's default then). The names are the page's; the
    link's keys are `KEYS` (s1 = text1, continue = new_tokens, ...)."""

    model: str | None = None  # shipped name, Hub id or allowed folder, as typed
    model2: str | None = None  # a second model, for the side-by-side comparison (applied by its hook, see events)
    text1: str | None = None
    text2: str | None = None  # "" = no second sentence (a link says so: the model's example would be used)
    tab: str | None = None  # the page's tab id ("positional" for the link's "positions")
    kind: str | None = None  # encoder / decoder / cross
    layer: int | None = None
    head: int | None = None
    sentence: int | None = None  # 1 or 2
    measure: str | None = None  # views.MEASURES
    off: Mapping[str, frozenset[Head]] | None = None  # kind -> heads switched off (every other head on)
    padding: bool | None = None
    causal: bool | None = None
    mask: str | None = None  # toggles.CUSTOM_MASKS
    blocked: int | None = None  # "block token": the key position hidden
    window: int | None = None  # "local window": half-width k
    position: int | None = None  # a language model's next-token position (-1 = last)
    new_tokens: int | None = None  # tokens a language model continues with

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
            elif name == "tab":
                value = TAB_NAMES.get(value)
                if value is None:
                    continue
            elif isinstance(value, bool):
                value = "1" if value else "0"
            pairs.append((key, str(value)))
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
                    notices.append(f"off {k}:{format_heads(wrong)}: the {k} attention has {layers} layers × "
                                   f"{per_layer} heads")
                off[k] = frozenset(heads) - frozenset(wrong)
            changes["off"] = off
        if self.tab is not None and self.tab not in tabs:
            notices.append(f"tab {TAB_NAMES.get(self.tab, self.tab)!r} is not shown for this model")
            changes["tab"] = None
        return replace(self, **changes), notices

    def heads_on(self, kinds: Mapping[str, tuple[int, int]]) -> dict[str, list[str]] | None:
        """kind -> the page's labels of the heads on ("L0 H1", layer by layer); None when the link has no `off`."""
        if self.off is None:
            return None
        return {k: [f"L{layer} H{head}" for layer in range(n_layers) for head in range(n_heads)
                    if (layer, head) not in self.off.get(k, ())] for k, (n_layers, n_heads) in kinds.items()}


# field name -> the link's key, in canonical order
KEYS = {"model": "model", "model2": "model2", "text1": "s1", "text2": "s2", "tab": "tab", "kind": "kind",
        "layer": "layer", "head": "head", "sentence": "sentence", "measure": "measure", "off": "off",
        "padding": "padding", "causal": "causal", "mask": "mask", "blocked": "blocked", "window": "window",
        "position": "position", "new_tokens": "continue"}
assert list(KEYS) == [f.name for f in fields(LinkState)]
FIELDS = {key: name for name, key in KEYS.items()}


def default_kind(kinds: Mapping[str, Any]) -> str:
    """The attention the page shows first for a model (as explorer.app.events.model_updates chooses it)."""
    return "cross" if "cross" in kinds else next(iter(kinds))


def format_heads(heads: Iterable[Head]) -> str:
    return ",".join(f"L{layer}H{head}" for layer, head in sorted(heads))


def format_off(off: Mapping[str, Collection[Head]]) -> str:
    """{"decoder": {(1, 2), (1, 3)}, "cross": {(0, 0)}} -> "decoder:L1H2,L1H3;cross:L0H0" (kinds in KINDS order,
    heads sorted; kinds with no head off left out)."""
    return ";".join(f"{k}:{format_heads(off[k])}" for k in KINDS if off.get(k))


class Invalid(ValueError):
    """A value a key does not accept; its message completes "key 'value' ...": the notice."""


def parse_off(text: str) -> dict[str, frozenset[Head]]:
    """"decoder:L1H2,L1H3;cross:L0H0" -> kind -> heads off. "L1 H2" (the page's label) is accepted too."""
    off: dict[str, set[Head]] = {}
    for group in filter(None, (g.strip() for g in text.split(";"))):
        kind, colon, heads = group.partition(":")
        kind = kind.strip()
        if not colon or kind not in KINDS:
            raise Invalid(f"is not of the form kind:L0H1,L0H2;kind:… with kind one of {', '.join(KINDS)}")
        for label in filter(None, (h.strip() for h in heads.split(","))):
            m = _HEAD.fullmatch(label)
            if not m:
                raise Invalid(f"names a head {show(label)} not of the form L0H1")
            off.setdefault(kind, set()).add((int(m.group(1)), int(m.group(2))))
    return {k: frozenset(v) for k, v in off.items()}


def whole(text: str, low: int, high: int) -> int:
    if not _WHOLE.fullmatch(text.strip()):
        raise Invalid("is not a whole number")
    value = int(text)
    if not low <= value <= high:
        raise Invalid(f"is not between {low:,} and {high:,}")
    return value


def choice(text: str, choices: Collection[str]) -> str:
    if text not in choices:
        raise Invalid(f"is not one of {', '.join(choices)}")
    return text


def flag(text: str) -> bool:
    try:
        return _FLAGS[text.strip().lower()]
    except KeyError:
        raise Invalid("is not 1 or 0") from None


def sentence_text(text: str, notices: list[str], key: str) -> str:
    """A sentence as typed: any text; beyond MAX_CHARS it is cut (the page's Run cuts there too)."""
    if len(text) > MAX_CHARS:
        notices.append(f"{key} has {len(text):,} characters; only the first {MAX_CHARS:,} are used")
        return text[:MAX_CHARS]
    return text


def parse_value(key: str, text: str, check_model: CheckModel, tabs: Collection[str], notices: list[str]) -> Any:
    """One key's value; Invalid when the key does not accept it (sentences are cut, with a notice)."""
    if key in ("model", "model2"):
        if len(text.strip()) > MAX_NAME_CHARS:
            raise Invalid(f"is longer than {MAX_NAME_CHARS} characters")
        try:
            return check_model(text)
        except Exception as err:
            why = str(err)
            raise Invalid(f"cannot be opened: {why[:160]}{'…' if len(why) > 160 else ''}") from err
    if key in ("s1", "s2"):
        return sentence_text(text, notices, key)
    if key == "tab":
        tab_id = LINK_TABS.get(text)
        if tab_id is None or tab_id not in tabs:
            raise Invalid(f"is not a tab of this page ({', '.join(n for n, t in LINK_TABS.items() if t in tabs)})")
        return tab_id
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
    if key in ("padding", "causal"):
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
    raise AssertionError(key)


def query_pairs(query: Mapping[str, Any] | Iterable[tuple[str, Any]] | str) -> list[tuple[str, str]]:
    """A query string, a mapping (Gradio's request.query_params: str values, or lists) or pairs -> (key, value)."""
    if isinstance(query, str):
        return parse_qsl(query.lstrip("?"), keep_blank_values=True, max_num_fields=None)
    items = query.items() if isinstance(query, Mapping) else query
    pairs = []
    for key, value in items:
        values = value if isinstance(value, (list, tuple)) else [value]
        pairs.extend((str(key), "" if v is None else str(v)) for v in values)
    return pairs


def parse_link(query: Mapping[str, Any] | Iterable[tuple[str, Any]] | str, *, check_model: CheckModel,
               tabs: Collection[str] = tuple(t for t in LINK_TABS.values() if t not in ("contributions", "compare"))
               ) -> tuple[LinkState, list[str]]:
    """The state a link asks for, and a notice for each key or value it could not take (unknown key, invalid value,
    a key given twice: the first stands). `tabs`: the page's tab ids."""
    notices: list[str] = []
    values: dict[str, Any] = {}
    seen: set[str] = set()
    pairs = [(k, v) for k, v in query_pairs(query) if not k.startswith("__")]
    if len(pairs) > MAX_PAIRS:
        notices.append(f"only the first {MAX_PAIRS} of its {len(pairs)} keys were read")
        pairs = pairs[:MAX_PAIRS]
    for key, text in pairs:
        if key not in FIELDS:
            notices.append(f"unknown key {show(key)}")
            continue
        if key in seen:
            notices.append(f"{key} given twice (the first one is used)")
            continue
        seen.add(key)
        try:
            values[FIELDS[key]] = parse_value(key, text, check_model, tabs, notices)
        except Invalid as err:
            notices.append(f"{key} {show(text)} {err}")
    return LinkState(**values), notices


def from_page(*, source: str | None, model2: str | None = None, text1: Any, text2: Any, tab: Any, kind: Any,
              layer: Any, head: Any, sentence: Any, measure: Any, heads_on: Mapping[str, Any] | None,
              kinds: Mapping[str, tuple[int, int]], padding: Any, causal: Any, mask: Any, blocked: Any, window: Any,
              position: Any, new_tokens: Any, check_model: CheckModel) -> tuple[LinkState, list[str]]:
    """The link of what the page shows: its component values through the same parser as an opened link (a value the
    page holds that a link would refuse is left out, with its notice). `heads_on`: kind -> the labels on (None: all);
    a tab a link cannot open (API) is left out."""
    off = {}
    for k, (n_layers, n_heads) in kinds.items():
        on = parse_heads((heads_on or {}).get(k, [])) if heads_on is not None and k in heads_on else None
        if on is not None:
            off[k] = {(la, h) for la in range(n_layers) for h in range(n_heads)} - on
    raw = {"model": source, "model2": model2, "s1": text1, "s2": text2, "tab": TAB_NAMES.get(str(tab or "")),
           "kind": kind, "layer": layer, "head": head, "sentence": sentence, "measure": measure,
           "off": format_off(off), "padding": _bool_text(padding), "causal": _bool_text(causal), "mask": mask,
           "blocked": blocked, "window": window, "position": position, "continue": new_tokens}
    pairs = [(k, _number_text(v)) for k, v in raw.items() if v is not None and not (k in ("model", "model2") and not v)
             and not (k == "off" and not v)]
    return parse_link(pairs, check_model=check_model, tabs=LINK_TABS.values())


def _bool_text(value: Any) -> str | None:
    return None if value is None else "1" if value else "0"


def _number_text(value: Any) -> str:
    """A page number (Gradio gives floats for gr.Number / gr.Slider: 3.0) as the link writes it: "3"."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def notice_line(notices: list[str]) -> str:
    """The one-line notice of a link that could not be taken whole ("" when it was)."""
    if not notices:
        return ""
    return "Link: " + "; ".join(notices) + ". The rest of the link was restored."
