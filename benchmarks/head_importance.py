"""Head-importance benchmark: prints JSON.

For a MiniLM-sized encoder (6 layers x 12 heads; the real MiniLM when its package is installed)
on two sentences of N tokens with the similarity objective:
- exact sweep (lower layers shared, one batch per layer) vs one independent forward pass per head;
- gradient estimate (one forward + one backward) vs one pass per head, and how well the rankings agree.

Run: python -m benchmarks.head_importance [--tokens 32 128] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json

import torch

from benchmarks.common import median_time
from explorer.interpret.importance import Probe, exact_sweep, gradient_estimate, run_objective
from explorer.model import Transformer, TransformerConfig
from explorer.stats import spearman


def minilm_or_same_shape() -> tuple[Transformer, str]:
    try:
        from explorer.loading import load

        return load("sentence-transformers/all-MiniLM-L6-v2").model, "all-MiniLM-L6-v2"
    except Exception:  # noqa: BLE001 - benchmark falls back to the same shape with random weights
        config = TransformerConfig(arch="encoder", vocab_size=30522, d_model=384, n_heads=12, n_layers=6,
                                   d_ff=1536, dropout=0.0, positional="learned", activation="gelu",
                                   type_vocab_size=2, embedding_norm=True, layer_norm_eps=1e-12)
        return Transformer(config).eval(), "random weights, all-MiniLM-L6-v2 shape"


def per_head_passes(model, probe):
    L, H = model.config.encoder_layers, model.config.n_heads
    with torch.inference_mode():
        base = run_objective(model, probe)
        out = torch.zeros(L, H)
        for layer in range(L):
            for head in range(H):
                mask = torch.ones(L, H)
                mask[layer, head] = 0
                out[layer, head] = run_objective(model, probe, {"encoder": mask}) - base
    return out


def run(tokens=(32, 128), repeats=3) -> dict:
    """The measurements as a dict (what `main` prints)."""
    model, name = minilm_or_same_shape()
    results = {"model": name, "threads": torch.get_num_threads(), "by_length": {}}
    for n in tokens:
        src = torch.randint(1000, 20000, (2, n))
        src[1, n // 2:] = 0  # second sentence shorter: padding in the batch
        probe = Probe(src, "similarity")
        naive_s, naive = median_time(lambda: per_head_passes(model, probe), repeats, warmup=0)
        sweep_s, (exact, _) = median_time(lambda: exact_sweep(model, probe), repeats, warmup=0)
        grad_s, estimate = median_time(lambda: gradient_estimate(model, probe), repeats, warmup=0)
        results["by_length"][n] = {
            "one_pass_per_head_s": round(naive_s, 4),
            "exact_sweep_s": round(sweep_s, 4),
            "gradient_estimate_s": round(grad_s, 4),
            "sweep_over_per_head": round(sweep_s / naive_s, 3),
            "per_head_over_gradient": round(naive_s / grad_s, 2),
            "sweep_matches_per_head_max_abs": float((exact["encoder"] - naive).abs().max()),
            "spearman_exact_vs_gradient": round(spearman(exact["encoder"].abs(), estimate["encoder"].abs()), 3),
        }
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, nargs="+", default=[32, 128])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.tokens, args.repeats), indent=2))


if __name__ == "__main__":
    main()
