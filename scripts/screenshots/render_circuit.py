"""Screenshots of the Circuit tab on the shipped date-translator (headless Chromium) after its generated month task:
the tab at 1280x800 into docs/screenshots/circuit_date-translator.png, and a phone's 390x844 into
docs/screenshots/circuit_phone.png (each the tab's area, scrolled to its summary and graph).

    python scripts/screenshots/render_circuit.py [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from render_app import CHROMIUM_ARGS, ROOT, chromium_path, shrink, started, wait_idle

SIZES = {"circuit_date-translator.png": (1280, 800), "circuit_phone.png": (390, 844)}


def shoot(url: str, out: Path, size: tuple[int, int]) -> Path:
    from playwright.sync_api import sync_playwright

    out.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": size[0], "height": size[1]})
        page.goto(url)
        page.wait_for_selector("#head-plot .js-plotly-plot", timeout=90_000)
        wait_idle(page)
        page.locator("#views").get_by_role("tab", name="Circuit").click()
        page.locator("#circuit-run").click()
        page.wait_for_selector("#circuit-graph .js-plotly-plot .scatterlayer", timeout=300_000)
        page.wait_for_selector("#circuit-curve .js-plotly-plot .scatterlayer", timeout=60_000)
        wait_idle(page, 300_000)
        views = page.locator("#views")
        views.scroll_into_view_if_needed()
        page.locator("#circuit-summary").scroll_into_view_if_needed()
        page.screenshot(path=str(out), full_page=False)
        shrink(out)
        page.locator("#circuit-graph").scroll_into_view_if_needed()
        graph = out.with_name(out.stem + "_graph.png")
        page.locator("#circuit-graph").screenshot(path=str(graph))
        shrink(graph)
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    args = ap.parse_args()
    demo, url = started("date-translator")
    try:
        for name, size in SIZES.items():
            print(shoot(url, Path(args.out) / name, size))
    finally:
        demo.close()


if __name__ == "__main__":
    main()
