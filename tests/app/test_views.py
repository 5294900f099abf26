"""What /analyze shows, built without Gradio: figures, output tables, masks and toggles (explorer.app.run.view)."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.app.run.inputs import codec_for, encode_inputs
from explorer.app.serving.errors import AppError, escape_md
from explorer.app.serving.session import MINILM
from explorer.viz.common import message_text
from tests.viz.strings import figure_strings


def z(fig):
    """The (first) heatmap's values as a float array (None cells -> NaN)."""
    return np.array(fig.data[0].z, dtype=float)


def allowed(fig):
    """A mask figure's cells as booleans (allowed = 1, blocked = NaN gap)."""
    return np.nan_to_num(z(fig)) > 0.5


def rows_of(loaded, text1, text2=None):
    return encode_inputs(loaded, codec_for(loaded), text1, text2, 128).rows


def test_default_analysis_figure_shapes(app):
    _, loaded = app.build()
    rows = rows_of(loaded, app.DATE1, app.DATE2)
    S = max(len(r) for r in rows)
    a = app.analyze(loaded, app.DATE1, app.DATE2, view=app.View("encoder", 1, 3, 1))
    assert z(a.figure("head")).shape == (S, S) == z(a.figure("mask")).shape
    ov, grid = z(a.figure("overview")), a.figure("overview").layout.meta["overview_grid"]
    # 2 layers x 4 heads tiled, with empty cells between the tiles
    assert ov.shape == (2 * S + grid["gap_rows"], 4 * S + 3 * grid["gap_cols"])
    headers, table = a.tokens
    assert headers == ["sentence", "position", "token", "id"] and len(table) == sum(len(r) for r in rows)
    assert a.output.headers[:3] == ["#", "run", "output"] and len(a.output.rows) == 4  # 2 sentences x 2 runs
    assert not a.output.changed and a.state.startswith("No toggle is active") and "No toggle" not in a.status
    # Nothing to compare yet: baseline and difference panels say so instead of repeating the view.
    assert not a.figure("baseline").data and "No toggle is active" in message_text(a.figure("baseline"))
    assert not a.figure("difference").data and "once a toggle is active" in \
        message_text(a.figure("difference"))
    # cross-attention: generated (decoder) rows x source columns
    c = app.analyze(loaded, app.DATE1, None, view=app.View("cross", 0, 0, 1))
    T = len(c.output.rows[0][3].split(") ")) + 1  # [BOS] + generated tokens
    assert z(c.figure("head")).shape == (T, len(rows[0]))


def test_head_off_changes_output(app):
    _, loaded = app.build()
    base = app.analyze(loaded, app.DATE1, app.DATE2)
    heads = {**app.all_heads(loaded), "cross": []}  # every cross-attention head off: the source is no longer read
    off = app.analyze(loaded, app.DATE1, app.DATE2, app.toggles(heads))
    assert [r[4] for r in base.output.rows if r[1] == "toggled"] != [r[4] for r in off.output.rows if r[1] == "toggled"]
    assert off.state == "Toggles: every cross head off"
    assert off.figure("baseline").data and off.figure("difference").data  # now there is something to compare


def test_head_off_changes_minilm_similarity(app):
    _, loaded = app.load(MINILM)
    heads = {"encoder": [h for h in app.all_heads(loaded)["encoder"] if not h.startswith(("L0", "L1"))]}
    a = app.analyze(loaded, "A man is playing a guitar.", "Someone plays an instrument.", app.toggles(heads),
                    app.View("encoder", 3, 0, 1))
    assert a.output.changed
    sim = a.output.rows[0]
    assert sim[0].startswith("cosine similarity") and sim[1] != sim[2]
    assert "24 heads switched off" in a.figure("overview").layout.title.text


