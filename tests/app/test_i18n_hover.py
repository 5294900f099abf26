"""The figures' hover words in the page's language (explorer.app.i18n.result_words): the words a figure writes point
by point into a trace's text or hovertext (Inside a head's lines view and query-key map, the flow graph's and the
circuit's edges), the masks' names in Inside a head's bars and keys table, the overview's and the Importance maps'
hover templates and a slider's words are said from the catalogue (`[figure.hover.points]`, `[figure.slider]`,
`[mask]`), a token as it is; every figure made for a language carries Plotly's `separators` (its numbers with the
language's decimal sign); an English figure is sent unchanged. Figures are drawn from a tiny model's own numbers and
from hand-made graphs: no page, no shipped model."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import orjson
import pytest
import torch

from explorer import viz
from explorer.app.i18n.messages import masks_in
from explorer.app.i18n.result_words import figure_json_in, table_in
from explorer.app.i18n.words import number, t
from explorer.app.page.assets import plot_json
from explorer.app.tabs.head.computation import key_table
from explorer.interpret import capture_block, head_computation_pair, query_key_map
from explorer.model import Transformer, TransformerConfig
from explorer.viz.circuits import circuit_figure, curve_figure
from explorer.viz.flow import flow_figure
from explorer.viz.head_computation import head_computation_figure
from tests.viz.test_viz_flow import sample_graph

LABELS = ["the", "3.5", "a b", "<b>x</b>", "cat", "sat", "on"]  # tokens: a number and markup stay as they are
ESCAPED = [viz.escape(x) for x in LABELS]
SEPARATORS = {"fr": ",\u202f", "de": ",.", "es": ",."}
ENGLISH_WORDS = re.compile(r"\b(query|key|attends|from|share|renormalised|layer|after|exact|patch|blocked"
                           r"|every|max|not in)\b")


def said(fig, lang):
    """The figure's JSON as a page in `lang` receives it."""
    return orjson.loads(figure_json_in(plot_json(fig), lang))


def trace(spec, name):
    """The trace named `name` in English: its name said in the language, the English kept for the page scripts."""
    return next(d for d in spec["data"] if (d.get("meta") or {}).get("en_name", d.get("name")) == name)


def english_unchanged(fig):
    text = plot_json(fig)
    assert figure_json_in(text, "en") is text and "separators" not in orjson.loads(text)["layout"]


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return Transformer(TransformerConfig(arch="decoder", vocab_size=30, d_model=16, n_heads=2, n_layers=1, d_ff=32,
                                         dropout=0.0)).eval()


@pytest.mark.parametrize("lang", ["fr", "de"])
def test_inside_a_heads_bars_and_keys_table_name_the_masks_in_the_language(model, lang):
    pair = head_computation_pair(model, torch.randint(1, 30, (7,), generator=torch.Generator().manual_seed(1)),
                                 "decoder", 0, 1, 3, causal=True, head_mask={"decoder": [[1, 0]]})
    fig = head_computation_figure(pair.baseline, LABELS, "cat", toggled=pair.toggled, top=7)
    english_unchanged(fig)
    spec = said(fig, lang)
    assert spec["layout"]["separators"] == SEPARATORS[lang]
    bars = [d for d in spec["data"] if d["type"] == "bar"]
    blocked = t("figure.inside.blocked", lang, why=t("mask.causal", lang))
    words = [x for d in bars for x in d["customdata"]]
    assert words.count(blocked) == 4 * 3  # keys 4, 5, 6 after query 3: in both runs' score and weight bars
    assert not any(ENGLISH_WORDS.search(x) or re.search(r"\d\.\d", x) for x in words), words
    # the keys table: the page's cells in the language, the English table (the API's words) as it is
    table = key_table(SimpleNamespace(key_labels=LABELS), pair.baseline, pair.toggled)
    assert set(table["blocked"]) == {"", "causal"}
    shown = table_in(table, lang)
    assert set(shown[t("column.blocked", lang)]) == {"", t("mask.causal", lang)}  # German: "kausal"
    assert masks_in("padding, custom", lang) == f"{t('mask.padding', lang)}, {t('mask.custom', lang)}"
    assert masks_in("not a mask", lang) == "not a mask"


