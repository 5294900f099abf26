"""Circuits over a task: many prompt pairs, every edge of the model's graph scored (EAP, EAP-IG), the circuit kept
and its faithfulness measured with every other edge patched from the corrupted run (docs/circuits.md).

    pairs         a task = prompt pairs; made from ids, or read from text (one pair a line, CSV, JSONL)
    reading       a loaded model's task from text, encoded as that model reads it, within a request's budget
    generated     tasks made for the shipped models (induction-gpt: repeated sequences; the date models: months)
    graph         nodes, receivers and edges of a model (names, parallel residual, GQA, cross-attention, norms)
    batches       pairs as padded batches
    runner        one run at the answer positions; the node outputs it wrote
    gradients     one backward pass scoring every edge
    edge_patching runs with edges patched from the corrupted run, many variants batched
    scores        EAP and EAP-IG over a task, the points chosen per request
    selection     top or greedy edges, pruning, the heads left off
    faithfulness  faithfulness, the curve's sizes, exact patching of single edges
    circuit       find_circuit, circuit_faithfulness
"""

from .circuit import Circuit, Curve, Edge, ExactCheck, circuit_faithfulness, find_circuit
from .faithfulness import Faithfulness
from .generated import generated_task
from .graph import CircuitGraph
from .scores import EdgeScores, edge_scores
from .pairs import Pair, Task, make_task, parse_pairs
from .reading import task_from_text

__all__ = ["Circuit", "CircuitGraph", "Curve", "Edge", "EdgeScores", "ExactCheck", "Faithfulness", "Pair", "Task",
           "circuit_faithfulness", "edge_scores", "find_circuit", "generated_task", "make_task", "parse_pairs",
           "task_from_text"]
