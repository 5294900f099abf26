"""The page side of the link (explorer.app.link.opening) without a browser: where a copied link points, and the
page's query read with its repeated keys."""

from __future__ import annotations

from types import SimpleNamespace

from starlette.datastructures import QueryParams

from explorer.app.link.opening import copy_link_js, query_pairs, space_page


def test_a_copied_link_points_to_the_space_page_on_a_space(monkeypatch):
    monkeypatch.delenv("SYSTEM", raising=False)
    assert space_page() == "" and '"" ||' in copy_link_js()  # the page's own address
    monkeypatch.setenv("SYSTEM", "spaces")
    monkeypatch.setenv("SPACE_ID", "owner/transformer-explorer")
    assert space_page() == "https://huggingface.co/spaces/owner/transformer-explorer"
    assert '"https://huggingface.co/spaces/owner/transformer-explorer" ||' in copy_link_js()
    for odd in ("owner/x'; alert(1); '", "../../x", "a/b/c", ""):
        monkeypatch.setenv("SPACE_ID", odd)
        assert space_page() == "", odd


def test_the_pages_query_keeps_repeated_keys():
    request = SimpleNamespace(query_params=QueryParams("layer=1&layer=2&__theme=dark&s1=a%20b"))
    assert query_pairs(request) == [("layer", "1"), ("layer", "2"), ("__theme", "dark"), ("s1", "a b")]
    assert query_pairs(SimpleNamespace(query_params={"head": "3"})) == [("head", "3")]
    assert query_pairs(None) == [] and query_pairs(SimpleNamespace()) == []
