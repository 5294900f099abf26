"""The Compare models tab in headless Chromium: two tiny language models with different tokenizers (byte-level BPE
vs sentencepiece, as gpt2 vs Pythia), then date-translator vs date-gpt chosen as a suggested pair; each side draws its
own head and All heads grid, labels its own tokens, and follows its own layer, head and head switches."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

pytestmark = pytest.mark.browser
pytest.importorskip("transformers")

from tests.app.browser import opened  # noqa: E402
from tests.hang import HANG_S  # noqa: E402

TEXT_JS = "id => { const el = document.querySelector('#' + id); return el ? el.innerText : ''; }"
HEATMAP_JS = "id => !!document.querySelector('#' + id + ' .js-plotly-plot .heatmaplayer, #' + id + ' .js-plotly-plot image')"
DATE = "samedi 21 novembre 2026"
CHECKED = "id => document.querySelectorAll('#' + id + ' input[type=checkbox]:checked').length"


class Comparisons:
    """The comparisons the server has computed to their end, in order (names, views, toggles of the two sides)."""

    def __init__(self, monkeypatch):
        from explorer.app.tabs.compare import side_by_side

        self.done: list[SimpleNamespace] = []
        self._cond = threading.Condition()
        real = side_by_side.compare_models

        def recorded(sides, *args, **kwargs):
            result = real(sides, *args, **kwargs)
            with self._cond:
                self.done.append(SimpleNamespace(names=[s.name for s in sides], views=[s.view for s in sides],
                                                 toggles=[s.toggles for s in sides]))
                self._cond.notify_all()
            return result

        monkeypatch.setattr(side_by_side, "compare_models", recorded)

    def wait_for(self, finished, what: str) -> SimpleNamespace:
        with self._cond:
            found = self._cond.wait_for(lambda: next((c for c in self.done if finished(c)), None), HANG_S)
        assert found is not None, f"no comparison {what} finished"
        return found


def shows(page, side: int, *texts: str) -> None:
    """Wait until side `side`'s heading holds every text, and its two plots are drawn."""
    cond = " && ".join(f"({TEXT_JS})('compare{side}-md').includes({t!r})" for t in texts)
    page.wait_for_function(f"() => {cond}")
    for plot in ("head", "overview"):
        page.wait_for_function(f"() => ({HEATMAP_JS})('compare{side}-{plot}')")


@pytest.fixture(scope="module")
def lm_url(lm_app):
    """The app on tiny-gpt2 with tiny-llama beside it (tests/app/conftest.py)."""
    return lm_app


def test_two_language_models(lm_url, browser, monkeypatch):
    done = Comparisons(monkeypatch)
    with opened(lm_url, browser) as (page, errors):
        page.get_by_role("tab", name="Compare models").click()
        # Opening the tab compares the page's model with the second one it starts with (the same model here).
        shows(page, 2, "tiny-gpt2")
        page.locator("#model2 input").fill("tiny-llama")
        page.locator("#model2 input").press("Enter")
        done.wait_for(lambda c: c.names == ["tiny-gpt2", "tiny-llama"], "with tiny-llama")
        shows(page, 2, "tiny-llama", "<s>")  # the sentencepiece model's own tokens
        shows(page, 1, "tiny-gpt2", "␣")  # byte-level BPE: "Ġ" shown as ␣
        assert "the model expects" in page.evaluate(TEXT_JS, "compare1-md")
        assert "next token" in page.evaluate(TEXT_JS, "compare2-output")
        page.locator("#heads2").get_by_text("Second model's heads").click()
        page.wait_for_function(f"() => ({CHECKED})('dec2-heads') === 4")  # the second model's 2 x 2 heads
        # A head switch of the second model: its side runs with it off, the first model's stays all on.
        page.locator("#dec2-heads").get_by_label("L1 H1").uncheck()
        off = done.wait_for(lambda c: c.toggles[1].heads_on and (1, 1) not in c.toggles[1].heads_on["decoder"],
                            "with L1 H1 of the second model off")
        assert off.toggles[0].heads_on["decoder"] == {(la, h) for la in range(2) for h in range(6)}
        page.wait_for_function(f"() => ({TEXT_JS})('compare2-md').includes('with the toggles p =')")
        assert "with the toggles p =" not in page.evaluate(TEXT_JS, "compare1-md")
        # The first model's layer is the page's own control: the tab follows it.
        page.locator("#layer input").click()
        page.get_by_role("option", name="1", exact=True).click()
        done.wait_for(lambda c: c.views[0].layer == 1 and c.names[1] == "tiny-llama", "with the page's layer 1")
        page.wait_for_function(f"() => ({TEXT_JS})('compare1-md').includes('layer 1, head 0')")
        assert "Traceback" not in page.content()
    assert errors == [], errors


def test_date_translator_vs_date_gpt_as_a_suggested_pair(lm_url, browser, monkeypatch):
    done = Comparisons(monkeypatch)
    with opened(lm_url, browser) as (page, errors):
        page.get_by_role("tab", name="Compare models").click()
        page.locator("#pair input").click()
        page.get_by_role("option", name="date-translator vs date-gpt", exact=True).click()
        done.wait_for(lambda c: c.names == ["date-translator", "date-gpt"], "of the date pair")
        # A model change keeps the typed sentence (the language model's); a date is typed and Run, and the shown
        # tab compares the pair again on it.
        assert page.locator("#text1 textarea").input_value() != DATE
        page.locator("#text1 textarea").fill(DATE)
        page.locator("#run").click()
        shows(page, 1, "date-translator", "encoder self-attention", "[EOS]")  # the first kind, as it opens
        shows(page, 2, "date-gpt", "decoder self-attention", "[SEP]")
        for side in (1, 2):
            page.wait_for_function(f"() => ({TEXT_JS})('compare{side}-output').includes('2026-11-21')")
        # The second model's layer: its side alone changes.
        page.locator("#layer2 input").click()
        page.get_by_role("option", name="3", exact=True).click()
        done.wait_for(lambda c: c.views[1].layer == 3, "with layer 3 of date-gpt")
        page.wait_for_function(f"() => ({TEXT_JS})('compare2-md').includes('layer 3, head 0')")
        assert "layer 0, head 0" in page.evaluate(TEXT_JS, "compare1-md")
        assert "date-translator" in page.evaluate(TEXT_JS, "headline")  # the page's model follows the pair
    assert errors == [], errors
