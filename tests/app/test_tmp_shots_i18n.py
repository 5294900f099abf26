import pytest
from explorer.app.i18n.words import t
pytestmark = pytest.mark.browser

@pytest.mark.parametrize("lang", ["fr", "de", "es"])
def test_shots(open_view, lang):
    with open_view(f"lang={lang}&padding=0&off=cross:L1H3") as (page, errors):
        page.wait_for_function(f"() => document.querySelector('#run').innerText.trim() === {t('page.text.run', lang)!r}")
        page.wait_for_timeout(2500)
        page.mouse.move(640, 700); page.mouse.wheel(0, 620); page.wait_for_timeout(800); page.screenshot(path=f"/tmp/i18n/shots/{lang}-1-attention.png")
        page.get_by_role("tab", name=t("page.label.all_heads", lang)).click()
        page.wait_for_timeout(3000)
        page.mouse.wheel(0, 200); page.wait_for_timeout(800); page.screenshot(path=f"/tmp/i18n/shots/{lang}-2-overview.png")
        page.get_by_role("tab", name=t("page.label.lens", lang)).click()
        page.locator("#lens-run").click()
        page.wait_for_function("() => document.querySelector('#lens-summary').innerText.length > 20")
        page.wait_for_timeout(2000)
        page.locator("#lens-summary").scroll_into_view_if_needed(); page.wait_for_timeout(800); page.screenshot(path=f"/tmp/i18n/shots/{lang}-3-lens.png")
        print(lang, page.evaluate("() => document.querySelector('#lens-summary').innerText"))
