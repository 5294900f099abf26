"""The HTTP API's types, as documented and as accepted (explorer.app.serving.api_inputs), through gradio_client against a
served app on the shipped date-translator (2 layers x 4 heads per kind): every endpoint's number, choice, checkbox and
text parameters refuse a value of the wrong type (text, a list, NaN, infinity, a subnormal number) with a message
that names the parameter, the value and what it takes, never Gradio's wordless error; the layer, head and sentence
choices view_api lists as text (`Literal['0', '1']`) are accepted as text and as numbers, with the same answer."""

from __future__ import annotations

import json
import math
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("gradio_client")
httpx = pytest.importorskip("httpx")

from gradio_client import exceptions as client_errors  # noqa: E402

from tests.app.test_api import client  # noqa: E402,F401  - the served app (its fixture, one per module)
from tests.hang import HANG_S, gradio_client  # noqa: E402

NAN, INF = math.nan, math.inf
SUBNORMAL = 1e-320  # below 2.2e-308: no parameter means one; a temperature this small overflowed
WORDLESS = "has not enabled verbose error reporting"  # gradio_client's text for Gradio's `"error": null`


def endpoints(client) -> dict:
    return client.view_api(print_info=False, return_format="dict")["named_endpoints"]


def whole_choices(param: dict) -> bool:
    """A dropdown whose choices are whole numbers (layer, head, sentence, lines_heads)."""
    schema = param["type"].get("items", param["type"])
    return bool(schema.get("enum")) and all(isinstance(v, int) for v in schema["enum"])


KINDS = ("text", "list", "NaN", "infinity", "subnormal")


def wrong_value(param: dict, kind: str):
    """A value of the wrong type for `param`, by its component (None where `kind` is its type: text for a text box
    or a dropdown of text, which may take a value of its own such as a Hub id; a list for a group)."""
    component, schema = param["component"], param["type"]
    if kind == "text":
        return None if component == "Textbox" or (component == "Dropdown" and not whole_choices(param)) else "abc"
    if kind == "list":
        return (["abc"] if whole_choices(param) else [1, 2]) if schema.get("type") == "array" else ["abc"]
    return {"NaN": NAN, "infinity": INF, "subnormal": SUBNORMAL}[kind]


