"""A tiny Marian-layout translation model (random weights, spm tokenizers) in the real app, in headless Chromium:
it translates end to end, the generation tab draws cross-attention per generated token, and switching one
cross-attention head off changes the output text."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser
transformers = pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

from tests.app.browser import opened, served
from tests.app.test_browser_lm import ROWS_JS, TEXT_JS
from tests.app.tiny_models import MARIAN_HEAD, MARIAN_TEXT, tiny_marian


@pytest.fixture(scope="module")
def marian_app(tmp_path_factory, free_port):
    from explorer.app.demo import build_demo

    root = tmp_path_factory.mktemp("models")
    tiny_marian(root / "tiny-marian")
    with served(build_demo(device="cpu", checkpoint="tiny-marian", allowed_dirs=[str(root)]), free_port()) as url:
        yield url


def outputs(page) -> dict[str, str]:
    """run ("baseline" / "toggled") -> output text of sentence 1, from the output table."""
    return {row[1]: row[2] for row in page.evaluate(ROWS_JS, "output-table") if row[0] == "1"}


def test_translation_end_to_end(marian_app, chromium_path, chromium_args):
    with opened(marian_app, chromium_path, chromium_args) as (page, errors):
        assert page.locator("#new-tokens").get_by_text("Generate at most (tokens)").is_visible()
        page.locator("#text2 textarea").fill("")
        page.locator("#text1 textarea").fill(MARIAN_TEXT)
        page.locator("#text1 textarea").press("Enter")
        page.wait_for_function(f"() => ({TEXT_JS})('tokens').includes('␣the')", timeout=60_000)  # source spm
        page.wait_for_function(f"() => ({TEXT_JS})('output-summary').includes('Sentence 1: “')", timeout=60_000)
        before = outputs(page)
        assert set(before) == {"baseline", "toggled"} and before["baseline"] == before["toggled"] != ""

        page.locator("#views").get_by_role("tab", name="Generation").click()
        page.wait_for_function("() => document.querySelector('#gen-cross .js-plotly-plot .heatmaplayer')",
                               timeout=30_000)
        assert "Cross-attention per generated token" in page.evaluate(TEXT_JS, "gen-cross")
        assert "→" in page.evaluate(TEXT_JS, "gen-cross")  # one row per generated token

        page.locator("#cross-heads").get_by_label(MARIAN_HEAD).uncheck()
        page.wait_for_function(f"() => ({TEXT_JS})('output-summary').includes('changed the generated output')",
                               timeout=60_000)
        assert "→" in page.evaluate(TEXT_JS, "gen-cross")  # redrawn for the toggled run
        page.locator("#views").get_by_role("tab", name="Attention & output").click()  # the table's tab
        page.wait_for_function(f"() => ({ROWS_JS})('output-table').length >= 2", timeout=30_000)
        after = outputs(page)
        assert set(after) == {"baseline", "toggled"}, page.evaluate(ROWS_JS, "output-table")
        assert after["baseline"] == before["baseline"] and after["toggled"] != after["baseline"], after
        assert "Traceback" not in page.content()
    assert errors == [], errors
