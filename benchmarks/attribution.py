"""Where a prediction comes from, timed (issue 27): on a GPT-2-small-shaped model (124M parameters, random weights,
loaded with `explorer.load` from the Hugging Face layout), direct logit attribution of the top token at the last
position plus the 10 promoted and 10 suppressed tokens of every head (explorer.interpret.residual_parts ->
.attribute() -> .all_head_tokens(10)), against one forward pass with every attention returned (what the app runs
anyway); interleaved in one process at 128 and 1,024 tokens. Goal: <= 1.2 x the forward pass at 128 tokens.

TransformerLens 4.3 (optional, skipped with a message when it is not installed): its TransformerBridge around
transformers' GPT2LMHeadModel of the same folder, `run_with_cache`, then `cache.stack_head_results(layer=-1,
pos_slice=-1, apply_ln=True)` times `W_U[:, t]` (the per-head DLA of TransformerLens's tutorials), against
transformers' eager forward with `output_attentions=True`, interleaved too.

Run alone: python -m benchmarks.attribution [--tokens 128 1024] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import torch

from benchmarks.common import interleaved, ratio, version
from benchmarks.hub_lm import GPT2_SMALL, write_folder


def ours(model, ids: torch.Tensor) -> dict[str, Any]:
    """One forward with every attention, and DLA + every head's tokens, as callables."""
    from explorer.interpret import residual_parts

    def forward():
        with torch.inference_mode():
            return model(ids)

    def attribution():
        parts = residual_parts(model, ids[0])
        return parts.attribute(), parts.all_head_tokens(10)
    return {"forward_with_attention": forward, "dla_and_head_tokens": attribution}


def transformer_lens_missing() -> str | None:
    try:
        import transformer_lens  # noqa: F401
        from transformer_lens.model_bridge import TransformerBridge  # noqa: F401
    except ImportError as err:
        return (f"TransformerLens is not installed ({err}): pip install transformer-lens==4.3.0 torch==2.13.0 "
                "(requirements-bench.txt; pip keeps the pinned torch)")
    return None


def load_bridge(folder: Path, hf):
    """TransformerLens 4.3's TransformerBridge around transformers' GPT-2 `hf` of `folder`, offline: the tokenizer
    comes from the folder (TransformerLens reloads it by path to add a BOS token)."""
    import transformers
    from transformer_lens.model_bridge import TransformerBridge

    (folder / "tokenizer_config.json").write_text(json.dumps({
        "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "tokenizer_class": "PreTrainedTokenizerFast"}))
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    return TransformerBridge.boot_transformers(str(folder), device="cpu", hf_model=hf, tokenizer=tokenizer).eval()


def theirs(hf, bridge, ids: torch.Tensor) -> dict[str, Any]:
    def forward():
        with torch.inference_mode():
            return hf(ids, output_attentions=True)

    def attribution():
        with torch.inference_mode():
            logits, cache = bridge.run_with_cache(ids)
            token = int(logits[0, -1].argmax())
            per_head = cache.stack_head_results(layer=-1, pos_slice=-1, apply_ln=True)  # (L*H, 1, D)
            return per_head @ bridge.W_U[:, token], token
    return {"transformers_forward_with_attention": forward, "transformer_lens_dla": attribution}


def run(tokens=(128, 1024), repeats=5, shape: dict[str, int] | None = None) -> dict[str, Any]:
    import transformers

    import explorer

    shape = shape or GPT2_SMALL
    missing = transformer_lens_missing()
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_folder(Path(tmp) / "gpt2", shape)
        model = explorer.load(folder, "cpu").model.eval()
        hf = bridge = None
        if missing is None:
            hf = transformers.GPT2LMHeadModel.from_pretrained(folder, attn_implementation="eager").eval()
            bridge = load_bridge(folder, hf)
        rows = []
        for n in tokens:
            ids = torch.randint(0, shape["vocab_size"], (1, n), generator=torch.Generator().manual_seed(n))
            fns = ours(model, ids)
            if missing is None:
                fns.update(theirs(hf, bridge, ids))
            times, outs = interleaved(fns, repeats)
            dla, heads = outs["dla_and_head_tokens"]
            row = {"tokens": n, "forward_with_attention_ms": round(times["forward_with_attention"] * 1e3, 1),
                   "dla_and_head_tokens_ms": round(times["dla_and_head_tokens"] * 1e3, 1),
                   "ratio_dla_over_forward": ratio(times["dla_and_head_tokens"], times["forward_with_attention"]),
                   "identity_abs_error": abs(dla.total() - dla.logit), "heads_with_tokens": heads["decoder"]
                   .promoted_ids.shape[0] * heads["decoder"].promoted_ids.shape[1]}
            if missing is None:
                t_fwd, t_tl = times["transformers_forward_with_attention"], times["transformer_lens_dla"]
                per_head, token = outs["transformer_lens_dla"]
                row.update(transformers_forward_with_attention_ms=round(t_fwd * 1e3, 1),
                           transformer_lens_dla_ms=round(t_tl * 1e3, 1),
                           ratio_transformer_lens_over_transformers=ratio(t_tl, t_fwd),
                           ratio_ours_over_transformer_lens=ratio(times["dla_and_head_tokens"], t_tl),
                           same_token=token == dla.token,
                           heads_max_abs_diff_vs_transformer_lens=float(
                               (per_head.flatten().float() - dla.heads.flatten()).abs().max())
                           if token == dla.token else None)
            rows.append(row)
            del outs
    params = sum(p.numel() for p in model.parameters())
    out = {"model": f"GPT-2 shape {shape} ({params:,} parameters, random weights)",
           "threads": torch.get_num_threads(), "repeats": repeats, "by_tokens": rows,
           "transformer_lens": version("transformer-lens") or version("transformer_lens")}
    if missing is not None:
        out["transformer_lens_skipped"] = missing
    return out


def print_table(res: dict[str, Any]) -> None:
    """The side-by-side view: one forward with attention, ours, the ratio (and TransformerLens's)."""
    print(res["model"], f"- {res['threads']} threads, median of {res['repeats']}")
    head = f"{'tokens':>7} {'forward+attn':>13} {'DLA+head tokens':>16} {'ratio':>6}"
    tl = "transformer_lens_skipped" not in res
    if tl:
        head += f" {'hf eager+attn':>14} {'TL DLA':>9} {'TL ratio':>8}"
    print(head)
    for r in res["by_tokens"]:
        line = (f"{r['tokens']:>7} {r['forward_with_attention_ms']:>10.1f} ms {r['dla_and_head_tokens_ms']:>13.1f} ms "
                f"{r['ratio_dla_over_forward']:>6.3f}")
        if tl:
            line += (f" {r['transformers_forward_with_attention_ms']:>11.1f} ms {r['transformer_lens_dla_ms']:>6.1f} ms"
                     f" {r['ratio_transformer_lens_over_transformers']:>8.3f}")
        print(line)
    if not tl:
        print("TransformerLens:", res["transformer_lens_skipped"])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, nargs="+", default=[128, 1024])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = ap.parse_args(argv)
    res = run(tuple(args.tokens), args.repeats)
    print_table(res)
    if args.json:
        print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
