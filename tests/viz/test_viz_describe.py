"""Each figure's text alternative (explorer.viz.describe): the strongest cells named from the figure's own data,
in the form the figure sends (exact float32 or percent codes), token text kept as text, signs written out, and one
for every figure kind (tests/viz/test_viz_valid.BUILDERS)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from explorer import viz
from explorer.viz.describe import MINUS, describe
from tests.viz.test_viz_valid import BUILDERS

MONTH = ["[BOS]", "3", "mars", "m"]


def _planted(n: int, value: float, at: tuple[int, int]) -> np.ndarray:
    w = np.full((n, n), 0.01, dtype=np.float32)
    w[at] = value
    return w


def test_the_strongest_cell_of_a_head_is_named_with_its_query_key_and_weight() -> None:
    fig = viz.cross_attention_heatmap(_planted(4, 0.62, (1, 3)), MONTH, MONTH, title="cross L1 H3")
    alt = describe(fig)
    assert alt.text.startswith("cross L1 H3.")
    assert "‘3’ attends most to ‘m’, 0.62;" in alt.text  # the first of the strongest
    (table,) = alt.tables
    assert table.columns == ["generated token (query, decoder)", *MONTH]  # every cell of a small head
    assert table.rows[1] == ["3", "0.01", "0.01", "0.01", "0.62"]


def test_a_large_head_sent_as_percent_codes_is_read_back_in_values() -> None:
    names = [f"t{i}" for i in range(100)]
    fig = viz.head_heatmap(_planted(100, 0.62, (70, 12)), names, names)
    assert np.asarray(fig.data[0].z).dtype == np.uint8  # the percent form: codes, not values
    alt = describe(fig)
    assert "‘t70’ attends most to ‘t12’, 0.62" in alt.text
    assert alt.tables[0].rows[0] == ["t70", "t12", "0.62"] and "10,000 cells" in alt.tables[0].note


def test_token_text_with_html_stays_text_in_the_words_and_the_page_json() -> None:
    tokens = ["<b>bold</b>", "&amp;", "$x$"]
    fig = viz.head_heatmap(_planted(3, 0.9, (0, 1)), tokens, tokens)
    alt = describe(fig)
    assert "‘<b>bold</b>’ attends most to ‘&amp;’, 0.9" in alt.text  # as typed: not "&lt;b&gt;", not bold
    sent = viz.figure_json(fig, None, alt.as_dict())
    assert "<" not in sent  # the JSON stays safe inside HTML; the page inserts the words as text (textContent)
    assert json.loads(sent)["layout"]["meta"]["alt"]["tables"][0]["columns"][1] == "<b>bold</b>"


def test_signed_shares_carry_their_sign_in_words() -> None:
    a, b = _planted(3, 0.9, (2, 0)), _planted(3, 0.1, (2, 0))
    alt = describe(viz.difference_heatmap(b, a, MONTH[:3], MONTH[:3]))
    assert f"‘mars’ attends most to ‘[BOS]’, {MINUS}0.8" in alt.text
    assert alt.tables[0].rows[0][1] == "+0" and alt.tables[0].rows[2][1] == f"{MINUS}0.8"


def test_the_overview_names_layer_head_query_and_key_and_skips_the_gaps() -> None:
    attn = np.full((2, 3, 4, 4), 0.05, dtype=np.float32)
    attn[1, 2, 3, 1] = 0.77
    alt = describe(viz.attention_overview(attn, MONTH, MONTH))
    assert "‘layer 1 · query 3: m’ attends most to ‘head 2 · key 1: 3’, 0.77" in alt.text
    assert "8 rows" in alt.text and "12 columns" in alt.text  # tiles only: the gap rows and columns are not cells


def test_the_largest_bar_is_named() -> None:
    nats = np.log(2) * np.array([0.5, 3.0, 1.0])  # the chart shows bits
    alt = describe(viz.surprisal_chart(["a", "b", "c"], nats))
    assert "largest: ‘b’ 3; ‘c’ 1; ‘a’ 0.5." in alt.text
    assert alt.tables[0].rows == [["a", "0.5"], ["b", "3"], ["c", "1"]]


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_every_figure_kind_has_words(name: str) -> None:
    fig = BUILDERS[name]()
    alt = describe(fig)
    title = describe({"data": [], "layout": {"title": fig.layout.title.to_plotly_json()}}).text
    assert alt.text and (title in alt.text)
    if fig.data and not name.endswith(("_none", "_never")):
        assert alt.tables and all(t.rows for t in alt.tables), name


def test_a_flow_graphs_edges_are_named_from_their_data_not_their_hover_text() -> None:
    """The edges' words come from the edge (its layer, head, tokens and share, largest first), never from the hover
    string: a hover text changed changes nothing; one edge is "1 point"."""
    from tests.viz.test_viz_flow import TOKS, sample_graph

    from explorer.viz.flow import flow_figure

    fig = flow_figure(sample_graph(cross=True), TOKS, ["src<0>", "src1"])
    alt = describe(fig)
    assert "cross-attention head: 1 point, among them L1 H1: ‘src<0>’ (0) → ‘cat’ (3), share 0.05." in alt.text
    assert "self-attention head: 2 points, among them L1 H0: ‘cat’ (1) → ‘cat’ (3), share 0.5; L1 H2:" in alt.text
    assert "residual: 4 points, among them L0 residual: ‘cat’ (3) → ‘cat’ (3), share 1; L1 residual:" in alt.text
    for trace in fig.data:
        if trace.hovertemplate:
            trace.text = ["hover words"] * len(trace.x)
    assert describe(fig).text == alt.text and "hover" not in alt.text
    (residual, *_), heads = alt.tables, alt.tables[2]
    assert residual.columns == ["what", "share"] and [r[1] for r in residual.rows] == ["1", "0.7", "0.4", "0.1"]
    assert heads.said == [True, True] and heads.numeric == [False, True]


def test_a_count_of_one_is_singular() -> None:
    alt = describe(viz.surprisal_chart(["a"], np.array([0.5])))
    assert ": 1 bar (" in alt.text and "1 bars" not in alt.text
    one_row = describe(viz.head_heatmap(np.array([[0.25, 0.75]], dtype=np.float32), ["q"], ["a", "b"]))
    assert "1 row (" in one_row.text and " by 2 columns (" in one_row.text
    table = one_row.tables[0]
    assert table.said == [True, False, False] and table.numeric == [False, True, True]  # the tokens' headers as is


def test_the_head_view_and_the_query_key_map_name_their_points_from_their_data() -> None:
    """Each query with the head and key it attends to most (not its hover's lines per head), each key by its token."""
    import re

    lines, joint = describe(BUILDERS["head_lines"]()), describe(BUILDERS["query_key"]())
    one = r"query ‘the’ \(1\): (<b>L1</b> H2|L0 H0|x) attends most to ‘[^’]+’, [0-9.]+;"
    assert "queries: 7 points, among them query ‘<b>x</b>’ (0): " in lines.text and re.search(one, lines.text)
    assert "→" not in lines.text and "keys: 7 points, among them key ‘<b>x</b>’ (0); key ‘the’ (1);" in joint.text
    assert re.search(r"; query ‘the’ \(1\) attends most to ‘[^’]+’, [0-9.]+;", joint.text), joint.text


def test_a_note_ending_in_a_full_stop_ends_the_text_with_one() -> None:
    """A figure's note that is a sentence ("... to open it.") closes the notes once, not with "..", in every
    language the page says it in."""
    import plotly.graph_objects as go

    from explorer.app.i18n.result_words import alt_text_in

    fig = go.Figure(go.Heatmap(z=[[1, 2], [3, 4]]), layout=dict(
        title="T", annotations=[dict(text="Click a cell to open it.", showarrow=False)]))
    alt = describe(fig)
    assert alt.text.endswith("Notes: Click a cell to open it.")
    for lang in ("en", "fr", "de", "es"):
        said = alt_text_in(alt.parts, lang)
        assert said.endswith("open it.") and not said.endswith(".."), (lang, said)
