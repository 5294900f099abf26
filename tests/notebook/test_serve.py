"""explorer.notebook.app: the full page served from the kernel for the model in memory, sharing its weights (the
page's registry holds the very object, pinned), answering /analyze on it."""

from __future__ import annotations

import urllib.request

import explorer.notebook as nb
from explorer.app.serving.session import Session
from explorer.notebook.serve import NAME, registry_with
from tests.hang import HANG_S, gradio_client


def test_the_registry_holds_the_model_itself(date_gpt):
    def must_not_load():
        raise AssertionError("the model was loaded again")

    registry = registry_with(date_gpt, "cpu")
    assert registry.get(Session(NAME, "cpu").key, must_not_load) is date_gpt


def test_the_page_is_served_for_the_model_in_memory(date_gpt, free_port):
    served = nb.app(date_gpt, port=free_port(), inline=False)
    try:
        with urllib.request.urlopen(served.url, timeout=HANG_S) as page:
            assert page.status == 200
        assert served.loaded is date_gpt and served.url in served._repr_html_() and "<iframe" not in served._repr_html_()
        client = gradio_client(served.url)
        info = client.view_api(return_format="dict", print_info=False)
        assert "/analyze" in info["named_endpoints"]
    finally:
        served.close()
