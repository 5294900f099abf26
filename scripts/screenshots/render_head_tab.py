"""Screenshots of the Inside a head tab on the shipped induction-gpt (headless Chromium), opened by a link on the
induction head L1 H2 at the last token of a random sequence repeated, with the previous-token head L0 H1 switched off
(baseline beside toggled), in plain words (the tab's default: the worked example) and with all details:

    docs/screenshots/head_tab_induction-gpt.png         the tab's column at 1280 x 800, all details (docs/heads.md)
    docs/screenshots/head_tab_plain_induction-gpt.png   the tab's column at 1280 x 800, plain words (docs/heads.md)
    docs/screenshots/app/23-head.png                    the whole page at 1280 x 800, plain words
    docs/screenshots/app/23-head-details.png            the whole page at 1280 x 800, all details
    docs/screenshots/app/24-head-phone.png              the whole page at 390 x 844 (a phone), plain words
    docs/screenshots/app/24-head-phone-details.png      the whole page at 390 x 844, all details

    python scripts/screenshots/render_head_tab.py [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from urllib.parse import quote

from render_app import CHROMIUM_ARGS, ROOT, chromium_path, shrink, started, wait_idle

TEXT = "t5 t17 t99 t42 t8 t250 t13 t77 t5 t17 t99 t42 t8"
LINK = f"?s1={quote(TEXT)}&s2=&tab=head&kind=decoder&layer=1&head=2&off=decoder:L0H1"


# No part of the tab still waiting for its update (Gradio greys a pending component)
SETTLED = "() => !document.querySelector('#head-summary .pending, #head-steps .pending, #head-summary " \
          "[data-testid=status-tracker].wrap:not(.hide), #head-steps [data-testid=status-tracker].wrap:not(.hide)')"


def opened(browser, url: str, **page_kwargs):
    """The tab opened by the link, in plain words (its worked example drawn)."""
    page = browser.new_page(**page_kwargs)
    page.goto(url + LINK)
    page.wait_for_function("() => (document.querySelector('#head-summary') || {}).innerText?.includes('L1 H2')",
                           timeout=90_000)
    page.wait_for_function("() => (document.querySelector('#head-steps') || {}).innerText?.includes('the sum')",
                           timeout=90_000)
    wait_idle(page)
    page.wait_for_function(SETTLED, timeout=90_000)
    return page


def detailed(page):
    """The same page with all details: the neuron view, the table, the lines and the query-key map drawn."""
    page.locator("#head-words").get_by_role("radio", name="All details").check()
    page.wait_for_selector("#head-qk-plot .js-plotly-plot .scatterlayer", timeout=90_000)
    page.wait_for_selector("#head-comp-plot .js-plotly-plot .main-svg", timeout=90_000)
    wait_idle(page)
    page.wait_for_function(SETTLED, timeout=90_000)
    return page


def shoot(url: str, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    (out / "app").mkdir(parents=True, exist_ok=True)
    paths = {name: out / name for name in ("head_tab_induction-gpt.png", "head_tab_plain_induction-gpt.png",
                                           "app/23-head.png", "app/23-head-details.png", "app/24-head-phone.png",
                                           "app/24-head-phone-details.png")}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = opened(browser, url, viewport={"width": 1280, "height": 800})
        page.locator("#views").screenshot(path=str(paths["head_tab_plain_induction-gpt.png"]))
        page.screenshot(path=str(paths["app/23-head.png"]), full_page=True)
        detailed(page)
        page.locator("#views").screenshot(path=str(paths["head_tab_induction-gpt.png"]))
        page.screenshot(path=str(paths["app/23-head-details.png"]), full_page=True)
        page.close()
        phone = opened(browser, url, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
        phone.screenshot(path=str(paths["app/24-head-phone.png"]), full_page=True)
        detailed(phone)
        phone.screenshot(path=str(paths["app/24-head-phone-details.png"]), full_page=True)
        browser.close()
    for path in paths.values():
        shrink(path)
    return list(paths.values())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    args = ap.parse_args()
    demo, url = started("induction-gpt")
    try:
        for path in shoot(url, Path(args.out)):
            print(path)
    finally:
        demo.close()


if __name__ == "__main__":
    main()
