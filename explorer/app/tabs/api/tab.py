"""The API tab: the page's actions as named HTTP endpoints, listed from the wired page when it is built
(`endpoints`: a new tab's endpoint appears here without a change to this module), with a gradio_client example whose
address the page script sets to the page's own (docs/http-api.md lists every endpoint's parameters and returns)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from ..base import Tab
from .endpoints import endpoint_list, endpoints

ADDRESS = "http://127.0.0.1:7860/"  # in the example until the page script puts the page's own address there
API_TEXT = f"""
The page's actions, from a program: each is a named HTTP endpoint (listed below with its parameters in order;
`client.view_api()` gives their types and defaults, docs/http-api.md in the repository what each returns).
From Python, with `pip install gradio_client`:

```python
from gradio_client import Client

client = Client("{ADDRESS}")
client.predict("date-translator", "", "auto", api_name="/load_model")
heads = [f"L{{l}} H{{h}}" for l in range(2) for h in range(4) if (l, h) != (1, 1)]   # cross L1 H1 off
result = client.predict(sentence1="martedì 10 giugno 2014", sentence2="", cross_heads_on=heads,
                        api_name="/analyze")   # parameters left out take the page's defaults
status, tokens, summary, output = result[:4]   # then the figures, as Plotly JSON
print(output["data"])                           # baseline vs toggled answers, per-token probabilities
```

Each client keeps its own session, so the model chosen with `/load_model` is the one `/analyze` uses. Layer, head
and sentence are whole numbers (`1` or `"1"`); a value of another type than `client.view_api()` lists is refused
with a line naming the parameter, what it got and what it takes. Save any figure as PNG with the camera button of
its toolbar.

The endpoints:
"""
# The example names the address this page was opened at (on a Space, its *.hf.space address), once it is drawn.
SCRIPT = f"""
const pageAddress = () => {{
  for (const code of document.querySelectorAll('#api-text code')) {{
    if (code.textContent.includes('{ADDRESS}')) {{
      const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode())
        node.nodeValue = node.nodeValue.split('{ADDRESS}').join(window.location.origin + window.location.pathname);
    }}
  }}
}};
new MutationObserver(pageAddress).observe(document.body, {{childList: true, subtree: true}});
pageAddress();
"""


@dataclass
class ApiParts:
    text: gr.Markdown


class ApiTab(Tab):
    id = "api"
    title = "API"
    result = "api-text"
    script = SCRIPT

    def layout(self, start: Any) -> ApiParts:
        return ApiParts(gr.Markdown(API_TEXT, elem_id="api-text"))  # its list once the page is wired (page_wired)

    def page_wired(self, parts: ApiParts, demo: Any) -> None:
        parts.text.value = parts.text.postprocess(api_text(demo))


def api_text(demo: Any) -> str:
    """The tab's text on a wired page: the example, then every named endpoint of `demo`."""
    return API_TEXT + endpoint_list(endpoints(demo)) + "\n"


TAB = ApiTab()
