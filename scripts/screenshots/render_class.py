"""Screenshots of the page's display (explorer.app.page.display) into docs/screenshots/class/: the first screen at
1280 x 800, at 390 x 844 (a phone) and at a projector's 1920 x 1080 (`size=projector`), each as the page opens and in
a class's view (`mode=class`); on the phone also the screen a switch is toggled on (the output pinned above it).

    python scripts/screenshots/render_class.py [--url http://127.0.0.1:7860/] [--out docs/screenshots/class]

Without --url the app is started in this process on a free port.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from render_app import CHROMIUM_ARGS, ROOT, chromium_path, save, started

# (file name, query, viewport): each view as a link opens it.
VIEWS = [("desktop", "", (1280, 800)), ("desktop-class", "mode=class", (1280, 800)),
         ("phone", "", (390, 844)), ("phone-class", "mode=class", (390, 844)),
         ("projector", "size=projector", (1920, 1080)), ("projector-class", "size=projector&mode=class", (1920, 1080))]
# The page's first Run has ended: the output summary is written and no Run's timer shows (tests/app/browser.py).
FIRST_RUN = """() => { const el = document.querySelector('#output-summary');
  return !!el && el.innerText.trim() !== '' &&
         !document.querySelector('#status [data-testid="status-tracker"].wrap:not(.hide)'); }"""
SCALED = """() => { const gd = document.querySelector('#head-plot .js-plotly-plot');
  return document.documentElement.dataset.size !== 'projector' || (gd.layout.meta || {}).explorerScale === 1.5; }"""


def shoot(url: str, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        for name, query, (width, height) in VIEWS:
            phone = width < 640
            context = browser.new_context(viewport={"width": width, "height": height}, is_mobile=phone,
                                          has_touch=phone)
            page = context.new_page()
            page.goto(f"{url}?{query}" if query else url)
            page.wait_for_selector("#head-plot .js-plotly-plot", timeout=90_000)
            page.wait_for_function(FIRST_RUN, timeout=90_000)
            page.wait_for_function(SCALED, timeout=90_000)
            save(page, out / f"{name}.png", paths)
            if name == "phone":  # far down the page, a switch toggled: the output stays in view above it
                page.locator("#cross-heads label").filter(has_text="L1 H3").locator("input").uncheck()
                page.wait_for_function("() => document.querySelector('#state-line').innerText.includes('L1 H3 off')",
                                       timeout=90_000)
                page.wait_for_function(FIRST_RUN, timeout=90_000)
                save(page, out / "phone-switched.png", paths)
            context.close()
        browser.close()
    return paths


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url")
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots" / "class"))
    args = ap.parse_args()
    url, demo = args.url, None
    if url is None:
        demo, url = started()
    try:
        for path in shoot(url, Path(args.out)):
            print(path)
    finally:
        if demo is not None:
            demo.close()


if __name__ == "__main__":
    main()
