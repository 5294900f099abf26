"""Every figure kind is valid Plotly although it is built without run-time validation.

`explorer.viz.common.figure` skips Plotly's validators (they were most of the build time). Here each
figure is rebuilt through the validators: a wrong property name or value raises, and a value the
validator would rewrite (a colour-scale name, a template, a number out of range) makes the JSON differ.
"""

from __future__ import annotations

import base64
import json

import numpy as np
import plotly.graph_objects as go
import pytest
from plotly.io.json import to_json_plotly

from explorer import viz
from explorer.viz.head_computation import head_computation_figure

RNG = np.random.default_rng(0)
TOKENS = ["<b>x</b>", "the", "cat", "the", "$5$", " ", "1"]
T = len(TOKENS)
BIG = [TOKENS[i % T] for i in range(100)]


def _weights(*shape: int) -> np.ndarray:
    w = RNG.random(shape).astype(np.float32)
    return w / w.sum(-1, keepdims=True)


def _patching(L: int, H: int, T: int, cross: bool = False):
    from explorer.interpret import Patching
    return Patching(RNG.standard_normal((L, H)), RNG.standard_normal((L + 1, T)), 2.0, -1.0, (3, 4), "decoder",
                    RNG.standard_normal((L, H)) if cross else None)


def _lens(rows: int, T: int):
    import torch

    from explorer.interpret import LogitLens
    ids = torch.randint(0, 9, (rows, 1, T))
    return LogitLens(ids, torch.rand(rows, 1, T), ids[-1], torch.rand(rows, 1, T), torch.randint(0, 50, (rows, 1, T)),
                     torch.zeros(1, T, 9))


def _query_key_map():
    import torch

    from explorer.interpret import capture_block, query_key_map
    from explorer.model import Transformer, TransformerConfig
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(arch="decoder", vocab_size=30, d_model=16, n_heads=2, n_layers=1, d_ff=32,
                                          dropout=0.0)).eval()
    return query_key_map(capture_block(model, torch.randint(1, 30, (T,)), "decoder", 0), 1)


def _head_computations(rotary: bool = False):
    """(baseline, toggled) of one head at query 5 of a tiny decoder (rotary: with rotary positions), the causal mask
    off in the toggled run."""
    import torch

    from explorer.interpret import head_computation_pair
    from explorer.model import Transformer, TransformerConfig
    torch.manual_seed(0)
    extra = dict(positional="rotary") if rotary else {}
    model = Transformer(TransformerConfig(arch="decoder", vocab_size=30, d_model=16, n_heads=2, n_layers=1, d_ff=32,
                                          dropout=0.0, **extra)).eval()
    pair = head_computation_pair(model, torch.randint(1, 30, (T,)), "decoder", 0, 1, 5, causal=False)
    return pair.baseline, pair.toggled


def _dla_runs(kinds=("decoder",), toggled=False):
    heads = {k: RNG.standard_normal((2, 3)).astype(np.float32) for k in kinds}
    runs = [viz.DLARun("", heads, RNG.standard_normal(2), 0.5, -0.2, 3.0)]
    if toggled:
        off = {k: np.zeros((2, 3), bool) for k in kinds}
        off[kinds[-1]][1, 2] = True
        runs = [viz.DLARun("without toggles", heads, RNG.standard_normal(2), 0.5, -0.2, 3.0),
                viz.DLARun("with <toggles>", heads, RNG.standard_normal(2), 0.4, -0.2, 2.0, off)]
    return runs


def _sampling(**settings):
    import torch

    from explorer.outputs.sampling import Sampling, next_token_distribution
    return next_token_distribution(torch.tensor(RNG.standard_normal(50)), Sampling(**settings))


CAUSAL = np.tril(np.ones((T, T), dtype=bool))
HEAD_MASK = np.ones((2, 3))
HEAD_MASK[1, 2] = 0

