"""The Download button (explorer.app.export: download, view_file): the shown tab as one HTML file, plotly.js inlined
once, every text escaped, drawn from the kept result without running the model, a safe file name, and the default
view's file within 5 MB."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from explorer.app.export.download import DownloadEvents, NO_RUN, base_address
from explorer.app.export.view_file import ViewExport, file_name, plotly_js, view_html
from explorer.app.forms import RunForm
from explorer.app.page.head_labels import head_labels
from explorer.app.serving.kept import Shown
from explorer.app.serving.session import Session, get_model

MODEL = "date-translator"
EVIL = "<script>alert(1)</script>"
MAX_BYTES = 5 * 1024 * 1024


def run(ev, text, shown, tab="attention", lang="en"):
    kinds = get_model(Session(MODEL, "cpu"), ev.ctx).config.attention_kinds()
    enc, dec, cross = (head_labels(*kinds[k]) for k in ("encoder", "decoder", "cross"))
    cross = [h for h in cross if h not in ("L0 H1", "L1 H3")]
    form = RunForm(Session(MODEL, "cpu"), text, "", True, True, "none", 0, 2, enc, dec, cross, "cross", 1, 3, 1,
                   tab=tab, lang=lang)
    list(ev.analyze(form, shown))
    return dict(session=Session(MODEL, "cpu"), sentence1=text, sentence2="", tab=tab, kind="cross", layer=1, head=3,
                sentence=1, measure="weights", encoder_heads_on=enc, decoder_heads_on=dec, cross_heads_on=cross,
                padding_mask=True, causal_mask=True, custom_mask="none", blocked_position=0, window=2,
                predict_after=-1, continue_tokens=0)


def link_values(d: DownloadEvents, page: dict) -> list:
    """The link inputs (link.opening.LinkEvents.link_inputs): the session, each setting a link carries (by name from
    `page`), then every tab's own keys at their defaults (None: left out of the link)."""
    settings = [page.get("session"), *(page.get(name) for name in d.links.linked)]
    return settings + [None] * (len(d.link_inputs) - len(settings))


def test_the_file_escapes_every_text_and_inlines_plotly_once():
    fig = json.dumps({"data": [{"type": "heatmap", "z": [[1]], "x": [EVIL], "y": ["</script>"]}], "layout": {}})
    view = ViewExport(EVIL, [fig, fig], [("Sentence", EVIL)], f"http://x/?s1={EVIL}", [EVIL])
    page = view_html(view, script="/* plotly */")
    assert "<script>alert" not in page and "</script>\"" not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 4  # title, heading, setting, text (and the link)
    assert page.count("/* plotly */") == 1 and page.count('class="figure-data"') == 2
    datas = re.findall(r'<script type="application/json" class="figure-data">(.*?)</script>', page)
    assert [json.loads(d)["data"][0]["x"] for d in datas] == [[EVIL], [EVIL]]  # the same JSON once parsed
    with pytest.raises(ValueError, match="'data' list"):
        view_html(ViewExport("t", ['{"layout": {}}'], [], ""), script="")


def test_the_file_name_has_no_user_text():
    assert file_name("attention", "20261126-120000") == "transformer-explorer-attention-20261126-120000.html"
    assert file_name("../../etc", "x y") == "transformer-explorer-etc-x-y.html"
    assert base_address(SimpleNamespace(headers={"referer": "javascript:alert(1)"})) == ""
    assert base_address(SimpleNamespace(headers={"referer": "http://127.0.0.1:7860/?s1=x"})) == "http://127.0.0.1:7860/"