def test_masks_change_heatmaps(app):
    _, loaded = app.build()
    view = app.View("encoder", 0, 0, 2)  # sentence 2 is shorter: padded
    a = app.analyze(loaded, app.DATE1, app.DATE2, view=view)
    b = app.analyze(loaded, app.DATE1, app.DATE2, app.toggles(padding=False), view)
    n2 = len(rows_of(loaded, app.DATE2)[0])
    ma, mb = allowed(a.figure("mask")), allowed(b.figure("mask"))
    assert ma.shape == mb.shape and not np.array_equal(ma, mb)
    assert np.nan_to_num(z(a.figure("head")))[:, n2:].sum() == 0  # padded keys get no weight with the padding mask
    assert np.nan_to_num(z(b.figure("head")))[:, n2:].sum() > 0  # ... and some without it
    dv = app.View("decoder", 0, 0, 1)  # causal mask of decoder self-attention
    c1 = app.analyze(loaded, app.DATE1, None, view=dv)
    c2 = app.analyze(loaded, app.DATE1, None, app.toggles(causal=False), dv)
    assert np.triu(np.nan_to_num(z(c1.figure("head"))), 1).sum() == 0
    assert np.triu(np.nan_to_num(z(c2.figure("head"))), 1).sum() > 0
    assert not np.array_equal(allowed(c1.figure("mask")), allowed(c2.figure("mask")))
    ev = app.View("encoder", 0, 0, 1)  # custom masks: no attention to self, local window, one blocked token
    ns = app.analyze(loaded, app.DATE1, None, app.toggles(custom="no self"), ev)
    assert np.nan_to_num(np.diag(z(ns.figure("head")))).sum() == 0
    assert not np.diag(allowed(ns.figure("mask"))).any() and allowed(ns.figure("mask"))[0, 1]
    m = allowed(app.analyze(loaded, app.DATE1, None, app.toggles(custom="local window", window=1), ev).figure("mask"))
    assert m[5, 4] and m[5, 6] and not m[5, 7]
    bt = app.analyze(loaded, app.DATE1, None, app.toggles(custom="block token", block_token=3), ev)
    assert not allowed(bt.figure("mask"))[:, 3].any() and allowed(bt.figure("mask"))[:, 2].all()
    assert np.nan_to_num(z(bt.figure("head")))[:, 3].sum() == 0
    assert np.abs(np.nan_to_num(z(bt.figure("difference")))).max() > 0  # the difference map shows the change


def test_mask_figure_draws_the_mask_the_model_applied(app):
    """The mask figure is the model's own mask for that sentence (not rebuilt from the settings)."""
    from explorer.app.run.pair import compare
    from explorer.app.run.result import Analysis
    from explorer.app.tabs import RUN_FIGURES

    _, loaded = app.build()
    cmp = compare(loaded, app.DATE1, app.DATE2, app.toggles(custom="no self"), 128)
    a = Analysis(cmp, app.View("encoder", 0, 0, 2), RUN_FIGURES)
    model_mask = cmp.toggled.masks["encoder"][1].numpy()
    assert np.array_equal(allowed(a.figure("mask")), model_mask)
    assert not model_mask.diagonal().any() and not model_mask[:, -1].any()  # no self, and sentence 2's padding


def test_decoder_only_and_encoder_models(app):
    _, gpt = app.build("decoder", positional="learned")
    a = app.analyze(gpt, app.DATE1, app.DATE2, app.toggles(causal=False), app.View("", 1, 1, 2))
    assert a.view.kind == "decoder" and a.figure("generation_self").data
    assert "no cross-attention" in message_text(a.figure("generation_cross"))
    _, enc = app.build("encoder")
    e = app.analyze(enc, app.DATE1, app.DATE2, app.toggles({"encoder": ["L0 H0"]}))
    assert e.output.headers == ["comparison", "baseline", "toggled"] and e.output.changed
    assert "does not generate" in message_text(e.figure("generation_self"))


def test_generation_view_per_token(app):
    _, loaded = app.build()
    a = app.analyze(loaded, app.DATE1, None, view=app.View("cross", 1, 2, 1))
    n_generated = len(a.output.rows[1][3].split(") "))
    assert z(a.figure("generation_cross")).shape[0] == n_generated
    assert z(a.figure("generation_self")).shape == (n_generated, n_generated)  # [BOS] + N-1 earlier tokens as keys


def test_empty_and_overlong_input(app):
    from explorer.app.serving.limits import MAX_CHARS

    _, loaded = app.build()
    for text in ("", "   \n\t "):
        with pytest.raises(AppError, match="empty"):
            app.analyze(loaded, text, app.DATE2)
    a = app.analyze(loaded, "21 novembre 2026 " * 100, None)
    assert "cut off" in a.status
    assert len(a.tokens[1]) == codec_for(loaded).task.max_source_len
    _, enc = app.build("encoder")
    b = app.analyze(enc, "x" * (MAX_CHARS + 50), None)
    assert f"only the first {MAX_CHARS:,}" in b.status


def test_html_in_input_shown_literally(app):
    _, loaded = app.load(MINILM)
    a = app.analyze(loaded, "<b>bold</b> & <script>x</script>", None)
    tokens = [r[2] for r in a.tokens[1]]
    assert "<" in tokens and "script" in tokens  # plain text cells, not markup
    assert "<b>" not in escape_md("<b>x</b>") and "&lt;b&gt;" in escape_md("<b>x</b>")
    # Plotly's JSON writes "<" as "\u003c" ("<script" is never in fig.to_json()): read the figure's strings. MiniLM
    # makes the typed "<", ">" and "&" tokens of their own; each label shows them escaped, never raw.
    labels = figure_strings(a.figure("head"))
    assert {"&lt;", "&gt;", "&amp;", "&lt;·2", "script"} <= set(labels)
    assert not [s for s in labels if s.split("·")[0] in ("<", ">", "&")], labels


