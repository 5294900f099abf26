"""Head effects benchmark (issue 34, "Why this token?"): every head switched off alone, exact and batched
(`explorer.interpret.head_effects`), on a GPT-2-small-shaped model (12 layers x 12 heads = 144 heads, d_model 768,
random weights, loaded with `explorer.load` from the Hugging Face layout as hub_lm writes it) at 128 tokens, read at
the last position, and on the shipped checkpoints as the Contributions tab reads them.

Per case: the single-head sweep (`head_effects`), the same with the pair search forced (`why_token(search_pairs=
True)`: the sweep + 28 pairs of the 8 strongest heads), one forward pass, and one independent forward pass per head
(what a hand sweep of the heads computes; GPT-2 shape and the shipped models) with the largest difference between
the two in p(token). The shipped date-translator also regenerates its greedy answer with the best pair off and the
single heads (`regenerate`, one batch). Median of `repeats` after one warm-up; cpu_s the process's CPU time per
call (all threads).

Run alone: python -m benchmarks.head_effects [--tokens 128] [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from benchmarks.common import median_time
from benchmarks.hub_lm import GPT2_SMALL, TINY, write_folder


def per_head_passes(model, ids: torch.Tensor, tgt: torch.Tensor | None, position: int, token: int) -> torch.Tensor:
    """p(token) with each head off, one whole forward pass per head (every_head order)."""
    from explorer.interpret.head_effects import every_head, masks_without

    kinds = model.config.attention_kinds()
    out = []
    with torch.inference_mode():
        for head in every_head(model):
            logits = model(ids[None], None if tgt is None else tgt[None], need_weights=False,
                           head_mask=masks_without(kinds, [head])).logits[0, position]
            out.append(logits.double().softmax(-1)[token])
    return torch.stack(out)


def measure(name: str, model, ids: torch.Tensor, tgt: torch.Tensor | None, position: int, repeats: int,
            per_head: bool = True) -> dict[str, Any]:
    from explorer.interpret.head_effects import head_effects, why_token

    with torch.inference_mode():
        cpu = time.process_time()
        sweep_s, effects = median_time(lambda: head_effects(model, ids, tgt=tgt, position=position), repeats)
        cpu_s = (time.process_time() - cpu) / (repeats + 1)
        pairs_s, forced = median_time(lambda: why_token(model, ids, tgt=tgt, position=position, search_pairs=True),
                                      repeats)
        forward_s, _ = median_time(lambda: model(ids[None], None if tgt is None else tgt[None], need_weights=False),
                                   repeats)
    row = {"case": name, "tokens": int((ids if tgt is None else tgt).shape[0]), "heads": len(effects.sets),
           "sweep_ms": round(sweep_s * 1e3, 1), "sweep_cpu_s": round(cpu_s, 3),
           "sweep_and_pairs_ms": round(pairs_s * 1e3, 1),
           "pairs": 0 if forced.pairs is None else len(forced.pairs.sets), "forward_ms": round(forward_s * 1e3, 2),
           "sweep_over_forward": round(sweep_s / forward_s, 1)}
    if per_head:
        naive_s, naive = median_time(lambda: per_head_passes(model, ids, tgt, effects.position, effects.token),
                                     max(1, repeats // 2), warmup=0)
        row.update(per_head_ms=round(naive_s * 1e3, 1), sweep_over_per_head=round(sweep_s / naive_s, 3),
                   max_abs_prob_difference=float((naive - torch.from_numpy(effects.prob)).abs().max()))
    return row


def shipped(repeats: int) -> list[dict[str, Any]]:
    """The shipped checkpoints, as the Contributions tab reads them (a sequence model: prompt or source + its own
    greedy answer, without the end token)."""
    import explorer
    from explorer.outputs.generate import generate
    from explorer.interpret.head_effects import regenerate, why_token
    from explorer.training.tasks import task_from_dict

    rows = []
    loaded = explorer.load("date-translator", "cpu")
    model = loaded.model.eval()
    task = task_from_dict(loaded.task, loaded.tokenizer)
    src = torch.tensor(task.encode_source("lundi 3 mars 2025")[0])
    tgt = torch.tensor([task.bos_id] + task.chars("2025-03-03"))
    row = measure("date-translator, 'lundi 3 mars 2025', the month's 3 (position 6)", model, src, tgt, 6, repeats)
    best = why_token(model, src, tgt=tgt, position=6, search_pairs=True).pairs
    pair = best.sets[best.order()[0]]
    sets = [pair] + [[h] for h in pair]
    regen_s, answers = median_time(lambda: regenerate(model, src, sets, bos_id=task.bos_id, eos_id=task.eos_id,
                                                      max_new_tokens=task.max_new_tokens, decode=task.decode), repeats)
    row.update(regenerate_ms=round(regen_s * 1e3, 1), regenerated=len(sets),
               best_pair=" + ".join(h.name() for h in pair), best_pair_answer=answers.variants[0].text)
    rows.append(row)

    gpt = explorer.load("date-gpt", "cpu")
    gtask = task_from_dict(gpt.task, gpt.tokenizer)
    prompt = gtask.encode_source("lundi 3 mars 2025")[0]
    answer = gtask.generate(gpt.model.eval(), ["lundi 3 mars 2025"]).tokens[0].tolist()
    reading = torch.tensor(prompt + [i for i in answer if i != gtask.eos_id])
    rows.append(measure("date-gpt, 'lundi 3 mars 2025', last position", gpt.model, reading, None, -1, repeats))

    ind = explorer.load("induction-gpt", "cpu")
    prompt = ind.tokenizer.encode("t5 t9 t2 t7 t5 t9").ids
    eos = ind.task["eos_id"]
    answer = generate(ind.model.eval(), torch.tensor([prompt]), eos_id=eos, max_new_tokens=8).tokens[0].tolist()
    reading = torch.tensor(prompt + [i for i in answer if i != eos])
    rows.append(measure("induction-gpt, 't5 t9 t2 t7 t5 t9', last position", ind.model, reading, None, -1, repeats))
    return rows


def run(tokens=(128,), repeats: int = 3, shape: dict[str, int] | None = None) -> dict[str, Any]:
    shape = shape or GPT2_SMALL
    import explorer

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        model = explorer.load(write_folder(Path(tmp) / "gpt2", shape), "cpu").model.eval()
        for n in tokens:
            ids = torch.randint(0, shape["vocab_size"], (n,), generator=torch.Generator().manual_seed(n))
            rows.append(measure(f"GPT-2-small shape, {n} tokens, last position" if shape is GPT2_SMALL else
                                f"tiny GPT-2, {n} tokens", model, ids, None, -1, repeats))
    rows += shipped(repeats)
    return {"model": "GPT-2 small shape (12 x 12, d768), random weights" if shape is GPT2_SMALL else f"tiny {shape}",
            "gpt2_small": shape is GPT2_SMALL, "threads": torch.get_num_threads(), "repeats": repeats,
            "by_case": rows}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, nargs="+", default=[128])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a tiny GPT-2 at 16 tokens, one repeat")
    args = parser.parse_args(argv)
    if args.quick:
        print(json.dumps(run((16,), 1, TINY), indent=2))
    else:
        print(json.dumps(run(tuple(args.tokens), args.repeats), indent=2))


if __name__ == "__main__":
    main()
