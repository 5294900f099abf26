"""A screenshot of the Contributions tab on the shipped induction-gpt (headless Chromium, 1280 wide) into
docs/screenshots/contributions_induction-gpt.png: a random sequence repeated, read after its last token, where
layer 1's induction heads carry the prediction.

    python scripts/screenshots/render_contributions.py [--out docs/screenshots/contributions_induction-gpt.png]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from render_app import CHROMIUM_ARGS, ROOT, chromium_path, shrink, started, wait_idle

TEXT = "t5 t17 t99 t42 t8 t250 t13 t77 t5 t17 t99 t42 t8"


def shoot(url: str, out: Path) -> Path:
    from playwright.sync_api import sync_playwright

    out.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(url)
        page.wait_for_selector("#head-plot .js-plotly-plot", timeout=90_000)
        wait_idle(page)
        page.locator("#text1 textarea").fill(TEXT)
        page.locator("#text2 textarea").fill("")
        page.locator("#views").get_by_role("tab", name="Contributions").click()
        page.locator("#contrib-run").click()
        page.wait_for_selector("#contrib-strip .js-plotly-plot .heatmaplayer", timeout=90_000)
        page.wait_for_function("() => (document.querySelector('#contrib-delta') || {}).innerText"
                               "?.includes('Completeness')", timeout=90_000)
        wait_idle(page)
        views = page.locator("#views")
        views.scroll_into_view_if_needed()
        views.screenshot(path=str(out))
        shrink(out)
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots" / "contributions_induction-gpt.png"))
    args = ap.parse_args()
    demo, url = started("induction-gpt")
    try:
        print(shoot(url, Path(args.out)))
    finally:
        demo.close()


if __name__ == "__main__":
    main()
