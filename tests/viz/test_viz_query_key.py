"""The joint picture of queries and keys (explorer.viz.query_key): one point per query and per key at the map's
coordinates, two marker styles coloured by position on one scale, the hover names the token, its position (and
sequence) and a query's strongest keys; a chosen query gets a line to each of its strongest keys; tokens are escaped;
bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.interpret import capture_block, query_key_map
from explorer.model import Transformer, TransformerConfig
from explorer.viz import query_key_figure
from explorer.viz.query_key import KEY_SYMBOL, QUERY_SYMBOL
from tests.viz.strings import containing

TOKS = ["<b>x</b>", "the", "cat", "the", "$5$", "sat", "on"]


def tiny_map(sequences=1, kind="decoder"):
    torch.manual_seed(0)
    arch = "encoder-decoder" if kind == "cross" else "decoder"
    model = Transformer(TransformerConfig(arch=arch, vocab_size=30, d_model=16, n_heads=2, n_layers=1, d_ff=32,
                                          dropout=0.0)).eval()
    caps = []
    for s in range(sequences):
        ids = torch.randint(1, 30, (7 - s,), generator=torch.Generator().manual_seed(s))
        tgt = torch.randint(1, 30, (4,), generator=torch.Generator().manual_seed(9)) if kind == "cross" else None
        caps.append(capture_block(model, ids, kind, 0, tgt=tgt))
    return query_key_map(caps, 1)


def test_points_markers_and_hover():
    qk = tiny_map()
    fig = query_key_figure(qk, TOKS)
    keys, queries = fig.data[0], fig.data[1]
    assert (keys.name, queries.name) == ("keys", "queries")
    assert keys.marker.symbol == KEY_SYMBOL and queries.marker.symbol == QUERY_SYMBOL
    np.testing.assert_array_equal(np.asarray(queries.x), qk.queries[:, 0])
    np.testing.assert_array_equal(np.asarray(keys.y), qk.keys[:, 1])
    assert list(queries.marker.color) == list(range(7)) and queries.marker.cmax == keys.marker.cmax == 6
    assert queries.text[2].startswith("query cat (position 2)<br>attends most to ")
    assert keys.text[3] == "key the·2 (position 3)"
    assert "PC 1" in fig.layout.xaxis.title.text and fig.layout.yaxis.scaleanchor == "x"


def test_a_chosen_query_gets_lines_to_its_strongest_keys():
    qk = tiny_map()
    fig = query_key_figure(qk, TOKS, query=5)
    lines = [t for t in fig.data if t.mode == "lines"]
    strongest = [j for j in qk.top_keys[5] if j >= 0]
    assert len(lines) == len(strongest)
    for line, j in zip(lines, strongest):
        assert tuple(line.x) == (float(qk.queries[5, 0]), float(qk.keys[j, 0]))
    assert fig.data[-1].name == "chosen query"


def test_several_sequences_and_cross_attention():
    qk = tiny_map(sequences=2)
    fig = query_key_figure(qk, [TOKS, TOKS[:6]])
    assert "(position 5, sequence 2)" in fig.data[1].text[-1]
    cross = tiny_map(kind="cross")
    fig = query_key_figure(cross, ["<s>", "a", "b", "c"], TOKS)
    assert fig.data[1].text[0].startswith("query &lt;s&gt; (position 0)") and len(fig.data[0].x) == 7


def test_tokens_are_escaped():
    fig = query_key_figure(tiny_map(), TOKS, query=0, title="<i>t</i>")
    assert not containing(fig, "<b>x</b>") and containing(fig, "&lt;b&gt;x&lt;/b&gt;")
    assert not containing(fig, "$5$") and not containing(fig, "<i>t</i>")


def test_bad_input():
    qk = tiny_map()
    with pytest.raises(ValueError, match="no query label for sequence 0, position 6"):
        query_key_figure(qk, TOKS[:6])
    with pytest.raises(ValueError, match=r"query 7 is outside the map's 7 queries: use 0..6"):
        query_key_figure(qk, TOKS, query=7)