def test_head_labels_validation(app):
    _, loaded = app.build()
    with pytest.raises(AppError, match="does not exist"):
        app.analyze(loaded, app.DATE1, None, app.toggles({"encoder": ["L9 H0"]}))


def test_view_is_clamped_to_what_exists(app):
    _, loaded = app.build()
    a = app.analyze(loaded, app.DATE1, None, view=app.View("bogus", 9, -3, 2))
    assert (a.view.kind, a.view.layer, a.view.head, a.view.sentence) == ("encoder", 1, 0, 1)


def test_the_first_view_is_a_models_simplest_kind():
    """The page opens on a model's first kind (docs/app.md): one sentence looking at itself, never cross-attention."""
    from explorer.app.run.view import default_kind

    assert default_kind({"encoder": (2, 4), "decoder": (2, 4), "cross": (2, 4)}) == "encoder"
    assert default_kind({"decoder": (4, 4)}) == "decoder" and default_kind({"encoder": (6, 12)}) == "encoder"


def test_only_the_figures_asked_for_are_built(app):
    """An Analysis draws a tab's figures when asked: drawing the attention tab draws no overview."""
    from dataclasses import replace

    from explorer.app.run.figures import RunFigures
    from explorer.app.run.pair import compare
    from explorer.app.run.result import Analysis
    from explorer.app.tabs import RUN_FIGURES

    _, loaded = app.build()
    calls = []

    def counted(figure):
        def draw(data):
            calls.append(figure.name)
            return figure.draw(data)
        return replace(figure, draw=draw)

    figures = RunFigures({tab: tuple(counted(f) for f in fs) for tab, fs in RUN_FIGURES.by_tab.items()})
    a = Analysis(compare(loaded, app.DATE1, None, app.toggles(), 1024), app.View(), figures)
    assert a.figure("head").data and calls == ["head"]
    a.figures("overview")
    assert calls == ["head", "overview", "large"]
    a.figures("attention")  # the head drawn before is reused
    assert calls == ["head", "overview", "large", "mask", "baseline", "difference", "surprisal", "sampling"]


