"""Launch the app on 127.0.0.1 (a free port) and drive every named endpoint with gradio_client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("gradio_client")

from gradio_client import exceptions as client_errors  # noqa: E402

from tests.hang import HANG_S, gradio_client  # noqa: E402

BUILD = ["custom", "encoder-decoder", 2, 4, 32, 64, "pre-norm", "sinusoidal", 0, "cpu"]
DATE1, DATE2 = "samedi 21 novembre 2026", "3 May 2024"


@pytest.fixture(scope="module")
def client(default_app):
    """A client of the app as `python app.py` starts it (the session's, tests/app/conftest.py)."""
    return gradio_client(default_app)


def figure(value) -> dict:
    """A gr.Plot output as the Plotly JSON dict (with its config)."""
    assert value["type"] == "plotly"
    return json.loads(value["plot"])


def test_named_endpoints_exist_and_the_api_tab_lists_what_a_client_sees(client):
    """The served API tab lists the endpoints as gradio_client reads them: each name, its parameters in order and
    its line."""
    from explorer.app.tabs.api.endpoints import endpoint_list, endpoints_of

    view = client.view_api(print_info=False, return_format="dict")
    names = set(view["named_endpoints"])
    assert {"/load_model", "/build_model", "/analyze", "/positional", "/importance", "/download_view"} <= names
    text = next(c["props"]["value"] for c in client.config["components"] if c["props"].get("elem_id") == "api-text")
    assert endpoint_list(endpoints_of(view, client.config)) in text
    assert {name for name in names if f"- `{name}(" not in text} == set()


def test_analyze_in_a_fresh_session(client):
    """A client that never loaded a model analyses with the starting model (its heads are the defaults)."""
    fresh = gradio_client(client.src)
    info = fresh.view_api(print_info=False, return_format="dict")["named_endpoints"]["/analyze"]["parameters"]
    defaults = {p["parameter_name"]: p.get("parameter_default") for p in info}
    heads = defaults["encoder_heads_on"] or []
    assert heads, "the head checkboxes start with the starting model's heads"
    out = fresh.predict("21/11/2026", "", True, True, "none", 0, 2, heads[1:], defaults["decoder_heads_on"],
                        defaults["cross_heads_on"], defaults["kind"], 0, 0, 1, api_name="/analyze")
    assert "⚠️" not in out[0] and out[3]["data"]


def test_build_analyze_importance(client):
    out = client.predict(*BUILD, api_name="/build_model")
    status, model_md = out[0], out[1]
    assert "Built" in status and "encoder-decoder" in model_md
    heads_on = [f"L{l} H{h}" for l in range(2) for h in range(4)]
    args = [DATE1, DATE2, True, True, "none", 0, 2, heads_on, heads_on, heads_on, "cross", 1, 2, 1]
    base = client.predict(*args, api_name="/analyze")
    status, tokens, summary, output = base[0], base[1], base[2], base[3]
    assert "Largest change" in summary
    assert "⚠️" not in status and base[14].startswith("No toggle is active")  # the state line
    assert tokens["headers"] == ["sentence", "position", "token", "id"]
    head_fig = figure(base[5])
    assert head_fig["config"]["toImageButtonOptions"]["format"] == "png"  # PNG from the toolbar
    assert "cross-attention" in head_fig["layout"]["title"]["text"]
    off = list(args)
    off[9] = []  # every cross-attention head off
    toggled = client.predict(*off, api_name="/analyze")
    assert toggled[3]["data"] != output["data"]
    assert figure(toggled[5]) != head_fig
    status, md, fig = client.predict(DATE1, DATE2, True, True, "none", 0, 2, "cross", api_name="/importance")
    assert "log-probability" in md and figure(fig)["data"]


def test_positional(client):
    status, heat, curves, sim, model_fig, scheme, *more = client.predict(32, 20, 10000, api_name="/positional")
    assert "This model uses" in scheme and figure(model_fig)["data"] and len(more) == 3  # the model's own scheme
    z = figure(heat)["data"][0]["z"]  # plotly.py 7 sends arrays as base64 typed arrays
    assert (z["shape"].replace(" ", "") if isinstance(z, dict) else f"{len(z)},{len(z[0])}") == "20,32"
    with pytest.raises(client_errors.AppError, match="greater than maximum"):  # the field's bounds
        client.predict(5000, 20, 10000, api_name="/positional")


def test_load_model_and_errors(client):
    out = client.predict("sentence-transformers/all-MiniLM-L6-v2", "", "cpu", api_name="/load_model")
    assert "Loaded" in out[0] and "sentence-embedding" in out[1]
    bad = client.predict("sentence-transformers/all-MiniLM-L6-v2", "no-such-owner/no-such-model", "cpu",
                         api_name="/load_model")
    assert "cannot load" in bad[0]
    esc = client.predict("sentence-transformers/all-MiniLM-L6-v2", "../../etc/passwd", "cpu", api_name="/load_model")
    assert "⚠️" in esc[0]
    res = client.predict("   ", "", True, True, "none", 0, 2, [], [], [], "encoder", 0, 0, 1, api_name="/analyze")
    assert "empty" in res[0]
    bad_cfg = client.predict("custom", "encoder", 2, 4, 30, 64, "pre-norm", "sinusoidal", 0, "cpu",
                             api_name="/build_model")
    assert "30: is not divisible" in bad_cfg[0] and "Traceback" not in bad_cfg[0]


def run_documented(client, page, marker: str) -> dict:
    """Run the gradio_client example of a documentation page (the python block containing `marker`) against this
    app, as written except for the address; returns the block's variables."""
    from tests.markdown import NEEDS_APP, ROOT, code_blocks

    block = next(b for b in code_blocks(ROOT / page, "python") if b.startswith(NEEDS_APP) and marker in b)
    code = block.replace('Client("http://127.0.0.1:7860/")',
                         f"Client({client.src!r}, verbose=False, httpx_kwargs={{'timeout': {HANG_S}}})")
    assert code != block
    scope: dict = {}
    exec(compile(code, page, "exec"), scope)
    return scope


def test_the_http_api_example_runs_as_written(client):
    """docs/http-api.md's /analyze example: every parameter given, in order."""
    scope = run_documented(client, "docs/http-api.md", 'api_name="/analyze"')
    status, output = scope["status"], scope["output"]
    assert "⚠️" not in status and output["headers"][:3] == ["#", "run", "output"]
    assert [row[2] for row in output["data"] if row[1] == "baseline"] == ["2026-11-21", "2026-11-21"]
    assert len(scope["result"]) == 17  # status, 3 tables / texts, 10 figures, the state line, the output tokens, the
    # sampling view (greedy here: in words)
    assert "Greedy decoding" in figure(scope["result"][16])["layout"]["annotations"][0]["text"]
    assert scope["result"][14].split("\n\n")[0] == "Toggles: every cross head off" and scope["result"][15]
    assert "“2·2” in the figures = the 2nd “2”" in scope["result"][14]  # 2026-11-21 repeats its digits


def test_the_sampling_example_runs_as_written_and_its_parameters_come_last(client):
    """docs/http-api.md's sampling example (parameters by name): the state line says how the answer was drawn, the
    answer is the seeded one (tests/app/test_sampling_run.py computes it by hand), the last return draws the first
    draw; the five parameters come after every earlier one, each with its default (greedy), and only the display's
    two (size, mode: how the page is drawn) and the page's language (lang: its state line's words) after them."""
    scope = run_documented(client, "docs/http-api.md", "sample=True")
    assert "⚠️" not in scope["status"]
    assert scope["state"].split("\n\n")[0].endswith("sampled: T=2, top-k=6, top-p=0.9, seed=3")
    assert scope["output"]["data"][0][1:3] == ["baseline", "t4 t5 t77 t62 t96 t264 t273 t255"]
    view = figure(scope["sampling_view"])
    assert "drawn with u = " in json.dumps(view) and "top-k 6" in json.dumps(view)
    params = client.view_api(print_info=False, return_format="dict")["named_endpoints"]["/analyze"]["parameters"]
    assert [(p["parameter_name"], p["parameter_default"]) for p in params[-8:]] == [
        ("sample", False), ("temperature", 1.0), ("top_k", 0), ("top_p", 1.0), ("seed", 0), ("size", "normal"),
        ("mode", "full"), ("lang", "en")]
    bad = gradio_client(client.src).predict(sentence1="3 May 2024", sample=True, top_p=2, api_name="/analyze")
    assert bad[0].startswith("⚠️ Sampling: top\\_p must be above 0 and at most 1")


def test_the_readme_http_example_runs_as_written(client):
    """The README's taste of the HTTP API: parameters by name, the others the page's defaults; the cross-attention
    head it switches off changes the month, as the README says."""
    scope = run_documented(client, "README.md", 'api_name="/analyze"')
    assert "⚠️" not in scope["status"]
    answers = {row[1]: row[2] for row in scope["output"]["data"]}
    assert answers == {"baseline": "2014-06-10", "toggled": "2014-01-10"}


def test_roles_switch_off_role_lens_and_patching(client):
    """The head-role, patching and lens endpoints on the starting model (date-translator), in a fresh session."""
    fresh = gradio_client(client.src)
    names = set(fresh.view_api(print_info=False, return_format="dict")["named_endpoints"])
    assert {"/roles", "/switch_off_role", "/patching", "/lens"} <= names
    heads = [f"L{l} H{h}" for l in range(2) for h in range(4)]
    status, md, probe_fig, text_fig = fresh.predict(DATE1, "decoder", heads, heads, heads, api_name="/roles")
    assert status == "" and "Strongest head per role on the probe" in md
    assert len(figure(probe_fig)["data"]) == 6 and len(figure(text_fig)["data"]) == 6  # one map per role
    status, message, enc, dec, cross = fresh.predict(DATE1, "decoder", "self", 2, "probe",
                                                     api_name="/switch_off_role")
    assert status == "" and "Switched off the top 2 self heads of the decoder, ranked on their self score on the probe: L" in message
    assert enc == heads and cross == heads and len(dec) == 6 and set(dec) < set(heads)
    status, md, fig = fresh.predict(DATE1, api_name="/lens")
    assert status == "" and "the model predicts" in md and figure(fig)["data"]
    status, md, fig = fresh.predict(DATE1, DATE2, "", "", api_name="/patching")
    assert status == "" and "Metric: logit" in md and figure(fig)["data"]
    status, md, fig = fresh.predict(DATE1, "", "", "", api_name="/patching")
    assert "second box" in status and "Traceback" not in status


def test_the_http_api_keeps_every_documented_parameter_and_return_in_place(client):
    """gradio_client's view_api() against tests/app/api_reference.json, taken before the page was one module per tab:
    the same endpoints with the same parameters (names, order, components, defaults, schema types; a Radio may gain
    choices) and the same returns, in order; a newer parameter comes after them with a default, a newer return after
    them. /load_model and /build_model return
    the page's components a model change updates: everything they returned before is still there. Gradio labels
    unlabelled components "value_<id>": ids are not compared."""
    import re
    from collections import Counter
    from pathlib import Path

    def normal(x):
        return json.loads(re.sub(r"value_\d+", "value_*", json.dumps(x, sort_keys=True)))

    def contract(param):
        """What a caller relies on: name, place, component, default, the schema's type (a whole-number dropdown's
        choices are "integer" since explorer.app.serving.api_inputs: the reference says so). A label or a new choice of a
        Radio is not."""
        keys = ("parameter_name", "component", "parameter_default", "parameter_has_default")
        schema = param["type"]
        return {**{k: param.get(k) for k in keys}, "type": (schema.get("type"), schema.get("items", {}).get("type"))}

    def choices(param):
        return set(param["type"].get("enum", ()))

    reference = json.loads((Path(__file__).parent / "api_reference.json").read_text())
    now = normal(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    assert set(reference) <= set(now)
    for name, before in reference.items():
        params = now[name]["parameters"]
        assert [contract(p) for p in params[:len(before["parameters"])]] == [contract(p) for p in before["parameters"]], name
        assert all(choices(b) <= choices(p) for b, p in zip(before["parameters"], params)), name
        assert all(p["parameter_has_default"] for p in params[len(before["parameters"]):]), name
        if name in ("/load_model", "/build_model"):
            counted = Counter(json.dumps(r, sort_keys=True) for r in now[name]["returns"])
            assert not Counter(json.dumps(r, sort_keys=True) for r in before["returns"]) - counted, name
        else:
            assert now[name]["returns"][:len(before["returns"])] == before["returns"], name


def test_a_link_too_long_to_open_gets_a_page_in_words(client):
    """8,000 CJK characters in s1 make a 72 kB URL: the app answers with a page that says so, not Gradio's bare 500."""
    import urllib.error
    import urllib.request
    from urllib.parse import quote

    url = client.src.rstrip("/") + "/?s1=" + quote("日本語のテキスト" * 1000)
    assert len(url) > 65_536
    try:
        urllib.request.urlopen(url, timeout=HANG_S)
        raise AssertionError("a 72 kB link opened")
    except urllib.error.HTTPError as err:
        status, text = err.code, err.read().decode()
    assert status == 414 and "This link is too long to open" in text and "Open Transformer Explorer" in text


def test_head_computation_example_runs_as_written(client):
    """docs/http-api.md's /head_computation example (a fresh session on date-translator): its parameters are named as
    /analyze names them, the numbers come back as JSON (the toggled run without the causal mask sees key 4), and a
    query past the end or a head the model lacks is a message in the status."""
    info = client.view_api(print_info=False, return_format="dict")["named_endpoints"]["/head_computation"]
    analyze = client.view_api(print_info=False, return_format="dict")["named_endpoints"]["/analyze"]["parameters"]
    names = [p["parameter_name"] for p in info["parameters"]]
    assert names[:14] == [p["parameter_name"] for p in analyze][:14]
    assert names[14:] == ["continue_tokens", "measure", "query", "lines_heads", "keys", "words", "lang"]
    scope = run_documented(client, "docs/http-api.md", 'api_name="/head_computation"')
    numbers, base, toggled = scope["numbers"], scope["base"], scope["toggled"]
    assert scope["status"] == "" and numbers["changes"] == ["causal mask off", "decoder L0 H1 off"]
    assert base["query"] == 3 and base["blocked_by"][4] == "causal" and toggled["blocked_by"][4] == ""
    assert base["masked_scores"][4] is None and toggled["masked_scores"][4] is not None
    assert abs(sum(base["weights"]) - 1) < 1e-5 and base["scale"] == 0.25
    assert [t["type"] for t in figure(scope["figure"])["data"]][:2] == ["heatmap", "heatmap"]
    assert figure(scope["lines"])["layout"]["sliders"] and figure(scope["query_key"])["data"]
    assert scope["table"]["headers"][:3] == ["key", "token", "blocked"]
    steps = numbers["steps"]  # the worked example (plain words by default): the toggled run's, key 4 seen
    assert abs(steps["weight_total"] - 1) < 1e-5 and "(the sum) = weight" in scope["steps"]
    assert all(abs(k["weight"] - toggled["weights"][k["key"]]) < 1e-6 for k in steps["keys"])
    heads, fresh = scope["heads"], gradio_client(client.src)  # a session on the starting model
    for query, head, message in ((40, 2, "query position 40 is outside"), (3, 9, "head 9 is outside the 4 heads")):
        out = fresh.predict(DATE1, "", True, True, "none", 0, 2, heads, heads, heads, "decoder", 1, head, 1, 8,
                             "weights", query, [], api_name="/head_computation")
        assert out[0].startswith("⚠️") and message in out[0] and "Traceback" not in out[0]


def test_download_view_writes_the_last_analyze_as_a_file(client):
    """/download_view: a Run-drawn tab of the client's last /analyze as the self-contained HTML file, with the
    state and a link that reopens it; a tab with its own endpoint, or no /analyze yet, is a message."""
    fresh = gradio_client(client.src)
    status = fresh.predict("attention", api_name="/download_view")[1]
    assert status.startswith("⚠️ Call /analyze first"), status
    fresh.predict(sentence1="<b>3 May 2024</b>", sentence2="", cross_heads_on=["L0 H0"], measure="values",
                  api_name="/analyze")
    path, status = fresh.predict("overview", api_name="/download_view")
    assert status == "", status
    text = Path(path).read_text(encoding="utf-8")
    assert text.count('type="application/json"') >= 1  # the figures, after plotly.js inlined once
    assert "&lt;b&gt;3 May 2024&lt;/b&gt;" in text and "<b>3 May" not in text  # the sentence as text
    assert "Toggles: " in text  # the state line: the switches of the Run in words
    assert "tab=overview" in text and "off=cross" in text  # the link carries the Run's switches
    assert "measure=values" in text  # and what its maps measure
    status = fresh.predict("roles", api_name="/download_view")[1]
    assert "⚠️" in status and "exports a tab the Run draws" in status, status
