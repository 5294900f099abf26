"""A tiny GPT-2-layout language model in the real app, in headless Chromium: readable tokens, the attention
heatmap, the next-token top 10 and surprisal; switching heads off changes the top 10."""

from __future__ import annotations

import re
import threading

import pytest

pytestmark = pytest.mark.browser
transformers = pytest.importorskip("transformers")

from tests.app.browser import opened, served
from tests.importers.harness import VOCAB, byte_level_tokenizer, make_case

TEXT_JS = "id => { const el = document.querySelector('#' + id); return el ? el.innerText : ''; }"
# Gradio's dataframe body is a grid of cells with data-row / data-col: rows of cell texts, in order.
ROWS_JS = """id => {
  const rows = [];
  for (const cell of document.querySelectorAll('#' + id + ' [role=gridcell][data-row][data-col]')) {
    (rows[+cell.dataset.row] = rows[+cell.dataset.row] || [])[+cell.dataset.col] = cell.innerText.trim();
  }
  return rows.filter(Boolean);
}"""


@pytest.fixture(scope="module")
def lm_app(tmp_path_factory, free_port):
    from explorer.app.demo import build_demo

    root = tmp_path_factory.mktemp("models")
    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=48, n_head=6, n_layer=2, n_positions=64, bos_token_id=0,
                                     eos_token_id=0)
    make_case(transformers.GPT2LMHeadModel, config, byte_level_tokenizer(), root / "tiny-gpt2",
              lambda hf, layer: hf.transformer.h[layer].attn.c_proj,
              {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "add_bos_token": False})
    with served(build_demo(device="cpu", checkpoint="tiny-gpt2", allowed_dirs=[str(root)]), free_port()) as url:
        yield url


def test_language_model_end_to_end(lm_app, chromium_path, chromium_args):
    with opened(lm_app, chromium_path, chromium_args) as (page, errors):
        page.locator("#text2 textarea").fill("")
        page.locator("#text1 textarea").fill("The cat sat on the mat")
        page.locator("#text1 textarea").press("Enter")
        page.wait_for_function(f"() => ({TEXT_JS})('tokens').includes('␣the')", timeout=60_000)  # readable Ġthe
        page.wait_for_function("() => document.querySelector('#head-plot .js-plotly-plot .heatmaplayer')",
                               timeout=30_000)
        page.wait_for_selector("#surprisal-plot .js-plotly-plot .bars", timeout=30_000)
        assert "next token (baseline)" in page.evaluate(TEXT_JS, "output-table")
        before = page.evaluate(ROWS_JS, "output-table")
        assert [r[1] for r in before] == [str(k) for k in range(1, 11)], before  # ranks 1..10: #, rank, token, p, ...
        summary = page.evaluate(TEXT_JS, "output-summary")
        assert "the model expects" in summary and "Continuation" in summary

        for label in ("L0 H0", "L0 H1", "L0 H2", "L0 H3", "L0 H4", "L0 H5"):  # every head of layer 0 off
            page.locator("#dec-heads").get_by_label(label).uncheck()
        # Each switch starts a Run, whose first step empties the output table until its predictions come: wait
        # until the last one has answered (the same answer twice, a second apart, with no Run under way).
        answered = (f"() => ({TEXT_JS})('output-summary').includes('with the toggles p =') && "
                    f"({ROWS_JS})('output-table').length === 10 && "
                    "!document.querySelector('#status [data-testid=\"status-tracker\"].wrap:not(.hide)')")
        for _ in range(2):
            page.wait_for_function(answered, timeout=60_000)
            page.wait_for_timeout(1000)
        page.wait_for_function(answered, timeout=60_000)
        after = page.evaluate(ROWS_JS, "output-table")
        assert len(after) == 10 and any(r[2:4] != r[4:6] for r in after), after  # toggled top 10 differs
        # No cross-attention: the Generation tab's self-attention plot has the whole row.
        page.get_by_role("tab", name="Generation").click()
        page.wait_for_selector("#gen-self .js-plotly-plot .heatmaplayer", timeout=30_000)
        assert page.locator("#gen-cross").is_hidden()
        self_width = page.evaluate("() => document.querySelector('#gen-self').getBoundingClientRect().width")
        row_width = page.evaluate("() => document.querySelector('#gen-self').parentElement.getBoundingClientRect()"
                                  ".width")
        assert self_width > 0.9 * row_width, (self_width, row_width)
        assert "Traceback" not in page.content()
    assert errors == [], errors


