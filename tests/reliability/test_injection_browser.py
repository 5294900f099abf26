"""No script injection (issue 8, point 2): in headless Chromium, sentences with `<img src=x onerror=alert(1)>`
and `<script>alert(1)</script>` show literally in the token table, the heatmap axis labels and the hover
text, and no dialog ever opens.

The model is a tiny encoder whose word-level vocabulary holds both strings as whole tokens (fixture
`model_root/html-encoder`), so they reach every view verbatim instead of being split or turned into [UNK].
"""

from __future__ import annotations

import html

import pytest

from explorer.viz.common import short  # the tick-label cut the figures use

pytestmark = [pytest.mark.browser, pytest.mark.slow]

IMG, SCRIPT = "<img src=x onerror=alert(1)>", "<script>alert(1)</script>"
TICKS = """id => Array.from(document.querySelectorAll('#' + id + ' .xtick text, #' + id + ' .ytick text'))
                .map(e => e.textContent)"""
TEXT = "sel => { const el = document.querySelector(sel); return el ? el.innerText : ''; }"
CELL = """([id, name]) => {  // page coordinates of the heatmap cell (query = key = name)
  const gd = document.querySelector('#' + id + ' .js-plotly-plot');
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
  const i = xa._categories.indexOf(name), j = ya._categories.indexOf(name);
  if (i < 0 || j < 0) return null;
  const r = gd.getBoundingClientRect();
  return [r.left + xa._offset + xa.l2p(i), r.top + ya._offset + ya.l2p(j)];
}"""
INJECTED = """() => ({
  img: document.querySelectorAll('img[src="x"], img[onerror]').length,
  // Gradio's own config script holds the typed text JSON-escaped ("\\u003cscript\\u003e"): fine. An
  // injected element would be a script whose code is alert(1), or raw markup inside a script.
  script: Array.from(document.querySelectorAll('script')).filter(s => s.textContent.trim() === 'alert(1)' ||
      s.textContent.includes('<img src=x') || s.textContent.includes('<script>alert')).length,
  attrs: Array.from(document.querySelectorAll('*')).filter(e => Array.from(e.attributes).some(
      a => a.name.startsWith('on') && a.value.includes('alert'))).length,
  ever: window.__injected,
})"""
# Records, from the page's first script on, every element ever put into the document that could run the typed
# code (the elements INJECTED looks for), even if it was removed again: the snapshot sees only its moment.
WATCH_INIT = """window.__injected = [];
new MutationObserver(records => {
  const hostile = (el) => el.nodeType === 1 && ((el.tagName === 'IMG' && el.getAttribute('src') === 'x') ||
      Array.from(el.attributes).some(a => a.name.startsWith('on') && a.value.includes('alert')) ||
      (el.tagName === 'SCRIPT' && (el.textContent.trim() === 'alert(1)' || el.textContent.includes('<img src=x') ||
                                   el.textContent.includes('<script>alert'))));
  for (const r of records) {
    const nodes = r.type === 'attributes' ? [r.target] : Array.from(r.addedNodes);
    for (const n of nodes) {
      const all = n.nodeType === 1 ? [n, ...n.querySelectorAll('*')] : [];
      for (const el of all) if (hostile(el)) window.__injected.push(el.outerHTML.slice(0, 200));
    }
  }
}).observe(document, {childList: true, subtree: true, attributes: true});"""


def test_html_and_script_shown_literally_never_run(model_root, launch, browser):
    from tests.app.browser import SETTLED_JS, new_page

    _demo, url = launch(checkpoint=str(model_root / "html-encoder"), allowed_dirs=[str(model_root)])
    dialogs: list[str] = []
    requested: list[str] = []
    context, page = new_page(browser, viewport={"width": 1280, "height": 1000})
    with context:
        page.add_init_script(WATCH_INIT)
        page.on("request", lambda r: requested.append(r.url))

        def on_dialog(dialog) -> None:
            dialogs.append(f"{dialog.type}: {dialog.message}")
            dialog.dismiss()

        page.on("dialog", on_dialog)
        page.goto(url)
        page.wait_for_selector("#head-plot .js-plotly-plot")

        # Type both strings (the first sentence holds both, the second one is padded) and run.
        sentence = f"hello {IMG} world {SCRIPT}"
        page.locator("#text1 textarea").fill(sentence)
        page.locator("#text2 textarea").fill(f"{SCRIPT} hello")
        # A toggle (the causal mask; this encoder has none to apply) so the baseline heatmap is drawn too.
        page.locator("#causal input").uncheck()
        page.locator("#run").click()
        page.wait_for_function(f"""() => {{
            const t = document.querySelector('#tokens');
            return t && t.innerText.includes({SCRIPT!r}) && t.innerText.includes({IMG!r}) &&
                   document.querySelector('#text1 textarea').value === {sentence!r};
        }}""")
        for plot_id in ("head-plot", "mask-plot", "baseline-plot"):  # figures redraw after the table
            page.wait_for_function(f"""() => {{
                const t = Array.from(document.querySelectorAll('#{plot_id} .xtick text')).map(e => e.textContent);
                return t.includes({short(IMG)!r}) && t.includes({short(SCRIPT)!r});
            }}""")

        # Token table: the strings as plain text in cells.
        tokens = page.evaluate(TEXT, "#tokens")
        assert IMG in tokens and SCRIPT in tokens, tokens[:500]
        # Axis labels of the heatmaps: literal text on both axes (cut to a few characters with "…";
        # the hover below shows the whole token).
        for plot_id in ("head-plot", "mask-plot", "baseline-plot"):
            ticks = page.evaluate(TICKS, plot_id)
            assert ticks.count(short(IMG)) >= 2 and ticks.count(short(SCRIPT)) >= 2, (plot_id, ticks)
            assert short(IMG).startswith("<img") and short(SCRIPT).startswith("<script")
        # Hover text: hover the cell where the <img> token attends to itself, once the Run's last parts are drawn (a
        # part drawn between finding the cell and the hover moved the figure: the hover fell on the next row once)
        page.wait_for_function(SETTLED_JS)
        head = page.locator("#head-plot .js-plotly-plot")
        head.scroll_into_view_if_needed()
        xy = page.evaluate(CELL, ["head-plot", html.escape(IMG, quote=True)])
        assert xy is not None, "the <img> token is not a category of the head heatmap"
        page.mouse.move(xy[0] + 1, xy[1] + 1)
        page.wait_for_function("() => document.querySelector('#head-plot .hoverlayer').textContent.length > 0")
        hover = page.evaluate("() => document.querySelector('#head-plot .hoverlayer').textContent")
        assert hover.count(IMG) == 2 and "→" in hover, hover  # "query → key: weight"
        # The model description (Markdown) carries both strings too: shown as text.
        # The sidebar is closed, its content hidden (kept out of the Tab order): read its text as the page holds it;
        # an <img> rendered as an element would not be in it as text.
        info = page.evaluate("sel => { const el = document.querySelector(sel); return el ? el.textContent : ''; }",
                             "#model-info")
        assert IMG in info and SCRIPT in info, info[:500]

        # Nothing that could run the typed code is in the page, nor was it ever (an onerror needs such an element,
        # and an <img src=x> in any document of the page asks the server for /x first): no fixed wait for a late
        # onerror is needed.
        assert page.evaluate(INJECTED) == {"img": 0, "script": 0, "attrs": 0, "ever": []}
        assert not [u for u in requested if u.split("?")[0].endswith("/x")], requested
    assert dialogs == [], f"a dialog opened: {dialogs}"
