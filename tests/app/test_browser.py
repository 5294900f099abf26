"""Drive the app in headless Chromium: type a sentence, switch a head off, toggle the padding and
causal masks; the heatmaps' data and the output must change, with no console errors. A figure's words and table
(page.figure_alt) are reached by Tab, and the state line is a live region that says the new toggles."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from tests.app.browser import IDLE_JS, heads_on, opened, record_runs

pytestmark = pytest.mark.browser

SNAPSHOT = """id => {
  const gd = document.querySelector('#' + id + ' .js-plotly-plot');
  if (!gd || !gd.data) return null;
  return JSON.stringify([gd.layout.title && gd.layout.title.text, gd.data.map(t => t.z)]);
}"""
TABLE_TEXT = "id => { const el = document.querySelector('#' + id); return el ? el.innerText : ''; }"
WORDS = "#head-plot details.fig-alt > summary"  # the chosen head's words, the switch to its table
FOCUSED = f"() => document.activeElement === document.querySelector('{WORDS}')"
LIVE = "id => { const e = document.getElementById(id); return e && [e.getAttribute('role'), e.getAttribute('aria-live')]; }"
TABS = 80  # Tab presses allowed from the tab strip to the figure's words (about 20 stops between them)


@pytest.fixture(scope="module")
def app_url(default_app, browser):
    """(the default app's URL, the session's Chromium)."""
    return default_app, browser


@contextmanager
def app_page(app_url, height: int = 900) -> Iterator:
    """The app open in headless Chromium, first heatmap drawn and its first Run ended; no console or page error may
    occur."""
    url, browser = app_url
    with opened(url, browser, viewport=(1280, height)) as (page, errors):
        yield page
    assert errors == [], errors


def test_first_screen_shows_the_sentence_run_and_a_drawn_heatmap(app_url):
    """At 1280 x 800, without scrolling: the sentence box, Run, and the chosen head's heatmap, drawn."""
    with app_page(app_url, height=800) as page:
        page.wait_for_selector("#head-plot .js-plotly-plot .heatmaplayer image, #head-plot .js-plotly-plot "
                               ".heatmaplayer .hm")
        assert page.evaluate("() => window.scrollY") == 0
        cells = page.locator("#head-plot .js-plotly-plot .nsewdrag").first.bounding_box()
        assert cells["y"] < 650 and cells["height"] > 100, cells  # the heatmap's cells start above 650 px
        for selector in ("#text1 textarea", "#run"):
            box = page.locator(selector).bounding_box()
            assert box["y"] >= 0 and box["y"] + box["height"] <= 800, (selector, box)
        assert page.locator("#text1 textarea").input_value()  # with an example sentence in it
        assert not page.locator("#model-sidebar .sidebar-content").is_visible() or \
            page.locator("#model-sidebar").bounding_box()["x"] < 0  # the model panel starts folded

        # The figure in words, its strongest cell named, reached from the tab strip by Tab; Enter opens its table,
        # one row per query of the figure.
        page.wait_for_selector(WORDS)
        assert "attends most to" in page.locator(WORDS).inner_text()
        page.locator("#views button[role=tab][aria-selected=true]").focus()
        for _ in range(TABS):
            page.keyboard.press("Tab")
            if page.evaluate(FOCUSED):
                break
        assert page.evaluate(FOCUSED), f"the figure's words not reached in {TABS} Tab presses"
        page.keyboard.press("Enter")
        table = page.locator("#head-plot details.fig-alt[open] table").first
        table.wait_for()
        queries = page.evaluate("() => document.querySelector('#head-plot .js-plotly-plot').data[0].y.length")
        assert table.locator("tbody tr").count() == queries
        assert "every cell" in table.locator("caption").inner_text()


