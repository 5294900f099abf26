"""The graph whose edges a circuit keeps: upstream nodes (what writes into the residual stream), receivers (what
reads it), and the edges between them, for any pre-norm model of the from-scratch core.

Nodes, in forward order, one stream per stack (an encoder-decoder's encoder stream first):

    embed                    the embeddings (token + positions), what the first layer receives; an encoder-decoder
                             has "encoder.embed" and "decoder.embed"
    {kind}.L{l}.H{h}         attention head h of layer l, kind "encoder" / "decoder" (self) / "cross": its output
                             z_h W_O^h (W_O's bias belongs to no head: it is the same in every run)
    {stack}.L{l}.mlp         the feed-forward block of layer l (its biases included)

Receivers, each reading the sum of its upstream nodes' outputs (plus biases):

    {kind}.L{l}.H{h}.q / .k / .v   a head's query, key and value inputs, separately (Q-, K- and V-composition)
    {stack}.L{l}.mlp.in            a feed-forward block's input
    logits                         the last stream the LM head reads

Norms (EAP-IG's convention): the edges carry residual contributions; every receiver applies its own norm to the sum
it receives (a head's q / k / v: its block's norm, row by row; an MLP: its norm; logits: the final norm). A
cross-attention's keys and values read the encoder's stream: their receivers sum encoder nodes, and the encoder's
final norm is theirs (so an edge into cross k / v changes only what that head's keys read, not the memory of the
others). A cross-attention's query reads the decoder's stream.

Which upstream nodes reach a receiver (always a prefix of its stream's forward order):
- a layer's attention reads every node of earlier layers; a cross-attention's query also the layer's self heads;
- a sequential layer's MLP reads the layer's heads too; a parallel-residual layer's MLP (GPT-NeoX) reads the layer's
  input, as its attention does, so not the heads of its own layer;
- cross-attention k / v read every encoder node; logits every node of the decoder's stream.

Grouped-query attention (Llama, Mistral, Qwen2): as the reference (TransformerLens's ungroup_grouped_query_attention,
which hannamw/EAP-IG requires), each query head has its own k and v receivers, projected with its K/V head's
weights: unpatched, the copies are equal and the model is unchanged; an edge into H{h}.k changes the keys query head h
reads, not those of the other heads of its group. A K/V head shared by G query heads has G receivers of each kind.

A decoder-only GPT-2-small has 157 nodes, 445 receivers and 32,491 edges, as in EAP-IG.

Shapes: U upstream nodes, R receivers; `real` (U, R) bool: the edges.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch
from torch import Tensor

from ...model import TransformerConfig


@dataclass(frozen=True)
class Node:
    name: str  # "embed", "decoder.L0.H1", "decoder.L0.mlp", ...
    stream: str  # "encoder" or "decoder": the residual stream it writes into
    kind: str  # "embed", or an attention kind ("encoder", "decoder", "cross") for a head, "mlp"
    layer: int = -1  # -1 for the embeddings
    head: int = -1  # -1 for the embeddings and MLPs


@dataclass(frozen=True)
class Group:
    """Consecutive nodes of a stream read from one site of a run's Record."""

    stream: str
    start: int  # index of the first node in its stream
    size: int  # 1, or H heads
    site: str  # the Record site: "{stack}.embed", "{kind}.{l}.z", "{stack}.{l}.mlp"
    kind: str  # "embed", "heads", "mlp"
    attention: str = ""  # heads: the attention kind ("encoder", "decoder", "cross")
    layer: int = -1


@dataclass(frozen=True)
class Site:
    """The receivers of one model site (explorer.model receivers): an attention block's q, k or v (H receivers), an
    MLP's input or the final stream (1 receiver)."""

    site: str  # the model's receivers site: "decoder.3.q", "cross.1.k", "decoder.3.mlp.in", "decoder.final"
    start: int  # index of its first receiver
    size: int
    stream: str  # the stream its receivers read
    prefix: int  # how many of that stream's nodes they read (the first `prefix`)
    role: str  # "q", "k", "v", "mlp.in", "logits"
    norm: str = ""  # "encoder_final" for cross-attention keys and values (the encoder's final norm), else ""


