"""The API tab: the page's actions as named HTTP endpoints, with a gradio_client example (docs/http-api.md lists
every endpoint, its parameters and what it returns)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from .base import Tab

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


@dataclass
class ApiParts:
    text: gr.Markdown


class ApiTab(Tab):
    id = "api"
    title = "API"
    result = "api-text"

    def layout(self, start: Any) -> ApiParts:
        return ApiParts(gr.Markdown(API_TEXT, elem_id="api-text"))


TAB = ApiTab()
