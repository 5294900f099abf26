"""The Roles tab: what kind of head each one is (previous-token, induction, ...), scored on a generated probe and on
sentence 1 (explorer.app.tabs.roles.scores), and "Switch these heads off": the top k heads of a role off, then the page
runs with them off and the tab shows the probe's loss with them off.

Named events (the HTTP API, docs/http-api.md): /roles and /switch_off_role; their parameters are the fields of
`RolesForm` and `SwitchOffForm`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gradio as gr

from .... import viz
from ....checkpoints import LoadedModel
from ....interpret import ROLES, top_heads
from ....interpret.head_effects import role_heads_by_effect
from ...forms import endpoint, form_inputs
from ...link.values import choice, whole
from ...page.assets import plot
from ...page.head_switches import switch_updates
from ...run.request import page_heads, toggles_from
from ...run.toggles import head_mask
from ...run.view import KIND_TITLES
from ...serving.errors import AppError, escape_md
from ...serving.handlers import PRIVATE, reporting
from ...serving.session import get_model
from ..base import LinkKey, Tab, TabEvents
from .scores import NOT_CAUSAL, RANK_BY, RoleResult, output_effects, role_ablation, score_roles


@dataclass(frozen=True)
class RolesForm:
    """/roles: score every self-attention head of the shown stack on sentence 1 and on the probe."""

    session: Any
    sentence1: Any
    kind: Any
    encoder_heads_on: Any
    decoder_heads_on: Any
    cross_heads_on: Any
    lang: Any = "en"  # the page's language: what the tab refuses is said in it (i18n.messages)


@dataclass(frozen=True)
class SwitchOffForm:
    """/switch_off_role: the head switches with the top k heads of `role` off (every other head on)."""

    session: Any
    sentence1: Any
    kind: Any
    role: Any
    k: Any
    rank_by: Any
    lang: Any = "en"  # the page's language: what the tab refuses is said in it (i18n.messages)


@dataclass(frozen=True)
class RolesRequest:
    text: str
    kind: str  # the page's attention kind: its self-attention stack is scored (cross: the decoder's)
    head_mask: Mapping[str, Any] | None  # kind -> (L, H), 1 = on; None: every head on


def score(loaded: LoadedModel, request: RolesRequest, max_tokens: int) -> RoleResult:
    return score_roles(loaded, request.text, request.kind, request.head_mask, max_tokens)


def losses_text(result: RoleResult) -> str:
    base, toggled = result.losses
    line = (f"Next-token loss on the probe: first copy {base.first:.3f} nats, repeated copy **{base.repeated:.3f}** "
            f"nats with every head on")
    if toggled is None:
        return line + " (switch heads off to compare)."
    return line + (f"; with your head toggles **{toggled.repeated:.3f}** nats on the repeated copy "
                   f"({toggled.repeated - base.repeated:+.3f}; first copy {toggled.first:.3f}).")


def roles_markdown(result: RoleResult) -> str:
    best = []
    for role, scores in result.probe.items():
        for layer, head in top_heads(scores, 1):
            best.append(f"{role} L{layer} H{head} ({float(scores[layer, head]):.2f})")
    lines = [f"Scored: {KIND_TITLES[result.stack]}. Probe: {escape_md(result.probe_text)}.",
             "Strongest head per role on the probe: " + escape_md(", ".join(best)) + "."]
    if result.stack != "decoder":
        lines.append(NOT_CAUSAL.format(stack="the " + KIND_TITLES[result.stack]))
    if result.losses is not None:
        lines.append(losses_text(result))
    return "\n\n".join(lines)


def roles_figures(result: RoleResult) -> tuple[Any, Any]:
    """(roles on the probe, roles on the typed text): one layer x head heatmap per role."""
    where = KIND_TITLES[result.stack]
    return (viz.role_figure(result.probe, title=f"Head roles on the probe ({where})"),
            viz.role_figure(result.text, title=f"Head roles on sentence 1 ({where})"))


@dataclass
class RolesParts:
    score_btn: gr.Button
    role: gr.Dropdown
    k: gr.Number
    rank_by: gr.Radio
    off_btn: gr.Button
    off_md: gr.Markdown  # which heads the last "switch off" took
    summary: gr.Markdown
    probe_plot: gr.Plot
    text_plot: gr.Plot


class RolesEvents(TabEvents):
    parts: RolesParts

    @reporting
    def scored(self, form: RolesForm) -> dict:
        loaded = get_model(form.session, self.ctx)
        kinds = loaded.config.attention_kinds()
        toggles = toggles_from(True, True, "none", 0, 0, page_heads(kinds, form.encoder_heads_on,
                                                                    form.decoder_heads_on, form.cross_heads_on))
        result = self.compute.call(score, form.session, RolesRequest(str(form.sentence1 or ""), str(form.kind or ""),
                                                                     head_mask(loaded.config, toggles)))
        probe_fig, text_fig = roles_figures(result)
        p = self.parts
        return {self.status: "", p.summary: roles_markdown(result), p.probe_plot: plot(probe_fig),
                p.text_plot: plot(text_fig)}

    @reporting
    def switched_off(self, form: SwitchOffForm) -> dict:
        loaded = get_model(form.session, self.ctx)
        role, rank_by, k = str(form.role or ""), str(form.rank_by or RANK_BY[0]), int(form.k or 1)
        text = str(form.sentence1 or "")
        result = self.compute.call(score, form.session, RolesRequest(text, str(form.kind or ""), None))
        if rank_by == RANK_BY[2]:  # the role's heads (probe score >= 0.5), ranked by what switching each off does
            if role not in result.probe:
                raise AppError(NOT_CAUSAL.format(stack=KIND_TITLES[result.stack]))
            effects = self.compute.call(output_effects, form.session, text)
            found = role_heads_by_effect(result.probe[role], effects, result.stack, k)
            off = [(h.layer, h.head) for h in found]
            named = ", ".join(f"L{h.layer} H{h.head} ({role} {h.score:.2f}, p −{h.drop:.2f})" for h in found)
            how = "ranked by the drop in the probability of the model's next token when each is off alone"
        else:
            off = role_ablation(result, role, k, rank_by)
            scores = result.probe if rank_by == "probe" else result.text
            named = ", ".join(f"L{la} H{h} = {float(scores[role][la, h]):.2f}" for la, h in off)
            how = f"ranked on their {role} score on the {rank_by}"
        if not off:
            raise AppError(f"No head is a {role} head here (a score of 0.5 or more on the probe), or the role is "
                           f"defined on none of the {rank_by}.")
        kinds = loaded.config.attention_kinds()
        n_layers, n_heads = kinds[result.stack]
        on = {result.stack: {(la, h) for la in range(n_layers) for h in range(n_heads)} - set(off)}
        plural = "s" if len(off) > 1 else ""
        return {**switch_updates(self.page.heads, kinds, on, choices=False), self.status: "",
                self.parts.off_md: escape_md(f"Switched off the top {len(off)} {role} head{plural} of the "
                                             f"{result.stack}, {how}: {named}.")}


def role_key(text: str, check_model: Any) -> str:
    return choice(text, ROLES)


def rank_key(text: str, check_model: Any) -> str:
    return choice(text, RANK_BY)


def k_key(text: str, check_model: Any) -> int:
    return whole(text, 1, 64)


class RolesTab(Tab):
    id = "roles"
    title = "Roles"
    result = "roles-summary"
    help = ("What job each head seems to do, such as looking at the previous word or copying a pattern "
            "that repeats. What kind of head each one is: the share of its attention on the keys a role predicts (1 = "
            "all of "
            "it), on a generated probe (random tokens of the model's vocabulary, repeated) and on sentence 1. "
            "Pick a role and k to switch its top heads off; the page then runs with them off.")
    button = "roles-run"
    link_keys = (LinkKey("role", "role", role_key, f"a role: {', '.join(ROLES)}"),
                 LinkKey("k", "k", k_key, "how many of its top heads “Switch these heads off” takes, 1 to 64"),
                 LinkKey("rank", "rank_by", rank_key, "what the heads are ranked on: `probe`, `typed text` or "
                         "`effect on the output`"))

    def layout(self, start: Any) -> RolesParts:
        with gr.Row(equal_height=True):
            score_btn = gr.Button("Score the heads", variant="primary", elem_id="roles-run", min_width=120)
            role = gr.Dropdown(list(ROLES), value="induction", label="Role", elem_id="role", min_width=160)
            k = gr.Number(1, label="Top k", precision=0, minimum=1, maximum=64, elem_id="role-k", min_width=70)
            rank_by = gr.Radio(list(RANK_BY), value=RANK_BY[0], label="Switch off the top k, ranked on",
                               elem_id="rank-by", min_width=150)
            off_btn = gr.Button("Switch these heads off", elem_id="role-off", min_width=120)
        off_md = gr.Markdown(elem_id="role-off-summary")
        summary = gr.Markdown(elem_id="roles-summary")
        probe_plot = gr.Plot(label="Head roles on the probe", show_label=False, elem_id="roles-probe-plot")
        text_plot = gr.Plot(label="Head roles on sentence 1", show_label=False, elem_id="roles-text-plot")
        return RolesParts(score_btn, role, k, rank_by, off_btn, off_md, summary, probe_plot, text_plot)

    def wire(self, parts: RolesParts, app: Any) -> Any:
        ev, page = RolesEvents(app, parts), app.page
        roles_inputs = form_inputs(RolesForm, page)
        outputs = [app.status, parts.summary, parts.probe_plot, parts.text_plot]
        roles = endpoint(RolesForm, ev.scored, "roles")
        parts.score_btn.click(roles, roles_inputs, outputs, api_name="roles",
                              api_description="Score every head on each role (previous token, induction, ...) on "
                                              "a probe and on sentence 1.")
        switch = endpoint(SwitchOffForm, ev.switched_off, "switch_off_role")
        switched = parts.off_btn.click(switch, form_inputs(SwitchOffForm, page, own=parts),
                                       [app.status, parts.off_md, *page.heads.values()], api_name="switch_off_role",
                                       api_description="The head switches with the top k heads of a role off "
                                                       "(pass them to /analyze or /roles).")
        # The page then runs with those heads off, and the tab shows the probe's loss with them off.
        app.then_analyze(switched).then(roles, roles_inputs, outputs, **PRIVATE)
        return ev

    def model_updates(self, parts: RolesParts, info: Any) -> dict:
        return {parts.summary: "", parts.off_md: "", parts.probe_plot: None, parts.text_plot: None}


TAB = RolesTab()
