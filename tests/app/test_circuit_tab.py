"""The Circuit tab behind the Gradio boundary (explorer.app.tabs.circuit): its form checks every value in words, its
computation runs the core's find_circuit on a generated or typed task of a shipped model, bad pairs, empty tasks and
over-budget tasks are one message (the typed pairs stay in their box: no output of the event), the files hold what the
page shows, and "keep only this circuit" sets the page's head switches to the circuit's heads."""

from __future__ import annotations

import csv
import io
import json
import math
import re

import pytest

from explorer.app.serving.errors import AppError
from explorer.app.serving.session import Session
from explorer.app.tabs.circuit.computation import CircuitResult, circuit
from explorer.app.tabs.circuit.forms import MAX_PAIRS, CircuitForm, CircuitRequest
from explorer.app.tabs.circuit.text import LINK_PAIRS, circuit_json, edge_rows, edges_csv, link_task, summary_markdown
from explorer.viz.circuits import circuit_figure, parse_node, positions, receiver_node

DATE_PAIRS = ("lundi 3 mars 2025 | lundi 3 juin 2025 | 2025-03 | 2025-06\n"
              "mardi 8 juin 1999 | mardi 8 mars 1999 | 1999-06 | 1999-03\n"
              "jeudi 17 mars 2011 | jeudi 17 août 2011 | 2011-03 | 2011-08\n")


def request(**over) -> CircuitRequest:
    return CircuitForm(Session("date-translator", "cpu"), **over).request()


@pytest.fixture(scope="module")
def induction(app):
    return app.load("induction-gpt")[1]


@pytest.fixture(scope="module")
def induction_circuit(induction) -> CircuitResult:
    return circuit(induction, request(generated=16, held_out=4, method="eap"), 1024)


def test_the_form_refuses_each_bad_value_in_words():
    assert request() == CircuitRequest("generated", "", "eap-ig", "logit_diff", None, 4, 16)
    assert request(task="typed", pairs="a | b", edges=12).edges == 12
    bad = [(dict(task="some"), "The task must be one of generated, typed"),
           (dict(task="typed", pairs="  \n"), "No pairs: type one pair a line"),
           (dict(task="typed", pairs="x" * 70_000), "more than one request reads"),
           (dict(method="acdc"), "The method must be one of eap-ig, eap"),
           (dict(metric="loss"), "The metric must be one of logit_diff, logprob, kl"),
           (dict(edges=-1), "The number of edges must be 0"),
           (dict(held_out=MAX_PAIRS), "The held-out pairs must be 0 to"),
           (dict(generated=2), "A generated task has 8 to 64 pairs"),
           (dict(pairs=["a"]), "The pairs must be text"),
           (dict(fresh="third"), "The fresh half must be one of second, first")]
    for over, message in bad:
        with pytest.raises(AppError, match=message):
            request(**over)


def test_a_generated_induction_task_finds_its_circuit_and_says_so(induction_circuit):
    r = induction_circuit
    assert (r.found, r.held, r.method, r.metric, r.select) == (12, 4, "eap", "logit_diff", "greedy")
    assert 0 < len(r.edges) < r.n_edges and r.faithfulness >= 0.9  # the greedy circuit keeps 0.9 on its pairs
    assert r.held_faithfulness is not None and r.curve_held is not None and len(r.curve_held) == len(r.sizes)
    assert r.sizes[-1] == r.n_edges and r.curve[-1] == 1.0  # every edge: the clean model
    assert [abs(s) for _, _, s in r.edges] == sorted((abs(s) for _, _, s in r.edges), reverse=True)
    assert {(u, d) for u, d, _ in r.edges} <= {(u, d) for u, d, _ in r.all_edges}
    assert len(r.exact) == 8 and not math.isnan(r.spearman)
    on = {n for n in r.circuit_nodes if parse_node(n)[1] == "decoder"}
    off = {f"decoder.L{la}.H{h}" for la, h in r.off["decoder"]}
    assert on | off == {f"decoder.L{la}.H{h}" for la in range(2) for h in range(4)} and not on & off
    text = summary_markdown(r)
    assert f"**{len(r.edges):,} of {r.n_edges:,} edges**" in text and f"{r.faithfulness:.3f}" in text
    assert "held-out pairs" in text and "Keep only this circuit" in text


def test_the_table_and_the_files_hold_the_circuits_numbers(induction_circuit):
    r = induction_circuit
    headers, rows = edge_rows(r)
    assert headers[:4] == ["#", "from", "into", "input"] and len(rows) == min(50, len(r.edges))
    assert rows[0][1:3] == list(r.edges[0][:2]) and rows[0][4] == round(r.edges[0][2], 5)
    assert {row[3] for row in rows} <= {"query", "key", "value", "MLP input", "logits"}
    table = list(csv.DictReader(io.StringIO(edges_csv(r))))
    assert len(table) == r.n_edges and sum(int(t["in_circuit"]) for t in table) == len(r.edges)
    assert float(table[0]["score"]) == r.all_edges[0][2]  # exact: repr of the float
    data = json.loads(circuit_json(r))
    assert data["faithfulness"] == r.faithfulness and len(data["edges"]) == len(r.edges)
    assert data["curve"]["edges"] == list(r.sizes) and data["heads_off"]["decoder"] == [
        f"L{la} H{h}" for la, h in r.off["decoder"]]


