"""Every module the app imports (explorer/ and app.py, at any depth, lazily too) comes from the standard library,
the repository, or a distribution requirements.txt installs (directly or as a dependency of one). The README's first
command installs requirements.txt alone: scipy, a test dependency, reached the Circuit tab through a lazy import and
failed there with ModuleNotFoundError (2026-11-29)."""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import distribution, packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Imported only where the caller brings the library: from_transformers(model) reads a transformers model already in
# the caller's memory (explorer.importers.live), so transformers is there by then.
CALLERS_OWN = {"transformers": "explorer/importers/live.py"}


def imported_modules() -> dict[str, str]:
    """Top-level module -> a file importing it, over explorer/ and app.py."""
    found: dict[str, str] = {}
    for path in [ROOT / "app.py", *sorted((ROOT / "explorer").rglob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
            for name in names:
                found.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return found


def norm(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_by_requirements() -> set[str]:
    """The distributions requirements.txt names and everything they require, recursively (normalised names)."""
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    todo = [re.split(r"[=<>!~\[; ]", line, maxsplit=1)[0] for line in lines
            if line.strip() and not line.startswith("#")]
    seen: set[str] = set()
    while todo:
        name = norm(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = distribution(name).requires or []
        except Exception:  # noqa: BLE001 - not installed here: nothing more to follow
            continue
        todo += [re.split(r"[=<>!~\[; (]", r, maxsplit=1)[0] for r in requires if "extra ==" not in r]
    return seen


def test_the_app_imports_only_what_requirements_txt_installs():
    allowed = installed_by_requirements()
    owners = packages_distributions()
    missing = {}
    for module, where in imported_modules().items():
        if module in sys.stdlib_module_names or module in ("explorer", "__future__", "benchmarks"):
            continue
        dists = {norm(d) for d in owners.get(module, [])}
        if not dists & allowed and CALLERS_OWN.get(module) != where:
            missing[module] = where
    assert missing == {}, f"imported by the app but not installed by requirements.txt: {missing}"
