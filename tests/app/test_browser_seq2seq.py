"""A tiny Marian-layout translation model (random weights, spm tokenizers) in the real app, in headless Chromium:
it translates end to end, the generation tab draws cross-attention per generated token, and switching one
cross-attention head off changes the output text."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser
transformers = pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

from tests.app.browser import IDLE_JS, heads_on, opened, record_runs
from tests.app.test_browser_lm import ROWS_JS, TEXT_JS
from tests.app.tiny_models import MARIAN_HEAD, MARIAN_TEXT, tiny_marian


@pytest.fixture(scope="module")
def marian_app(tmp_path_factory, serve):
    root = tmp_path_factory.mktemp("marian-models")
    tiny_marian(root / "tiny-marian")
    return serve("tiny-marian", root)


def outputs(rows: list[list[str]]) -> dict[str, str]:
    """run ("baseline" / "toggled") -> output text of sentence 1, from the output table's rows."""
    return {row[1]: row[2] for row in rows if row[0] == "1"}


# The page's answer once no Run is under way and the output table has both runs of sentence 1: its rows, else null.
ANSWER_JS = f"""() => {{
  const rows = ({ROWS_JS})('output-table');
  return ({IDLE_JS})() && ({TEXT_JS})('output-summary').includes('Sentence 1: “') &&
         rows.filter(r => r[0] === '1').length >= 2 ? rows : null;
}}"""


def test_translation_end_to_end(marian_app, browser, monkeypatch):
    runs = record_runs(monkeypatch)
    with opened(marian_app, browser) as (page, errors):
        assert page.locator("#new-tokens").get_by_text("Generate at most (tokens)").is_visible()
        page.wait_for_function(ANSWER_JS)  # the page's own first Run (its example sentences) has ended
        page.locator("#text2 textarea").fill("")
        page.locator("#text1 textarea").fill(MARIAN_TEXT)
        page.locator("#text1 textarea").press("Enter")
        runs.wait_for(lambda run: run.text1 == MARIAN_TEXT and not run.text2, "of the typed text")
        before = outputs(page.wait_for_function(ANSWER_JS).json_value())  # that Run's answer, not the example's
        assert "␣the" in page.evaluate(TEXT_JS, "tokens")  # source spm
        assert set(before) == {"baseline", "toggled"} and before["baseline"] == before["toggled"] != ""

        page.locator("#views").get_by_role("tab", name="Generation").click()
        page.wait_for_function("() => document.querySelector('#gen-cross .js-plotly-plot .heatmaplayer')")
        assert "Cross-attention per generated token" in page.evaluate(TEXT_JS, "gen-cross")
        assert "→" in page.evaluate(TEXT_JS, "gen-cross")  # one row per generated token

        page.locator("#cross-heads").get_by_label(MARIAN_HEAD).uncheck()
        layer, head = (int(n[1:]) for n in MARIAN_HEAD.split())
        runs.wait_for(lambda run: (layer, head) not in heads_on(run, "cross"), f"with {MARIAN_HEAD} off")
        page.wait_for_function(f"() => ({IDLE_JS})() && "
                               f"({TEXT_JS})('output-summary').includes('changed the generated output')")
        assert "→" in page.evaluate(TEXT_JS, "gen-cross")  # redrawn for the toggled run
        page.locator("#views").get_by_role("tab", name="Attention & output").click()  # the table's tab
        after = outputs(page.wait_for_function(ANSWER_JS).json_value())
        assert set(after) == {"baseline", "toggled"}, after
        assert after["baseline"] == before["baseline"] and after["toggled"] != after["baseline"], after
        assert "Traceback" not in page.content()
    assert errors == [], errors
