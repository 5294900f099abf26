"""The behaviour of the tabs on what each head does (head roles, activation patching, logit lens): handlers
that turn component values into calls of `views.roles` / `views.patching` / `views.lens` and the results into
`{component: value}` updates, and their wiring. Errors become one message in the status line (`reporting`).

Named events (the HTTP API, docs/http-api.md): /roles, /switch_off_role, /patching, /lens; their parameters are the
input lists in `HeadEvents.wire` (names from the handler signatures), their results the outputs in order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gradio as gr

from .assets import plot
from .compute import Compute
from .handlers import PRIVATE, reporting
from .errors import AppError, escape_md
from .head_labels import head_label, head_labels
from .request import toggles_from
from .session import AppContext, get_model
from .toggles import head_mask
from .ui import HEAD_GROUPS, Page
from .views.roles import role_ablation, roles_figures, roles_markdown


class HeadEvents:
    """Handlers of the three tabs of one page: its components, context and model computations, its head switches
    (`groups`), and `then_analyze`, which chains a Run after an event (the page's Events)."""

    def __init__(self, page: Page, ctx: AppContext, compute: Compute, groups: list[Any],
                 then_analyze: Callable[[Any], Any]):
        self.page, self.ctx, self.compute, self.groups, self.then_analyze = page, ctx, compute, groups, then_analyze
        self.status = page.inputs.status
        v = self.page.views
        self.roles_outputs = [self.status, v.roles_md, v.roles_probe_plot, v.roles_text_plot]
        self.cleared = {v.roles_md: "", v.role_off_md: "", v.roles_probe_plot: None, v.roles_text_plot: None,
                        v.patch_md: "", v.patch_plot: None, v.lens_md: "", v.lens_plot: None}  # after a model change

    @reporting
    def roles(self, session, sentence1, kind, encoder_heads_on, decoder_heads_on, cross_heads_on):
        """Score every self-attention head of the shown stack on sentence 1 and on the probe."""
        loaded = get_model(session, self.ctx)
        heads = {"encoder": encoder_heads_on, "decoder": decoder_heads_on, "cross": cross_heads_on}
        toggles = toggles_from(True, True, "none", 0, 0, {k: heads[k] or [] for k in loaded.config.attention_kinds()})
        result = self.compute.roles(session, sentence1, kind or "", head_mask(loaded.config, toggles))
        probe_fig, text_fig = roles_figures(result)
        v = self.page.views
        return {self.status: "", v.roles_md: roles_markdown(result), v.roles_probe_plot: plot(probe_fig),
                v.roles_text_plot: plot(text_fig)}

    @reporting
    def switch_off_role(self, session, sentence1, kind, role, k, rank_by):
        """The head switches with the top k heads of `role` off (every other head on)."""
        loaded = get_model(session, self.ctx)
        result = self.compute.roles(session, sentence1, kind or "", None)
        off = role_ablation(result, role, int(k or 1), rank_by)
        if not off:
            raise AppError(f"No head has a {role} score on the {rank_by} (the role is defined on none of it).")
        kinds = loaded.config.attention_kinds()
        scores = result.probe if rank_by == "probe" else result.text
        updates: dict[Any, Any] = {}
        for kind_, _, _ in HEAD_GROUPS:
            labels = head_labels(*kinds[kind_]) if kind_ in kinds else []
            gone = {head_label(*h) for h in off} if kind_ == result.stack else set()
            updates[self.page.controls.heads[kind_]] = [lab for lab in labels if lab not in gone]
        named = ", ".join(f"L{la} H{h} = {float(scores[role][la, h]):.2f}" for la, h in off)
        plural = "s" if len(off) > 1 else ""
        updates[self.status] = ""
        updates[self.page.views.role_off_md] = escape_md(f"Switched off the top {len(off)} {role} head{plural} of "
                                                         f"the {result.stack}, ranked on the {rank_by}: {named}.")
        return updates

    @reporting
    def patching(self, session, sentence1, sentence2, clean_answer, corrupted_answer):
        """Sentence 1 = clean, sentence 2 = corrupted: the heads and residual maps and a summary."""
        fig, md = self.compute.patching(session, sentence1, sentence2, clean_answer, corrupted_answer)
        return {self.status: "", self.page.views.patch_md: md, self.page.views.patch_plot: fig}

    @reporting
    def lens(self, session, sentence1):
        """Every layer's prediction on sentence 1 (as the model reads it)."""
        fig, md = self.compute.lens(session, sentence1)
        return {self.status: "", self.page.views.lens_md: md, self.page.views.lens_plot: fig}

    def wire(self) -> None:
        """Named events only here; call before any unnamed event takes a handler's name."""
        page, i, c, v = self.page, self.page.inputs, self.page.controls, self.page.views
        groups = self.groups
        roles_inputs = [page.session, i.text1, c.kind, *groups]
        v.roles_btn.click(self.roles, roles_inputs, self.roles_outputs, api_name="roles")
        switched = v.role_off_btn.click(self.switch_off_role, [page.session, i.text1, c.kind, v.role, v.role_k,
                                                               v.rank_by], [self.status, v.role_off_md, *groups],
                                        api_name="switch_off_role")
        # The page then runs with those heads off, and the roles tab shows the probe's loss with them off.
        self.then_analyze(switched).then(self.roles, roles_inputs, self.roles_outputs, **PRIVATE)
        v.patch_btn.click(self.patching, [page.session, i.text1, i.text2, v.clean_answer, v.corrupted_answer],
                          [self.status, v.patch_md, v.patch_plot], api_name="patching")
        v.lens_btn.click(self.lens, [page.session, i.text1], [self.status, v.lens_md, v.lens_plot], api_name="lens")

    def model_updates(self, has_decoder: bool) -> dict:
        """After a model change: the old model's results cleared, the lens tab shown only with a decoder."""
        return {**self.cleared, self.page.views.tabs["lens"]: gr.update(visible=has_decoder)}
