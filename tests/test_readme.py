"""The README's Python examples run as written, and its two commands are the ones CI uses."""

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_python_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks
    for block in blocks:
        if block.startswith("# needs a running app"):
            continue  # the gradio_client example is run against a live app in tests/app/test_api.py
        if block.startswith("# needs the Hub"):
            continue  # tests never reach the network; the same calls run on tiny models in tests/test_lm.py
        exec(compile(block, str(README), "exec"), {})


def test_ci_runs_the_readme_test_command():
    text = README.read_text()
    commands = re.findall(r"```bash\n(.*?)\n```", text, re.S)
    assert "pip install -r requirements.txt && python app.py" in commands
    test_command = "pip install -r requirements-test.txt && python -m pytest"
    assert test_command in commands
    assert test_command in (README.parent / ".ci" / "run").read_text()
    assert "torch==2.13.0" in (README.parent / "requirements.txt").read_text()
