"""/set_model2 and /compare_models through gradio_client: two tiny language models with different tokenizers, and
the shipped date-translator vs date-gpt; each side's figures are the model's own, head switches apply per model."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

pytest.importorskip("gradio_client")

from explorer.app.run.toggles import Toggles  # noqa: E402
from explorer.app.run.view import View  # noqa: E402
from explorer.app.serving.registry import ModelRegistry  # noqa: E402
from explorer.app.serving.session import AppContext, load_session  # noqa: E402
from explorer.app.tabs import analyze  # noqa: E402
from explorer.viz.serialize import figure_json  # noqa: E402
from tests.hang import gradio_client  # noqa: E402

TEXT = "The cat sat on the mat"
OUTPUTS = ["status", "summary", "md1", "head1", "overview1", "output1", "md2", "head2", "overview2", "output2"]
PARAMETERS = ["model2", "sentence1", "sentence2", "padding_mask", "causal_mask", "custom_mask", "blocked_position",
              "window", "encoder_heads_on", "decoder_heads_on", "cross_heads_on", "kind", "layer", "head", "sentence",
              "predict_after", "continue_tokens", "measure", "kind2", "layer2", "head2", "encoder_heads_on2",
              "decoder_heads_on2", "cross_heads_on2"]


@pytest.fixture(scope="module")
def folder(lm_folder):
    """tiny-gpt2 and tiny-llama (tests/app/conftest.py)."""
    return lm_folder


@pytest.fixture(scope="module")
def url(lm_app):
    """The app on tiny-gpt2, the folder allowed."""
    return lm_app


def compared(client, **kwargs) -> dict:
    return dict(zip(OUTPUTS, client.predict(**kwargs, api_name="/compare_models")))


def data(plot) -> list:
    """A gr.Plot output's traces."""
    return json.loads(plot["plot"])["data"]


def decoded(value):
    """Plotly's base64 typed arrays as numpy arrays, recursively (other values as they are)."""
    if isinstance(value, dict) and set(value) >= {"dtype", "bdata"}:
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
    if isinstance(value, dict):
        return {k: decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decoded(v) for v in value]
    return value


def assert_same_traces(sent: list, own: list) -> None:
    """Equal traces; numbers within 1e-5 (the server computes with its own share of the cores, so sums may round
    in another order than this process's), every label and setting exactly."""
    assert len(sent) == len(own)
    for a, b in zip(sent, own):
        a, b = decoded(a), decoded(b)
        assert set(a) == set(b)
        for key in a:
            if isinstance(a[key], np.ndarray):
                np.testing.assert_allclose(a[key], b[key], atol=1e-5, err_msg=key)
            else:
                assert a[key] == b[key], key


def alone(folder, name, text, toggles, view, new_tokens):
    ctx = AppContext(ModelRegistry(), (str(folder),))
    return analyze(load_session(name, "cpu", ctx)[1], text, "", toggles, view, new_tokens=new_tokens)


def test_endpoints_and_their_parameters(url):
    api = gradio_client(url).view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert [p["parameter_name"] for p in api["/compare_models"]["parameters"]] == [*PARAMETERS, "lang"]
    assert len(api["/compare_models"]["returns"]) == len(OUTPUTS)
    assert [p["parameter_name"] for p in api["/set_model2"]["parameters"]] == ["model2", "lang"]


def test_two_language_models_with_their_own_tokens_and_switches(url, folder):
    client = gradio_client(url)
    status, model2, kind2, layer2, head2, _, dec2, _ = client.predict("tiny-llama", api_name="/set_model2")
    assert "tiny-llama" in status and model2 == "tiny-llama" and kind2["value"] == "decoder"
    labels2 = dec2["value"]
    assert labels2 == ["L0 H0", "L0 H1", "L1 H0", "L1 H1"]  # the second model's own heads, all on
    labels1 = [f"L{la} H{h}" for la in range(2) for h in range(6)]
    common = dict(model2="tiny-llama", sentence1=TEXT, sentence2="", decoder_heads_on=labels1, layer=1, head=4,
                  continue_tokens=3, layer2=1, head2=1)
    plain = compared(client, **common, decoder_heads_on2=labels2)
    assert "⚠️" not in plain["status"]
    assert "### tiny-gpt2" in plain["md1"] and "### tiny-llama" in plain["md2"]
    assert "␣the" in plain["md1"] and "&lt;s&gt;" in plain["md2"]  # each model's own tokens, escaped
    assert plain["output1"]["headers"][2] == "next token (baseline)"
    # Each side's figures are the model's own Run with its view.
    for name, side, view in (("tiny-gpt2", "1", View("decoder", 1, 4)), ("tiny-llama", "2", View("decoder", 1, 1))):
        own = alone(folder, name, TEXT, Toggles(), view, 3)
        assert_same_traces(data(plain["head" + side]), json.loads(figure_json(own.figures("attention")["head"]))["data"])
        assert_same_traces(data(plain["overview" + side]),
                           json.loads(figure_json(own.figures("overview")["overview"]))["data"])
        # The top 10's probabilities (rounded to 4 places); a random model's near-equal ones may swap ranks.
        np.testing.assert_allclose([r[3] for r in plain["output" + side]["data"]], [r[3] for r in own.output.rows],
                                   atol=2e-4)
    # Switching heads of the second model off changes its side only.
    off = compared(client, **common, decoder_heads_on2=["L1 H1"])
    assert off["output1"]["data"] == plain["output1"]["data"] and data(off["head1"]) == data(plain["head1"])
    assert off["output2"]["data"] != plain["output2"]["data"]
    assert "changed" in off["md2"] and "changed" not in plain["md2"]


