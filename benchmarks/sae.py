"""SAE benchmark (issue 36): a GPT-2-small-shaped residual SAE (24,576 latents on d_model 768, random weights, at
blocks.6.hook_resid_pre) on a GPT-2-small-shaped model (random weights, loaded with `explorer.load` from the Hugging
Face layout as hub_lm writes it), and the dashboards of an SAE on the shipped date-gpt model.

Per length (128 and 1,024 tokens), in one process, interleaved:
  forward           one forward of the model, no attention weights (model(ids, need_weights=False): the fast path)
  forward_weights   one forward with every attention returned (what the page's Run computes)
  encode_top        the SAE on the 1,024 (128) residual vectors: encode, 256 tokens at a time, and the top 8 latents
                    per token (target at 1,024 tokens: <= 500 ms)
  reading           reading_of: encode_top plus the reconstruction (decode, error norms, explained variance)
  features_view     the Features tab's whole computation (explorer.interpret.sae.features_view: one run of the stacks
                    reading the site and the final norm, the reading, one latent along the sentence and its tokens);
                    target at 128 tokens: <= 1.5 x forward
  switched          one forward with two latents switched (off and add) through the splice hook
  features_tab      the app's whole Features computation (explorer.app.tabs.features.result.features) on a text of that
                    many tokens: the reading with the heatmap's 24 columns, a latent's dashboard read from the kept
                    example set (built before timing, once per model and SAE), its tokens, the labels; target at 128
                    tokens: <= 1.5 x forward_text, one forward on the same text
Peak: features_view at each length in a fresh process: the rise of the RSS high-water mark (reset just before) above
the resident size with the model and the SAE loaded; the app's request budget for one request is 1.5 GB above the
model (memory_1024). Also the estimate features_view_bytes gives, which the app's memory gate may use. Then, in
another fresh process, the app's features: its peak when it builds the dashboards (the first reading with an SAE),
its peak reading them, and the estimate the app's memory gate holds (explorer.app.tabs.features.result.feature_bytes,
the dashboards not built).

Dashboards: date-gpt (4 layers, d_model 64) with a random 512-latent SAE at blocks.2.hook_resid_pre, over the
model's own data: `texts` generated date examples written as the model reads them ([BOS] date [SEP] ISO date [EOS]);
latent_dashboards for every latent, 10 examples, 32 bins. Target: <= 10 s.
Shipped SAEs (checkpoints/saes/): each one's dashboards on its model's example set (the app's example texts) and on
`texts` held-out sequences of its model's task (explorer.training.sae_data). Target: <= 10 s.

Run alone: python -m benchmarks.sae [--tokens 128 1024] [--repeats 5] [--quick] [--no-peak]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from benchmarks.attribution_ig import reset_peak, status_mb
from benchmarks.common import interleaved, median_time, peak_section_parser, ratio
from benchmarks.hub_lm import GPT2_SMALL, TINY, write_folder

ROOT = Path(__file__).resolve().parent.parent
D_SAE = 24_576
HOOK = "blocks.6.hook_resid_pre"
K = 8


def hook_for(shape: dict[str, int]) -> str:
    return HOOK if shape["n_layer"] > 6 else f"blocks.{shape['n_layer'] // 2}.hook_resid_pre"


def setup(shape: dict[str, int], d_sae: int, folder: Path):
    import explorer
    from explorer.interpret.sae import random_sae

    loaded = explorer.load(write_folder(folder, shape), "cpu")
    return loaded, random_sae(shape["n_embd"], d_sae, hook_for(shape), seed=0)


def tab_case(loaded, sae, folder: Path, tokens: int, build: bool = True, key: str = "benchmark"
             ) -> tuple[torch.Tensor, Any]:
    """The Features tab's computation on a text of `tokens` tokens (one byte each for this tokenizer): (its ids, a
    call of explorer.app.tabs.features.result.features), the dashboards built first (`build`; they are kept per `key`,
    the model's)."""
    from explorer.app.tabs.features.result import FeatureRequest, features
    from explorer.app.tabs.features.sae_store import SAESource
    from explorer.interpret.sae import save_sae

    saes = folder / "saes"
    if not (saes / "sae").is_dir():
        save_sae(sae, saes / "sae")
    text = ("the cat sat on the mat and " * (tokens // 20 + 1))[:tokens]
    ids = torch.tensor(loaded.tokenizer.encode(text).ids)
    request = FeatureRequest(key, "", text, SAESource.of("sae", (str(saes),)))
    if build:
        features(loaded, request, 1024)  # builds the dashboards (once per model and SAE)
    return ids, lambda: features(loaded, request, 1024)


def ids_of(shape: dict[str, int], tokens: int) -> torch.Tensor:
    return torch.randint(0, shape["vocab_size"], (tokens,), generator=torch.Generator().manual_seed(tokens))


def encode_top(sae, x: torch.Tensor, k: int = K, chunk: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    """Encode (chunk tokens at a time) and keep the top k latents per token: the reading without the reconstruction."""
    ids, values = [], []
    with torch.inference_mode():
        for start in range(0, x.shape[0], chunk):
            top = sae.encode(x[start:start + chunk]).topk(k, dim=-1)
            ids.append(top.indices)
            values.append(top.values)
    return torch.cat(ids), torch.cat(values)


def cases(model, sae, ids: torch.Tensor, tab: tuple[torch.Tensor, Any] | None = None) -> dict[str, Any]:
    from explorer.interpret.sae import capture_site, features_view, hook_site, reading_of, sae_hook

    site = hook_site(model.config, sae.hook_name)
    x = capture_site(model, ids, site)[0]
    hook = sae_hook(model, sae, "3:off,17:add=4")

    def forward(need_weights: bool, hook=None):
        with torch.inference_mode():
            return model(ids[None], need_weights=need_weights, resid_hook=hook)

    out = {"forward": lambda: forward(False), "forward_weights": lambda: forward(True),
           "encode_top": lambda: encode_top(sae, x), "reading": lambda: reading_of(sae, x, site, k=K),
           "features_view": lambda: features_view(model, ids, sae, k=K), "switched": lambda: forward(False, hook)}
    if tab is not None:
        text_ids, call = tab

        def forward_text():
            with torch.inference_mode():
                return model(text_ids[None], need_weights=False)
        out.update(forward_text=forward_text, features_tab=call)
    return out


def peak_child(shape: dict[str, int], d_sae: int, tokens: int, threads: int, case: str = "view") -> dict[str, float]:
    """In a fresh process: the high-water mark's rise over one call of features_view (`case` "view"), or of the app's
    features (`case` "tab": the first call, which builds the dashboards, then a second reading them), after a warm-up
    of features_view on 8 tokens."""
    from explorer.app.tabs.features.result import feature_bytes
    from explorer.interpret.sae import features_view, features_view_bytes

    torch.set_num_threads(threads)
    with tempfile.TemporaryDirectory() as tmp:
        loaded, sae = setup(shape, d_sae, Path(tmp) / "gpt2")
        model = loaded.model
        features_view(model, ids_of(shape, 8), sae)
        if case == "view":
            start = reset_peak()
            features_view(model, ids_of(shape, tokens), sae, k=K)
            return {"peak_above_model_mb": round(status_mb("VmHWM") - start, 1),
                    "estimate_mb": round(features_view_bytes(model.config, sae, tokens) / 2**20, 1)}
        _, tab = tab_case(loaded, sae, Path(tmp), tokens, build=False)  # its own key: dashboards not built yet
        start = reset_peak()
        tab()
        first = round(status_mb("VmHWM") - start, 1)
        start = reset_peak()
        tab()
        return {"features_tab_first_peak_mb": first, "features_tab_peak_mb": round(status_mb("VmHWM") - start, 1),
                "features_tab_estimate_mb": round(feature_bytes(loaded, sae, tokens, built=False) / 2**20, 1)}


def peak_in_subprocess(shape: dict[str, int], d_sae: int, tokens: int, case: str = "view") -> dict[str, float]:
    cmd = [sys.executable, "-m", "benchmarks.sae", "--peak", "--shape", json.dumps(shape), "--d-sae", str(d_sae),
           "--tokens", str(tokens), "--threads", str(torch.get_num_threads()), "--case", case]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True, env=dict(os.environ))
    return json.loads(out.stdout.strip().splitlines()[-1])


def date_texts(loaded, n: int) -> list[torch.Tensor]:
    """n generated date examples as date-gpt reads them: [BOS] date [SEP] ISO [EOS] (its task's own format)."""
    from explorer.training import dates

    task = loaded.task
    chars = loaded.tokenizer.encode
    out = []
    for e in dates.generate_examples(n, seed=1):
        ids = [task["bos_id"], *chars(e.text).ids, task["sep_id"], *chars(e.target).ids, task["eos_id"]]
        out.append(torch.tensor(ids[: loaded.config.max_len]))
    return out


def dashboards(texts: int, d_sae: int, repeats: int) -> dict[str, Any]:
    import explorer
    from explorer.interpret.sae import latent_dashboards, random_sae

    loaded = explorer.load("date-gpt", "cpu")
    rows = date_texts(loaded, texts)
    sae = random_sae(loaded.config.d_model, d_sae, "blocks.2.hook_resid_pre", seed=0)
    seconds, dash = median_time(lambda: latent_dashboards(loaded.model, rows, sae, k=10, bins=32), repeats)
    return {"model": "date-gpt (shipped: 4 layers, d_model 64)", "d_sae": d_sae, "texts": texts,
            "tokens": dash.tokens, "s": round(seconds, 3), "result_kb": round(dash.nbytes() / 1024, 1),
            "latents_that_fired": int((dash.density > 0).sum())}


def shipped_dashboards(texts: int, repeats: int) -> list[dict[str, Any]]:
    """Every shipped SAE's dashboards (every latent, 10 examples, 32 bins) on its model's example set (the app's
    example texts) and on `texts` held-out sequences of its model's task."""
    import explorer
    from explorer.interpret.sae import latent_dashboards, load_sae, shipped_saes
    from explorer.training.sae_data import example_sequences, sae_splits

    out = []
    for name in shipped_saes():
        sae = load_sae(name)
        loaded = explorer.load(sae.model_name, "cpu")
        sae = load_sae(name, model=loaded.model, model_name=sae.model_name)
        held_out = sae_splits(loaded, 1, texts, seed=12_345)[1].ids
        row: dict[str, Any] = {"sae": name, "model": sae.model_name, "hook": sae.hook_name, "d_sae": sae.d_sae,
                               "texts": texts}
        for key, rows in (("examples", example_sequences(loaded)), ("held_out", held_out)):
            seconds, dash = median_time(lambda rows=rows, model=loaded.model, sae=sae:
                                        latent_dashboards(model, rows, sae, k=10, bins=32), repeats)
            row.update({f"{key}_s": round(seconds, 3), f"{key}_tokens": dash.tokens})
        out.append(row)
    return out


def run(tokens=(128, 1024), repeats: int = 5, shape: dict[str, int] | None = None, d_sae: int = D_SAE,
        peak: bool = True, texts: int = 2000, dashboard_d_sae: int = 512, fresh: bool = True) -> dict[str, Any]:
    """`fresh` False (QUICK): the app's Features peak ("tab") measured in this process, the view's in a fresh one (the
    smoke test shows that path once; a process here costs seconds of imports)."""
    shape = shape or GPT2_SMALL
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        loaded, sae = setup(shape, d_sae, Path(tmp) / "gpt2")
        model = loaded.model
        params = sum(p.numel() for p in model.parameters())
        for n in tokens:
            ids = ids_of(shape, n)
            cpu = time.process_time()
            times, _ = interleaved(cases(model, sae, ids, tab_case(loaded, sae, Path(tmp), n)), repeats)
            cpu = (time.process_time() - cpu) / (repeats + 1)
            row: dict[str, Any] = {"tokens": n, **{f"{k}_ms": round(v * 1e3, 1) for k, v in times.items()},
                                   "cpu_s_all_cases": round(cpu, 2),
                                   "ratio_features_view_over_forward": ratio(times["features_view"], times["forward"]),
                                   "ratio_features_view_over_forward_weights":
                                       ratio(times["features_view"], times["forward_weights"]),
                                   "ratio_encode_top_over_forward": ratio(times["encode_top"], times["forward"]),
                                   "ratio_features_tab_over_forward_text":
                                       ratio(times["features_tab"], times["forward_text"])}
            if peak:
                row.update(peak_in_subprocess(shape, d_sae, n))
                row.update(peak_in_subprocess(shape, d_sae, n, "tab") if fresh else
                           peak_child(shape, d_sae, n, torch.get_num_threads(), "tab"))
            rows.append(row)
    return {"model": f"GPT-2 shape {shape} ({params:,} parameters, random weights)", "gpt2_small": shape == GPT2_SMALL,
            "sae": f"{d_sae:,} latents on d_in {shape['n_embd']} at {hook_for(shape)}, standard, random weights",
            "d_sae": d_sae, "k": K, "threads": torch.get_num_threads(), "repeats": repeats, "by_tokens": rows,
            "dashboards": dashboards(texts, dashboard_d_sae, max(1, repeats // 2)),
            "shipped_dashboards": shipped_dashboards(texts, max(1, repeats // 2)),
            "load_average_1min_after": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None}


QUICK = dict(tokens=(16,), repeats=1, shape=TINY, d_sae=256, texts=40, fresh=False)


def main(argv=None) -> None:
    ap = peak_section_parser(__doc__, repeats=5)
    ap.add_argument("--d-sae", type=int, default=D_SAE, help=argparse.SUPPRESS)
    ap.add_argument("--case", default="view", choices=("view", "tab"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.peak:
        print(json.dumps(peak_child(json.loads(args.shape), args.d_sae, args.tokens[0], args.threads, args.case)))
        return
    kw = dict(QUICK) if args.quick else dict(tokens=tuple(args.tokens), repeats=args.repeats)
    print(json.dumps(run(**kw, peak=not args.no_peak), indent=1))


if __name__ == "__main__":
    main()
