"""The page's tabs, in the order the page shows them: one module each (`<id>.py`), or a package for a tab with modules
of its own (`<id>/`: the tab in `tab.py`, exported as `TAB`, beside its forms, computation and text). A new view is one
new module here and one line in `TABS` (docs/architecture.md, "How to add a tab"). Only explorer.app.demo, which
assembles the page, imports this registry; the tabs import no other tab (tests/test_structure.py).
"""

from __future__ import annotations

from ...checkpoints import LoadedModel
from ...outputs.sampling import Sampling
from ..run.figures import RunFigures
from ..run.result import Analysis
from ..run.result import analyze as analyze_with
from ..run.toggles import Toggles
from ..run.view import View
from ..serving.limits import MAX_TOKENS
from . import (api, attention, circuit, compare, contributions, features, generation, head, importance, lens, overview,
               patching, positions, roles, rollout)
from .base import Tab

TABS: tuple[Tab, ...] = (
    attention.TAB,
    overview.TAB,
    head.TAB,
    roles.TAB,
    patching.TAB,
    lens.TAB,
    contributions.TAB,
    circuit.TAB,
    features.TAB,
    generation.TAB,
    positions.TAB,
    importance.TAB,
    rollout.TAB,
    compare.TAB,
    api.TAB,
)

RUN_FIGURES = RunFigures.of(TABS)  # every figure the page's Runs draw, by tab


def tab(tab_id: str) -> Tab:
    """The tab with this id (KeyError for none)."""
    for t in TABS:
        if t.id == tab_id:
            return t
    raise KeyError(tab_id)


def analyze(loaded: LoadedModel, text1: str | None, text2: str | None, toggles: Toggles, view: View | None = None,
            max_tokens: int = MAX_TOKENS, new_tokens: int | None = None, *, sampling: Sampling | None = None
            ) -> Analysis:
    """The page's Run of a model on its sentences as one result, any tab's figures drawable from it
    (`run.result.analyze` with `RUN_FIGURES`); `sampling`: how generated tokens are drawn (None: greedy)."""
    return analyze_with(loaded, text1, text2, toggles, view, max_tokens, new_tokens, figures=RUN_FIGURES,
                        sampling=sampling)


def tabs_table(tabs: tuple[Tab, ...] = TABS) -> str:
    """docs/app.md's table of the tabs, from `TABS` (scripts/docs_tables.py writes it there; tests/app/test_tabs.py
    checks it)."""
    rows = ["| tab | link (`tab=`) | what it shows | computed by |", "|---|---|---|---|"]
    for t in tabs:
        what = (t.help or "the page's actions as HTTP endpoints, with an example").replace("|", "\\|")
        rows.append(f"| **{t.title}** | `{t.id}` | {what} | {t.computed_by} |")
    return "\n".join(rows) + "\n"