@pytest.mark.long
def test_toggles_change_heatmaps_and_output(app_url, monkeypatch):
    runs = record_runs(monkeypatch)
    with app_page(app_url) as page:

        def snap(plot_id: str):
            return page.evaluate(SNAPSHOT, plot_id)

        def wait_change(plot_id: str, before):
            """The plot's snapshot once it differs from `before`."""
            return page.wait_for_function(f"([id, before]) => {{ const s = ({SNAPSHOT})(id); "
                                          "return s !== null && s !== before ? s : null; }",
                                          arg=[plot_id, before]).json_value()

        def step(action, finished, what: str) -> None:
            """`action` starts a Run: wait until the server has finished one for which `finished(run)` holds and the
            page has applied it (no Run under way), so the next snapshots are of that Run."""
            since = runs.mark()
            action()
            runs.wait_for(finished, what, since)
            page.wait_for_function(IDLE_JS)

        def choose(dropdown: str, option: str) -> Callable[[], None]:
            return lambda: (page.locator(f"#{dropdown} input").click(),
                            page.get_by_role("option", name=option, exact=True).click())

        def enter(box: str, text: str) -> Callable[[], None]:
            field = page.locator(f"#{box} textarea")
            return lambda: (field.fill(text), field.press("Enter"))

        # A small encoder-decoder, so the test does not depend on which checkpoints are shipped.
        page.get_by_role("button", name="Toggle Sidebar").click()
        page.locator("#model-sidebar").get_by_role("tab", name="Build").click()
        before = snap("head-plot")
        step(lambda: page.get_by_role("button", name="Build model").click(),
             lambda run: "built in the app" in run.source, "of the built model")
        assert "built in the app" in page.evaluate(TABLE_TEXT, "model-info")
        wait_change("head-plot", before)

        # Type a sentence (Enter runs the analysis).
        before = snap("head-plot")
        step(enter("text1", "<b>lundi 3 mars 2025</b>"), lambda run: run.text1 == "<b>lundi 3 mars 2025</b>",
             "of the typed sentence")
        wait_change("head-plot", before)
        # HTML in the input stays text: no <b> element anywhere in the page, tokens listed as plain cells ('<' is
        # not in the date tokenizer's alphabet).
        page.wait_for_function(f"() => ({TABLE_TEXT})('tokens').includes('[UNK]')")
        assert page.evaluate("() => document.querySelectorAll('.gradio-container b').length") == 0
        # The output table lists each sentence's answer (the token table shows only its first rows: it scrolls).
        outputs_before = page.evaluate(TABLE_TEXT, "output-table")
        step(enter("text2", "3 May 2024"), lambda run: run.text2 == "3 May 2024", "with a second sentence")
        page.wait_for_function("([id, before]) => document.querySelector('#' + id).innerText !== before",
                               arg=["output-table", outputs_before])
        head_before = snap("head-plot")
        out_before = page.evaluate(TABLE_TEXT, "output-table")

        # Look at layer 1, then switch head 0 of layer 0 off: layer 1's attention and the output change.
        step(choose("layer", "1"), lambda run: run.view.layer == 1, "on layer 1")
        head_before = wait_change("head-plot", head_before)
        diff_before = snap("diff-plot")
        state_before = page.evaluate(TABLE_TEXT, "state-line")
        step(lambda: page.locator("#enc-heads").get_by_label("L0 H0").uncheck(),
             lambda run: (0, 0) not in heads_on(run, "encoder"), "with L0 H0 off")
        # The state line, a live region (as are the status line and the link's notice), says the new toggles.
        page.wait_for_function("([id, before]) => document.querySelector('#' + id).innerText !== before",
                               arg=["state-line", state_before])
        assert "L0 H0 off" in page.evaluate(TABLE_TEXT, "state-line")
        for region in ("status", "state-line", "link-notice"):
            assert page.evaluate(LIVE, region) == ["status", "polite"], region
        head_after = wait_change("head-plot", head_before)
        assert head_after != head_before
        wait_change("diff-plot", diff_before)
        page.wait_for_function("([id, before]) => document.querySelector('#' + id).innerText !== before",
                               arg=["output-table", out_before])

        # Padding mask, seen on sentence 2 (the shorter one is padded).
        mask_before = snap("mask-plot")
        step(choose("sentence", "2"), lambda run: run.view.sentence == 2, "on sentence 2")
        mask_before = wait_change("mask-plot", mask_before)
        step(lambda: page.locator("#padding input").uncheck(), lambda run: not run.toggles.padding,
             "without the padding mask")
        assert wait_change("mask-plot", mask_before) != mask_before

        # Causal mask of decoder self-attention.
        mask_before, head_before = snap("mask-plot"), snap("head-plot")
        step(choose("kind", "decoder"), lambda run: run.view.kind == "decoder", "on the decoder")
        mask_before, head_before = wait_change("mask-plot", mask_before), wait_change("head-plot", head_before)
        step(lambda: page.locator("#causal input").uncheck(), lambda run: not run.toggles.causal,
             "without the causal mask")
        assert wait_change("mask-plot", mask_before) != mask_before
        assert wait_change("head-plot", head_before) != head_before

        # No run history in the browser: Gradio would keep every run's plots in localStorage.
        assert page.evaluate("() => Object.keys(localStorage).filter(k => k.includes('run-history'))") == []

        # Whitespace-only input: a message in the page, no traceback.
        page.locator("#text1 textarea").fill("   ")
        page.locator("#text1 textarea").press("Enter")
        page.wait_for_function("() => document.querySelector('#status').innerText.includes('empty')")
        assert "Traceback" not in page.content()