def test_download_draws_the_kept_result_without_running_the_model(page_events, monkeypatch):
    ev, shown = page_events, Shown()
    d = DownloadEvents(ev)
    r = ev.page.results
    assert ev.status in d.download("attention", shown, Session(MODEL, "cpu"), None, *link_values(d, {}))
    assert NO_RUN in d.download("attention", shown, Session(MODEL, "cpu"), None, *link_values(d, {}))[ev.status]
    values = run(ev, "lundi 3 mars 2025", shown)
    ran = []
    monkeypatch.setattr(ev.compute, "analyze", lambda *a, **k: ran.append(a))
    req = SimpleNamespace(headers={"referer": "http://127.0.0.1:7860/?old=1"})
    out = d.download("attention", shown, Session(MODEL, "cpu"), req, *link_values(d, values))
    assert ran == []  # drawn from the kept result
    path = Path(out[r.download_file])
    assert path.name.startswith("transformer-explorer-attention-") and path.suffix == ".html"
    page = path.read_text()
    assert page.count(plotly_js()) == 1 and path.stat().st_size <= MAX_BYTES
    drawn = shown.result(ev.ctx.kept).figures("attention")
    with_data = [name for name, f in drawn.items() if f.data and name != "surprisal"]  # no surprisal: not an LM
    assert page.count('class="figure-data"') == len(with_data) >= 4
    assert "Toggles: cross L0 H1, L1 H3 off" in page and "lundi 3 mars 2025" in page
    assert "2 0 2 5 - 0 5 - 0 3" in page  # the toggled answer of the output bar
    link = re.search(r'<a id="view-link" href="([^"]*)"', page).group(1)
    assert link.startswith("http://127.0.0.1:7860/?model=date-translator&amp;s1=lundi%203%20mars%202025&amp;"), link
    for part in ("tab=attention", "kind=cross", "layer=1", "head=3", "off=cross:L0H1,L1H3"):
        assert f"&amp;{part}&amp;" in link, (part, link)


def test_the_file_speaks_the_language_of_the_pages_run(page_events):
    """A Run in Spanish: the file's own words, its settings' names, its state line, its figures' titles and text
    alternatives in Spanish (the sentence and the tokens as typed and read)."""
    ev, shown = page_events, Shown()
    d = DownloadEvents(ev)
    values = run(ev, "lundi 3 mars 2025", shown, lang="es")
    page = Path(d.download("attention", shown, Session(MODEL, "cpu"), None,
                           *link_values(d, values))[ev.page.results.download_file]).read_text()
    assert '<html lang="es">' in page and "<dt>Enlace</dt>" in page and "<dt>Pestaña</dt><dd>Atención y salida</dd>" in page
    assert "<dt>Ajustes</dt><dd>Ajustes: cruzada L0 H1, L1 H3 apagadas</dd>" in page and "lundi 3 mars 2025" in page
    assert "→ con los ajustes: 2 0 2 5 - 0 5 - 0 3" in page  # the output bar, its own words in Spanish
    assert '"Con los ajustes: atención cruzada L1 H3 · frase 1 (apagada)"' in page  # a title, in its JSON
    words = re.findall(r'<details class="fig-alt"><summary>(.*?)</summary>', page)
    assert any("mira sobre todo a" in w for w in words) and not any("attends most to" in w for w in words)


def test_a_sentence_with_html_is_text_in_the_file(page_events):
    ev, shown = page_events, Shown()
    d = DownloadEvents(ev)
    values = run(ev, EVIL, shown)
    page = Path(d.download("attention", shown, Session(MODEL, "cpu"), None,
                           *link_values(d, values))[ev.page.results.download_file]).read_text()
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "\\u003cscript\\u003e" in page or "\\u003c" in page  # token labels in the figures' JSON
    words = re.findall(r'<details class="fig-alt"><summary>(.*?)</summary>', page)  # each figure's words (escaped)
    assert words and any("attends most to" in w for w in words) and not any("<" in w for w in words)


def test_a_tab_with_its_own_button_exports_what_it_shows(page_events):
    from gradio.components.plot import PlotData

    ev, shown = page_events, Shown()
    d = DownloadEvents(ev)
    values = run(ev, "3 May 2024", shown, tab="lens")
    own = [None] * sum(len(p) for p in d.own.values())
    start = sum(len(p) for tab_id, p in d.own.items() if list(d.own).index(tab_id) < list(d.own).index("lens"))
    fig = json.dumps({"data": [{"type": "heatmap", "z": [[0.5]]}], "layout": {"title": {"text": "lens <b>"}}})
    for n, c in enumerate(d.own["lens"]):
        own[start + n] = PlotData(type="plotly", plot=fig) if c.__class__.__name__ == "Plot" else f"summary {EVIL}"
    page = Path(d.download("lens", shown, Session(MODEL, "cpu"), None, *link_values(d, values), *own)
                [ev.page.results.download_file]).read_text()
    assert page.count('class="figure-data"') == sum(c.__class__.__name__ == "Plot" for c in d.own["lens"])
    assert "lens \\u003cb\\u003e" in page and f"summary &lt;script&gt;" in page


