"""Screenshots of the Compare models tab (headless Chromium, 1280 wide, whole page) into docs/screenshots/:
compare_lm.png (two tiny random-weight language models, a byte-level BPE one and a sentencepiece one, as gpt2 and
Pythia differ; the second with one head off) and compare_seq.png (date-translator vs date-gpt, the suggested pair).

    python scripts/screenshots/render_compare.py [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.app.browser import FIRST_RUN_JS, new_page, served  # noqa: E402
from scripts.screenshots.render_app import CHROMIUM_ARGS, chromium_path, shrink  # noqa: E402
from tests.app.test_browser_compare import CHECKED, TEXT_JS, shows  # noqa: E402
from tests.app.tiny_models import tiny_gpt2, tiny_llama  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from explorer.app.demo import build_demo

    root = Path(tempfile.mkdtemp())
    tiny_gpt2(root / "tiny-gpt2")
    tiny_llama(root / "tiny-llama")
    demo = build_demo(device="cpu", checkpoint="tiny-gpt2", allowed_dirs=[str(root)])
    with served(demo, 7960) as url, sync_playwright() as p:
        browser, page = new_page(p, chromium_path(), CHROMIUM_ARGS, viewport={"width": 1280, "height": 900})
        page.goto(url)
        page.wait_for_function(FIRST_RUN_JS)
        page.locator("#text2 textarea").fill("")
        page.locator("#text1 textarea").fill("The cat sat on the mat")
        page.locator("#text1 textarea").press("Enter")
        page.get_by_role("tab", name="Compare models").click()
        page.locator("#model2 input").fill("tiny-llama")
        page.locator("#model2 input").press("Enter")
        shows(page, 2, "tiny-llama", "<s>")
        page.locator("#heads2").get_by_text("Second model's heads").click()
        page.wait_for_function(f"() => ({CHECKED})('dec2-heads') === 4")
        page.locator("#dec2-heads").get_by_label("L0 H1").uncheck()
        page.wait_for_function(f"() => ({TEXT_JS})('compare2-md').includes('with the toggles p =')")
        shows(page, 2, "tiny-llama")
        page.wait_for_timeout(500)  # let the plots finish their transition (a picture, not a test)
        page.screenshot(path=str(args.out / "compare_lm.png"), full_page=True)

        page.locator("#pair input").click()
        page.get_by_role("option", name="date-translator vs date-gpt", exact=True).click()
        shows(page, 1, "date-translator", "[EOS]")
        shows(page, 2, "date-gpt", "[SEP]")
        for side in (1, 2):
            page.wait_for_function(f"() => ({TEXT_JS})('compare{side}-output').includes('2026-11-21')")
        page.wait_for_timeout(500)
        page.screenshot(path=str(args.out / "compare_seq.png"), full_page=True)
        browser.close()
    for name in ("compare_lm.png", "compare_seq.png"):
        shrink(args.out / name)
        print(args.out / name)


if __name__ == "__main__":
    main()
