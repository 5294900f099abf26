"""The head view as lines (explorer.viz.head_view): the lines drawn are the strongest per head and query (top k, the
mass rule, the faintest bin) counted by hand, each in its head's colour and its opacity bin, the caption says how many
are hidden; each slider step holds exactly its query's lines and moves the others out of view, step 0 brings them
back; weight x |value written| is scaled to its largest value; tokens are escaped; bad input."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.viz import VALUE_WEIGHTED, head_lines
from explorer.viz.head_view import AWAY, BINS, OPACITY, PALETTE, SHOWN
from tests.viz.strings import containing

TOKS = ["<b>x</b>", "the", "cat", "the", "$5$", "sat"]
RNG = np.random.default_rng(0)


def causal_weights(H: int, T: int, sharp: float = 3.0) -> np.ndarray:
    logits = RNG.standard_normal((H, T, T)) * sharp
    logits = np.where(np.tril(np.ones((T, T), bool)), logits, -np.inf)
    w = np.exp(logits - logits.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)).astype(np.float32)


def expected_lines(v: np.ndarray, top: float, top_k: int, mass: float) -> set[tuple[int, int, int]]:
    """(head, query, key) of every line the rule draws, row by row."""
    out = set()
    for h, i in np.ndindex(v.shape[:2]):
        row = v[h, i]
        total, before = row.sum(), 0.0
        for rank, j in enumerate(np.argsort(-row, kind="stable")):
            if rank >= top_k or before >= mass * total or row[j] < BINS[0] * top or row[j] <= 0:
                break
            out.add((h, i, int(j)))
            before += row[j]
    return out


def lines_of(fig, axis: str = "x") -> set[tuple[int, int, int]]:
    """(head, query, key) of the drawn line traces on x axis `axis`, checking each trace's style on the way."""
    found = set()
    heads = [t for t in fig.data if t.mode == "lines" and t.xaxis == axis and not t.showlegend]
    for n, trace in enumerate(heads):
        h, b = divmod(n, len(BINS))
        assert trace.line.color == PALETTE[h] and trace.opacity == OPACITY[b] and trace.legendgroup == f"h{h}"
        y = np.asarray(trace.y, np.float64)
        assert np.isnan(y[2::3]).all() and len(y) % 3 == 0 and list(np.asarray(trace.x)) == [0, 1, 0] * (len(y) // 3)
        found |= {(h, int(q), int(k)) for q, k in zip(y[0::3], y[1::3])}
    return found


@pytest.mark.parametrize("top_k, mass", [(8, 0.9), (2, 1.0), (100, 0.5)])
def test_the_strongest_lines_are_drawn_and_the_rest_counted(top_k, mass):
    v = causal_weights(3, 12)
    fig = head_lines(v, TOKS * 2, TOKS * 2, ["a", "b", "c"], top_k=top_k, mass=mass)
    want = expected_lines(v, 1.0, top_k, mass)
    assert lines_of(fig) == want
    for trace in (t for t in fig.data if t.mode == "lines" and t.xaxis == "x"):  # each line in its opacity bin
        h, b = divmod(fig.data.index(trace), len(BINS))
        y = np.asarray(trace.y)
        for q, k in zip(y[0::3].astype(int), y[1::3].astype(int)):
            assert BINS[b] <= v[h, q, k] < (BINS[b + 1] if b + 1 < len(BINS) else 2)
    note = fig.layout.annotations[1].text
    nonzero = int((v > 0).sum())
    assert note.startswith(f"{len(want):,} of {nonzero:,} lines drawn, {nonzero - len(want):,} hidden")
    legend = [t for t in fig.data if t.showlegend]  # one entry per head, even a head without lines
    assert [t.name for t in legend] == ["a", "b", "c"] and [t.legendgroup for t in legend] == ["h0", "h1", "h2"]


def test_each_slider_step_keeps_one_querys_lines():
    v = causal_weights(2, 6)
    fig = head_lines(v, TOKS, TOKS, ["L0 H1", "L1 H0"])
    drawn = lines_of(fig)
    focus = [n for n, t in enumerate(fig.data) if t.mode == "lines" and t.xaxis == "x2" and not t.showlegend]
    assert len(focus) == 2 * len(BINS) and all(len(fig.data[n].y) == 0 for n in focus)
    steps = fig.layout.sliders[0].steps
    assert len(steps) == 1 + 6 and fig.layout.sliders[0].active == 0
    assert steps[0].args[1] == {"xaxis.range": list(SHOWN)} and list(steps[0].args[2]) == focus
    assert all(len(y) == 0 for y in steps[0].args[0]["y"])
    for i in range(6):
        data, layout, indices = steps[i + 1].args
        assert list(indices) == focus and layout == {"xaxis.range": list(AWAY)}
        got = set()
        for n, y in zip(indices, data["y"]):
            h = (n - focus[0]) // len(BINS)
            x = np.asarray(fig.data[n].x)
            assert len(x) >= len(y) and np.isnan(x[2::3]).all()  # x is set once, long enough, with the gaps
            got |= {(h, int(q), int(k)) for q, k in zip(y[0::3], y[1::3])}
        assert got == {line for line in drawn if line[1] == i}
        assert steps[i + 1].label.endswith(f"({i})")
    queries = next(t for t in fig.data if t.name == "queries")
    assert list(queries.customdata) == list(range(6))  # what a click script reads


def test_value_weighted_lines_are_relative_to_the_largest():
    v = causal_weights(2, 6) * RNG.uniform(0.5, 20.0, (2, 1, 6)).astype(np.float32)  # weight x |value|
    fig = head_lines(v, TOKS, TOKS, ["a", "b"], name=VALUE_WEIGHTED, top_k=6, mass=1.0)
    assert lines_of(fig) == expected_lines(v, float(v.max()), 6, 1.0)
    assert "relative to the largest" in fig.layout.annotations[0].text


def test_cross_attention_and_one_head():
    v = RNG.random((4, 9)).astype(np.float32)
    v /= v.sum(-1, keepdims=True)
    fig = head_lines(v, TOKS[:4], [f"s{j}" for j in range(9)], ["cross L0 H0"])  # (Tq, Tk) for one head
    assert fig.layout.yaxis.range == (8.5, -0.5) and len(fig.layout.sliders[0].steps) == 5
    keys = next(t for t in fig.data if t.name == "keys")
    assert len(keys.y) == 9 and keys.yaxis == "y2"


def test_tokens_and_head_names_are_escaped():
    fig = head_lines(causal_weights(1, 6), TOKS, TOKS, ["<i>head</i>"])
    assert not containing(fig, "<b>x</b>") and not containing(fig, "<i>head</i>")
    assert containing(fig, "&lt;b&gt;x&lt;/b&gt;") and containing(fig, "&lt;i&gt;head&lt;/i&gt;")
    assert containing(fig, "&#36;5&#36;") and not containing(fig, "$5$")


def test_bad_input():
    v = causal_weights(2, 6)
    with pytest.raises(ValueError, match=r"values must have shape \(heads, queries, keys\)"):
        head_lines(v, TOKS[:5], TOKS, ["a", "b"])
    with pytest.raises(ValueError, match="1 to 8 heads at once"):
        head_lines(np.zeros((9, 6, 6)), TOKS, TOKS, ["h"] * 9)
    with pytest.raises(ValueError, match="1 head names for 2 heads"):
        head_lines(v, TOKS, TOKS, ["a"])
    with pytest.raises(ValueError, match="finite and >= 0"):
        head_lines(-v, TOKS, TOKS, ["a", "b"])
    with pytest.raises(ValueError, match="top_k must be a positive number"):
        head_lines(v, TOKS, TOKS, ["a", "b"], top_k=0)
    with pytest.raises(ValueError, match=r"mass must be in \(0, 1\]"):
        head_lines(v, TOKS, TOKS, ["a", "b"], mass=1.5)