def shown(value) -> str:
    """How a refusal quotes a value (explorer.app.serving.api_inputs.shown)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "infinity"
    return repr(value)


def raw_call(caller, api_name: str, data: list) -> str:
    """The event's closing message for `data` (every parameter) sent as raw JSON: NaN and Infinity are not JSON,
    gradio_client refuses to send them, a raw client may."""
    base = caller.src.rstrip("/")
    body = json.dumps({"data": data}, allow_nan=True)
    posted = httpx.post(f"{base}/gradio_api/call{api_name}", content=body, timeout=HANG_S,
                        headers={"content-type": "application/json"})
    event = posted.json()["event_id"]
    return httpx.get(f"{base}/gradio_api/call{api_name}/{event}", timeout=HANG_S).text


def refusal(caller, api_name: str, data: list) -> str:
    """The error message of one call of `api_name` with `data` (every parameter, in order)."""
    if any(isinstance(v, float) and not math.isfinite(v) for v in data):
        text = raw_call(caller, api_name, data)
        assert "event: error" in text, text[:300]
        return str(json.loads(text.split("data:", 1)[1].strip().splitlines()[0])["error"])
    try:
        out = caller.predict(*data, api_name=api_name)
    except client_errors.AppError as err:
        return str(err)
    raise AssertionError(f"{api_name} {data!r} was accepted: {str(out)[:200]}")


def test_every_wrong_type_is_refused_in_words_naming_the_parameter(client):
    """Every endpoint, every parameter, every wrong type: each refused parameter gets a line
    `{parameter}: got {value}...; it takes ...` (Gradio's own error for most of these had no words: `"error": null`).
    One call per endpoint and kind of wrong value, every parameter wrong at once: the refusal lists them all."""
    calls = []
    for name, info in endpoints(client).items():
        params = info["parameters"]
        for kind in KINDS:
            wrong = {i: wrong_value(p, kind) for i, p in enumerate(params)}
            wrong = {i: v for i, v in wrong.items() if v is not None}
            if not wrong:
                continue  # /load_model's text: every parameter takes text
            data = [wrong.get(i, p["parameter_default"]) for i, p in enumerate(params)]
            calls.append((name, kind, {params[i]["parameter_name"]: v for i, v in wrong.items()}, data))
    local = threading.local()

    def sent(call: tuple) -> str:
        if not hasattr(local, "caller"):
            local.caller = gradio_client(client.src)  # one client per thread: a client waits for one call at once
        return refusal(local.caller, call[0], call[3])

    with ThreadPoolExecutor(4) as pool:  # independent calls; the queue serves four at once
        messages = list(pool.map(sent, calls))
    missing = []
    for (name, kind, wrong, _), message in zip(calls, messages):
        lines = message.split("\n")
        assert WORDLESS not in message and len(lines) == len(wrong), (name, kind, message[:300])
        for param, value in wrong.items():
            if not any(line.startswith(f"{param}: got {shown(value)}") and "; it takes " in line for line in lines):
                missing.append(f"{name} {param}={value!r}: {message[:200]}")
    assert not missing, "\n".join(missing)
    swept = {name for name, *_ in calls}
    reference = json.loads((Path(__file__).parent / "api_reference.json").read_text())
    assert set(reference) | {"/analyze", "/head_computation", "/contributions", "/features", "/steer", "/lens",
                              "/patching", "/roles", "/importance", "/compare_models"} <= swept
    refused = sum(len(wrong) for _, _, wrong, _ in calls)
    assert refused > 400  # every parameter of every endpoint, several kinds of wrong value each


def test_a_refusal_names_the_bound_it_breaks(client):
    """Out of a field's range: the bound in words, as Gradio said it, now with the parameter."""
    fresh = gradio_client(client.src)
    with pytest.raises(client_errors.AppError, match=r"^d_model: got 5000, greater than maximum value 1024; it takes "
                                                     r"a whole number from 2 to 1024"):
        fresh.predict(5000, 20, 10000, api_name="/positional")
    with pytest.raises(client_errors.AppError, match=r"^window: got -1, less than minimum value 0"):
        fresh.predict(sentence1="3 May 2024", window=-1, api_name="/analyze")
    with pytest.raises(client_errors.AppError, match=r"^seed: got 1e\+300, more than 9,007,199,254,740,991 in size"):
        fresh.predict(sentence1="3 May 2024", seed=1e300, api_name="/analyze")
    with pytest.raises(client_errors.AppError, match=r"^encoder_heads_on: got \[.* \(a list\), 9 entries for 8 choices"):
        fresh.predict(sentence1="3 May 2024", encoder_heads_on=["L0 H0"] * 9, api_name="/analyze")


def test_whole_number_choices_are_documented_as_integers_and_accepted_as_listed(client):
    """layer, head, sentence (and the Compare tab's layer2, head2, the head tab's lines_heads): the schema says
    integer, view_api's Python type lists each choice as text; both forms are accepted, with the same answer."""
    info = endpoints(client)
    found = {}
    for name, endpoint in info.items():
        for p in endpoint["parameters"]:
            if whole_choices(p):
                schema = p["type"].get("items", p["type"])
                assert schema["type"] == "integer", (name, p["parameter_name"], p["type"])
                listed = re.findall(r"'([^']*)'", p["python_type"]["type"])
                assert listed == [str(v) for v in schema["enum"]], (name, p["python_type"])
                found.setdefault(name, {})[p["parameter_name"]] = schema["enum"]
    assert {"layer", "head", "sentence"} <= set(found["/analyze"]) and {"layer2", "head2"} <= set(found["/compare_models"])
    assert "lines_heads" in found["/head_computation"]

    fresh = gradio_client(client.src)
    for name in ("/analyze", "/head_computation", "/compare_models"):
        as_numbers = {k: ([v[-1]] if k == "lines_heads" else v[-1]) for k, v in found[name].items()}
        as_text = {k: ([str(x) for x in v] if k == "lines_heads" else str(v)) for k, v in as_numbers.items()}
        by_number = fresh.predict(sentence1="3 May 2024", **as_numbers, api_name=name)
        by_text = fresh.predict(sentence1="3 May 2024", **as_text, api_name=name)
        assert "⚠️" not in by_number[0] and by_text == by_number, name
    with pytest.raises(client_errors.AppError, match=r"^sentence: got '3' \(text\); it takes one of 1, 2"):
        fresh.predict(sentence1="3 May 2024", sentence="3", api_name="/analyze")


def test_the_smallest_temperature_samples_greedily_and_a_subnormal_one_is_refused(client):
    """Temperature 2e-308 (the smallest normal floats) divides nothing to -inf: the sampled answer is the greedy one;
    1e-320 is refused by name before any Run."""
    fresh = gradio_client(client.src)
    greedy = fresh.predict(sentence1="3 May 2024", api_name="/analyze")
    cold = fresh.predict(sentence1="3 May 2024", sample=True, temperature=2.5e-308, api_name="/analyze")
    sampled = [r[2] for r in cold[3]["data"] if r[1] != "greedy (Sample off)"]  # the greedy rows beside them
    assert "⚠️" not in cold[0] and sampled == [r[2] for r in greedy[3]["data"]]
    assert [r[2] for r in cold[3]["data"] if r[1] == "greedy (Sample off)"] == [r[2] for r in greedy[3]["data"]
                                                                                 if r[1] == "baseline"]
    assert "sampled: T=2.5e-308" in cold[14]
    with pytest.raises(client_errors.AppError, match=r"^temperature: got 1e-320, too small to compute with"):
        fresh.predict(sentence1="3 May 2024", sample=True, temperature=SUBNORMAL, api_name="/analyze")


def test_the_documented_refusals_are_what_a_client_reads(client):
    """docs/http-api.md's Types section quotes two refusals: each is the message gradio_client raises, word for
    word."""
    from tests.markdown import ROOT, code_blocks

    page = (ROOT / "docs/http-api.md").read_text()
    section = page[page.index("### Types"):]
    quoted = next(b for b in code_blocks(ROOT / "docs/http-api.md", "") if b in section).strip().splitlines()
    fresh = gradio_client(client.src)
    read = []
    for wrong in ({"layer": "abc"}, {"temperature": SUBNORMAL}):
        with pytest.raises(client_errors.AppError) as err:
            fresh.predict(sentence1="3 May 2024", **wrong, api_name="/analyze")
        read.append(str(err.value))
    assert quoted == read


def test_a_refusal_quotes_the_value_short_and_as_text():
    """The quoted value is cut (a 10 MB text, a million-entry list, a 400-digit number) and escaped: the page renders
    a gr.Error's message as HTML, and a value may come from a link someone else made."""
    import gradio as gr

    from explorer.app.serving.api_inputs import accepted

    box, group = gr.Textbox(), gr.CheckboxGroup(["L0 H0", "L0 H1"])
    messages = []
    for block, value in ((gr.Number(), "x" * 10**7), (group, ["<img src=x onerror=alert(1)>"] * 10**6),
                         (gr.Number(precision=0), 10**400), (box, ["<b>"])):
        with pytest.raises(gr.Error) as err:
            accepted(block, value, "p")
        messages.append(err.value.message)
    assert all(len(m) < 400 and "<" not in m for m in messages), messages
    assert messages[1].startswith("p: got ['&lt;img src=x onerror=alert(1)&gt;', ") and "1,000,000 entries" in messages[1]
    assert messages[2].startswith("p: got a whole number of about 401 digits, beyond a float's range")
    assert messages[3] == "p: got ['&lt;b&gt;'] (a list); it takes text"


def test_a_form_number_that_is_not_finite_is_refused_by_the_form_too():
    """Behind the boundary (a form built by keywords, as tests and Python callers do): infinity for a whole number,
    NaN or an int beyond float's range for the graph's threshold are an AppError, not an OverflowError."""
    from explorer.app.serving.errors import AppError
    from explorer.app.run.request import number_of, whole_number

    with pytest.raises(AppError, match="expected a whole number, got 'inf'"):
        whole_number(INF, 0)
    for value in (NAN, 10**400, "x"):
        with pytest.raises(AppError, match="^the graph's threshold must be a finite number, got"):
            number_of(value, 0.04, "the graph's threshold")
    assert number_of(None, 0.04, "t") == 0.04 and number_of("0.5", 0, "t") == 0.5