BUILDERS = {
    "head": lambda: viz.head_heatmap(_weights(T, T), TOKENS, TOKENS),
    "head_masked_off": lambda: viz.head_heatmap(_weights(T, T), TOKENS, TOKENS, mask=CAUSAL, head_off=True),
    "cross": lambda: viz.cross_attention_heatmap(_weights(3, T), ["a", "b", "c"], TOKENS),
    "decoder_self": lambda: viz.decoder_self_attention_heatmap(_weights(T, T), TOKENS),
    "difference": lambda: viz.difference_heatmap(_weights(T, T), _weights(T, T), TOKENS, TOKENS),
    "mask": lambda: viz.mask_heatmap(CAUSAL, TOKENS, TOKENS),
    "overview": lambda: viz.attention_overview(_weights(2, 3, T, T), TOKENS, TOKENS, head_mask=HEAD_MASK),
    "overview_downsampled": lambda: viz.attention_overview(_weights(2, 3, 300, 300), [f"t{i}" for i in range(300)],
                                                           [f"t{i}" for i in range(300)]),
    "rollout": lambda: viz.rollout_heatmap(viz.attention_rollout(_weights(3, 2, T, T)), TOKENS),
    "rollout_one_layer": lambda: viz.rollout_heatmap(viz.attention_rollout(_weights(3, 2, T, T)), TOKENS, layer=1),
    "positional": lambda: viz.positional_heatmap(viz.sinusoidal_table(20, 16)),
    "positional_curves": lambda: viz.positional_curves(viz.sinusoidal_table(20, 16)),
    "similarity": lambda: viz.position_similarity(viz.sinusoidal_table(20, 16)),
    "similarity_dot": lambda: viz.position_similarity(viz.sinusoidal_table(20, 16), metric="dot"),
    "importance": lambda: viz.head_importance_chart(RNG.random((2, 3)), RNG.random((2, 3)), 0.5),
    "message": lambda: viz.message_figure("<script>nothing</script> to show"),
    # Beyond 64 x 64 cells: one byte per cell (percent codes), a grey path over masked cells, pooled blocks.
    "head_percent_masked": lambda: viz.head_heatmap(_weights(100, 100), BIG, BIG, mask=np.tril(np.ones((100, 100), bool))),
    "head_pooled_off": lambda: viz.head_heatmap(_weights(100, 100), BIG, BIG, mask=np.tril(np.ones((100, 100), bool)),
                                                head_off=True, max_side=40),
    "difference_percent": lambda: viz.difference_heatmap(_weights(100, 100), _weights(100, 100), BIG, BIG),
    "mask_large": lambda: viz.mask_heatmap(np.tril(np.ones((100, 100), bool)), BIG, BIG),
    "rollout_pooled": lambda: viz.rollout_heatmap(viz.attention_rollout(_weights(2, 2, 100, 100)), BIG, max_cells=2 * 80 * 80),
    "positional_percent": lambda: viz.positional_heatmap(viz.sinusoidal_table(100, 64)),
    "similarity_percent": lambda: viz.position_similarity(viz.sinusoidal_table(100, 16)),
    "roles": lambda: viz.role_figure({"previous": RNG.random((2, 3)), "induction": RNG.random((2, 3))}),
    "patching": lambda: viz.patching_figure(_patching(2, 3, T), TOKENS, answer_labels=("<b>", "$x$")),
    "patching_cross_long": lambda: viz.patching_figure(_patching(2, 3, 100, cross=True), BIG),
    "dla_map": lambda: viz.dla_map(_dla_runs(), {"decoder": "<b>heads</b>"}),
    "dla_map_toggled_cross": lambda: viz.dla_map(_dla_runs(("decoder", "cross"), toggled=True)),
    "attribution_strip": lambda: viz.attribution_strip([("input", TOKENS, RNG.standard_normal(T))]),
    "attribution_strip_long_two": lambda: viz.attribution_strip([("source", TOKENS, RNG.standard_normal(T)),
                                                                 ("decoder input", BIG, RNG.standard_normal(100))]),
    "lens": lambda: viz.lens_figure(_lens(3, T), TOKENS, token_text=lambda i: f"<t{i}>"),
    "sampling": lambda: viz.sampling_figure(_sampling(temperature=0.7, top_k=5, top_p=0.6), TOKENS, chosen=3,
                                            uniform=0.25),
    "sampling_plain": lambda: viz.sampling_figure(_sampling(), TOKENS[:3]),
    "head_lines": lambda: viz.head_lines(_weights(3, T, T) * CAUSAL, TOKENS, TOKENS, ["L0 H0", "<b>L1</b> H2", "x"]),
    "head_lines_value_weighted_cross": lambda: viz.head_lines(_weights(2, 3, T) * 7.0, ["a", "b", "c"], TOKENS,
                                                              ["a", "b"], name=viz.VALUE_WEIGHTED),
    "query_key": lambda: viz.query_key_figure(_query_key_map(), TOKENS),
    "query_key_focus": lambda: viz.query_key_figure(_query_key_map(), TOKENS, query=3),
    "head_computation": lambda: head_computation_figure(_head_computations()[0], TOKENS, "<b>q</b>"),
    "head_computation_pair_rotary": lambda: head_computation_figure(*_head_computations(True)[:1], TOKENS, "q",
                                                                    toggled=_head_computations(True)[1], top=4),
    "latent_heatmap": lambda: viz.latent_heatmap(TOKENS, [3, 17, 9], RNG.random((T, 3)) * 3, chosen=17),
    "latent_heatmap_long": lambda: viz.latent_heatmap(BIG, list(range(24)), RNG.random((100, 24))),
    "latent_heatmap_none": lambda: viz.latent_heatmap(TOKENS, [], np.zeros((T, 0))),
    "latent_strip": lambda: viz.latent_strip(TOKENS, RNG.random(T), 4),
    "latent_histogram": lambda: viz.latent_histogram(np.linspace(0, 3, 9), RNG.integers(0, 9, 8), density=0.04,
                                                     tokens=1000, sentence_max=2.0, title="<b>latent</b>"),
    "latent_histogram_never": lambda: viz.latent_histogram(np.linspace(0, 0, 9), np.zeros(8), density=0.0,
                                                           tokens=1000),
}
# dtype names both plotly.js bundles decode (Gradio's 3.3.1 and plotly.py's 4.1.1; no float16, see test_viz_browser)
DECODED_DTYPES = {"i1", "u1", "i2", "u2", "i4", "u4", "f4", "f8"}