TILE_POINT = """([layer, head]) => {
  // Page coordinates of the centre of one (layer, head) tile of the overview heatmap.
  const gd = document.querySelector('#overview-plot .js-plotly-plot');
  const g = gd.layout.meta.overview_grid;
  const rows = g.q_edges.length - 1, cols = g.k_edges.length - 1;
  const row = layer * (rows + g.gap_rows) + Math.floor(rows / 2);
  const col = head * (cols + g.gap_cols) + Math.floor(cols / 2);
  const box = gd.querySelector('.draglayer .xy .nsewdrag').getBoundingClientRect();
  return [box.left + gd._fullLayout.xaxis.c2p(col), box.top + gd._fullLayout.yaxis.c2p(row)];
}"""


def test_clicking_an_overview_tile_opens_that_head(app_url):
    with app_page(app_url) as page:
        page.get_by_role("tab", name="All heads").click()
        page.wait_for_selector("#overview-plot .js-plotly-plot .nsewdrag")
        page.locator("#overview-plot").scroll_into_view_if_needed()
        x, y = page.evaluate(TILE_POINT, [1, 2])
        page.mouse.click(x, y)
        page.wait_for_function(
            "() => document.querySelector('#layer input').value === '1' && "
            "document.querySelector('#head input').value === '2'")
        page.wait_for_function(
            "() => { const gd = document.querySelector('#large-plot .js-plotly-plot');"
            " return gd && gd.layout.title.text.includes('L1 H2'); }")


def test_switching_tab_draws_it_without_running_the_model(app_url, monkeypatch):
    """Run draws only the visible tab; opening another tab draws its figures from the kept result."""
    import explorer.app.run.result as analysis

    text = "lundi 3 mars 2025"  # no other test of this module runs it: the model runs counted are this page's
    started = []  # text1 of each model run begun (compare_in_steps)
    real = analysis.compare_in_steps
    monkeypatch.setattr(analysis, "compare_in_steps", lambda *a, **k: started.append(a[1]) or real(*a, **k))
    finished = record_runs(monkeypatch)
    with app_page(app_url) as page:
        page.locator("#text1 textarea").fill(text)
        page.locator("#run").click()
        finished.wait_for(lambda run: run.text1 == text, "of the typed text")
        page.wait_for_function(IDLE_JS)  # its last update applied
        assert started.count(text) == 1
        assert page.evaluate("() => !!document.querySelector('#overview-plot .js-plotly-plot .heatmaplayer')") is False
        page.get_by_role("tab", name="All heads").click()
        page.wait_for_selector("#overview-plot .js-plotly-plot .heatmaplayer")
        page.get_by_role("tab", name="Rollout").click()
        page.wait_for_selector("#rollout-plot .js-plotly-plot .heatmaplayer")
        page.wait_for_function(IDLE_JS)
        assert started.count(text) == 1  # both tabs were drawn from the kept result
