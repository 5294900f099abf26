"""A link that reopens a view: the page's settings as a URL query, and back.

    state, notices = parse_link(request.query_params, check_model=..., tabs=...)   # opening a link
    state.to_query()   # "model=date-translator&s1=3%20May%202024&layer=1&off=decoder:L1H2,L1H3;cross:L0H0"

The keys: `model` (the session's model), then the keys of the page's settings (page.settings.SETTINGS: each entry's
`link`, link.setting_keys; in their canonical order, `link_keys`), then each tab's own keys (`Tab.link_keys`: the
Compare models tab's model2, the Contributions tab's position and tokens, ...), in the order of the tabs. Each value
goes through the checks the same value goes through when typed on the page: a model name through `check_model` (the
page passes the allow-list of shipped names, allowed folders and Hub ids, explorer.app.serving.session.checked_source),
the numbers through the ranges of the page's fields, the choices through the page's choices. Parsing never raises: an
unknown key or an invalid value becomes a notice (one short phrase each, `notice_line` joins them) and is left out,
and the rest stands. Keys that start with "__" are Gradio's and Hugging Face's own (`__theme`, `__sign`): ignored.

What a value means for one model (a layer it has, a kind of attention, a tab it shows) is checked once the model is
known: `LinkState.fitted`. The link of what the page shows: link.page_link; cut to a length that opens: link.length.
Pure: no Gradio, no files (the file system is reached only through `check_model`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote, urlencode

from ..i18n.messages import notices_line
from ..page.settings import SETTINGS, Setting
from ..run.view import default_kind
from ..serving.limits import MAX_NAME_CHARS
from .setting_keys import CheckModel, ModelFit, Reading, carried
from .values import Invalid, number_text, query_pairs, show

MAX_PAIRS = 64  # keys read from one link
SAFE = ":,;/@"  # left as they are in a link (valid in a query; `off` and Hub ids stay readable)


@dataclass(frozen=True)
class LinkState:
    """The view a link asks for: its model (None: not in the link, the page's own), the values of the page's keys
    (key -> value as its setting key parses it: `values["layer"]`, `values["off"]`; a key not in the link is not
    there, and the page keeps its value), and each tab's own keys -> values."""

    model: str | None = None  # shipped name, Hub id or allowed folder, as typed
    values: Mapping[str, Any] = field(default_factory=dict)
    tab_values: Mapping[str, Any] = field(default_factory=dict)

    @property
    def tab(self) -> str | None:
        """The tab it opens (a tab id), if it names one."""
        return self.values.get("tab")

    def to_query(self, table: Sequence[Setting] = SETTINGS) -> str:
        """The query string (no "?"), keys in canonical order, values URL-encoded; a key that writes nothing (an `off`
        that switches nothing off) is left out."""
        pairs = [("model", self.model)] if self.model is not None else []
        for c in carried(table):
            if c.key.key in self.values:
                text = c.key.text(self.values[c.key.key])
                if text is not None:
                    pairs.append((c.key.key, text))
        pairs += [(key, number_text(value)) for key, value in self.tab_values.items()]
        return urlencode(pairs, quote_via=quote, safe=SAFE)

    def fitted(self, kinds: Mapping[str, tuple[int, int]], tabs: Collection[str],
               table: Sequence[Setting] = SETTINGS) -> tuple[LinkState, list[str]]:
        """This state for a model whose attention kinds are `kinds` (kind -> (layers, heads)) and whose page shows
        `tabs`: what that model does not have is left out, with a notice each (layers and heads are those of the
        kind the view shows: the link's, or the model's first)."""
        kind = self.values.get("kind")
        model = ModelFit(kinds, tabs, kind if kind in kinds else default_kind(kinds))
        values, notices = {}, []
        for c in carried(table):
            if c.key.key in self.values:
                value, said = c.key.fit(self.values[c.key.key], model)
                notices += said
                if value is not None:
                    values[c.key.key] = value
        return replace(self, values=values), notices


def link_keys(table: Sequence[Setting] = SETTINGS) -> list[str]:
    """The page's keys in canonical order: `model`, then the settings' keys."""
    return ["model", *(c.key.key for c in carried(table))]


def tab_keys(tabs: Iterable[Any], table: Sequence[Setting] = SETTINGS) -> dict[str, Any]:
    """Every tab's own link keys (`tabs.base.LinkKey`), by key, in the tabs' order; a key a tab shares with the
    page's or another tab's is an error of the page."""
    page = set(link_keys(table))
    keys: dict[str, Any] = {}
    for t in tabs:
        for k in t.link_keys:
            if k.key in keys or k.key in page:
                raise ValueError(f"the link key {k.key!r} of tab {t.id!r} is taken")
            keys[k.key] = k
    return keys


def model_name(text: str, check_model: CheckModel) -> str:
    """The `model` key: a name the page may load (`check_model`'s refusal is the notice)."""
    if len(text.strip()) > MAX_NAME_CHARS:
        raise Invalid(f"is longer than {MAX_NAME_CHARS} characters")
    try:
        return check_model(text)
    except Exception as err:  # noqa: BLE001 - any refusal becomes the notice
        why = str(err)
        raise Invalid(f"cannot be opened: {why[:160]}{'…' if len(why) > 160 else ''}") from err


def parse_link(query: Mapping[str, Any] | Iterable[tuple[str, Any]] | str, *, check_model: CheckModel,
               tabs: Sequence[Any], table: Sequence[Setting] = SETTINGS) -> tuple[LinkState, list[str]]:
    """The state a link asks for, and a notice for each key or value it could not take (unknown key, invalid value,
    a key given twice: the first stands). `tabs`: the page's tabs (`page.registry`, the page's tabs.TABS); `table`:
    its settings."""
    own = tab_keys(tabs, table)
    page = {c.key.key: c.key for c in carried(table)}
    reading = Reading(check_model, tabs)
    model, values, tab_values = None, {}, {}
    seen: set[str] = set()
    pairs = [(k, v) for k, v in query_pairs(query) if not k.startswith("__")]
    if len(pairs) > MAX_PAIRS:
        reading.notices.append(f"only the first {MAX_PAIRS} of its {len(pairs)} keys were read")
        pairs = pairs[:MAX_PAIRS]
    for key, text in pairs:
        if key != "model" and key not in page and key not in own:
            reading.notices.append(f"unknown key {show(key)}")
            continue
        if key in seen:
            reading.notices.append(f"{key} given twice (the first one is used)")
            continue
        seen.add(key)
        try:
            if key == "model":
                model = model_name(text, check_model)
            elif key in page:
                values[key] = page[key].parse(text, reading)
            else:
                tab_values[key] = own[key].parse(text, check_model)
        except Invalid as err:
            reading.notices.append(f"{key} {show(text)} {err}")
    ordered = {k: values[k] for k in page if k in values}
    return LinkState(model, ordered, {k: tab_values[k] for k in own if k in tab_values}), reading.notices


def notice_line(notices: list[str], ending: str = "link.restored", lang: str = "en") -> str:
    """The one-line notice of a link that could not be taken whole ("" when it was), in `lang` (`ending`: the
    catalogue key of its last sentence; the notices i18n.messages knows said in `lang`, the others in English)."""
    return notices_line(notices, ending, lang)