def test_date_translator_vs_date_gpt(url):
    client = gradio_client(url)
    load = client.predict("date-translator", "", "cpu", api_name="/load_model")
    assert "Loaded" in load[0]
    dec2 = client.predict("date-gpt", api_name="/set_model2")[6]["value"]
    enc = [f"L{la} H{h}" for la in range(2) for h in range(4)]
    out = compared(client, model2="date-gpt", sentence1="3 May 2024", sentence2="", encoder_heads_on=enc,
                   decoder_heads_on=enc, cross_heads_on=enc, kind="cross", layer=1, head=0, kind2="decoder",
                   layer2=3, head2=2, decoder_heads_on2=dec2)
    assert "⚠️" not in out["status"]
    assert out["output1"]["data"][0][2] == out["output2"]["data"][0][2] == "2024-05-03"  # both read the date
    assert "cross-attention" in json.loads(out["head1"]["plot"])["layout"]["title"]["text"]
    assert "L3 H2" in json.loads(out["head2"]["plot"])["layout"]["title"]["text"]


def test_bad_second_model_and_the_same_model_twice(url):
    client = gradio_client(url)
    status = client.predict("no-such-model", api_name="/set_model2")[0]
    assert status.startswith("⚠️") and "no-such-model" in status
    assert compared(client, model2="no-such-model")["status"].startswith("⚠️")
    assert "Choose a second model" in compared(client, model2="  ")["status"]
    same = compared(client, model2="tiny-gpt2", sentence1=TEXT, sentence2="", continue_tokens=2)
    assert "⚠️" not in same["status"] and same["output1"]["data"] == same["output2"]["data"]


def test_the_client_example_of_the_docs(url, capsys):
    """docs/compare.md's gradio_client example, run against this app."""
    import re
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "compare.md"
    block = next(b for b in re.findall(r"```python\n(.*?)```", doc.read_text(), re.S)
                 if b.startswith("# needs a running app"))
    assert 'Client("http://127.0.0.1:7860/")' in block
    block = block.replace("from gradio_client import Client", "Client = client_of  # tests.hang's, with its guard")
    exec(compile(block.replace('Client("http://127.0.0.1:7860/")', "Client(URL)"), "compare.md", "exec"),
         {"URL": url, "client_of": gradio_client})
    printed = capsys.readouterr().out
    assert "date-translator" in printed and "2024-05-03" in printed


def test_a_links_model2_sets_the_second_model_and_a_copied_link_carries_it():
    """The Compare models tab's link key: ?tab=compare&model2=date-gpt sets the tab's second model; a copied link
    names the second model while the Compare models tab is shown, and only then."""
    from types import SimpleNamespace

    from explorer.app.demo import starting_point
    from explorer.app.events import PageEvents
    from explorer.app.link.opening import LinkEvents
    from explorer.app.page.layout import layout
    from explorer.app.serving.session import Session
    from explorer.app.tabs import TABS

    ctx = AppContext(ModelRegistry())
    page = layout(starting_point(ctx, "date-translator", "cpu"), Session("date-translator", "cpu"), TABS)
    with page.demo:
        link = LinkEvents(PageEvents(page, ctx))
    t = page.parts["compare"]
    request = SimpleNamespace(query_params={"tab": "compare", "model2": "date-gpt", "layer": "1"})
    updates = link.open_page(Session("date-translator", "cpu"), request)
    assert updates[t.model2] == "date-gpt" and updates[page.visible_tab] == "compare"
    assert len(updates[t.heads2["decoder"]]["value"]) == 16 and not updates[page.inputs.link_notice]
    bad = link.open_page(Session("date-translator", "cpu"),
                         SimpleNamespace(query_params={"tab": "compare", "model2": "no-such/model-here"}))
    assert "model2" in bad[page.inputs.link_notice] and t.model2 not in bad
    heads = [f"L{la} H{h}" for la in range(2) for h in range(4)]
    tab_values = {"model2": "date-gpt"}
    for tab, carried in (("compare", True), ("overview", False)):
        shown = {s.name: s.default for s in page.table}  # a setting added later keeps its default
        shown |= dict(sentence1="3 May 2024", sentence2="", tab=tab, kind="cross", layer=0, head=0, sentence=1,
                      measure="weights", encoder_heads_on=heads, decoder_heads_on=heads, cross_heads_on=heads,
                      padding_mask=True, causal_mask=True, custom_mask="none", blocked_position=0, window=2,
                      predict_after=-1, continue_tokens=10, sample=False, temperature=1.0, top_k=0, top_p=1.0, seed=0)
        values = [Session("date-translator", "cpu"), *(shown[name] for name in link.linked),
                  *(tab_values.get(k.key) for t in TABS for k in t.link_keys)]
        query = link.copy_link(*values)[page.inputs.link_query]
        assert ("model2=date-gpt" in query) == carried, query
