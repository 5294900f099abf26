"""/contributions through gradio_client on the starting model (date-translator): its parameters are named as
docs/contributions.md lists them, a run answers with the DLA map, the head table, the token-attribution strip and
table, and bad input is a message in the status, never a traceback."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("gradio_client")

from tests.hang import gradio_client  # noqa: E402

PARAMETERS = ["sentence1", "position", "target_token", "minus_token", "method", "steps", "encoder_heads_on",
              "decoder_heads_on", "cross_heads_on", "threshold"]
HEADS = [f"L{la} H{h}" for la in range(2) for h in range(4)]


@pytest.fixture(scope="module")
def client(default_app):
    """A client of the app as `python app.py` starts it (the session's, tests/app/conftest.py)."""
    return gradio_client(default_app)


def figure(value) -> dict:
    assert value["type"] == "plotly"
    return json.loads(value["plot"])


def test_parameters_are_documented(client):
    from pathlib import Path

    info = client.view_api(print_info=False, return_format="dict")["named_endpoints"]["/contributions"]
    assert [p["parameter_name"] for p in info["parameters"]] == [*PARAMETERS, "lang"]  # the page's language last
    doc = (Path(__file__).resolve().parents[2] / "docs" / "contributions.md").read_text()
    assert all(f"`{name}`" in doc for name in PARAMETERS)
    assert len(info["returns"]) == 11


def test_contributions_endpoint(client):
    out = client.predict("3 May 2024", 3, "", "", "input_x_gradient", 1, HEADS, HEADS, ["L0 H0"],
                         api_name="/contributions")
    status, summary, dla, head, head_md, head_df, strip, delta, table, graph, stale = out
    assert stale == ""  # fresh: made with the toggles given
    assert "⚠️" not in status and "With the toggles" in summary
    heatmaps = [t for t in figure(dla)["data"] if t["type"] == "heatmap"]
    assert len(heatmaps) == 6  # decoder heads, cross heads, MLPs; baseline and toggled
    assert head and "writes" in head_md and head_df["headers"][:3] == ["run", "rank", "promotes"]
    assert len(head_df["headers"]) == 6  # every column arrives (their names are unique)
    # 10 tokens per run; the toggled run has none for a head it switched off
    assert len(head_df["data"]) == (10 if "switched off" in head_md else 20)
    assert [t["type"] for t in figure(strip)["data"]] == ["heatmap", "heatmap"]  # source, decoder input
    assert "Completeness" in delta and table["headers"] == ["sequence", "position", "token", "attribution", "share"]
    assert figure(graph)["layout"]["annotations"]  # the contribution graph's place (branch flow)


def test_contributions_bad_input(client):
    status = client.predict("3 May 2024", 99, "", "", "integrated_gradients", 8, HEADS, HEADS, HEADS,
                            api_name="/contributions")[0]
    assert "⚠️" in status and "Position 99 is outside" in status and "Traceback" not in status
    status = client.predict("", -1, "", "", "integrated_gradients", 8, HEADS, HEADS, HEADS,
                            api_name="/contributions")[0]
    assert "Type a sentence first" in status