def test_the_lines_view_and_the_query_key_map_say_their_words_around_the_tokens(model):
    caps = [capture_block(model, torch.randint(1, 30, (7,), generator=torch.Generator().manual_seed(2)), "decoder", 0)]
    weights = np.stack([caps[0].weights(h).numpy() for h in range(2)])  # (H, T, T): the model's own
    lines = viz.head_lines(weights, LABELS, LABELS, ["H0", "H1"])
    qk = viz.query_key_figure(query_key_map(caps, 1), LABELS, query=2)
    for fig in (lines, qk):
        english_unchanged(fig)
    english = orjson.loads(plot_json(lines))
    assert trace(english, "keys")["text"] == [f"key {x} ({j})" for j, x in enumerate(ESCAPED)]  # as drawn
    spec = said(lines, "fr")
    assert spec["layout"]["separators"] == SEPARATORS["fr"]
    queries, keys = trace(spec, "queries")["text"], trace(spec, "keys")["text"]
    assert trace(spec, "queries")["name"] == t("figure.head.queries", "fr")  # a click finds it by its en_name
    assert keys == [t("figure.hover.points.lines_key", "fr", token=x, position=j) for j, x in enumerate(ESCAPED)]
    first, *heads = queries[3].split("<br>")
    assert first == t("figure.hover.points.lines_query", "fr", token=ESCAPED[3], position=3)
    strongest = [int(np.argmax(weights[h, 3])) for h in range(2)]
    assert heads == [t("figure.hover.points.lines_head", "fr", head=f"H{h}", token=ESCAPED[k],
                       weight=number(float(weights[h, 3, k]), "fr", 3)) for h, k in enumerate(strongest)]
    slider = spec["layout"]["sliders"][0]
    assert slider["steps"][0]["label"] == t("figure.slider.every_query", "fr")
    assert slider["currentvalue"]["prefix"] == t("figure.slider.query", "fr")
    assert [s["label"] for s in slider["steps"][1:]] == [f"{x} ({i})" for i, x in enumerate(ESCAPED)]  # tokens
    spec = said(qk, "de")
    assert spec["layout"]["separators"] == SEPARATORS["de"]
    keys, queries = trace(spec, "keys")["text"], trace(spec, "queries")["text"]
    assert keys[1] == t("figure.hover.points.qk_key", "de", token="3.5", position=1)  # "3.5": a token, not 3,5
    assert queries[3].startswith(t("figure.hover.points.qk_query", "de", token=ESCAPED[3], position=3) + "<br>")
    most = t("figure.hover.points.qk_most", "de", weighted="@").split("@")[0]
    assert all(q.split("<br>")[1].startswith(most) for q in queries)
    assert not any(ENGLISH_WORDS.search(x) or re.search(r"\d\.\d\d", x) for x in keys + queries)


def test_the_flow_graphs_and_the_circuits_edges_in_the_language():
    fig = flow_figure(sample_graph(cross=True), ["a", "3.5", "x y", "d"], ["s1", "s2"])
    english_unchanged(fig)
    spec = said(fig, "es")
    assert spec["layout"]["separators"] == SEPARATORS["es"]
    edges = [x for d in spec["data"] if d.get("mode") == "markers" for x in d.get("text") or []]
    head = next(x for x in edges if x.startswith("L1 H0"))
    assert head.split("<br>") == [
        t("figure.hover.points.flow_head", "es", layer=1, head=0),
        t("figure.hover.points.flow_from", "es", token="3.5", position=1,
          where=t("figure.hover.points.layer_output", "es")),
        t("figure.hover.points.flow_to", "es", token="d", position=3, where=t("figure.hover.points.after_self", "es")),
        t("figure.hover.points.flow_share", "es", fraction="0,500", renormalised="0,625")]
    assert not any(ENGLISH_WORDS.search(x) for x in edges), edges
    assert spec["layout"]["yaxis"]["ticktext"] == [t("figure.hover.points.embeddings", "es")] + [
        t("figure.hover.points.flow_tick", "es", layer=n) for n in range(2)]  # the rows' ticks are words
    nodes = ["embed", "decoder.L0.H0", "decoder.L0.H1", "decoder.L0.mlp"]
    edges = [("embed", "decoder.L0.H0.q", 0.5, 0.25), ("decoder.L0.H0", "decoder.L0.mlp.in", -0.125, None)]
    fig = circuit_figure(nodes, edges, ["embed", "decoder.L0.H0", "decoder.L0.mlp"], "t", score_name="EAP score")
    english_unchanged(fig)
    spec = said(fig, "fr")
    assert spec["layout"]["separators"] == SEPARATORS["fr"]
    assert trace(spec, "edges")["hovertext"] == [
        "embed → decoder.L0.H0.q<br>" + t("figure.hover.points.circuit_score", "fr",
                                          measure=t("figure.circuit.eap_score", "fr"), weight="+0,5")
        + "<br>" + t("figure.hover.points.circuit_exact", "fr", weight="+0,25"),
        "decoder.L0.H0 → decoder.L0.mlp.in<br>" + t("figure.hover.points.circuit_score", "fr",
                                                    measure=t("figure.circuit.eap_score", "fr"), weight="-0,125")
        + "<br>" + t("figure.hover.points.circuit_not_alone", "fr")]
    assert trace(spec, "other nodes")["hovertext"] == [
        t("figure.hover.points.circuit_outside", "fr", node="decoder.L0.H1")]
    assert trace(spec, "circuit nodes")["text"] == ["embed", "L0 H0", "L0 MLP", "logits"]  # names, as they are
    assert spec["layout"]["xaxis"]["ticktext"] == ["embed"] + [  # its columns' words ("embed": a node's name)
        t(f"figure.hover.points.circuit_tick_{part}", "fr", stack="dec", layer=0) for part in ("heads", "mlp")] + [
        "logits"]
    curve = said(curve_figure([4, 8], [3, 8], [0.5, 0.875], [0.25, 0.75], 8, 0.875), "de")
    assert curve["layout"]["separators"] == SEPARATORS["de"]
    found = trace(curve, "pairs that found it")["hovertext"]
    assert found[0] == "<br>".join([t("figure.hover.points.curve_sizes", "de", n=4, k=3), t(
        "figure.hover.points.curve_value", "de", where=t("figure.hover.points.curve_found", "de"), weight="0,500")])
    assert trace(curve, "the circuit shown")["hovertext"] == [t("figure.hover.points.curve_mark", "de", measure=t(
        "figure.circuit.shown", "de"), n=8, weight="0,875")]