# The status line's timer: its text, and whether it is drawn: a box of some height that no clipping ancestor cuts.
TIMER_JS = """() => {
  const t = document.querySelector('#status [data-testid="status-tracker"] .progress-text');
  if (!t) return null;
  const r = t.getBoundingClientRect();
  let shown = r.height > 0 && getComputedStyle(t).visibility === 'visible';
  for (let el = t.parentElement; el && shown; el = el.parentElement) {
    if (getComputedStyle(el).overflow === 'visible') continue;
    const c = el.getBoundingClientRect();
    shown = r.top >= c.top - 1 && r.bottom <= c.bottom + 1 && r.left >= c.left - 1 && r.right <= c.right + 1;
  }
  return {text: t.innerText, shown};
}"""


def hold(monkeypatch, owner, name: str) -> threading.Event:
    """From now on `owner.name` (a function or method the server calls) waits until the returned event is set."""
    real, release = getattr(owner, name), threading.Event()

    def held(*args, **kwargs):
        assert release.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, held)
    return release


def hold_predictions(monkeypatch) -> threading.Event:
    """From now on each Run's second step (the vocabulary head) waits until the returned event is set."""
    from explorer import lm

    return hold(monkeypatch, lm, "predictions")


def timer_seconds(page) -> float:
    """The seconds the status line's timer shows ("processing | 1.3s")."""
    return float(re.search(r"([\d.]+)s", page.evaluate(TIMER_JS)["text"]).group(1))


SHOWN_TRACKER = '[data-testid="status-tracker"]:not(.hide)'
# Counts the frames and timeouts Gradio's status trackers ask for (installed before the page's scripts, so under
# idle_timers' wrapper, which answers a tracker's timer with a timeout, then a frame).
FRAMES_INIT = """window.__frames = 0;
for (const name of ['requestAnimationFrame', 'setTimeout']) {
  const original = window[name].bind(window);
  window[name] = (...args) => {
    if (/statustracker/.test(new Error().stack || '')) window.__frames += 1;
    return original(...args);
  };
}"""


def test_an_idle_page_asks_for_no_timer_frames(lm_app, chromium_path, chromium_args):
    """Gradio's page-loading tracker is removed while pending and would ask for a frame every vsync forever
    (explorer.app.idle_timers): once the first Run is shown, no status tracker of an idle page asks for one."""
    with opened(lm_app, chromium_path, chromium_args, init_script=FRAMES_INIT) as (page, errors):
        page.wait_for_function(f"() => ({TEXT_JS})('output-summary').includes('the model expects') && "
                               f"!document.querySelector('{SHOWN_TRACKER}')", timeout=60_000)
        page.wait_for_timeout(1000)  # the last frame of the last shown tracker done
        before = page.evaluate("() => window.__frames")
        page.wait_for_timeout(2000)
        # No timer loop: one would ask 20 times in 2 s at the fix's pace, 120 without it. Gradio's screen-reader
        # announcement of the last status (statustracker's live region, sent up to 5 s late) asks 3 times, once.
        assert page.evaluate("() => window.__frames") - before <= 3
        assert before > 0  # the counter saw the timers of the page's loading and first Run
        assert not errors


