"""/features, /switch_latents and /steer through gradio_client on an app started on date-gpt with an SAE in an
allowed folder: the parameters are named as docs/features.md lists them, its example runs as written, and bad input
is one message on the status line, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("gradio_client")

from tests.app.test_api import run_documented  # noqa: E402
from tests.hang import gradio_client  # noqa: E402

PARAMETERS = {"/features": ["sentence1", "sae", "latent"],
              "/switch_latents": ["sentence1", "sae", "switches", "continue_tokens"],
              "/steer": ["sentence1", "contrast", "toward", "layer", "coefficient", "continue_tokens"]}
RETURNS = {"/features": 9, "/switch_latents": 3, "/steer": 3}


@pytest.fixture(scope="module")
def client(features_app):
    """A client of the app on date-gpt with the SAE folder holding date-gpt-sae allowed (tests/app/conftest.py)."""
    return gradio_client(features_app)


def test_the_endpoints_are_named_and_documented(client):
    info = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    doc = (Path(__file__).resolve().parents[2] / "docs" / "features.md").read_text()
    for name, parameters in PARAMETERS.items():
        assert [p["parameter_name"] for p in info[name]["parameters"]] == [*parameters, "lang"], name
        assert len(info[name]["returns"]) == RETURNS[name], name
        assert f"`{name}`" in doc and all(f"`{p}`" in doc for p in parameters)


def test_the_documented_example_runs_as_written(client):
    scope = run_documented(client, "docs/features.md", 'api_name="/features"')
    assert scope["status"] == "" and "date-gpt-L3-resid-pre" in scope["reading"]  # the shipped SAE, by name
    assert isinstance(scope["latent"], (int, float))
    heatmap = json.loads(scope["heatmap"]["plot"])
    assert heatmap["data"][0]["type"] == "heatmap" and f"latent {int(scope['latent'])}" in heatmap["data"][0]["x"]
    assert "<span" in scope["examples"] and scope["tokens"]["headers"][:2] == ["rank", "promotes"]
    table = scope["table"]
    assert table["headers"][:2] == ["run", "output"] and table["data"][0][:2] == ["baseline", "2026-11-21"]
    assert table["data"][1][0] == "steered"


def test_nothing_switched_is_the_baseline_and_bad_input_is_a_message(client):
    status, verdict, table = client.predict("21/11/2026", "date-gpt-sae", "", 12, api_name="/switch_latents")
    assert status == "" and "Nothing is switched" in verdict
    assert table["data"][0][1:] == table["data"][1][1:]  # the same output, token probabilities and all
    bad = {("/features", ("21/11/2026", "/etc", None)): "Unknown SAE",
           ("/features", ("21/11/2026", "date-gpt-sae", 999)): "Latent 999 is not a latent of this SAE",
           ("/switch_latents", ("21/11/2026", "date-gpt-sae", "3:offf", 12)): "latent switch",
           ("/steer", ("21/11/2026", "", "", 1, 4.0, 12)): "Type a contrast text"}
    for (name, args), message in bad.items():
        status = client.predict(*args, api_name=name)[0]
        assert status.startswith("⚠️") and message in status and "Traceback" not in status, (name, status)
