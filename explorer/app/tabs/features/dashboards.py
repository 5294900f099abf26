"""The Features tab's latent dashboards: the model's own example set read through an SAE once per model and SAE
(explorer.interpret.sae.site_streams, dashboards_of), kept with the residual streams at the SAE's site, so a latent's
dashboard (its firing density, its histogram, its top examples in context) needs no run of the model.

The example set (`example_set`): what the model works on, written as the tab reads a sentence.
  date models   EXAMPLE_DATES generated dates (explorer.training.dates, seed 1) with their ISO answers: date-gpt reads
                [BOS] date [SEP] ISO date; date-translator's encoder reads the date and [EOS], its decoder [BOS] ISO
  induction-gpt INDUCTION_ROWS rows of its training data (a fixed seed): [BOS] + random tokens, a span repeated
  other models  their task's example sentences (the page's examples), as the tab reads a sentence (a sequence model
                followed by its own greedy answer)
The streams (N tokens x D floats) are kept up to STREAM_BYTES per model and SAE (texts past that are left out), and
every model-and-SAE pair together within DASHBOARD_MEMORY (least recently used let go first; built again on demand).

Shapes: N tokens of the example set (as the SAE's site reads them), D model width, W tokens of an example's window.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from ....checkpoints import LoadedModel
from ....interpret.sae import SAE, LatentDashboards, dashboards_of, hook_site, site_streams
from ....viz import LatentExampleRow
from ...run.inputs import DATE_TASKS, TextCodec
from ...run.readings import read_texts
from ...serving.registry import ModelRegistry

EXAMPLE_DATES = 2000
INDUCTION_ROWS = 200
STREAM_BYTES = 64 * 1024**2  # the example set's residual streams kept per model and SAE
DASHBOARD_MEMORY = 256 * 1024**2  # every model-and-SAE pair's streams and dashboards, together
TOP_EXAMPLES, BINS, WINDOW = 10, 32, 8


@dataclass(frozen=True)
class ExampleSet:
    """Texts as the model reads them: the first stack's ids, and an encoder-decoder's decoder inputs."""

    description: str  # "2,000 generated dates, with their ISO answers"
    texts: list[list[int]]
    tgts: list[list[int]] | None = None


def _dates(loaded: LoadedModel) -> ExampleSet:
    from ....training import dates
    from ....training.tasks import task_from_dict

    task = task_from_dict(loaded.task, loaded.tokenizer)
    examples = dates.generate_examples(EXAMPLE_DATES, seed=1)
    answers = [task.chars(e.target) for e in examples]
    prompts = [task.encode_source(e.text)[0] for e in examples]
    what = f"{len(examples):,} generated dates with their ISO answers"
    if loaded.arch == "encoder-decoder":
        return ExampleSet(what, prompts, [[task.bos_id, *a] for a in answers])
    return ExampleSet(what, [p + a for p, a in zip(prompts, answers)])


def _induction(loaded: LoadedModel) -> ExampleSet:
    from ....training.induction import InductionTask

    task = InductionTask.from_dict(loaded.task, loaded.tokenizer)
    rows = task.training_batch(INDUCTION_ROWS, torch.Generator().manual_seed(1)).src
    return ExampleSet(f"{len(rows)} rows of its training data (a span repeated)", rows.tolist())


def _task_examples(loaded: LoadedModel, max_tokens: int) -> ExampleSet:
    texts = [str(t) for t in loaded.task.get("examples", []) if str(t).strip()]
    readings = [read_texts(loaded, t, None, max_tokens)[0] for t in texts]
    what = f"the model's {len(texts)} example sentences" + (" with its own answers" if readings and
                                                            readings[0].tgt is not None else "")
    tgts = [r.tgt for r in readings] if loaded.arch == "encoder-decoder" else None
    return ExampleSet(what, [r.src for r in readings], tgts)


def example_set(loaded: LoadedModel, max_tokens: int) -> ExampleSet:
    """The model's own example set (module docstring)."""
    name = loaded.task.get("name")
    if name in DATE_TASKS:
        return _dates(loaded)
    if name == "induction":
        return _induction(loaded)
    return _task_examples(loaded, max_tokens)


