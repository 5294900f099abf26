"""What a person is told when something fails (explorer.app.serving.errors, explorer.app.serving.limits)."""

from __future__ import annotations

import pytest

from explorer.app.serving.errors import AppError, escape_md, user_message
from explorer.app.serving.limits import format_bytes, positional_args
from explorer.checkpoints import CheckpointError


def test_unexpected_errors_become_short_messages(caplog):
    assert user_message(AppError("Type a sentence first")) == "Type a sentence first"
    assert user_message(CheckpointError("config.json in /x is not valid JSON")) == "config.json in /x is not valid JSON"
    with caplog.at_level("ERROR"):
        try:
            raise KeyError("internal detail")
        except KeyError as err:
            msg = user_message(err)
    assert msg.startswith("Something went wrong (KeyError)") and "internal detail" not in msg
    assert "internal detail" in caplog.text  # logged server-side, with its traceback


def test_markdown_escaping():
    assert escape_md("<b>x</b> *y* [z](u)") == "&lt;b&gt;x&lt;/b&gt; \\*y\\* \\[z\\]\\(u\\)"


def test_limits_messages():
    assert format_bytes(512) == "512 bytes" and format_bytes(1536) == "1.5 kB" and format_bytes(4 * 1024**3) == "4.0 GB"
    assert positional_args("64", 10, "100") == (64, 10, 100.0)
    with pytest.raises(AppError, match="length must be between 2 and 512"):
        positional_args(64, 513, 100)
    with pytest.raises(AppError, match="must be numbers"):
        positional_args("x", 10, 100)
