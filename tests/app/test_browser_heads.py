"""The head-roles and activation-patching tabs in headless Chromium on the starting model (date-translator):
the role maps and the patching map draw, and "switch these heads off" unchecks exactly the top heads of the
role in the head switches (then the page runs with them off). No console errors."""

from __future__ import annotations

import pytest

from tests.app.browser import opened

pytestmark = pytest.mark.browser

HEATMAP_CELLS = """id => {
  const gd = document.querySelector('#' + id + ' .js-plotly-plot');
  if (!gd || !gd.data) return 0;
  let n = 0;
  for (const t of gd.data) if (t.type === 'heatmap' && t.z) n += (t.z.length !== undefined ? t.z.length : 1);
  return n;
}"""
CHECKED = "id => [...document.querySelectorAll('#' + id + ' input[type=checkbox]')].filter(b => b.checked).length"
TEXT = "id => { const el = document.querySelector('#' + id); return el ? el.innerText : ''; }"


@pytest.fixture(scope="module")
def app_url(default_app):
    return default_app


def test_roles_ablation_and_patching_draw(app_url, browser):
    # The Roles tab scores the view kind's self-attention stack: the page opens on the encoder, ask for the decoder's.
    with opened(app_url + "?kind=decoder", browser) as (page, errors):
        views = page.locator("#views")

        views.get_by_role("tab", name="Roles").click()
        page.locator("#roles-run").click()
        for plot in ("roles-probe-plot", "roles-text-plot"):
            page.wait_for_function(f"() => ({HEATMAP_CELLS})('{plot}') > 0")
        page.wait_for_function(f"() => ({TEXT})('roles-summary').includes('Strongest head per role')")
        assert page.evaluate(CHECKED, "dec-heads") == 8
        # Choose the role by clicking its option and wait until the box shows it: typing "self" and pressing Enter
        # once left the default role (induction) chosen, the Enter apparently handled before the typed filter.
        page.locator("#role input").click()
        page.get_by_role("option", name="self", exact=True).click()
        page.wait_for_function("() => document.querySelector('#role input').value === 'self'")
        page.locator("#role-k input").fill("2")
        page.wait_for_function("() => document.querySelector('#role-k input').value === '2'")
        page.locator("#role-off").click()
        page.wait_for_function(f"() => ({CHECKED})('dec-heads') === 6")
        assert page.evaluate(CHECKED, "enc-heads") == 8 and page.evaluate(CHECKED, "cross-heads") == 8
        page.wait_for_function(f"() => ({TEXT})('role-off-summary').includes('Switched off')")
        status = page.evaluate(TEXT, "role-off-summary")
        assert "Switched off the top 2 self heads of the decoder" in status, status
        off = [b for b in page.locator("#dec-heads label").all_inner_texts()]
        named = status.split(": ", 1)[1]
        unchecked = [lab.strip() for lab, on in zip(off, page.locator("#dec-heads input[type=checkbox]").evaluate_all(
            "bs => bs.map(b => b.checked)")) if not on]
        assert all(lab in named for lab in unchecked), (unchecked, named)

        views.get_by_role("tab", name="Patching").click()
        # The example pair means the same date (one answer, nothing to patch): a different date as sentence 2.
        page.locator("#text2 textarea").fill("3 May 2024")
        page.locator("#patch-run").click()
        page.wait_for_function(f"() => ({HEATMAP_CELLS})('patching-plot') > 0")
        page.wait_for_function(f"() => ({TEXT})('patching-summary').includes('Metric: logit')")
        assert "Traceback" not in page.content()
    assert errors == [], errors
