"""Render the figures of docs/heads.md's "How a head computes" on the shipped induction-gpt and save PNGs to
docs/screenshots/viz/: a previous-token head (L0 H1) and an induction head (L1 H2) as lines, and L1 H2's queries and
keys in one picture (the last query chosen), on a random sequence repeated.

Run `PYTHONPATH=. python scripts/screenshots/render_head_views.py` (from the repository root).
"""

from __future__ import annotations

import torch

import explorer
from explorer.interpret import capture_block, query_key_map
from explorer.viz import head_lines, query_key_figure
from render_figures import OUT, render, shrink

TEXT = "t5 t17 t99 t42 t8 t250 t13 t77 t5 t17 t99 t42 t8"


def figures() -> dict[str, object]:
    bundle = explorer.load("induction-gpt", "cpu")
    model, tok = bundle.model, bundle.tokenizer
    ids = torch.tensor(tok.encode(TEXT).ids)
    labels = [tok.id_to_token(i) for i in ids.tolist()]
    with torch.no_grad():
        attention = model(ids[None]).attentions.decoder  # per layer (1, 4, T, T)
    weights = torch.stack([attention[0][0, 1], attention[1][0, 2]])  # (2, T, T)
    lines = head_lines(weights, labels, labels, ["L0 H1 (previous token)", "L1 H2 (induction)"],
                       title="induction-gpt: a previous-token head and an induction head", width=620)
    qk = query_key_map(capture_block(model, ids, "decoder", 1), 2)
    joint = query_key_figure(qk, labels, query=qk.query_index(0, len(labels) - 1), width=700, height=520)
    return {"head_lines": lines, "query_key": joint}


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    render(figures(), "induction-gpt", None)
    for name in ("head_lines", "query_key"):
        shrink(OUT / f"{name}_induction-gpt.png")
