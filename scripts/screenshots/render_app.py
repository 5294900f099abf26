"""Screenshots of the app at 1280x800 (headless Chromium) into docs/screenshots/app/: the first screen, the
model panel, and every tab (whole page); the Roles, Patching and Lens tabs on the shipped induction-gpt.

    python scripts/screenshots/render_app.py [--url http://127.0.0.1:7860/] [--out docs/screenshots/app]

Without --url the app is started in this process on a free port.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABS = [("attention", "Attention & output"), ("overview", "All heads"), ("generation", "Generation"),
        ("positional", "Positions"), ("importance", "Importance"), ("rollout", "Rollout"),
        ("api", "API")]
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def chromium_path() -> str | None:
    return shutil.which("chromium") or (("/usr/bin/chromium") if Path("/usr/bin/chromium").exists() else None)


def wait_idle(page, timeout: float = 60_000) -> None:
    """Until no Gradio progress indicator is shown."""
    page.wait_for_timeout(400)
    page.wait_for_function("() => !document.querySelector('.progress-text, .eta-bar, .wrap.pending')",
                           timeout=timeout)
    page.wait_for_timeout(300)


def shrink(path: Path) -> None:
    """Palette PNG (256 colours): a third of the size, still sharp for text and heatmaps."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as im:
        small = im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    small.save(path, optimize=True)


def save(page, path: Path, paths: list[Path], **kwargs) -> None:
    page.screenshot(path=str(path), **kwargs)
    shrink(path)
    paths.append(path)


def shoot(url: str, out: Path) -> list[Path]:
    """The first screen at 1280 x 800 as a visitor sees it, the model panel open, then each tab (whole page)."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(url)
        page.wait_for_selector("#head-plot .js-plotly-plot", timeout=90_000)
        wait_idle(page)
        save(page, out / "00-first-screen.png", paths)
        page.get_by_role("button", name="Toggle Sidebar").click()
        page.wait_for_timeout(600)
        save(page, out / "00-model-panel.png", paths)
        page.get_by_role("button", name="Toggle Sidebar").click()
        # A toggled state worth looking at: one cross-attention head of the last layer off (when there is one).
        box = page.locator("#cross-heads").get_by_label("L1 H1")
        if box.count():
            box.uncheck()
            wait_idle(page)
        for i, (tab_id, name) in enumerate(TABS, start=1):
            page.locator("#views").get_by_role("tab", name=name).click()
            if tab_id == "importance":
                page.get_by_role("button", name="Rank the heads for the current sentences").click()
                page.wait_for_selector("#importance-plot .js-plotly-plot", timeout=90_000)
            wait_idle(page)
            save(page, out / f"{i:02d}-{tab_id}.png", paths, full_page=True)
        browser.close()
    return paths


# The head tabs on induction-gpt: (file, tab, sentence 1, sentence 2, button, plot drawn).
HEAD_TABS = [("20-roles.png", "Roles", "t1 t2 t3 t4 t5 t6 t7 t8 t1 t2 t3 t4", "", "#roles-run", "#roles-probe-plot"),
             ("21-patching.png", "Patching", "t1 t2 t3 t4 t5 t6 t1 t2 t3", "t1 t2 t3 t4 t5 t7 t1 t2 t3",
              "#patch-run", "#patching-plot"),
             ("22-lens.png", "Lens", "t1 t2 t3 t4 t5 t6 t1 t2 t3", "", "#lens-run", "#lens-plot")]


def shoot_heads(url: str, out: Path) -> list[Path]:
    """The Roles, Patching and Lens tabs of an app started on induction-gpt, each after its button."""
    from playwright.sync_api import sync_playwright

    paths: list[Path] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(url)
        page.wait_for_selector("#head-plot .js-plotly-plot", timeout=90_000)
        wait_idle(page)
        for name, tab, text1, text2, button, plot in HEAD_TABS:
            page.locator("#text1 textarea").fill(text1)
            page.locator("#text2 textarea").fill(text2)
            page.locator("#views").get_by_role("tab", name=tab).click()
            page.locator(button).click()
            page.wait_for_selector(f"{plot} .js-plotly-plot .heatmaplayer", timeout=90_000)
            wait_idle(page)
            page.locator(plot).scroll_into_view_if_needed()
            save(page, out / name, paths, full_page=True)
        browser.close()
    return paths


def started(checkpoint: str | None = None):
    """An app in this process on a free port -> (demo, url)."""
    sys.path.insert(0, str(ROOT))
    from explorer.app.demo import build_demo, launch_kwargs, queue

    demo = queue(build_demo(checkpoint=checkpoint))
    demo.launch(server_name="127.0.0.1", server_port=None, prevent_thread_lock=True, quiet=True, **launch_kwargs())
    return demo, demo.local_url


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url")
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots" / "app"))
    args = ap.parse_args()
    url, demo = args.url, None
    if url is None:
        demo, url = started()
    for path in shoot(url, Path(args.out)):
        print(path)
    if demo is not None:
        demo.close()
    heads_demo, heads_url = started("induction-gpt")
    try:
        for path in shoot_heads(heads_url, Path(args.out)):
            print(path)
    finally:
        heads_demo.close()


if __name__ == "__main__":
    main()
