"""The documentation (README.md and every docs/*.md) is true to the code: each python block runs as written, each
relative link leads to a file (and heading), the docs index lists every page, and the README's two commands are
the ones CI uses."""

from __future__ import annotations

import contextlib
import io
import re

import pytest
import torch

from tests.markdown import NEEDS_APP, NEEDS_HUB, README, ROOT, anchors, code_blocks, example_of, links, pages

BLOCKS = [(page, i, block) for page in pages() for i, block in enumerate(code_blocks(page, "python"))]


@pytest.mark.parametrize("page, index, block", BLOCKS,
                         ids=[f"{page.relative_to(ROOT)}:{i}" for page, i, _ in BLOCKS])
def test_python_examples_run(page, index, block):
    if block.startswith(NEEDS_APP):
        pytest.skip("needs a running app: tests/app/test_api.py runs the gradio_client examples against one")
    if block.startswith(NEEDS_HUB):
        pytest.skip("needs the Hub: tests never reach the network; the same calls run on tiny models in tests/")
    with torch.set_grad_enabled(torch.is_grad_enabled()):  # a block may switch autograd off: not for later tests
        exec(compile(block, f"{page.relative_to(ROOT)} python block {index}", "exec"), {})


def architecture_example(heading: str) -> tuple[str, str]:
    return example_of(ROOT / "docs" / "architecture.md", heading)


def printed_by(example: str, heading: str) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), torch.set_grad_enabled(torch.is_grad_enabled()):
        exec(compile(example, f"docs/architecture.md: {heading}", "exec"), {})
    return printed.getvalue()


def test_the_add_a_tab_example_prints_what_the_page_shows_under_it():
    """docs/architecture.md's new tab ("How to add a tab"): run, it prints exactly the ```text block under it (its
    figure drawn from the Run's reduction, the numbers the figure holds, a link opening it), not only runs."""
    example, shown = architecture_example("How to add a tab")
    assert printed_by(example, "How to add a tab") == shown
    assert "peaks" in shown.split() and "How peaked each head is" in shown  # the text block is the example's output


def test_the_add_a_setting_example_prints_what_the_page_shows_under_it():
    """docs/architecture.md's new setting ("How to add a page-wide setting"): run, it prints exactly the ```text block
    under it (/analyze's form ending with it, a link carrying it and refusing a bad value, the page laying it out);
    tests/app/test_settings.py builds the whole page with it."""
    example, shown = architecture_example("How to add a page-wide setting")
    assert printed_by(example, "How to add a page-wide setting") == shown
    assert "'top_tokens']" in shown and "top=7" in shown  # the text block is the example's output


def test_readme_is_a_front_door():
    assert README.read_text().startswith("---\ntitle: Transformer Explorer\n")  # the Space's front matter first
    assert len(README.read_text().splitlines()) <= 200
    assert code_blocks(README, "python")  # a taste of the API, run above


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_to_files_and_headings(page):
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ...: not checked (no network)
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target} (no such heading)")
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"


def test_the_docs_index_lists_every_page():
    index = ROOT / "docs" / "README.md"
    assert "docs/README.md" in links(README)
    listed = {target.partition("#")[0] for target in links(index)}
    missing = [p.name for p in pages()[1:] if p != index and p.name not in listed]
    assert not missing, f"add these pages to docs/README.md: {missing}"


def test_ci_runs_the_readme_test_command():
    text = README.read_text()
    commands = re.findall(r"```bash\n(.*?)\n```", text, re.S)
    assert "pip install -r requirements.txt && python app.py" in commands
    test_command = "pip install -r requirements-test.txt && python -m pytest"
    assert test_command in commands
    assert test_command in (ROOT / ".ci" / "run").read_text()
    assert "torch==2.13.0" in (ROOT / "requirements.txt").read_text()
