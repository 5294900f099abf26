"""`why(model, text)`: "why this token?" as a widget, as the Contributions tab computes it: each head's and MLP's
share of the token's logit (direct logit attribution, baseline beside the head switches), token attribution, and
every head ranked by its exact effect on the token when switched off alone
(explorer.app.tabs.contributions.result and .why_token). Controls: the position, the token, the head switches; each
change reruns in the kernel. `.data` holds the shares, the ranking and the probabilities."""

from __future__ import annotations

from typing import Any

from ..app.page.assets import plot_json
from ..app.serving.limits import MAX_TOKENS
from ..app.tabs.contributions.result import ContributionRequest, contributions
from ..app.tabs.contributions.text import contribution_figures, summary_markdown
from ..app.tabs.contributions.why_token import WHY_HEADERS, WhyRequest, why_markdown
from ..app.tabs.contributions.why_token import why as why_token
from .arguments import heads_on, loaded_model
from .run_widget import head_controls, heads_off
from .widget import Control, Drawn, ViewWidget, table, whole


def plain(markdown: str) -> str:
    return markdown.replace("**", "").replace("\\", "")


class Why(ViewWidget):
    """The Contributions tab's answers for one token (module docstring)."""

    def __init__(self, loaded: Any, text: str, position: int = -1, token: str = "",
                 method: str = "integrated_gradients"):
        self.loaded, self.text, self.method = loaded, text, method
        controls = [Control("position", "position", "number"), Control("token", "token (blank: the top one)", "text")]
        super().__init__(controls + head_controls(loaded), {"position": position, "token": token})

    def compute(self, values: dict[str, Any]) -> Drawn:
        on = None
        for kind, off in heads_off(values).items():
            on = {**(on or {}), **heads_on(self.loaded, off, kind)}
        position, token = whole(values, "position"), str(values.get("token") or "")
        result = contributions(self.loaded, ContributionRequest(self.text, position, token, method=self.method, heads_on=on), MAX_TOKENS)
        ranked = why_token(self.loaded, WhyRequest(self.text, position, token, heads_on=on), MAX_TOKENS)
        dla, strip = contribution_figures(result)
        figures = [plot_json(f) for f in (dla, strip)]
        data = {"contributions": result, "why": ranked, "token": ranked.token, "position": ranked.position,
                "baseline_prob": ranked.baseline_prob, "ranking": {"headers": WHY_HEADERS, "rows": ranked.rows}}
        return Drawn(figures, [table("Heads ranked by their effect, each switched off alone", WHY_HEADERS,
                                     ranked.rows)], [plain(summary_markdown(result)), plain(why_markdown(ranked))],
                     data)


def why(model: Any, text: str, position: int = -1, token: str = "", *, method: str = "integrated_gradients",
        tokenizer: Any = None) -> Why:
    """The widget for the token at `position` of `text`'s reading (`token`: text or "#id"; blank: the top one);
    `method`: the token attribution's, "integrated_gradients" or "input_x_gradient" (one gradient: faster)."""
    return Why(loaded_model(model, tokenizer), text, position, token, method)
