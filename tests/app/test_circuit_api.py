"""The Circuit tab's events: its handler called with a typed form on the wired page (a first line while it computes,
then the circuit; a message for bad input, the typed pairs untouched), "keep only this circuit" setting the page's head
switches, and /circuit through gradio_client on the app as `python app.py` starts it (date-translator): named and
documented as docs/circuit-tab.md says, its example run as written, its files what the page shows."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from explorer.app.page.head_labels import head_labels
from explorer.app.serving.session import Session
from explorer.app.tabs.circuit.computation import CircuitResult
from explorer.app.tabs.circuit.forms import CircuitForm

pytest.importorskip("gradio_client")

from tests.app.test_api import run_documented  # noqa: E402
from tests.hang import gradio_client  # noqa: E402

SESSION = Session("date-translator", "cpu")
PARAMETERS = ["task", "pairs", "method", "metric", "edges", "held_out", "generated", "fresh"]
RETURNS = 7  # status, summary, graph, curve, table, CSV, JSON (a gr.State is no return)


@pytest.fixture(scope="module")
def events(page_events):
    return page_events


@pytest.fixture(scope="module")
def found(events):
    """The handler's updates for a generated month task on date-translator (EAP, a top-40 circuit)."""
    ev = events.tab_events["circuit"]
    return list(ev.found(CircuitForm(SESSION, generated=12, held_out=4, method="eap", edges=40)))


def test_the_handler_says_what_it_computes_then_shows_the_circuit(events, found):
    p = events.tab_events["circuit"].parts
    first, last = found
    assert first[events.status].startswith("Finding the circuit of 12 generated pairs")
    assert last[events.status] == "" and isinstance(last[p.result], CircuitResult)
    r = last[p.result]
    assert r.asked_edges == 40 and len(r.edges) <= 40 and r.found == 8 and r.held == 4
    assert "faithfulness" in last[p.summary] and last[p.table].shape[0] == min(50, len(r.edges))
    rows = list(csv.DictReader(io.StringIO(Path(last[p.csv_file]).read_text(encoding="utf-8"))))
    assert len(rows) == r.n_edges == 529 and sum(int(x["in_circuit"]) for x in rows) == len(r.edges)
    assert json.loads(Path(last[p.json_file]).read_text())["faithfulness"] == r.faithfulness
    graph = json.loads(last[p.graph].plot)
    assert sum(1 for t in graph["data"] if t.get("mode") == "lines") == len(r.edges)


def test_keep_only_this_circuit_switches_off_the_heads_outside_it(events, found):
    ev = events.tab_events["circuit"]
    r = found[-1][ev.parts.result]
    everything = [head_labels(2, 4)] * 3
    updates = ev.keep(SESSION, r, *everything)
    assert updates[events.status].startswith("Kept only the circuit's heads")
    for kind, group in events.page.heads.items():
        off = {f"L{la} H{h}" for la, h in r.off[kind]}
        assert updates[group] == [x for x in head_labels(2, 4) if x not in off], kind
    assert sum(len(h) for h in r.off.values()) > 0  # 40 edges leave heads out: the switches change
    message = ev.keep(SESSION, None, *everything)[events.status]
    assert message.startswith("⚠️") and "Find a circuit first" in message


def test_bad_input_is_one_message_and_the_pairs_stay(events):
    ev = events.tab_events["circuit"]
    for form, words in ((CircuitForm(SESSION, task="typed", pairs="lundi 3 mars 2025\nx | y | z | w | v"),
                         "2 bad rows"),
                        (CircuitForm(SESSION, task="typed", pairs=""), "No pairs"),
                        (CircuitForm(SESSION, task="typed", pairs="\n".join(
                            ["lundi 3 mars 2025 | lundi 3 juin 2025 | 2025-03"] * 65)), "more than this request"),
                        (CircuitForm(SESSION, held_out=40, generated=32), "keep at least one")):
        updates = list(ev.found(form))
        message = updates[-1][events.status]
        assert message.startswith("⚠️") and words in message and "Traceback" not in message, message
        assert ev.parts.pairs not in updates[-1]  # the typed pairs are no output: they stay as typed


@pytest.fixture(scope="module")
def client(default_app):
    return gradio_client(default_app)


