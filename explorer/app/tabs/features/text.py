"""The Features tab's results in words, tables and figures (drawn in the server from the plain results of
explorer.app.tabs.features.result; nothing here runs a model): the reading's summary, the tokens x latents heatmap, a
latent's dashboard (its summary, activation along the sentence, histogram, top examples, promoted / suppressed
tokens) and the baseline vs switched (or steered) output table with its one-line verdict.

Token text goes into Markdown through escape_md and into HTML through the figures' escaping: never as markup.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .... import viz
from ....labels import printable
from ...serving.errors import escape_md
from .changed_output import OutputComparison
from .result import FeatureReading

def reading_markdown(r: FeatureReading) -> str:
    """The reconstruction on this sentence, and how to read the heatmap."""
    T = len(r.labels)
    lines = [f"**{escape_md(r.sae_name)}** ({r.architecture}, {r.d_sae:,} latents) reads `{r.hook_name}` (this "
             f"model's `{r.site}`) at {T} tokens. On this sentence it explains **{r.explained_variance:.1%}** of "
             f"the residual stream's variance; **L0 {float(np.mean(r.l0)):.1f}** latents fire per token (of "
             f"{r.d_sae:,}); the error ‖x − x̂‖ is {float(np.mean(r.error_norm)):.3g} on average against "
             f"‖x‖ {float(np.mean(r.input_norm)):.3g}.",
             "The heatmap shows the sentence's strongest latents at every token; click a cell for that latent's "
             "dashboard below."]
    lines += [f"_note:_ {escape_md(n)}" for n in r.notes]
    return "\n\n".join(lines)


def reading_heatmap(r: FeatureReading) -> Any:
    return viz.latent_heatmap(r.labels, r.columns, r.column_values, chosen=r.latent,
                              title=f"The {len(r.columns)} strongest latents at each token (click a cell for its "
                                    f"dashboard)")


def latent_markdown(r: FeatureReading) -> str:
    a = r.activations
    fired = int((a > 0).sum())
    strongest = escape_md(r.labels[int(a.argmax())])
    here = (f"On this sentence it fires at {fired} of {len(a)} tokens, most at “{strongest}” ({float(a.max()):.3g})."
            if fired else "It does not fire on this sentence.")
    lines = [f"### Latent {r.latent}", here]
    c = r.card
    if c is not None:
        lines.append(f"Over the model's example set ({escape_md(c.description)}: {c.tokens:,} tokens) it fires on "
                     f"**{c.density:.2%}** of the tokens, at most {c.max_activation:.3g}.")
    if r.promoted is not None:
        lines.append(f"Its decoder row, carried through the final norm (frozen at the last token) and the "
                     f"unembedding, promotes **{escape_md(r.promoted[0][0])}** most and suppresses "
                     f"**{escape_md(r.suppressed[0][0])}** most (the logit change `add=1` makes there).")
    return "\n\n".join(lines)


def latent_figures(r: FeatureReading) -> tuple[Any, Any, str]:
    """(activation along the sentence, histogram over the example set, top examples as HTML)."""
    strip = viz.latent_strip(r.labels, r.activations, r.latent)
    c = r.card
    if c is None:
        return strip, viz.message_figure("No dashboard for this latent (see the notes above)."), ""
    hist = viz.latent_histogram(c.edges, c.counts, density=c.density, tokens=c.tokens,
                                sentence_max=float(r.activations.max()),
                                title=f"Latent {r.latent} over the example set")
    return strip, hist, viz.examples_html(c.examples)


TOKEN_HEADERS = ["rank", "promotes", "logit +", "suppresses", "logit −"]


def token_rows(r: FeatureReading) -> list[list[Any]]:
    if r.promoted is None:
        return []
    return [[rank, p, round(pv, 4), s, round(sv, 4)]
            for rank, ((p, pv), (s, sv)) in enumerate(zip(r.promoted, r.suppressed), start=1)]


# ----------------------------------------------------------------------------------------------- output
def output_markdown(out: OutputComparison) -> str:
    """What changed, in one line first (the page's verdict), then the two outputs."""
    name = out.change
    if out.nothing_changed:
        verdict = (f"Nothing is {name}: the output is the model's own (the hook returns the residual stream "
                   "unchanged).")
    elif not out.differs:
        verdict = (f"The output is the same {'with the switches' if name == 'switched' else 'steered'} (see the "
                   "probabilities for smaller changes).")
    else:
        first = out.first_difference
        where = "" if first is None else f", from generated token {first} on"
        verdict = f"**The {'switches' if name == 'switched' else 'steering'} changed the output{where}.**"
    lines = [verdict] if out.nothing_changed else [verdict, f"{name.capitalize()}: {escape_md(out.what)}."]
    lines += [escape_md(w) for w in out.why] if not out.differs else []
    if out.next_baseline is not None:
        top, after = out.next_baseline, out.favourite_changed
        lines.append(f"After “{escape_md(out.prompt_labels[-1])}” the model expects **{escape_md(top.labels[0])}** "
                     f"(p = {top.probs[0]:.3f}); {name}, p = {after:.3f} ({after - top.probs[0]:+.3f}), and the top "
                     f"token is **{escape_md(out.next_changed.labels[0])}**.")
    what = "Continuation" if out.next_baseline is not None else "Output"
    lines.append(f"{what}: “{escape_md(printable(out.baseline.text))}” → {name}: "
                 f"“{escape_md(printable(out.changed.text))}”")
    lines += [f"_note:_ {escape_md(n)}" for n in out.notes]
    return "\n\n".join(lines)


def output_table(out: OutputComparison) -> tuple[list[str], list[list[Any]]]:
    """A language model's next tokens side by side; a sequence model's two answers with each token's probability."""
    name = out.change
    if out.next_baseline is not None:
        b, c = out.next_baseline, out.next_changed
        rows = [[rank, bl, round(bp, 4), cl, round(cp, 4)]
                for rank, (bl, bp, cl, cp) in enumerate(zip(b.labels, b.probs, c.labels, c.probs), start=1)]
        return ["rank", "next token (baseline)", "p baseline", f"next token ({name})", f"p {name}"], rows
    rows = []
    for run, gen in (("baseline", out.baseline), (name, out.changed)):
        tokens = " ".join(f"{label} ({p:.2f})" for label, p in zip(gen.labels, gen.probs))
        rows.append([run, printable(gen.text), tokens, round(float(np.mean(gen.probs)) if gen.probs else 0.0, 4)])
    return ["run", "output", "tokens (probability)", "mean p"], rows
