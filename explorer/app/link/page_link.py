"""The link of what the page shows: the page's values (a `LinkForm`: the session, the value of each setting a link
carries, the shown tab's own keys) through the same parser as an opened link, so a value the page holds that a link
would refuse is left out, with its notice. Pure: no Gradio.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..page.settings import SETTINGS, Setting
from .setting_keys import CheckModel, carried
from .state import LinkState, parse_link
from .values import number_text


@dataclass(frozen=True)
class LinkForm:
    """What the page shows, as a link carries it."""

    session: Any  # run.request.Session (its model: `source`; a built model has none)
    values: Mapping[str, Any]  # setting name -> the page's value, for each setting a link carries
    tab_values: Mapping[str, Any] = field(default_factory=dict)  # the shown tab's own keys -> its components' values

    @property
    def source(self) -> str | None:
        return getattr(self.session, "source", None) or None


def linked_names(table: Sequence[Setting] = SETTINGS) -> list[str]:
    """The settings a link carries, in table order (a LinkForm's `values`)."""
    return [s.name for s in table if s.link is not None]


def from_page(form: LinkForm, *, kinds: Mapping[str, tuple[int, int]], check_model: CheckModel,
              tabs: Sequence[Any], table: Sequence[Setting] = SETTINGS) -> tuple[LinkState, list[str]]:
    """The state of the page's view: each key's text from the page's values (`kinds`: the session's model's attention
    kinds, kind -> (layers, heads): the head switches are written as the heads off), read back as a link."""
    pairs = [("model", form.source)] if form.source else []
    for c in carried(table):
        text = c.key.page_text(form.values, c.names, kinds)
        if text is not None:
            pairs.append((c.key.key, text))
    pairs += [(k, number_text(v)) for k, v in form.tab_values.items()
              if v is not None and not (k == "model2" and not v)]  # no second model: left out, as no model is
    return parse_link(pairs, check_model=check_model, tabs=tabs, table=table)
