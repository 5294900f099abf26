"""Screenshots of the Hub families' own views at 1280x800 (headless Chromium) into docs/screenshots/app/: a Marian
translation model's generation tab (cross-attention per generated token, one cross-attention head off) and the
positional tab of a rotary model (Llama) and of T5 (relative bias per head, encoder and decoder).

    python scripts/screenshots/render_families.py [--out docs/screenshots/app]

Offline: the models are the tests' tiny models in the Hub layout (tests/app/tiny_models.py), with the real models'
positional settings (SmolLM2's rotary width and rope_theta, t5-small's 8 heads / 32 buckets / max distance 128).
The Marian model is first trained here (transformers, AdamW, a few minutes on 2 cores) to translate the tests' ten
English sentences into German, so its cross-attention has something to show; the Llama and T5 weights are random.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from scripts.screenshots.render_app import CHROMIUM_ARGS, chromium_path, save, wait_idle  # noqa: E402

# (file name, model folder, tab name, what to do first)
SHOTS = [("08-marian-generation.png", "tiny-marian", "Generation", "translate"),
         ("09-positional-rotary.png", "tiny-llama", "Positional encodings", None),
         ("10-positional-t5-bias.png", "tiny-t5", "Positional encodings", None)]


def launch(name: str, root: Path):
    from explorer.app.demo import build_demo, launch_kwargs, queue

    demo = queue(build_demo(device="cpu", checkpoint=name, allowed_dirs=[str(root)]))
    demo.launch(server_name="127.0.0.1", server_port=None, prevent_thread_lock=True, quiet=True, **launch_kwargs())
    return demo


def trained_marian(folder: Path, steps: int = 250) -> None:
    """The tiny Marian trained on the ten sentence pairs of tests/importers/seq2seq_harness.py, saved again."""
    import torch
    import transformers

    from tests.app.tiny_models import tiny_marian
    from tests.importers.seq2seq_harness import ENGLISH, GERMAN

    hf = tiny_marian(folder).train()
    tok = transformers.MarianTokenizer(str(folder / "source.spm"), str(folder / "target.spm"),
                                       str(folder / "vocab.json"))
    pairs = list(dict.fromkeys(zip(ENGLISH, GERMAN)))
    batch = tok([e for e, _ in pairs], text_target=[g for _, g in pairs], padding=True, return_tensors="pt")
    batch["labels"][batch["labels"] == tok.pad_token_id] = -100  # no loss on padding
    opt = torch.optim.AdamW(hf.parameters(), lr=3e-3)
    for _ in range(steps):
        loss = hf(**batch).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    hf.eval().save_pretrained(folder)


def head_that_changes(folder: Path) -> str:
    """The first cross-attention head (layer 0 H0 last: it is the view shown) that alone changes the translation."""
    import torch

    from explorer.importers import load_hf
    from explorer.outputs.seq2seq import compare_outputs
    from tests.app.tiny_models import MARIAN_TEXT

    loaded = load_hf(folder, "cpu")
    layers, heads = loaded.config.attention_kinds()["cross"]
    for layer, head in sorted(((la, h) for la in range(layers) for h in range(heads)), key=lambda x: x == (0, 0)):
        mask = torch.ones(layers, heads)
        mask[layer, head] = 0
        if compare_outputs(loaded, MARIAN_TEXT, {"cross": mask}, 20).first_difference is not None:
            return f"L{layer} H{head}"
    raise RuntimeError("no single cross-attention head changes the translation")


def sharpest_cross_head(folder: Path) -> tuple[int, int]:
    """(layer, head) whose cross-attention rows are the most peaked for the source sentence (the view shown)."""
    from explorer.importers import load_hf
    from explorer.outputs.seq2seq import translate as greedy
    from tests.app.tiny_models import MARIAN_TEXT

    loaded = load_hf(folder, "cpu")
    gen = greedy(loaded, MARIAN_TEXT, 20).generation
    layers = loaded.config.decoder_layers
    peaks = [gen.attention_matrix("cross", layer).amax(-1).mean(-1) for layer in range(layers)]  # each (H,)
    best = max(((la, h) for la in range(layers) for h in range(len(peaks[0]))), key=lambda x: float(peaks[x[0]][x[1]]))
    return best


def choose(page, elem_id: str, value: int) -> None:
    box = page.locator(f"#{elem_id} input")
    box.fill(str(value))
    box.press("Enter")
    wait_idle(page)


def translate(page, head: str, view: tuple[int, int]) -> None:
    """The Marian source sentence alone, at most 20 generated tokens, one cross-attention head off."""
    from tests.app.tiny_models import MARIAN_TEXT

    page.locator("#text2 textarea").fill("")
    slider = page.locator("#new-tokens input[type=number]")
    slider.fill("20")
    slider.press("Enter")
    page.locator("#text1 textarea").fill(MARIAN_TEXT)
    page.locator("#text1 textarea").press("Enter")
    wait_idle(page)
    page.locator("#cross-heads").get_by_label(head).uncheck()
    wait_idle(page)
    choose(page, "layer", view[0])
    choose(page, "head", view[1])


def shoot(out: Path, root: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    from tests.app.tiny_models import tiny_llama, tiny_t5

    for make, name in ((trained_marian, "tiny-marian"), (tiny_llama, "tiny-llama"), (tiny_t5, "tiny-t5")):
        make(root / name)
    head, view = head_that_changes(root / "tiny-marian"), sharpest_cross_head(root / "tiny-marian")
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        for file, name, tab, first in SHOTS:
            demo = launch(name, root)
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(demo.local_url)
            page.wait_for_selector("#head-plot .js-plotly-plot", timeout=90_000)
            wait_idle(page)
            if first == "translate":
                translate(page, head, view)
            page.locator("#views").get_by_role("tab", name=tab).click()
            wait_idle(page)
            save(page, out / file, paths, full_page=True)
            page.close()
            demo.close()
        browser.close()
    return paths


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots" / "app"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for path in shoot(Path(args.out), Path(tmp)):
            print(path)


if __name__ == "__main__":
    main()