def test_a_session_keeps_one_file_and_its_end_removes_it(page_events):
    """Each Download of a session replaces its last file; another session's stays; the session's end removes its."""
    ev, shown = page_events, Shown()
    d = DownloadEvents(ev)
    values = run(ev, "3 May 2024", shown)

    def download(session_hash):
        req = SimpleNamespace(headers={}, session_hash=session_hash)
        return Path(d.download("attention", shown, Session(MODEL, "cpu"), req, *link_values(d, values))
                    [ev.page.results.download_file])

    first, other, second = download("a"), download("b"), download("a")
    assert not first.exists() and other.exists() and second.exists() and first.parent != second.parent
    assert sorted(f.name for f in d.files.root.rglob("*.html")) == sorted([other.name, second.name])
    assert d.files.bytes == other.stat().st_size + second.stat().st_size
    d.session_ended(SimpleNamespace(session_hash="a"))
    assert not second.exists() and other.exists()


def test_the_file_holds_every_table_the_tab_shows_and_no_empty_box(page_events):
    """The Attention tab's tables (tokens, baseline vs toggled output) as tables; a figure that only holds a message
    (no toggle: "the baseline is the view above"; greedy decoding) as its words; no figure without data; nothing the
    page hides for this model (the surprisal of a language model)."""
    from explorer.app.export.view_file import Table, table_html

    ev, shown = page_events, Shown()
    d = DownloadEvents(ev)
    kinds = get_model(Session(MODEL, "cpu"), ev.ctx).config.attention_kinds()
    heads = [head_labels(*kinds[k]) for k in ("encoder", "decoder", "cross")]
    list(ev.analyze(RunForm(Session(MODEL, "cpu"), "lundi 3 mars 2025", "", True, True, "none", 0, 2, *heads,
                            "cross", 1, 3, 1, tab="attention"), shown))  # no toggle
    page = Path(d.download("attention", shown, Session(MODEL, "cpu"), None, *link_values(d, {}))
                [ev.page.results.download_file]).read_text()
    datas = [json.loads(x) for x in re.findall(r'class="figure-data">(.*?)</script>', page)]
    assert len(datas) >= 2 and all(f["data"] for f in datas)  # no empty box
    assert "No toggle is active, so the baseline is the view above." in page and "Greedy decoding" in page
    assert "Surprisal is shown for language models" not in page
    tables = page.split('<section id="tables">')[1].split("</section>")[0]  # the figures' own tables follow them
    captions = re.findall(r"<caption>(.*?)</caption>", tables)
    assert captions == ["Output: baseline vs toggled", "Tokens and ids"], captions  # in the tab's order
    output = page.split("<caption>Output: baseline vs toggled</caption>")[1].split("</table>")[0]
    assert "baseline" in output and "2025-03-03" in output.replace(" ", "")
    assert "<td>&lt;b&gt;</td>" in table_html(Table("t", ["h"], [["<b>"]]))  # cells escaped


def test_a_table_as_the_page_sends_it_or_as_a_run_writes_it():
    """A tab's table reaches the file from the page's {"headers", "data"} (a tab with its own button) or a Run's
    DataFrame; an empty table (the page sends one for the tabs not shown) is no table."""
    import gradio as gr
    import pandas as pd

    from explorer.app.export.download import frame_table

    box = gr.Dataframe(label="Token attribution")
    page = frame_table(box, {"headers": ["position", "token"], "data": [[0, "<b>"], [1, "a"]]})
    assert (page.title, page.headers, page.rows) == ("Token attribution", ["position", "token"], [[0, "<b>"], [1, "a"]])
    run = frame_table(box, pd.DataFrame([["baseline", "2025-03-03"]], columns=["run", "output"]))
    assert (run.headers, run.rows) == (["run", "output"], [["baseline", "2025-03-03"]])
    assert frame_table(box, {"headers": [], "data": []}) is None and frame_table(box, None) is None
    assert frame_table(box, {"headers": ["a"], "data": [[""]]}) is None  # Gradio's one empty row
