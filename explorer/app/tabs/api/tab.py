"""The API tab: the page's actions as named HTTP endpoints, listed from the wired page when it is built
(`endpoints`: a new tab's endpoint appears here without a change to this module), with a gradio_client example whose
address the page script sets to the page's own (docs/http-api.md lists every endpoint's parameters and returns)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from ...i18n.words import LANGS, t
from ..base import Tab
from .endpoints import endpoint_list, endpoints

ADDRESS = "http://127.0.0.1:7860/"  # in the example until the page script puts the page's own address there
# The example, its comments in the page's language (explorer.app.i18n: the catalogue's api.* strings).
EXAMPLE = f"""
```python
from gradio_client import Client

client = Client("{ADDRESS}")
client.predict("date-translator", "", "auto", api_name="/load_model")
heads = [f"L{{l}} H{{h}}" for l in range(2) for h in range(4) if (l, h) != (1, 1)]   # api.heads_comment
result = client.predict(sentence1="martedì 10 giugno 2014", sentence2="", cross_heads_on=heads,
                        api_name="/analyze")   # api.defaults_comment
status, tokens, summary, output = result[:4]   # api.figures_comment
print(output["data"])                           # api.output_comment
```
"""


def api_prose(lang: str = "en") -> str:
    """The tab's words before the endpoint list: what the API is, the example, what a client may rely on."""
    example = EXAMPLE
    for key in ("heads_comment", "defaults_comment", "figures_comment", "output_comment"):
        example = example.replace(f"api.{key}", t(f"api.{key}", lang))
    return f"\n{t('api.intro', lang)}\n{example}\n{t('api.after', lang)}\n\n{t('api.endpoints', lang)}\n"


API_TEXT = api_prose()
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
        # its words in every language, for explorer.app.i18n.relabel (read only once the page is built)
        parts.text.in_languages = {lang: api_text(demo, lang) for lang in LANGS}


def api_text(demo: Any, lang: str = "en") -> str:
    """The tab's text on a wired page: the example, then every named endpoint of `demo` (their lines as the API
    describes itself, said in `lang` where the catalogue has it)."""
    return api_prose(lang) + endpoint_list(endpoints(demo), lang) + "\n"


TAB = ApiTab()
