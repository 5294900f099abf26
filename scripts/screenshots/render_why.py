"""Screenshots of the page saying why nothing changed (headless Chromium, 1280 x 800) into docs/screenshots/why/:

    heads.png      date-translator, "lundi 3 mars 2025", cross L1 H3 off: what fell, and the next-step button
    step.png       the same after the button: two more heads off, the answer changed
    causal.png     the causal mask off: why greedy decoding is unaffected, and where the heatmaps change
    sampling.png   Sample at T = 1.5: the draws gave the greedy answer (and the greedy row in the output table)
    measures.png   Contributions, the month's “3”: what the map and the switch-off ranking each measure
    latent.png     date-gpt's Features tab, a latent that never fires switched off
    steer.png      date-gpt's Features tab, a steering vector of norm 0
    generation.png induction-gpt sampled at T = 2: the Generation tab's drawn answer beside the greedy one

    python scripts/screenshots/render_why.py [--out docs/screenshots/why]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from urllib.parse import urlencode

from render_app import CHROMIUM_ARGS, ROOT, chromium_path, shrink, wait_idle

TEXT = "lundi 3 mars 2025"
WHY = "() => (document.querySelector('#why-same') || {}).innerText"
TOP = ("() => { const s = document.querySelector('#state-line'); s.scrollIntoView(); window.scrollBy(0, -70); "
       "return true; }")


def served(checkpoint: str):
    sys.path.insert(0, str(ROOT))
    from explorer.app.demo import build_demo, launch_kwargs, queue

    demo = queue(build_demo(checkpoint=checkpoint, device="cpu"))
    demo.launch(server_name="127.0.0.1", server_port=None, prevent_thread_lock=True, quiet=True, **launch_kwargs())
    return demo


def shot(page, path: Path, paths: list[Path]) -> None:
    """The page as it is now, shrunk, at `path`; `path` added to `paths`."""
    page.screenshot(path=str(path))
    shrink(path)
    paths.append(path)


def results(page, url: str, path: Path, wanted: str) -> None:
    """Open `url`, wait for the why line to hold `wanted`, shoot the results bar and what follows it."""
    page.goto(url)
    page.wait_for_function(f"() => ({WHY})()?.includes({wanted!r})", timeout=120_000)
    wait_idle(page)
    page.evaluate(TOP)
    page.screenshot(path=str(path))
    shrink(path)


def shoot_translator(url: str, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    paths = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        base = {"s1": TEXT, "s2": ""}
        results(page, f"{url}?{urlencode({**base, 'off': 'cross:L1H3'})}", out / "heads.png", "fell from")
        paths.append(out / "heads.png")
        page.locator("#why-step").click()
        page.wait_for_function(f"() => ({WHY})()?.startsWith('Switched off')", timeout=120_000)
        wait_idle(page)
        page.evaluate(TOP)
        shot(page, out / "step.png", paths)
        results(page, f"{url}?{urlencode({**base, 'causal': '0'})}", out / "causal.png", "causal mask")
        paths.append(out / "causal.png")
        results(page, f"{url}?{urlencode({**base, 'sample': '1', 'temperature': '1.5'})}", out / "sampling.png",
                "greedy answer")
        paths.append(out / "sampling.png")
        page.goto(f"{url}?{urlencode({**base, 'tab': 'contributions', 'at': '6', 'token': '3'})}")
        page.wait_for_function("() => (document.querySelector('#contrib-delta') || {}).innerText"
                               "?.includes('Completeness')", timeout=120_000)
        page.locator("#contrib-why").click()
        page.wait_for_function("() => (document.querySelector('#contrib-why-summary') || {}).innerText"
                               "?.includes('measure')", timeout=120_000)
        wait_idle(page)
        summary = page.locator("#contrib-why-summary")
        summary.scroll_into_view_if_needed()
        page.evaluate("() => window.scrollBy(0, -120)")
        shot(page, out / "measures.png", paths)
        browser.close()
    return paths


def shoot_features(url: str, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    paths = []
    summary = "() => (document.querySelector('#features-output-summary') || {}).innerText"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(f"{url}?{urlencode({'s1': '21/11/2026', 's2': '', 'tab': 'features', 'sae': 'date-gpt-L3-resid-pre'})}")
        page.wait_for_function("() => !!document.querySelector('#features-heatmap .js-plotly-plot .heatmaplayer')",
                               timeout=120_000)
        wait_idle(page)
        page.locator("#features-switches input").fill("3:off")
        page.locator("#features-switch").click()
        page.wait_for_function(f"() => ({summary})()?.includes('does not fire')", timeout=120_000)
        wait_idle(page)
        page.locator("#features-output-summary").scroll_into_view_if_needed()
        page.evaluate("() => window.scrollBy(0, -250)")
        shot(page, out / "latent.png", paths)
        page.locator("#features-steering").click()
        page.locator("#features-contrast input").fill("3 May 2024")
        page.locator("#features-toward input").fill("9 May 2024")
        page.locator("#features-steer").click()
        page.wait_for_function(f"() => ({summary})()?.includes('norm 0:')", timeout=120_000)
        wait_idle(page)
        page.evaluate("() => document.querySelector('#features-steering').scrollIntoView({block: 'start'})")
        shot(page, out / "steer.png", paths)
        browser.close()
    return paths


def shoot_generation(url: str, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    query = {"s1": "t1 t2 t3 t4 t5 t6 t1 t2 t3 t4", "s2": "", "sample": "1", "temperature": "2", "seed": "3",
             "tab": "generation"}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(f"{url}?{urlencode(query)}")
        page.wait_for_function("() => !!document.querySelector('#gen-self .js-plotly-plot .heatmaplayer')",
                               timeout=120_000)
        wait_idle(page)
        page.locator("#gen-self").scroll_into_view_if_needed()
        page.screenshot(path=str(out / "generation.png"))
        shrink(out / "generation.png")
        browser.close()
    return [out / "generation.png"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots" / "why"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for checkpoint, shoot in (("date-translator", shoot_translator), ("date-gpt", shoot_features),
                              ("induction-gpt", shoot_generation)):
        demo = served(checkpoint)
        try:
            for path in shoot(demo.local_url, out):
                print(path)
        finally:
            demo.close()


if __name__ == "__main__":
    main()