def kept_bytes(obj, seen=None) -> int:
    """Bytes of every array and tensor reachable from obj (dataclasses, dicts, lists, objects' __dict__)."""
    import dataclasses

    import torch

    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if isinstance(obj, torch.Tensor):
        return obj.untyped_storage().nbytes()
    if isinstance(obj, dict):
        return sum(kept_bytes(v, seen) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(kept_bytes(v, seen) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return sum(kept_bytes(getattr(obj, f.name), seen) for f in dataclasses.fields(obj))
    if hasattr(obj, "__dict__") and type(obj).__module__.startswith("explorer"):
        return sum(kept_bytes(v, seen) for v in vars(obj).values())
    return 0


def test_a_kept_analysis_is_small_whatever_the_runs_were(app):
    """500 tokens on MiniLM: the runs hold 6 x 12 x 500 x 500 weights each (36 MB in float16, the dtype
    long runs return, twice with a toggle); what the session keeps to draw the tabs later is a few MB."""
    from explorer.app.run.pair import compare
    from explorer.app.run.result import Analysis
    from explorer.app.tabs import RUN_FIGURES

    _, loaded = app.load(MINILM)
    text = " ".join(["the cat sat on the mat and saw the birds"] * 50)  # 500 words
    heads = {"encoder": [h for h in app.all_heads(loaded)["encoder"] if h != "L0 H0"]}
    cmp = compare(loaded, text, None, app.toggles(heads), 1024)
    full = kept_bytes(cmp.baseline.attentions) + kept_bytes(cmp.toggled.attentions)
    a = Analysis(cmp, app.View("encoder", 2, 3, 1), RUN_FIGURES)
    del cmp
    kept = kept_bytes(a)
    assert full > 70e6 and kept < 12e6, (full, kept)
    assert a.figure("overview").data and a.figure("rollout").data and a.figure("difference").data  # all still draw
    assert kept_bytes(a) < kept + 25e6  # drawn figures are one byte per cell


def test_each_tab_draws_only_its_own_figures(app):
    from explorer.app.tabs import RUN_FIGURES

    _, loaded = app.build()
    a = app.analyze(loaded, app.DATE1, app.DATE2)
    assert set(a.figures("overview")) == {"overview", "large"}
    assert set(a.figures("all")) == {f.name for figures in RUN_FIGURES.by_tab.values() for f in figures}
    assert a.figures("positions") == {} and a.figures("bogus") == {}


def test_a_run_sends_at_most_a_hundredth_of_bertviz(app):
    """What one Run sends at 128 tokens on MiniLM with a head off (the attention tab: mask, the head with and without
    the toggles, their difference; the tables), against BertViz's 53.4 MB of HTML for the same attention."""
    import json

    from explorer.app.page.assets import plot
    from explorer.app.tabs.attention import frame

    _, loaded = app.load(MINILM)
    text = " ".join(["the cat sat on the mat and saw the birds"] * 13)[:-30]  # 126 tokens with [CLS] and [SEP]
    heads = {"encoder": [h for h in app.all_heads(loaded)["encoder"] if h != "L0 H0"]}
    a = app.analyze(loaded, text, None, app.toggles(heads), app.View("encoder", 3, 5, 1))
    assert len(a.tokens[1]) in range(120, 129)
    sent = sum(len(plot(fig).plot.encode()) for fig in a.figures("attention").values())
    tables = json.dumps([frame(*a.tokens).to_dict("split"), frame(a.output.headers, a.output.rows).to_dict("split"),
                         a.status, a.output_summary], default=str)
    assert sent + len(tables.encode()) < 53.4e6 / 100, sent


def test_output_table_headers_are_unique():
    """gr.Dataframe keeps one column per header name (pandas' split orient): a repeated header is refused."""
    from explorer.app.run.output_table import OutputTable

    with pytest.raises(ValueError, match="unique"):
        OutputTable(["#", "p", "p"], [], "", False)


def test_rollout_means_equal_the_head_average_of_the_figures_module(app):
    """The kept head means (summed in the run's dtype, no float32 copy) equal viz.head_average of the run's weights,
    with heads switched off (a layer with all its heads off too) and with every head on."""
    import torch

    from explorer.app.run.pair import compare
    from explorer.app.run.attention_maps import head_means
    from explorer.viz import head_average

    _, loaded = app.build("decoder")
    off = app.toggles({"decoder": ["L0 H1", "L0 H2"]})  # layer 1: every head off
    for toggles in (off, app.toggles()):
        cmp = compare(loaded, app.DATE1, None, toggles, 1024)
        on = None if cmp.head_mask is None else cmp.head_mask["decoder"].numpy()
        layers = torch.stack([a[0] for a in cmp.toggled.attentions["decoder"]]).float().numpy()  # (L, H, T, T)
        expected = head_average(layers, on)
        np.testing.assert_allclose(head_means(cmp.toggled, "decoder", 0, on), expected, atol=1e-6)
        assert on is None or not head_means(cmp.toggled, "decoder", 0, on)[1].any()


def test_value_weighted_views_equal_a_hand_computation(app):
    """The "weight × |value written|" switch: the chosen head's map and the All heads tiles hold a_ij * ||v_j W_o^h||
    as tests/interpret's loop over heads computes it from the model's own values, hover and colour bar say so, and
    the weights view is unchanged; an unknown measure is refused with a message."""
    import torch

    from tests.interpret.test_value_weighted import by_hand

    for arch, kind in (("encoder", "encoder"), ("encoder-decoder", "encoder")):
        _, loaded = app.build(arch)
        ids = torch.tensor(rows_of(loaded, app.DATE1))  # one sentence: no padding
        hand = by_hand(loaded.model, kind, ids, ids[:, :3] if arch == "encoder-decoder" else None)
        for layer, head in ((1, 2), (0, 3)):
            values = app.analyze(loaded, app.DATE1, view=app.View(kind, layer, head, 1, measure="values"))
            weights = app.analyze(loaded, app.DATE1, view=app.View(kind, layer, head, 1))
            want = hand[layer][0, head].detach().numpy()
            assert np.allclose(z(values.figure("head")), want, rtol=1e-4, atol=1e-6)
            assert not np.allclose(z(values.figure("head")), z(weights.figure("head")))
            label = "weight × |value written|"
            assert label in values.figure("head").data[0].hovertemplate
            assert label not in weights.figure("head").data[0].hovertemplate
            # The tiles are sent in hundredths of the largest value of all (explorer.viz.encode): within half of one.
            tiles, grid = z(values.figure("overview")), values.figure("overview").layout.meta["overview_grid"]
            top, T = max(float(h.max()) for h in hand), want.shape[0]
            row, col = layer * (T + grid["gap_rows"]), head * (T + grid["gap_cols"])
            assert np.allclose(tiles[row:row + T, col:col + T] * top / 100, want, rtol=0, atol=top / 200 + 1e-6)
    with pytest.raises(AppError, match="unknown measure"):
        app.View("encoder", measure="norms")