@dataclass(frozen=True)
class Dashboards:
    """One model and SAE: the example set's streams at the site and every latent's dashboard."""

    description: str
    streams: Tensor  # (N, D) float32, the tokens in text order
    starts: list[int]  # each text's first row in `streams` (and one past the last)
    token_ids: list[list[int]]  # each text as the SAE's site reads it
    dashboards: LatentDashboards

    def nbytes(self) -> int:
        return self.streams.numel() * 4 + self.dashboards.nbytes() + 8 * sum(map(len, self.token_ids))


def _fitting(examples: ExampleSet, reads_tgts: bool, width: int) -> ExampleSet:
    """The example set cut to the texts whose streams fit in STREAM_BYTES."""
    read = examples.tgts if reads_tgts else examples.texts
    room, n = STREAM_BYTES // (4 * width), 0
    while n < len(read) and room >= len(read[n]):
        room -= len(read[n])
        n += 1
    return ExampleSet(examples.description if n == len(read) else f"{examples.description} (the first {n})",
                      examples.texts[:n], None if examples.tgts is None else examples.tgts[:n])


@torch.no_grad()
def build(loaded: LoadedModel, sae: SAE, max_tokens: int) -> Dashboards:
    site = hook_site(loaded.config, sae.hook_name)
    examples = example_set(loaded, max_tokens)
    reads_tgts = examples.tgts is not None and site.startswith("decoder.")
    examples = _fitting(examples, reads_tgts, sae.d_in)
    if not examples.texts:
        raise ValueError("this model has no example sentences to build latent dashboards from")
    tgts = None if examples.tgts is None else [torch.tensor(t) for t in examples.tgts]
    X, where = site_streams(loaded.model, [torch.tensor(t) for t in examples.texts], sae, tgts=tgts)
    read = examples.tgts if reads_tgts else examples.texts
    starts = np.cumsum([0, *map(len, read)]).tolist()
    dash = dashboards_of(X, where, sae, k=TOP_EXAMPLES, bins=BINS)
    return Dashboards(examples.description, X.float().cpu(), starts, [list(r) for r in read], dash)


DASHBOARDS = ModelRegistry(DASHBOARD_MEMORY, size_of=lambda d: d.nbytes())  # (model, SAE) -> Dashboards


def shared_dashboards(loaded: LoadedModel, model_key: str, sae: SAE, sae_key: str, max_tokens: int) -> Dashboards:
    """The dashboards of this model and SAE, built on first use and kept in DASHBOARDS."""
    return DASHBOARDS.get(f"{model_key}|{sae_key}", lambda: build(loaded, sae, max_tokens))


def cached(model_key: str, sae_key: str) -> bool:
    return f"{model_key}|{sae_key}" in DASHBOARDS


@dataclass(frozen=True)
class LatentCard:
    """One latent's dashboard, small and plain (it comes back from a GPU worker)."""

    latent: int
    description: str  # of the example set
    tokens: int  # N
    density: float  # share of the N tokens it fires on
    max_activation: float
    edges: np.ndarray  # (B + 1,)
    counts: np.ndarray  # (B,)
    examples: list[LatentExampleRow]  # strongest first


def latent_card(dash: Dashboards, sae: SAE, latent: int, labels: Callable[[list[int]], list[str]],
                window: int = WINDOW) -> LatentCard:
    """Latent `latent`'s dashboard: its examples' windows (`window` tokens before, window // 2 after) read from the
    kept streams (`labels`: ids -> token labels, the codec's)."""
    d = dash.dashboards
    edges, counts = d.histogram(latent)
    rows = []
    for text, position, value in d.examples(latent):
        ids = dash.token_ids[text]
        start, end = max(0, position - window), min(len(ids), position + window // 2 + 1)
        first = dash.starts[text]
        acts = sae.encode_latents(dash.streams[first + start:first + end].to(sae.device),
                                  torch.tensor([latent]))[:, 0]  # (W,)
        rows.append(LatentExampleRow(labels(ids[start:end]), [float(a) for a in acts], position - start, value, text,
                                      position))
    i = d.row(latent)
    return LatentCard(latent, dash.description, d.tokens, float(d.density[i]), float(d.max_activation[i]),
                      edges.numpy(), counts.numpy(), rows)


def card_of(loaded: LoadedModel, model_key: str, sae: SAE, sae_key: str, latent: int, codec: TextCodec,
            max_tokens: int) -> LatentCard:
    return latent_card(shared_dashboards(loaded, model_key, sae, sae_key, max_tokens), sae, latent, codec.labels)