def test_circuit_is_named_and_documented_and_its_example_runs(client):
    info = client.view_api(print_info=False, return_format="dict")["named_endpoints"]["/circuit"]
    assert [p["parameter_name"] for p in info["parameters"]] == [*PARAMETERS, "lang"] and len(info["returns"]) == RETURNS
    doc = (Path(__file__).resolve().parents[2] / "docs" / "circuit-tab.md").read_text()
    assert all(f"`{p}`" in doc for p in PARAMETERS) and "`/circuit`" in doc
    scope = run_documented(client, "docs/circuit-tab.md", 'api_name="/circuit"')
    assert scope["status"] == "" and "faithfulness" in scope["summary"]
    table = scope["table"]
    assert table["headers"][:4] == ["#", "from", "into", "input"] and table["data"]
    edges = list(csv.DictReader(io.StringIO(Path(scope["edges_csv"]).read_text(encoding="utf-8"))))
    assert len(edges) == 529 and sum(int(e["in_circuit"]) for e in edges) == len(scope["circuit"]["edges"])
    circuit = scope["circuit"]
    assert circuit["edges"][0]["upstream"] == table["data"][0][1] and circuit["faithfulness"] > 0


def test_circuit_over_http_refuses_bad_pairs_in_words(client):
    status = client.predict("typed", "only one field", "eap", "logit_diff", 0, 0, 32, api_name="/circuit")[0]
    assert status.startswith("⚠️") and "line 1: needs 2 to 4 fields" in status


def test_a_copied_link_reopens_the_task_typed_pairs_while_they_fit(events):
    """Copy link on the Circuit tab, then the page opened on that link: the typed pairs and the choices come back;
    pairs too long for a link leave the generated task in it."""
    from types import SimpleNamespace

    from starlette.datastructures import QueryParams

    from explorer.app.link.opening import LinkEvents

    ev, page = events.tab_events["circuit"], events.page
    p, link = ev.parts, LinkEvents(events)
    pairs = "lundi 3 mars 2025 | lundi 3 juin 2025 | 2025-03 | 2025-06\nmardi 8 juin 1999 | mardi 8 mars 1999"

    def copied(task: str, text: str) -> str:
        carried = ev.link_of(task, text)  # what the page keeps as the pairs box changes
        given = {page.setting("tab"): "circuit", p.link_task: carried[p.link_task],
                 p.link_pairs: carried[p.link_pairs], p.method: "eap", p.metric: "logprob", p.edges: 25,
                 p.held_out: 0, p.generated: 16}
        values = [SESSION if c is page.session else given.get(c, getattr(c, "value", None))
                  for c in link.link_inputs()]
        return link.link_of_page(link.link_form(values))[page.inputs.link_query]

    query = copied("typed", pairs)
    assert "ctask=typed" in query and "&pairs=" in query and "eap=eap" in query
    opened = link.open_page(SESSION, SimpleNamespace(query_params=QueryParams(query)))
    assert opened[page.inputs.link_notice] == "" and opened[page.visible_tab] == "circuit"
    assert (opened[p.task], opened[p.pairs], opened[p.method], opened[p.metric], opened[p.held_out],
            opened[p.generated]) == ("typed", pairs, "eap", "logprob", 0, 16)
    assert opened[p.edges]["value"] == 25
    long = copied("typed", pairs + "\n" + "\n".join([pairs] * 200))
    assert "ctask=generated" in long and "&pairs=" not in long


def test_the_upload_route_stays_refused_beside_the_tabs_file_reading(default_app):
    """The tab reads a file of pairs in the browser (tests/app/test_browser_circuit.py): Gradio's upload route still
    answers 403 to a small CSV of pairs, unread."""
    import httpx

    from explorer.app.serving.upload_guard import MESSAGE
    from tests.hang import HANG_S

    sent = httpx.post(default_app.rstrip("/") + "/gradio_api/upload", timeout=HANG_S,
                      files={"files": ("pairs.csv", b"clean,corrupted\na,b\n", "text/csv")})
    assert sent.status_code == 403 and sent.text == MESSAGE


def test_a_new_circuit_replaces_the_sessions_files(events, found):
    """The session's next circuit replaces its two files, and Gradio's lists of the buttons' files drop the gone ones."""
    ev = events.tab_events["circuit"]
    before = found[-1][ev.parts.csv_file]
    ev.parts.csv_file.temp_files.add(before)  # as Gradio does with a path a handler returns (the server's postprocess)
    after = list(ev.found(CircuitForm(SESSION, generated=8, held_out=0, method="eap", edges=10)))[-1]
    assert Path(after[ev.parts.csv_file]).exists() and not Path(before).exists()
    for button in (ev.parts.csv_file, ev.parts.json_file):
        assert before not in button.temp_files
        assert all(Path(p).exists() for p in button.temp_files if p.startswith(str(ev.files.root)))