def test_the_overviews_and_the_importance_maps_hover_in_the_language():
    weights = np.random.default_rng(0).random((2, 2, 300, 300), dtype=np.float32)
    overview = viz.attention_overview(weights / weights.sum(-1, keepdims=True), [f"t{i}" for i in range(300)],
                                      [f"t{i}" for i in range(300)])  # downsampled: max in block
    importance = viz.head_importance_chart(np.ones((2, 3)), np.full((2, 3), 0.5), 0.5)
    for fig in (overview, importance):
        english_unchanged(fig)
    spec = said(overview, "de")
    assert spec["layout"]["separators"] == SEPARATORS["de"]
    measure = t("figure.hover.points.max_in_block", "de", measure=t("figure.weight", "de"))
    assert spec["data"][0]["hovertemplate"] == t("figure.hover.points.overview_pct", "de", measure=measure,
                                                  pct="%{z:d}")  # "≈ 25 %"
    # the cells' names (the hover's %{y}, %{x}) in the language, the tick values naming the same categories; the page
    # script reads the layer and head before the first " · " (tabs/overview.py), a gap by its zero-width space
    heat, layout = spec["data"][0], spec["layout"]
    assert heat["y"][0].startswith("Schicht 0 · Query") and heat["x"][0].startswith("Kopf 0 · Key")
    assert set(layout["yaxis"]["tickvals"]) <= set(heat["y"]) and set(layout["xaxis"]["tickvals"]) <= set(heat["x"])
    for names, top in ((heat["y"], 1), (heat["x"], 1)):
        gaps = [x for x in names if x.startswith("\u200b")]
        assert gaps and all("between" in x for x in gaps)  # as drawn: the page hides a gap's label
        assert {int(re.match(r"^\D*(\d+) · ", x).group(1)) for x in names if x not in gaps} == {0, top}
    spec = said(importance, "es")
    assert spec["layout"]["separators"] == SEPARATORS["es"]
    hovers = [d["hovertemplate"] for d in spec["data"] if d["type"] == "heatmap"]
    assert hovers == [t("figure.hover.points.importance", "es", measure=t(key, "es"))
                      for key in ("figure.importance.exact", "figure.importance.gradient")]


def test_a_pooled_heatmaps_cell_names_in_the_language():
    """A long input's heatmap pools tokens into blocks named by words ("tokens 0–1: w0 … w1"): the hover's %{y} and
    %{x}, the masked cover and the ticks name the same categories in the language; unpooled, tokens as they are."""
    toks = [f"w{i}" for i in range(19)] + ["3.5"]
    weights = np.full((20, 20), 0.05, np.float32)
    pooled = viz.head_heatmap(weights, toks, toks, mask=np.tril(np.ones((20, 20), bool)), max_side=8)
    english_unchanged(pooled)
    spec = said(pooled, "fr")
    assert spec["layout"]["separators"] == SEPARATORS["fr"]
    heat, cover = trace(spec, "weights"), trace(spec, "masked")  # the cover: a heatmap on the same cells
    assert heat["y"][0] == t("figure.cell_tokens", "fr", lo=0, hi=1, first="w0", last="w1")
    assert heat["x"][-1] == t("figure.cell_tokens", "fr", lo=17, hi=19, first="w17", last="3.5")  # a token as it is
    assert (cover["x"], cover["y"]) == (heat["x"], heat["y"])
    for axis, names in (("xaxis", heat["x"]), ("yaxis", heat["y"])):
        assert set(spec["layout"][axis]["tickvals"]) <= set(names)
    full = said(viz.head_heatmap(weights, toks, toks), "fr")
    assert trace(full, "weights")["y"] == toks  # nothing pooled: the tokens as they are


def test_the_rollouts_slider_says_its_prefix_and_titles_in_the_language():
    rollout = np.full((3, 5, 5), 0.2, np.float32)
    fig = viz.rollout_heatmap(rollout, list("abcde"), title="Attention rollout, decoder self-attention (sentence 1)")
    english_unchanged(fig)
    slider = said(fig, "es")["layout"]["sliders"][0]
    assert slider["currentvalue"]["prefix"] == t("figure.slider.through_layer", "es")
    assert [s["args"][1]["title.text"] for s in slider["steps"]] == [
        t("figure.rollout", "es", kind=t("figure.decoder", "es"), sentence=1, layer=n) for n in range(3)]
    assert [s["label"] for s in slider["steps"]] == ["0", "1", "2"]

