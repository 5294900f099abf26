"""Model-core benchmark: prints JSON.

1. Training steps/s of seed 001's text classifier built from our encoder vs the same classifier
   built on torch.nn.TransformerEncoder (same data, same parameter count, same optimiser),
   measured interleaved in one run; ratio > 1 means ours is faster. As in the seed's comparison,
   our preset drops what the seed's hand-written layer drops (the two sublayer outputs) and
   torch.nn.TransformerEncoderLayer(dropout=0.1) also drops attention weights and the feed-forward
   hidden layer; a third model, ours with torch's dropout placement, gives the like-for-like ratio.
2. Forward time with attention weights returned vs the fast (SDPA) path.

Run: python -m benchmarks.model_core [--steps 30] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import torch
from torch import nn

from explorer.model import Transformer, TransformerConfig, sinusoidal_table


class TorchTextClassifier(nn.Module):
    """Seed 001's TextClassifier on torch.nn.TransformerEncoder (410,117 parameters)."""

    def __init__(self, vocab_size=1000, d_model=128, heads=8, d_ff=256, layers=2, classes=5, max_len=512):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=0)
        self.register_buffer("pe", torch.from_numpy(sinusoidal_table(max_len, d_model)).float(), persistent=False)
        layer = nn.TransformerEncoderLayer(d_model, heads, d_ff, 0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.fc1 = nn.Linear(d_model, 128)
        self.final = nn.Linear(128, classes)

    def forward(self, ids):
        x = self.embedding(ids) + self.pe[: ids.shape[1]]
        x = self.encoder(x, src_key_padding_mask=ids == 0)
        return self.final(torch.relu(self.fc1(x[:, 0])))


def make_batches(n, batch, length, vocab, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        ids = torch.randint(1, vocab, (batch, length), generator=g)
        lengths = torch.randint(length // 4, length + 1, (batch, 1), generator=g)
        ids = ids.masked_fill(torch.arange(length)[None] >= lengths, 0)  # right padding, like the seed's collate
        out.append((ids, torch.randint(0, 5, (batch,), generator=g)))
    return out


def train_steps_per_second(model, forward, batches):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    start = time.perf_counter()
    for ids, labels in batches:
        loss = nn.functional.cross_entropy(forward(ids), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return len(batches) / (time.perf_counter() - start)


def forward_seconds(model, ids, need_weights, repeats=5):
    times = []
    with torch.inference_mode():
        model(ids, need_weights=need_weights)  # warm-up
        for _ in range(repeats):
            start = time.perf_counter()
            model(ids, need_weights=need_weights)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def training_throughput(steps=20, repeats=5, batch=32, length=256) -> dict:
    """Training steps/s, ours vs torch.nn.TransformerEncoder, interleaved; ratio > 1 = ours faster."""
    torch.manual_seed(0)
    ours = Transformer(TransformerConfig.preset("seed001-classifier"))
    # Ours with torch's dropout placement (attention weights and feed-forward hidden layer too).
    ours_torch_dropout = Transformer(TransformerConfig.preset("seed001-classifier", attention_dropout=None,
                                                              ffn_dropout=None))
    theirs = TorchTextClassifier()
    assert ours.num_parameters() == sum(p.numel() for p in theirs.parameters()) == 410_117
    batches = make_batches(steps, batch, length, 1000)
    runners = {
        "explorer": (ours, lambda ids: ours(ids, need_weights=False).logits),
        "explorer_torch_dropout": (ours_torch_dropout, lambda ids: ours_torch_dropout(ids, need_weights=False).logits),
        "torch_nn": (theirs, theirs),
    }
    for model, forward in runners.values():  # warm-up
        train_steps_per_second(model, forward, batches[:3])
    sps: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(repeats):  # interleaved so machine noise hits all alike
        for name, (model, forward) in runners.items():
            sps[name].append(train_steps_per_second(model, forward, batches))
    med = {name: statistics.median(v) for name, v in sps.items()}
    return {
        "model": "seed001-classifier (410,117 parameters)",
        "batch": batch, "max_length": length, "steps_per_measurement": steps,
        "explorer_steps_per_s": round(med["explorer"], 2),
        "explorer_torch_dropout_steps_per_s": round(med["explorer_torch_dropout"], 2),
        "torch_nn_steps_per_s": round(med["torch_nn"], 2),
        "ratio_explorer_over_torch": round(med["explorer"] / med["torch_nn"], 3),
        "ratio_same_dropout_over_torch": round(med["explorer_torch_dropout"] / med["torch_nn"], 3),
    }


def attention_capture(repeats=5, forward_lengths=(32, 128, 512)) -> dict:
    """Forward ms with attention weights returned vs the fast (SDPA) path, per model and length."""
    torch.manual_seed(0)
    forward = {}
    for name, config in [("seed001-classifier", TransformerConfig.preset("seed001-classifier", dropout=0.0)),
                         ("minilm-sized encoder (6x12, d384)", TransformerConfig(
                             arch="encoder", vocab_size=30522, d_model=384, n_heads=12, n_layers=6, d_ff=1536,
                             dropout=0.0, positional="learned", activation="gelu"))]:
        model = Transformer(config).eval()
        for n in forward_lengths:
            ids = torch.randint(1, config.vocab_size, (1, n))
            with_w = forward_seconds(model, ids, True, repeats)
            fast = forward_seconds(model, ids, False, repeats)
            forward[f"{name} @ {n} tokens"] = {
                "with_weights_ms": round(with_w * 1e3, 2), "fast_path_ms": round(fast * 1e3, 2),
                "overhead_ratio": round(with_w / fast, 3)}

    return forward


def run(steps=20, repeats=5, batch=32, length=256, forward_lengths=(32, 128, 512)) -> dict:
    """The measurements as a dict (what `main` prints)."""
    return {
        "machine": {"cpu_threads": torch.get_num_threads(), "torch": torch.__version__,
                    "python": platform.python_version(), "platform": platform.platform()},
        "training_throughput": training_throughput(steps, repeats, batch, length),
        "attention_capture": attention_capture(repeats, forward_lengths)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20, help="training steps per measurement")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved measurements per model")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=256)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.steps, args.repeats, args.batch, args.length), indent=2))


if __name__ == "__main__":
    main()
