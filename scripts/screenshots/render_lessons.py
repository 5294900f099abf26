"""Screenshots of every lesson's panel (headless Chromium) at 1280x800 and 390x844 into docs/screenshots/lessons/:
each lesson opened by its link (`?lesson=<id>`) once its first Run's check is shown, and the month lesson's third
step done (both cross heads off: "✓ the month changed to 05").

    python scripts/screenshots/render_lessons.py [--url http://127.0.0.1:7860/] [--out docs/screenshots/lessons]

Without --url the app is started in this process on a free port.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from render_app import CHROMIUM_ARGS, chromium_path, save  # noqa: E402

SIZES = {"desktop": (1280, 800), "phone": (390, 844)}
IDLE = "() => !document.querySelector('#status [data-testid=\"status-tracker\"].wrap:not(.hide)')"
PASSED = """() => { const t = document.querySelector('#lesson-text'); return !!t && t.innerText.includes('✓'); }"""


def settle(page) -> None:
    page.wait_for_function(IDLE, timeout=120_000)
    page.wait_for_function(PASSED, timeout=120_000)  # each lesson's first check holds as it opens, once it has run
    page.wait_for_timeout(2000)  # a screenshot only: let the figures and the panel paint


def shoot(url: str, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    from explorer.app.page.lessons import LESSONS

    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        for size, (w, h) in SIZES.items():
            context = browser.new_context(viewport={"width": w, "height": h}, is_mobile=size == "phone",
                                          has_touch=size == "phone")
            page = context.new_page()
            for n, lesson in enumerate(LESSONS, 1):
                page.goto(f"{url.rstrip('/')}/?lesson={lesson.id or n}")
                page.wait_for_selector("#lesson-panel", timeout=120_000)
                settle(page)
                save(page, out / f"{size}-{n}-{lesson.id or n}.png", paths)
            page.goto(f"{url.rstrip('/')}/?lesson=month-heads&step=3")
            page.wait_for_selector("#lesson-panel", timeout=120_000)
            page.wait_for_function("() => document.querySelector('#lesson-text').innerText.includes('✗')",
                                   timeout=120_000)
            page.wait_for_function(IDLE, timeout=120_000)
            for head in ("L1 H3", "L0 H1"):
                page.locator("#cross-heads").get_by_label(head).uncheck()
                page.wait_for_function(IDLE, timeout=120_000)
            settle(page)
            save(page, out / f"{size}-3-month-heads-step3-done.png", paths)
            context.close()
        browser.close()
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url")
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots" / "lessons"))
    args = ap.parse_args()
    if args.url:
        paths = shoot(args.url, Path(args.out))
    else:
        from explorer.app.demo import build_demo, launch_kwargs, queue
        demo = queue(build_demo(device="cpu"))
        demo.launch(server_name="127.0.0.1", server_port=None, prevent_thread_lock=True, quiet=True,
                    **launch_kwargs())
        try:
            paths = shoot(demo.local_url, Path(args.out))
        finally:
            demo.close()
    for path in paths:
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


if __name__ == "__main__":
    main()