def _json(fig: go.Figure) -> dict:
    return json.loads(to_json_plotly(fig.to_dict()))


def _pruned(x):
    """JSON without empty lists/dicts (the validators drop them; plotly.js treats them as absent)."""
    if isinstance(x, dict):
        x = {k: _pruned(v) for k, v in x.items()}
        return {k: v for k, v in x.items() if v not in ({}, [])}
    if isinstance(x, list):
        return [_pruned(v) for v in x]
    return x


def _comparable(fig: go.Figure) -> dict:
    spec = _json(fig)
    # The validators turn an empty template into {"data": {"scatter": [{"type": "scatter"}]}}, which
    # styles nothing; every figure of ours uses the empty one (style set in the layout).
    template = spec["layout"].pop("template", {})
    assert template in ({}, {"data": {"scatter": [{"type": "scatter"}]}})
    return _pruned(spec)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_figure_survives_validation_unchanged(name: str) -> None:
    fig = BUILDERS[name]()
    validated = go.Figure(fig.to_dict())  # raises on any invalid property or value
    assert _comparable(validated) == _comparable(fig)


def test_validation_would_catch_a_wrong_property() -> None:
    """The check above has teeth: an unknown property and an out-of-range value both raise."""
    fig = viz.head_heatmap(_weights(T, T), TOKENS, TOKENS)
    spec = fig.to_dict()
    spec["data"][0]["zmiddle"] = 0.5
    with pytest.raises(ValueError, match="zmiddle"):
        go.Figure(spec)
    spec = fig.to_dict()
    spec["layout"]["height"] = 3
    with pytest.raises(ValueError, match="height"):
        go.Figure(spec)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_figure_json_equals_plotly_json(name: str) -> None:
    """The app's serialiser gives what plotly's own would, and leaves the figure as it was."""
    fig = BUILDERS[name]()
    before = fig.to_json()
    config = {"displaylogo": False, "toImageButtonOptions": {"format": "png"}}
    ours = json.loads(viz.figure_json(fig, config))
    assert ours.pop("config") == config
    assert ours == json.loads(to_json_plotly(fig.to_dict()))
    assert fig.to_json() == before


def test_figure_json_is_html_safe() -> None:
    """Raw "<" and ">" (hover templates hold "<extra></extra>", tokens "<b>") are written as \\u escapes, so
    the text can sit inside an HTML <script>: an HTML parser reads it back as that one script, unchanged."""
    from html.parser import HTMLParser

    fig = viz.head_heatmap(_weights(100, 100), BIG, BIG, mask=np.tril(np.ones((100, 100), bool)))
    assert "</extra>" in fig.data[0].hovertemplate
    text = viz.figure_json(fig)
    assert "<" not in text and ">" not in text
    assert "/" in text  # kept: harmless without "<", and 1/64 of base64

    class Scripts(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.starts, self.data = [], []

        def handle_starttag(self, tag, attrs):
            self.starts.append(tag)

        def handle_data(self, data):
            self.data.append(data)

    page = Scripts()
    page.feed(f"<script>var f = {text};</script>")
    assert page.starts == ["script"] and "".join(page.data) == f"var f = {text};"
    assert json.loads(text)["data"][0]["hovertemplate"] == fig.data[0].hovertemplate


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_heatmap_values_are_typed_arrays_the_bundles_decode(name: str) -> None:
    """Every heatmap's z reaches the browser as {"dtype", "bdata", "shape"} (never a JSON list of numbers)."""
    fig = BUILDERS[name]()
    spec = json.loads(viz.figure_json(fig))
    for ours, trace in zip(spec["data"], fig.data):
        if ours["type"] != "heatmap":
            continue
        z = ours["z"]
        assert isinstance(z, dict) and z["dtype"] in DECODED_DTYPES, (name, z if not isinstance(z, dict) else z["dtype"])
        arr = np.asarray(trace.z)
        assert [int(n) for n in z["shape"].split(",")] == list(arr.shape)
        decoded = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"])).reshape(arr.shape)
        np.testing.assert_array_equal(decoded, arr)


def test_large_heatmaps_send_one_byte_per_cell() -> None:
    for name in ("head_percent_masked", "difference_percent", "mask_large", "rollout_pooled", "positional_percent"):
        for trace in json.loads(viz.figure_json(BUILDERS[name]()))["data"]:
            assert trace["z"]["dtype"] in {"u1", "i1"}, name