def test_a_run_shows_its_timer_on_the_status_line_alone(lm_app, chromium_path, chromium_args, monkeypatch):
    """While a Run computes its attention, a timer on the status line (drawn: Gradio gives its minimal tracker no
    height, which clipped the timer away), counting at ten frames a second, and no progress overlay on any output."""
    from explorer.app.views.analysis import FirstLook

    with opened(lm_app, chromium_path, chromium_args, init_script=FRAMES_INIT) as (page, errors):
        page.wait_for_function(f"() => ({TEXT_JS})('output-summary').includes('the model expects')", timeout=60_000)
        release = hold(monkeypatch, FirstLook, "figures")
        page.locator("#text1 textarea").fill("A dog ran to the park")
        page.locator("#run").click()
        page.wait_for_function(f"() => {{ const t = ({TIMER_JS})(); return t && t.text.includes('processing'); }}",
                               timeout=30_000)
        assert page.evaluate(TIMER_JS)["shown"]
        page.wait_for_function(f"() => /\\| 0\\.\\ds/.test(({TIMER_JS})().text)", timeout=5_000)  # this Run's
        seconds, frames = timer_seconds(page), page.evaluate("() => window.__frames")
        page.wait_for_timeout(1200)
        assert timer_seconds(page) >= seconds + 1.0  # it counts (its frames are not dropped: idle_timers)
        assert 6 <= page.evaluate("() => window.__frames") - frames <= 18  # ten a second, not one per vsync
        assert page.evaluate("() => [...document.querySelectorAll('[data-testid=\"status-tracker\"].wrap:not(.hide)')]"
                             ".every(w => w.closest('#status'))")
        release.set()
        page.wait_for_function(f"() => ({TEXT_JS})('output-summary').includes('the model expects')", timeout=60_000)
        assert not errors


def test_a_run_draws_the_attention_before_the_predictions(lm_app, chromium_path, chromium_args, monkeypatch):
    """The two steps of a language model's Run on the page: with the vocabulary head's step held back, the new
    heatmap is on the page while the output panel says the predictions are coming (no stale table), then they
    arrive."""
    with opened(lm_app, chromium_path, chromium_args) as (page, errors):
        page.wait_for_function(f"() => ({TEXT_JS})('output-summary').includes('the model expects')", timeout=60_000)
        release = hold_predictions(monkeypatch)
        page.locator("#text2 textarea").fill("")
        page.locator("#text1 textarea").fill("A dog ran to the park")
        page.evaluate("() => { window.oldHead = document.querySelector('#head-plot .js-plotly-plot').data[0]; }")
        page.locator("#run").click()
        page.wait_for_function("() => { const gd = document.querySelector('#head-plot .js-plotly-plot');"
                               " return gd && gd.data && gd.data[0] !== window.oldHead; }", timeout=60_000)
        head = page.evaluate("() => JSON.stringify(document.querySelector('#head-plot .js-plotly-plot').layout)")
        assert '"ran"' in head and '"par"' in head  # this Run's tokens
        assert "computing the next-token predictions" in page.evaluate(TEXT_JS, "output-summary")
        assert page.evaluate(ROWS_JS, "output-table") == []
        release.set()
        page.wait_for_function(f"() => ({TEXT_JS})('output-summary').includes('the model expects')", timeout=60_000)
        assert len(page.evaluate(ROWS_JS, "output-table")) == 10
        assert not errors


def test_run_clicked_again_while_the_predictions_are_computed_is_answered(lm_app, chromium_path, chromium_args,
                                                                           monkeypatch):
    """A person sees the attention, edits the text and clicks Run again before the first Run's predictions
    arrive: the second click is not lost, the page ends showing the second text's Run."""
    with opened(lm_app, chromium_path, chromium_args) as (page, errors):
        page.wait_for_function(f"() => ({TEXT_JS})('output-summary').includes('the model expects')", timeout=60_000)
        release = hold_predictions(monkeypatch)
        page.locator("#text2 textarea").fill("")
        page.locator("#text1 textarea").fill("A dog ran to the park")
        page.locator("#run").click()
        page.wait_for_function(f"() => ({TEXT_JS})('output-summary').includes('computing the next-token')",
                               timeout=60_000)
        page.locator("#text1 textarea").fill("Birds sing in spring")
        page.locator("#run").click()
        page.wait_for_timeout(500)
        release.set()
        # The first Run's answer ends "after “k” (position 11)" (…park); the second one reads the new text.
        page.wait_for_function(f"() => {{ const t = ({TEXT_JS})('output-summary');"
                               " return t.includes('Continuation') && !t.includes('(position 11)'); }",
                               timeout=60_000)
        assert "(position 11)" not in page.evaluate(TEXT_JS, "output-summary")
        assert not errors