def test_the_graph_draws_every_node_and_tells_the_inputs_apart(induction_circuit):
    r = induction_circuit
    fig = circuit_figure(r.nodes, r.exact_edges, r.circuit_nodes, "t")
    lines = [t for t in fig.data if t.mode == "lines"]
    assert len(lines) == len(r.edges)  # one line per edge, width by |score|
    widths = [t.line.width for t in lines]
    assert widths[0] == max(widths) == 6
    roles = {receiver_node(d)[1] for _, d, _ in r.edges}
    legend = {t.name for t in fig.data if t.showlegend is not False and t.name}
    assert len(legend) == len(roles)  # one legend entry per input kind the circuit has
    dashes = {receiver_node(d)[1]: t.line.dash for (_, d, _), t in zip(r.edges, lines)}
    assert all(dashes[k] == {"q": "solid", "k": "dash", "v": "dot"}[k] for k in dashes if k in "qkv")
    hover = next(t for t in fig.data if t.name == "edges")
    assert len(hover.hovertext) == len(r.edges) and "exact patch" in hover.hovertext[0]
    where = positions([*r.nodes, "logits"])
    assert where["embed"][0] < where["decoder.L0.H0"][0] < where["decoder.L0.mlp"][0] < where["logits"][0]
    nodes = [t for t in fig.data if t.name in ("circuit nodes", "other nodes")]
    assert sum(len(t.x) for t in nodes) == len(r.nodes) + 1  # and the logits


def test_typed_pairs_of_the_date_translator_and_their_bad_rows(app):
    loaded = app.load("date-translator")[1]
    r = circuit(loaded, request(task="typed", pairs=DATE_PAIRS, held_out=0, method="eap", edges=40), 1024)
    assert r.found == 3 and r.held == 0 and r.held_faithfulness is None and r.asked_edges == 40
    assert len(r.edges) <= 40 and "cross" in r.off  # an encoder-decoder: encoder, decoder and cross heads
    bad = {"lundi 3 mars 2025 | lundi 3 juin 2025 | 2025-03 | 2025-06\nonly one field": "line 2: needs 2 to 4 fields",
           "lundi 3 mars 2025 | lundi 3 juin 2025": "this model's pair needs its answer",
           "# only a comment": "no pairs"}
    for text, message in bad.items():
        with pytest.raises(AppError, match=message):
            circuit(loaded, request(task="typed", pairs=text, held_out=0), 1024)
    with pytest.raises(AppError, match="3 pairs and 3 are to be held out"):
        circuit(loaded, request(task="typed", pairs=DATE_PAIRS, held_out=3), 1024)
    with pytest.raises(AppError, match=r"65 pairs is more than this request takes \(64\)"):
        circuit(loaded, request(task="typed", pairs="\n".join([DATE_PAIRS.splitlines()[0]] * 65), held_out=0), 1024)
    with pytest.raises(AppError, match="has 529 edges"):
        circuit(loaded, request(edges=600), 1024)


def test_a_model_circuits_cannot_read_is_a_message(app):
    for built, message in ((app.build("encoder"), "this is an encoder without a decoder"),
                           (app.build("decoder", norm="post-norm"), "circuits need a pre-norm model")):
        with pytest.raises(AppError, match=message):
            circuit(built[1], request(), 1024)


def test_a_link_carries_typed_pairs_while_they_fit():
    assert link_task("typed", DATE_PAIRS) == ("typed", DATE_PAIRS)
    long = "a | b\n" * (LINK_PAIRS // 5)
    assert link_task("typed", long) == ("generated", None)
    assert link_task("generated", DATE_PAIRS) == ("generated", None) and link_task("typed", "  ") == ("generated", None)


def test_a_task_over_the_requests_budget_is_refused_before_it_runs(app, monkeypatch):
    from explorer.app.tabs.circuit import computation

    loaded = app.load("induction-gpt")[1]
    parameters = sum(t.numel() for t in loaded.model.parameters())
    monkeypatch.setattr(computation, "MAX_WORK", 100 * parameters)  # 100 tokens; 16 pairs hold at least 16 x 7
    monkeypatch.setattr(computation, "find_circuit", None)  # reaching it would fail otherwise
    with pytest.raises(AppError, match=rf"This task holds \d+ tokens; on a model of {parameters:,} parameters one "
                                       r"request takes at most 100: use fewer or shorter pairs"):
        circuit(loaded, request(generated=16), 1024)


def test_a_fresh_first_half_shows_the_previous_token_head_into_the_induction_keys(induction):
    """induction-gpt with the earlier copy gone (`fresh="first"`): K-composition, the previous-token head L0 H1 into
    the keys of the layer-1 heads, is in the circuit."""
    r = circuit(induction, request(fresh="first"), 1024)
    assert "fresh first half" in r.task_name
    into_keys = [(d, s) for u, d, s in r.edges if u == "decoder.L0.H1" and re.fullmatch(r"decoder\.L1\.H\d\.k", d)]
    assert into_keys, r.edges[:10]
