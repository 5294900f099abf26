"""Sessions and the models behind them: load, build, refusals, devices, the command line (explorer.app.serving.session,
explorer.app.serving.build, app.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from explorer.app.serving.build import BuildSpec
from explorer.app.serving.errors import AppError
from explorer.app.serving.session import Session, build_session, default_source, get_model, load_session


def test_sessions_share_one_model(app, ctx):
    s1, m1 = build_session(BuildSpec(**app.SMALL), "cpu", ctx)
    s2, m2 = build_session(BuildSpec(**app.SMALL), "cpu", ctx)
    assert s1 == s2 and s1.key in ctx.registry and m1 is m2
    assert get_model(s1, ctx) is m1
    s3, m3 = build_session(BuildSpec(**{**app.SMALL, "seed": 1}), "cpu", ctx)
    assert s3.key != s1.key and m3 is not m1


def test_default_session_loads_the_shipped_translator(ctx):
    session = Session(default_source(), "cpu")
    assert session.source == "date-translator"
    assert get_model(session, ctx).task["name"] == "date-translation"


def test_invalid_config_message(app, ctx):
    with pytest.raises(AppError, match="d_model=30.*not divisible by n_heads=4"):
        build_session(BuildSpec(**{**app.SMALL, "arch": "encoder", "d_model": 30}), "cpu", ctx)
    with pytest.raises(AppError, match="parameters"):
        huge = BuildSpec(**{**app.SMALL, "n_layers": 24, "d_model": 1024, "d_ff": 4096, "n_heads": 8})
        build_session(huge, "cpu", ctx)
    with pytest.raises(AppError, match="not available"):
        build_session(BuildSpec(**{**app.SMALL, "arch": "encoder"}), "cuda:7", ctx)
    with pytest.raises(AppError, match="Fill in d_model"):
        BuildSpec.from_form(**{**app.SMALL, "d_model": None})


def test_preset_form_values():
    spec = BuildSpec.from_preset("seed001-classifier")
    assert (spec.arch, spec.n_layers, spec.n_heads, spec.d_model, spec.norm) == ("encoder", 2, 8, 128, "post-norm")
    with pytest.raises(AppError, match="unknown preset"):
        BuildSpec.from_preset("nope")


def test_unknown_hub_id_offline(ctx, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(AppError, match="(?i)cannot load.*no-such-owner/no-such-model"):
        load_session("no-such-owner/no-such-model", "cpu", ctx)


def test_path_escape_refused(tmp_path):
    from explorer.app.serving.registry import ModelRegistry
    from explorer.app.serving.session import AppContext

    (tmp_path / "models").mkdir()
    ctx = AppContext(ModelRegistry(), allowed_dirs=(str(tmp_path / "models"),))
    for text in ("../../etc", "/etc", "models/../../"):
        with pytest.raises(AppError, match="(?i)not a folder inside the allowed folders|neither"):
            load_session(text, "cpu", ctx)
    with pytest.raises(AppError, match="(?i)choose"):
        load_session("  ", "cpu", ctx)
    with pytest.raises(AppError, match="too long"):
        load_session("x" * 301, "cpu", ctx)


def test_app_cli_defaults(monkeypatch):
    spec = importlib.util.spec_from_file_location("app_main", Path(__file__).resolve().parents[2] / "app.py")
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    monkeypatch.delenv("SPACE_ID", raising=False)
    local = app.parse_args([])
    assert (local.host, local.port, local.device, local.model_memory) == ("127.0.0.1", None, "auto", 4.0)
    assert local.download_disk == 0.25
    monkeypatch.setenv("SPACE_ID", "someone/explorer")
    space = app.parse_args(["--allow-dir", "a", "--allow-dir", "b", "--checkpoint", "date-gpt",
                            "--model-memory", "1.5"])
    assert (space.host, space.port, space.allow_dir, space.checkpoint, space.model_memory) == (
        "0.0.0.0", 7860, ["a", "b"], "date-gpt", 1.5)
