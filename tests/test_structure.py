"""The package's shape, read from its source: no import loops, and the layering the design keeps (the core imports no
page, figure or file reader; figures never run a model and know no Gradio; interpretation and loading know no page).

Every import statement counts, wherever it is (module level, inside a function, under TYPE_CHECKING): a loop closed
by a lazy import is still two modules that need each other."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "explorer"


def module_names() -> dict[str, Path]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


MODULES = module_names()


def imported(module: str) -> set[str]:
    """Every module `module` imports: explorer modules by their full name (a submodule named in `from pkg import x`
    counts as that submodule), others by their top-level name."""
    path = MODULES[module]
    base = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = base.split(".")
                target = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in MODULES else target)
    return out - {module}


GRAPH = {m: {t for t in imported(m) if t in MODULES} for m in MODULES}


def loops() -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return found


def test_the_graph_is_read():
    assert "explorer.model.attention" in GRAPH["explorer.model.layers"]
    assert "explorer.app.run.result" in GRAPH["explorer.app.serving.compute"]  # a relative import two levels down
    assert "gradio" in imported("explorer.app.events")


def test_no_module_of_the_package_imports_one_that_imports_it_back():
    assert loops() == []


def reaches(module: str) -> set[str]:
    """Everything `module` imports, directly or through other explorer modules (outside names included)."""
    seen, todo = set(), [module]
    while todo:
        m = todo.pop()
        for t in imported(m):
            if t not in seen:
                seen.add(t)
                if t in MODULES:
                    todo.append(t)
    return seen


def under(prefix: str) -> list[str]:
    return sorted(m for m in MODULES if m == prefix or m.startswith(prefix + "."))


PAGE = ("explorer.app", "gradio")
FIGURES = ("explorer.viz", "plotly")
FILE_READERS = ("explorer.checkpoints", "explorer.file_reads", "explorer.importers", "explorer.loading", "safetensors",
                "huggingface_hub", "tokenizers", "explorer.tokenizer")
RUNS_A_MODEL = ("explorer.model", "explorer.outputs", "explorer.interpret", "explorer.loading")


def forbidden(module: str, names: tuple[str, ...]) -> list[str]:
    return sorted(t for t in reaches(module) if any(t == n or t.startswith(n + ".") for n in names))


@pytest.mark.parametrize("module", under("explorer.model"))
def test_the_core_imports_no_page_figure_or_file_reader(module):
    assert forbidden(module, PAGE + FIGURES + FILE_READERS) == []


@pytest.mark.parametrize("module", under("explorer.viz"))
def test_figures_never_run_a_model_and_know_no_gradio(module):
    assert forbidden(module, RUNS_A_MODEL + ("gradio", "explorer.app")) == []


@pytest.mark.parametrize("module", [*under("explorer.interpret"), *under("explorer.importers"), "explorer.loading",
                                    "explorer.checkpoints"])
def test_interpretation_and_loading_know_no_page(module):
    assert forbidden(module, PAGE) == []


def test_no_module_of_the_app_is_over_300_lines():
    long = {m: n for m in under("explorer.app") if (n := len(MODULES[m].read_text().splitlines())) > 300}
    assert long == {}


MIRRORED = ("explorer.model", "explorer.interpret", "explorer.outputs")  # what a figure module (viz.<x>) may draw


TABS = "explorer.app.tabs"  # the tab registry (TABS): one module per tab, or a package per tab with modules of its own
ASSEMBLES_THE_PAGE = {"explorer.app.demo"}  # build_demo lays out and wires the page: the one place that names TABS
NOTEBOOK = "explorer.notebook"  # the tabs' views outside the page (in Jupyter): it reads the tabs as demo does


def tab_of(module: str) -> str | None:
    """The tab id a module belongs to (explorer.app.tabs.<id> or a module of its package), None outside the tabs
    (explorer.app.tabs.base, the shared Tab class, is no tab's)."""
    parts = module.split(".")
    if module.startswith(TABS + ".") and parts[3] != "base":
        return parts[3]
    return None


def test_no_import_runs_up_from_a_shared_module_to_the_tabs():
    """What serves every tab (the page's parts, serving, run, link, export, events, forms) never imports the tab
    registry or a tab: the tabs are passed in (`page.registry`, `RunFigures.of(tabs)`, `parse_link(..., tabs=)`).
    Only the module that assembles the page (explorer.app.demo: the layout, the events and TABS) names them."""
    up = {m: sorted(t for t in GRAPH[m] if t == TABS or tab_of(t)) for m in under("explorer")
          if not m.startswith(TABS) and m not in ASSEMBLES_THE_PAGE and not m.startswith(NOTEBOOK)}
    assert {m: t for m, t in up.items() if t} == {}


def test_the_page_never_imports_the_notebook_views():
    """explorer.notebook shows the tabs' views in a notebook, reading the tabs as the page does; the page (and so
    every tab) never imports it back."""
    assert {m: sorted(t for t in GRAPH[m] if t.startswith(NOTEBOOK)) for m in under("explorer.app")
            if any(t.startswith(NOTEBOOK) for t in GRAPH[m])} == {}


def test_a_tab_imports_no_other_tab():
    """A tab's modules import the shared parts and their own tab's modules, never the registry or another tab: what
    two tabs share lives in a shared group (run.chosen_head, run.role_labels, run.readings, ...)."""
    crossing = {m: sorted(t for t in GRAPH[m] if t == TABS or tab_of(t) not in (None, tab_of(m)))
                for m in under(TABS) if tab_of(m)}
    assert {m: t for m, t in crossing.items() if t} == {}


def test_the_rules_read_the_tabs():
    assert tab_of("explorer.app.tabs.features.forms") == "features" and tab_of("explorer.app.tabs.rollout") == "rollout"
    assert tab_of("explorer.app.tabs.base") is None and tab_of(TABS) is None
    assert "explorer.app.tabs.compare" in GRAPH[TABS]


def test_a_name_two_modules_share_is_local_to_a_tab_or_a_figure_of_what_it_draws():
    """Module names are unique in the package, but for
    - a tab's module (explorer.app.tabs.<id>), named by the link's tab id;
    - a module of a tab's package (explorer.app.tabs.<id>.<x>): its names are local to the tab, so
      tabs/features/forms.py and tabs/contributions/forms.py may both exist (and be imported as `.forms` there);
    - a figure module (explorer.viz.<x>) named after the computation it draws (explorer.model.<x>,
      explorer.interpret.<x>, explorer.outputs.<x>).
    memory.py in two layers meaning two things is what this keeps out."""
    by_name: dict[str, list[str]] = {}
    for m, path in MODULES.items():
        if path.name != "__init__.py":
            by_name.setdefault(m.rsplit(".", 1)[1], []).append(m)
    for name, modules in by_name.items():
        rest = [m for m in modules if not tab_of(m)]
        figures = [m for m in rest if m.startswith("explorer.viz.")]
        others = [m for m in rest if not m.startswith("explorer.viz.")]
        assert len(others) <= 1, (name, modules)
        assert not figures or not others or others[0].rsplit(".", 1)[0] in MIRRORED, (name, modules)
