"""Screenshots of the Features tab on the shipped date-gpt (headless Chromium): at 1280 x 800 into
docs/screenshots/features_date-gpt.png (the tab after a click on a heatmap cell and that latent clamped to 30), and,
with --phone-out, at 390 x 844 (a phone) into that file.

The SAE: a shipped one for date-gpt (checkpoints/saes/, `--sae NAME`), else one fitted here on 80 of its dates as
docs/features.md fits it (a standard SAE of 128 latents at blocks.2.hook_resid_pre, 200 Adam steps) and saved in a
temporary folder the app is allowed to load.

    python scripts/screenshots/render_features.py [--sae NAME] [--out docs/screenshots/features_date-gpt.png]
                                                  [--phone-out /tmp/features_phone.png]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from render_app import CHROMIUM_ARGS, ROOT, chromium_path, shrink, wait_idle

SENTENCE = "21/11/2026"
DRAWN = "() => !!document.querySelector('#features-heatmap .js-plotly-plot .heatmaplayer')"
CELL = """(column) => { const gd = document.querySelector('#features-heatmap .js-plotly-plot'), L = gd._fullLayout;
  const r = gd.getBoundingClientRect(), rows = L.yaxis._categories.length;
  return [r.left + L.xaxis._offset + L.xaxis.l2p(column), r.top + L.yaxis._offset + L.yaxis.l2p(rows - 1)]; }"""


def fitted_sae(folder: Path) -> str:
    """A standard SAE fitted on date-gpt's residual stream at blocks.2.hook_resid_pre, saved as folder/date-gpt-sae."""
    import torch

    import explorer
    from explorer.interpret.sae import SAE, capture_site, save_sae
    from explorer.training import dates

    loaded = explorer.load("date-gpt", "cpu")
    encode = loaded.tokenizer.encode
    x = torch.cat([capture_site(loaded.model, torch.tensor(encode(f"[BOS]{e.text}[SEP]{e.target}").ids),
                                "decoder.2.resid_pre")[0] for e in dates.generate_examples(80, seed=1)])
    torch.manual_seed(0)
    W_dec = torch.nn.Parameter(torch.randn(128, 64) / 8)
    W_enc, b_enc = torch.nn.Parameter(W_dec.detach().T.clone()), torch.nn.Parameter(torch.zeros(128))
    b_dec = torch.nn.Parameter(x.mean(0))
    optimizer = torch.optim.Adam([W_enc, b_enc, W_dec, b_dec], lr=1e-2)
    for _ in range(200):
        f = torch.relu((x - b_dec) @ W_enc + b_enc)
        loss = (f @ W_dec + b_dec - x).pow(2).sum(-1).mean() + (f * W_dec.norm(dim=-1)).sum(-1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    sae = SAE(W_enc.detach(), b_enc.detach(), W_dec.detach(), b_dec.detach(), "standard", "blocks.2.hook_resid_pre")
    save_sae(sae, folder / "date-gpt-sae", model_name="date-gpt")
    return "date-gpt-sae"


def shoot(url: str, desktop: Path, phone: Path | None) -> list[Path]:
    from playwright.sync_api import sync_playwright

    desktop.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(url)
        page.wait_for_function(DRAWN, timeout=120_000)
        wait_idle(page)
        # a click on the heatmap's second column: that latent's dashboard; then clamp it to 30
        before = page.locator("#features-latent input").input_value()
        page.locator("#features-heatmap").scroll_into_view_if_needed()
        x, y = page.evaluate(CELL, 1)
        page.mouse.click(x, y)
        page.wait_for_function(f"() => document.querySelector('#features-latent input').value !== '{before}'",
                               timeout=60_000)
        wait_idle(page)
        page.locator("#features-mode").get_by_label("clamp").check()
        page.locator("#features-value input").fill("30")
        page.locator("#features-add").click()
        wait_idle(page)
        page.wait_for_function("() => (document.querySelector('#features-output-summary') || {}).innerText"
                               "?.includes('Switched:')", timeout=60_000)
        wait_idle(page)
        views = page.locator("#views")
        views.scroll_into_view_if_needed()
        views.screenshot(path=str(desktop))
        shrink(desktop)
        if phone is None:
            browser.close()
            return [desktop]
        small = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
        small.goto(url)
        small.wait_for_function(DRAWN, timeout=120_000)
        wait_idle(small)
        small.locator("#features-summary").scroll_into_view_if_needed()
        small.screenshot(path=str(phone))
        shrink(phone)
        browser.close()
    return [desktop, phone]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sae", help="a shipped SAE of date-gpt (default: fit one)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots" / "features_date-gpt.png"))
    ap.add_argument("--phone-out", help="also a phone's screenshot (390 x 844) into this file")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from urllib.parse import quote

    from explorer.app.demo import build_demo, launch_kwargs, queue

    with tempfile.TemporaryDirectory() as tmp:
        sae = args.sae or fitted_sae(Path(tmp))
        demo = queue(build_demo(checkpoint="date-gpt", device="cpu", allowed_dirs=[tmp]))
        demo.launch(server_name="127.0.0.1", server_port=None, prevent_thread_lock=True, quiet=True,
                    **launch_kwargs())
        try:
            url = f"{demo.local_url}?tab=features&s1={quote(SENTENCE)}&sae={quote(sae)}"
            for path in shoot(url, Path(args.out), Path(args.phone_out) if args.phone_out else None):
                print(path)
        finally:
            demo.close()


if __name__ == "__main__":
    main()
