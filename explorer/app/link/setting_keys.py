"""How a page setting (explorer.app.page.settings) is carried in a link: its key, what the key accepts, how its value
is written from the page and back into the page, and what a model may refuse of it.

A `Key` carries one setting; `HeadsOff` carries the three head-switch groups as one key, `off` (the heads switched
off, which needs the model's kinds to write); `TabKey` the tab shown (its ids are the page's tabs, and the model's).
A table entry names its key (`Setting.link`); `carried(table)` pairs each key with the settings it reads, in the
link's order (`LINK_ORDER`, then any newer key in table order). Values: a parsed value is what `parse` returns (the
link's state holds it by key); a page value is the component's. Pure: no Gradio, no files.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..page.head_labels import head_label, parse_heads
from ..run.toggles import Head
from .values import KINDS, Invalid, choice, format_off, number_text, parse_off

LESSON_KEY = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")  # a lesson's number or id (page.lesson_format.LESSON_ID)

CheckModel = Callable[[str], str]  # a typed model name -> the name to load, or an exception naming the problem
Kinds = Mapping[str, tuple[int, int]]  # attention kind -> (layers, heads)

# The order links have written the page's keys in (docs/link.md's table follows it); a key not named here (a newer
# setting's) comes after these, in table order.
LINK_ORDER = ("s1", "s2", "tab", "kind", "layer", "head", "sentence", "measure", "off", "padding", "causal", "mask",
              "blocked", "window", "position", "continue", "sample", "temperature", "top_k", "top_p", "seed")


@dataclass(frozen=True)
class Reading:
    """What parsing a key may consult: the page's check of a model name, the page's tabs, and the notices (a
    parser may add one, such as a sentence cut, and still return a value)."""

    check_model: CheckModel
    tabs: Sequence[Any]  # the page's tabs (tabs.base.Tab)
    notices: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ModelFit:
    """What a model has: its attention kinds, the tabs the page shows for it, and the kind the link's view shows."""

    kinds: Kinds
    tabs: Collection[str]
    kind: str


@dataclass(frozen=True)
class Key:
    """A setting carried under `key`: `parse(text, reading)` -> its value (Invalid completes the notice
    "key 'text' ..."); `doc` and `where` are its row of docs/link.md's table (rows alike side by side are one row).
    `when`: the setting whose value must be on for the page's value to be written (Sample's settings)."""

    key: str
    parse: Callable[[str, Reading], Any]
    doc: str
    where: str
    when: str | None = None

    def text(self, value: Any) -> str | None:
        """A parsed value as the link writes it (None: left out)."""
        return ("1" if value else "0") if isinstance(value, bool) else number_text(value)

    def page_text(self, values: Mapping[str, Any], names: Sequence[str], kinds: Kinds) -> str | None:
        """The page's values (setting name -> value) as this key's text (None: left out)."""
        value = values.get(names[0])
        if value is None or (self.when is not None and not values.get(self.when)):
            return None
        return self.text(value)

    def fit(self, value: Any, model: ModelFit) -> tuple[Any, list[str]]:
        """The value for a model (None: refused, with a notice)."""
        return value, []

    def restore(self, value: Any, names: Sequence[str], kinds: Kinds) -> dict[str, Any]:
        """Setting name -> the component's value that shows `value`."""
        return {names[0]: value}


@dataclass(frozen=True)
class KindKey(Key):
    """The attention kind shown: one of the model's."""

    def fit(self, value: Any, model: ModelFit) -> tuple[Any, list[str]]:
        if value in model.kinds:
            return value, []
        return None, [f"{self.key} {value!r}: this model has {', '.join(model.kinds)} attention"]


@dataclass(frozen=True)
class IndexKey(Key):
    """A layer or a head of the kind shown: `of` is 0 for layers, 1 for heads."""

    of: int = 0

    def fit(self, value: Any, model: ModelFit) -> tuple[Any, list[str]]:
        n = model.kinds[model.kind][self.of]
        if value < n:
            return value, []
        return None, [f"{self.key} {value}: the {model.kind} attention has {self.key}s 0 to {n - 1}"]


@dataclass(frozen=True)
class TabKey(Key):
    """The tab shown: one of the page's tabs, and one the page shows for the model."""

    def page_text(self, values: Mapping[str, Any], names: Sequence[str], kinds: Kinds) -> str | None:
        return str(values.get(names[0]) or "") or None

    def fit(self, value: Any, model: ModelFit) -> tuple[Any, list[str]]:
        if value in model.tabs:
            return value, []
        return None, [f"{self.key} {value!r} is not shown for this model"]