class CircuitGraph:
    """Nodes, receivers and edges of a model (see the module docstring)."""

    def __init__(self, config: TransformerConfig):
        if not config.norm_first:
            raise ValueError("circuits need a pre-norm model (norm_first=True): a post-norm model normalises the "
                             "residual stream after every sublayer, so the stream is not a sum of its nodes' outputs "
                             "and an edge has no value of its own")
        if config.arch == "encoder":
            raise ValueError("circuits read a language model's logits: this is an encoder without a decoder")
        self.config = config
        H = config.n_heads
        streams = ["encoder", "decoder"] if config.arch == "encoder-decoder" else ["decoder"]
        self.streams = tuple(streams)
        two = len(streams) == 2
        nodes: dict[str, list[Node]] = {s: [] for s in streams}
        groups: list[Group] = []
        sites: list[Site] = []
        receivers: list[str] = []
        heads: list[str] = []  # the node each receiver feeds ("logits" for the last)

        def add_nodes(stream: str, kind: str, site: str, layer: int, names: list[str], attention: str = "") -> None:
            groups.append(Group(stream, len(nodes[stream]), len(names), site, kind, attention, layer))
            for h, name in enumerate(names):
                nodes[stream].append(Node(name, stream, attention or kind, layer, h if kind == "heads" else -1))

        def add_site(site: str, names: list[str], feeds: list[str], stream: str, prefix: int, role: str,
                     norm: str = "") -> None:
            sites.append(Site(site, len(receivers), len(names), stream, prefix, role, norm))
            receivers.extend(names)
            heads.extend(feeds)

        for stream in streams:
            add_nodes(stream, "embed", f"{stream}.embed", -1, [f"{stream}.embed" if two else "embed"])
            layers = config.encoder_layers if stream == "encoder" else config.decoder_layers
            for layer in range(layers):
                start = len(nodes[stream])
                kinds = [stream] + (["cross"] if two and stream == "decoder" else [])
                for kind in kinds:
                    names = [f"{kind}.L{layer}.H{h}" for h in range(H)]
                    for role in ("q", "k", "v"):
                        if kind == "cross" and role != "q":
                            add_site(f"cross.{layer}.{role}", [f"{n}.{role}" for n in names], names, "encoder",
                                     -1, role, "encoder_final")  # prefix: every encoder node, set below
                        else:
                            prefix = start if kind != "cross" else start + H  # cross q also reads the self heads
                            add_site(f"{kind}.{layer}.{role}", [f"{n}.{role}" for n in names], names, stream,
                                     prefix, role)
                    add_nodes(stream, "heads", f"{kind}.{layer}.z", layer, names, kind)
                mlp = f"{stream}.L{layer}.mlp"
                add_site(f"{stream}.{layer}.mlp.in", [f"{mlp}.in"], [mlp], stream,
                         start if config.parallel_residual else len(nodes[stream]), "mlp.in")
                add_nodes(stream, "mlp", f"{stream}.{layer}.mlp", layer, [mlp])
        add_site("decoder.final", ["logits"], ["logits"], "decoder", len(nodes["decoder"]), "logits")
        n_encoder = len(nodes.get("encoder", []))
        self.sites = tuple(s if s.prefix >= 0 else Site(s.site, s.start, s.size, s.stream, n_encoder, s.role, s.norm)
                           for s in sites)
        self.nodes = tuple(n for s in streams for n in nodes[s])
        self.groups = tuple(groups)
        self.receivers = tuple(receivers)
        self.feeds = tuple(heads)  # per receiver: the node it feeds
        offset, self.offsets = 0, {}
        for s in streams:
            self.offsets[s] = offset  # index in `nodes` of the stream's first node
            offset += len(nodes[s])
        self.stream_sizes = {s: len(nodes[s]) for s in streams}
        self.node_index = {n.name: i for i, n in enumerate(self.nodes)}
        self.receiver_index = {r: i for i, r in enumerate(self.receivers)}
        self.site_of = {s.site: s for s in self.sites}

    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    @property
    def n_receivers(self) -> int:
        return len(self.receivers)

    @cached_property
    def real(self) -> Tensor:
        """(U, R) bool: True where an upstream node reaches a receiver (an edge)."""
        real = torch.zeros(self.n_nodes, self.n_receivers, dtype=torch.bool)
        for s in self.sites:
            first = self.offsets[s.stream]
            real[first:first + s.prefix, s.start:s.start + s.size] = True
        return real

    @property
    def n_edges(self) -> int:
        return int(self.real.sum())

    @cached_property
    def receiver_node(self) -> Tensor:
        """(R,) long: the node each receiver feeds (its index in `nodes`), -1 for logits."""
        return torch.tensor([self.node_index.get(n, -1) for n in self.feeds])

    @property
    def notes(self) -> list[str]:
        """What this model's graph does differently, in words (one sentence per family trait present)."""
        config, notes = self.config, []
        if config.parallel_residual:
            notes.append("Parallel residual (GPT-NeoX): a layer's MLP reads the layer's input, as its attention does, "
                         "so no edge runs from a layer's heads to its own MLP.")
        kv = config.resolved_kv_heads
        if kv != config.n_heads:
            notes.append(f"Grouped-query attention ({kv} key/value heads for {config.n_heads} query heads): each query "
                         f"head has its own key and value inputs, projected with its group's weights, so an edge into "
                         f"H{{h}}.k changes the keys that head reads, not those of its group.")
        if config.arch == "encoder-decoder":
            notes.append("Cross-attention: a head's query reads the decoder's stream; its keys and values read the "
                         "encoder's (every encoder node, through the encoder's final norm), so edges run from encoder "
                         "heads and MLPs into cross.L{l}.H{h}.k / .v.")
        return notes

    def embed_nodes(self) -> list[int]:
        """The embeddings' node indices (one per stream)."""
        return [self.offsets[s] for s in self.streams]

    def edge(self, upstream: str, downstream: str) -> tuple[int, int]:
        """(u, r) indices of an edge by name; ValueError naming what is unknown or not an edge."""
        if upstream not in self.node_index:
            raise ValueError(f"unknown upstream node {upstream!r}: nodes are named like "
                             f"{', '.join(n.name for n in self.nodes[:3])}, ...")
        if downstream not in self.receiver_index:
            raise ValueError(f"unknown receiver {downstream!r}: receivers are named like "
                             f"{', '.join(self.receivers[:3])}, ..., logits")
        u, r = self.node_index[upstream], self.receiver_index[downstream]
        if not self.real[u, r]:
            raise ValueError(f"{upstream} does not reach {downstream}: no such edge")
        return u, r

    def mask_of(self, edges) -> Tensor:
        """(U, R) bool of edges given as (upstream, downstream[, score]) names."""
        mask = torch.zeros(self.n_nodes, self.n_receivers, dtype=torch.bool)
        for edge in edges:
            if isinstance(edge, str) or len(edge) < 2:
                raise ValueError(f"an edge is (upstream, downstream) or (upstream, downstream, score), got {edge!r}")
            mask[self.edge(str(edge[0]), str(edge[1]))] = True
        return mask
