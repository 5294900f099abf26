"""JavaScript the browser benchmark serves from 127.0.0.1.

Ours draws with the plotly.js the installed Gradio serves to gr.Plot (`gradio_plotly_js`: 3.3.1 for
Gradio 6.31), taken out of Gradio's own frontend chunk, so no download is needed for our figures.
BertViz's libraries are fetched from the npm registry with `npm pack`. Cache: $EXPLORER_BENCH_CACHE
or ~/.cache/explorer-benchmarks/npm/<name>-<version>/ (the unpacked tarball). Nothing is fetched
when the file is already there.

- plotly.js-dist-min@3.3.1: the same plotly.js version from npm (kept for comparison runs).
- BertViz 1.4.1's model_view.js asks require.js for d3 5.7.0 and jQuery 2.0.0 from cdnjs, and its
  HTML loads require.js 2.3.6 from cdnjs. jQuery 2.0.0 was never published to npm; 2.1.0, the
  nearest, stands in (BertViz only uses `$(...).empty()` and `.attr()`).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

# name -> (npm spec, file inside the package)
PACKAGES = {
    "plotly": ("plotly.js-dist-min@3.3.1", "plotly.min.js"),
    "d3": ("d3@5.7.0", "dist/d3.min.js"),
    "jquery": ("jquery@2.1.0", "dist/jquery.min.js"),
    "require": ("requirejs@2.3.6", "require.js"),
}
# BertViz's CDN URLs -> our local names (without .js where require.js adds it)
BERTVIZ_CDN = {
    "https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js": "/js/require.js",
    "https://cdnjs.cloudflare.com/ajax/libs/d3/5.7.0/d3.min": "/js/d3",
    "https://cdnjs.cloudflare.com/ajax/libs/jquery/2.0.0/jquery.min": "/js/jquery",
}


_WRAPPER = re.compile(r"\(\((\w+),(\w+)\)=>\{\(function\(")  # (exports, module) => { (function(root, factory) ...
_END = re.compile(r"return window\.Plotly=(\w+),\1\}\)")


def gradio_plotly_js() -> str | None:
    """The plotly.js Gradio serves to gr.Plot, as a classic script that sets window.Plotly; None if the
    installed Gradio has no `templates/frontend/assets/PlotlyPlot-*.js` chunk of the expected form.

    In that chunk plotly.js is a UMD module inside a CommonJS wrapper `(exports, module) => {...}`;
    this takes the UMD module out and calls it with an empty module object.
    """
    spec = importlib.util.find_spec("gradio")  # its files only: importing gradio takes seconds
    if spec is None or spec.origin is None:
        return None
    chunks = sorted((Path(spec.origin).parent / "templates" / "frontend" / "assets").glob("PlotlyPlot-*.js"))
    for chunk in chunks:
        text = chunk.read_text(encoding="utf-8")
        start, end = _WRAPPER.search(text), _END.search(text)
        if start and end and end.start() > start.end():
            exports, module = start.group(1), start.group(2)
            body = text[start.end() - len("(function("):end.end()]
            return f"(function({exports},{module}){{{body}}})({{}},{{exports:{{}}}});"
    return None


def cache_dir() -> Path:
    root = os.environ.get("EXPLORER_BENCH_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "explorer-benchmarks" / "npm"


def npm_file(name: str) -> Path:
    """Local path of PACKAGES[name]'s file, running `npm pack` once if it is not cached."""
    spec, inner = PACKAGES[name]
    target = cache_dir() / spec.replace("@", "-").replace("/", "_")
    path = target / "package" / inner
    if path.is_file():
        return path
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(f"npm not found: cannot fetch {spec} (apt-get install npm, or fill {target})")
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([npm, "pack", spec, "--silent", "--pack-destination", tmp],
                             capture_output=True, text=True, timeout=300, check=False)
        tgz = next(Path(tmp).glob("*.tgz"), None)
        if out.returncode != 0 or tgz is None:
            raise RuntimeError(f"npm pack {spec} failed: {out.stderr.strip()[-500:]}")
        with tarfile.open(tgz) as tar:
            tar.extractall(target, filter="data")
    if not path.is_file():
        raise RuntimeError(f"{spec} has no {inner}")
    return path


def local_bertviz_html(html: str) -> str:
    """BertViz HTML with its CDN URLs pointing at our server's /js/ copies."""
    for url, local in BERTVIZ_CDN.items():
        if url not in html:
            raise RuntimeError(f"BertViz HTML no longer contains {url}: update benchmarks/assets.py")
        html = html.replace(url, local)
    return html