@dataclass(frozen=True)
class LessonKey(Key):
    """The lesson running (page.lesson_panel), by number or id: left out of a link while none runs. Which lessons the
    page has is the panel's to say (a teacher's come from the allowed folders)."""

    def page_text(self, values: Mapping[str, Any], names: Sequence[str], kinds: Kinds) -> str | None:
        return str(values.get(names[0]) or "").strip() or None


def lesson_id(text: str, reading: Reading) -> str:
    """The `lesson` key: a lesson's number or id, as written (lowercase letters, digits, '-')."""
    key = text.strip().lower()
    if not LESSON_KEY.fullmatch(key):
        raise Invalid("is not a lesson's number or name (lowercase letters, digits and '-')")
    return key


def tab_id(text: str, reading: Reading) -> str:
    """The `tab` key: a tab of this page."""
    ids = [t.id for t in reading.tabs]
    if text not in ids:
        raise Invalid(f"is not a tab of this page ({', '.join(ids)})")
    return text


@dataclass(frozen=True)
class HeadsOff(Key):
    """The head switches, one setting per attention kind (`names` in KINDS order, the page's groups of labels on),
    carried as one key: the heads switched off, "decoder:L1H2,L1H3;cross:L0H0" (every other head on)."""

    def text(self, value: Any) -> str | None:
        return format_off(value) or None

    def page_text(self, values: Mapping[str, Any], names: Sequence[str], kinds: Kinds) -> str | None:
        off = {}
        for kind, name in zip(KINDS, names):
            if kind in kinds and name in values:
                n_layers, n_heads = kinds[kind]
                everyone = {(la, h) for la in range(n_layers) for h in range(n_heads)}
                off[kind] = everyone - parse_heads(values[name] or [])
        return format_off(off) or None

    def fit(self, value: Any, model: ModelFit) -> tuple[Any, list[str]]:
        fitted, notices = {}, []
        for k, heads in value.items():
            if k not in model.kinds:
                notices.append(f"{self.key} {k!r}: this model has no {k} attention")
                continue
            layers, per_layer = model.kinds[k]
            wrong = sorted(h for h in heads if not (h[0] < layers and h[1] < per_layer))
            if wrong:
                notices.append(f"{self.key} {k}:{','.join(f'L{a}H{b}' for a, b in wrong)}: the {k} attention has "
                               f"{layers} layers × {per_layer} heads")
            fitted[k] = frozenset(heads) - frozenset(wrong)
        return fitted, notices

    def restore(self, value: Any, names: Sequence[str], kinds: Kinds) -> dict[str, Any]:
        on = heads_on(value, kinds)
        return {name: [head_label(*h) for h in sorted(on[k])] if k in kinds else [] for k, name in zip(KINDS, names)}


def heads_on(off: Mapping[str, Collection[Head]], kinds: Kinds) -> dict[str, set[Head]]:
    """Kind -> the heads on: every head of the model's kinds but those `off`."""
    return {k: {(la, h) for la in range(n_layers) for h in range(n_heads)} - set(off.get(k, ()))
            for k, (n_layers, n_heads) in kinds.items()}


def heads_off(doc: str, where: str) -> HeadsOff:
    return HeadsOff("off", lambda text, reading: parse_off(text), doc, where)


@dataclass(frozen=True)
class PlainKey(Key):
    """A key whose page value `plain` (the page as it opens) is left out of a copied link (the display's size and
    layout: a link names them only when they differ)."""

    plain: str = ""

    def page_text(self, values: Mapping[str, Any], names: Sequence[str], kinds: Kinds) -> str | None:
        return None if values.get(names[0]) in (None, self.plain) else super().page_text(values, names, kinds)


def choice_of(options: Collection[str]) -> Callable[[str, Reading], str]:
    return lambda text, reading: choice(text, options)


@dataclass(frozen=True)
class Carried:
    """A key and the settings it reads (their names, in table order)."""

    key: Key
    names: tuple[str, ...]


def carried(table: Sequence[Any]) -> tuple[Carried, ...]:
    """Each key of the table's settings (`Setting.link`) with the settings that share it, in the link's order."""
    names: dict[str, list[str]] = {}
    keys: dict[str, Key] = {}
    for s in table:
        if s.link is not None:
            if s.link.key in keys and keys[s.link.key] != s.link:
                raise ValueError(f"the link key {s.link.key!r} of setting {s.name!r} is another setting's")
            keys.setdefault(s.link.key, s.link)
            names.setdefault(s.link.key, []).append(s.name)
    order = [k for k in LINK_ORDER if k in keys] + [k for k in keys if k not in LINK_ORDER]
    return tuple(Carried(keys[k], tuple(names[k])) for k in order)
