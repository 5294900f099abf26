"""The words on the page: the introduction, one line per tab saying what it shows and how to read it, and
the API help."""

INTRO = ("Type a sentence and press **Run**, then switch heads off and change masks to see what changes. Other "
         "models: the panel behind **›** at the top left.")
TAB_TEXT = {
    "attention": ("Rows are queries, columns keys; brighter = more attention. Right: the mask the model applied "
                  "(blue = may attend). Below: the output, then the same head without toggles and the difference."),
    "overview": ("Every head at once (rows: layers, columns: heads; switched-off heads faded). Click a tile to "
                 "open that head below. A tile's corner names the head's strongest role on this sentence (score "
                 "≥ 0.5; see Head roles)."),
    "generation": ("The answer one token per row: which earlier tokens the chosen head read when writing it (and, "
                   "in an encoder-decoder model, which source tokens: on the right)."),
    "positional": ("The loaded model's own positional scheme (learned table, sinusoid, rotary or T5's relative "
                   "bias), then the textbook sinusoid for the numbers above."),
    "sinusoid": ("**The textbook sinusoid** of *Attention Is All You Need* for the d_model, positions and base above "
                 "(position × dimension), and which positions get similar vectors."),
    "importance": ("How much the output moves when each head alone is switched off (exact) and a one-pass gradient "
                   "estimate of it (Michel et al., 2019)."),
    "roles": ("What kind of head each one is: the share of its attention on the keys a role predicts (1 = all of "
              "it), on a generated probe (random tokens of the model's vocabulary, repeated) and on sentence 1. "
              "Pick a role and k to switch its top heads off; the page then runs with them off."),
    "patching": ("Sentence 1 is the clean run, sentence 2 the corrupted one (same number of tokens). Each cell: "
                 "the share of the clean-minus-corrupted logit difference of the two answer tokens that patching "
                 "that head's output (left) or the residual stream at that layer and position (right) restores."),
    "lens": ("Each layer's residual stream read through the model's final norm and unembedding: the top token "
             "per layer and position (colour: its probability), and the rank of the final prediction per layer."),
    "compare": ("Two models on the same sentences, masks and sentence choice: each reads the text with its own "
                "tokenizer, so each side labels its own tokens. Left: the model loaded for the page (its layer, head "
                "and head switches are the controls on the left); right: the second model, with its own below. "
                "Each side shows its chosen head, every head, and its output."),
    "contributions": ("Where one prediction comes from, on sentence 1: each head's and MLP's direct share of the "
                      "logit (red raises it, blue lowers it; the parts add up to the logit), without and with the "
                      "head switches; click a head for the tokens it promotes and suppresses. Below: each input "
                      "token's attribution (integrated gradients or input × gradient) with its completeness delta. "
                      "The page's masks do not apply here: the model reads sentence 1 with its own (causal for a "
                      "language model)."),
    "rollout": ("Attention rollout (Abnar & Zuidema, 2020): which input tokens each position draws on, through the "
                "layers."),
}
API_TEXT = """
Every main action is a named endpoint (`/load_model`, `/build_model`, `/analyze`, `/positional`, `/importance`,
`/roles`, `/switch_off_role`, `/patching`, `/lens`, `/contributions`, `/set_model2`, `/compare_models`;
docs/http-api.md, docs/contributions.md and docs/compare.md in the repository list their parameters).
From Python, with `pip install gradio_client`:

```python
from gradio_client import Client

client = Client("http://127.0.0.1:7860/")          # or "owner/space-name" for a Space
client.predict("date-translator", "", "auto", api_name="/load_model")
heads = [f"L{l} H{h}" for l in range(2) for h in range(4)]
result = client.predict(
    "samedi 21 novembre 2026", "21. November 2026",  # sentence 1, sentence 2
    True, True, "none", 0, 2,      # padding mask, causal mask, custom mask, blocked position, window k
    heads, heads, [],              # heads ON: encoder, decoder, cross (every cross-attention head off)
    "cross", 1, 0, 1,              # view: attention kind, layer, head, sentence
    -1, 8,                         # language models: predict after position (-1 = last), continuation tokens
    "attention",                   # the tab whose figures are drawn: attention, overview, generation, rollout, all
    api_name="/analyze")
print(result[3]["data"])           # baseline vs toggled answers with per-token probabilities
```

`/analyze` returns the status, the token table, the output summary and table, then the figures as Plotly JSON (those
of the tab named by its last input; "all" draws every tab).
Each client keeps its own session, so the model chosen with `/load_model` is the one `/analyze` uses.
Save any figure as PNG with the camera button of its toolbar.
"""
