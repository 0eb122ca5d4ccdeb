"""No pickle on any load path, and model preparation from safetensors weights only.

- An audit of the package's source: every ``np.load`` passes ``allow_pickle=False``, nothing
  imports a pickling module or calls ``torch.load``, and the export's ``from_pretrained`` of
  weights says which files it may read.
- Crafted index directories: a ``.npy`` object array (whose unpickling would run code), with
  the manifest's checksums made to agree, is refused by every reader with a clear error, and
  the code never runs.
- Preparation refuses a source folder with only ``pytorch_model.bin`` unless the caller opts
  in (``allow_pickle_weights=True``, ``--allow-pickle-weights``).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from dense_oracle import HashingEncoder
from index_dirs import fix_checksums
from sparse_oracle import HashingSparseEncoder

import hybrid_engine
from hybrid_engine import BM25Index, DenseIndex, HybridIndex, IndexFormatError, SpladeIndex
from hybrid_engine.cli import main
from hybrid_engine.errors import HybridEngineError
from hybrid_engine.live import commits
from hybrid_engine.models.export import bi_encoder, cross_encoder
from hybrid_engine.models.export.common import PICKLE_WEIGHTS_FLAG, source_weights

PACKAGE = Path(hybrid_engine.__file__).parent
PICKLING_MODULES = {"pickle", "cPickle", "_pickle", "dill", "cloudpickle", "joblib", "shelve"}
DOCS = [
    {"_id": f"d{i}", "title": t, "text": f"{t} by the river and the hill, number {i}"}
    for i, t in enumerate(["stone", "sand", "snow", "rain", "wind", "moon"])
]


def _modules() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text(encoding="utf-8"))) for path in PACKAGE.rglob("*.py")]


def _dotted(node: ast.expr) -> str:
    """``a.b.c`` of an attribute chain (empty for anything else)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def test_the_package_source_has_no_way_to_unpickle() -> None:
    problems = []
    for path, tree in _modules():
        where = path.relative_to(PACKAGE.parent)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                names.append(getattr(node, "module", None) or "")
                for name in names:
                    if name.split(".")[0] in PICKLING_MODULES:
                        problems.append(f"{where}:{node.lineno} imports {name}")
            if not isinstance(node, ast.Call):
                continue
            called = _dotted(node.func)
            keywords = {k.arg: k.value for k in node.keywords}
            if called in ("np.load", "numpy.load"):
                flag = keywords.get("allow_pickle")
                if not (isinstance(flag, ast.Constant) and flag.value is False):
                    problems.append(f"{where}:{node.lineno} np.load without allow_pickle=False")
            if called in ("torch.load", "pd.read_pickle", "pandas.read_pickle"):
                problems.append(f"{where}:{node.lineno} calls {called}")
    assert problems == []


def test_the_export_reads_weights_it_has_checked() -> None:
    """Every ``from_pretrained`` of a model in models/export/ passes the options
    ``source_weights`` chose (safetensors only unless pickles were allowed)."""
    unchecked = []
    for path, tree in _modules():
        if path.parent.name != "export":
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and _dotted(node.func).endswith("from_pretrained")):
                continue
            if "Tokenizer" in _dotted(node.func):
                continue  # tokenizers are JSON
            names = {k.arg for k in node.keywords}
            if "use_safetensors" not in names and None not in names:
                unchecked.append(f"{path.name}:{node.lineno}")
    assert unchecked == []


# -- crafted directories ----------------------------------------------------------------------


class _RunsCode:
    """Unpickling this creates the directory ``marker``: the proof that code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.mkdir, (str(self.marker),))


def _plant(folder: Path, name: str, marker: Path) -> None:
    """Replace ``folder/name`` by an object array holding a code-running pickle, and make the
    manifest's size and sha256 of it agree."""
    array = np.array([_RunsCode(marker), 1], dtype=object)
    with open(folder / name, "wb") as f:
        np.save(f, array, allow_pickle=True)
    fix_checksums(folder)


@pytest.mark.parametrize("mmap", [False, True])
@pytest.mark.parametrize("verify", [True, False])
@pytest.mark.parametrize("kind", ["bm25", "dense", "splade"])
def test_an_object_array_in_an_index_is_refused(
    kind: str, verify: bool, mmap: bool, tmp_path: Path
) -> None:
    encoders = {"dense": HashingEncoder(), "splade": HashingSparseEncoder()}
    builders = {
        "bm25": lambda: BM25Index.build(DOCS),
        "dense": lambda: DenseIndex.build(DOCS, encoder=encoders["dense"]),
        "splade": lambda: SpladeIndex.build(DOCS, encoder=encoders["splade"]),
    }
    loaders = {
        "bm25": lambda path: BM25Index.load(path, mmap=mmap, verify=verify),
        "dense": lambda path: DenseIndex.load(
            path, encoder=encoders["dense"], mmap=mmap, verify=verify
        ),
        "splade": lambda path: SpladeIndex.load(
            path, encoder=encoders["splade"], mmap=mmap, verify=verify
        ),
    }
    folder, marker = tmp_path / kind, tmp_path / "code-ran"
    builders[kind]().save(folder)
    name = sorted(json.loads((folder / "manifest.json").read_text())["files"])[0]
    assert name.endswith(".npy")
    _plant(folder, name, marker)
    with pytest.raises(IndexFormatError, match=rf"{name} holds Python objects.*unpickle.*refused"):
        loaders[kind](folder)
    assert not marker.exists()


def test_an_object_array_in_a_live_index_is_refused(tmp_path: Path) -> None:
    """In a segment's arrays and in a deletion mask (checksums in the commit point fixed)."""
    path, marker = tmp_path / "live", tmp_path / "code-ran"
    encoder = HashingEncoder()
    with HybridIndex.build(DOCS, retrievers=("bm25", "dense"), encoder=encoder) as engine:
        engine.save(path)
        engine.delete(["d1"])
        engine.commit()
    point = commits.read_commit(path)
    (entry,) = point.segments
    assert entry.deletes is not None
    pristine = tmp_path / "pristine"
    shutil.copytree(path, pristine)

    bm25 = path / entry.name / "bm25"
    _plant(bm25, "doc_lengths.npy", marker)
    with pytest.raises(IndexFormatError, match=r"doc_lengths\.npy holds Python objects"):
        HybridIndex.load(path, encoder=encoder)
    assert not marker.exists()

    shutil.rmtree(path)
    shutil.copytree(pristine, path)
    _plant_mask(path, entry.deletes, marker)
    with pytest.raises(IndexFormatError, match=r"bad deletion mask.*pickle"):
        HybridIndex.load(path, encoder=encoder)
    assert not marker.exists()


def _plant_mask(path: Path, name: str, marker: Path) -> None:
    """A code-running object array as the deletion mask ``name``, its sha256 in the commit
    point made to agree."""
    with open(path / name, "wb") as f:
        np.save(f, np.array([_RunsCode(marker)], dtype=object), allow_pickle=True)
    (file,) = sorted(path.glob("commit-*.json"))[-1:]
    point = json.loads(file.read_text())
    for entry in point["segments"]:
        if entry["deletes"] == name:
            entry["deletes_sha256"] = hashlib.sha256((path / name).read_bytes()).hexdigest()
    file.write_text(json.dumps(point))


# -- model preparation ------------------------------------------------------------------------


def _st_folder(root: Path, weights: tuple[str, ...]) -> Path:
    """A sentence-transformers folder (configs only) holding the weight files ``weights``."""
    (root / "1_Pooling").mkdir(parents=True)
    (root / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    modules = [{"type": f"sentence_transformers.models.{m}"} for m in ("Transformer", "Pooling")]
    (root / "modules.json").write_text(json.dumps(modules))
    config = {"model_type": "bert", "hidden_size": 8, "num_attention_heads": 2}
    (root / "config.json").write_text(json.dumps(config))
    (root / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 16}))
    for name in weights:
        (root / name).write_bytes(f"the bytes of {name}".encode())
    return root


def test_pickled_weights_are_refused_unless_allowed(tmp_path: Path) -> None:
    folder = _st_folder(tmp_path / "st", ("pytorch_model.bin",))
    with pytest.raises(
        HybridEngineError,
        match=rf"only pickled weights \(pytorch_model\.bin\).*allow_pickle_weights=True "
        rf"\({PICKLE_WEIGHTS_FLAG}",
    ):
        source_weights(folder)
    digest = hashlib.sha256(b"the bytes of pytorch_model.bin").hexdigest()
    assert source_weights(folder, allow_pickle_weights=True) == {"pytorch_model.bin": digest}


def test_safetensors_are_read_when_both_are_there(tmp_path: Path) -> None:
    folder = _st_folder(tmp_path / "st", ("pytorch_model.bin", "model.safetensors"))
    digest = hashlib.sha256(b"the bytes of model.safetensors").hexdigest()
    for allowed in (False, True):
        assert source_weights(folder, allow_pickle_weights=allowed) == {"model.safetensors": digest}


def test_a_folder_without_weights_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HybridEngineError, match="holds no weights"):
        source_weights(_st_folder(tmp_path / "st", ()), allow_pickle_weights=True)


def test_prepare_encoder_refuses_pickled_weights_before_exporting(tmp_path: Path) -> None:
    folder = _st_folder(tmp_path / "st", ("pytorch_model.bin",))
    with pytest.raises(HybridEngineError, match="only pickled weights"):
        bi_encoder.prepare_encoder(folder, tmp_path / "out", name="x")
    assert not (tmp_path / "out").exists()


def _cross_encoder_folder(root: Path) -> Path:
    root.mkdir()
    config = {
        "model_type": "bert",
        "architectures": ["BertForSequenceClassification"],
        "id2label": {"0": "LABEL_0"},
    }
    (root / "config.json").write_text(json.dumps(config))
    (root / "tokenizer.json").write_text("{}")
    (root / "pytorch_model.bin").write_bytes(b"pickled")
    return root


def test_prepare_reranker_refuses_pickled_weights_and_the_flag_lets_them_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _cross_encoder_folder(tmp_path / "ce")
    with pytest.raises(HybridEngineError, match="only pickled weights"):
        cross_encoder.prepare_cross_encoder(folder, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert main(["models", "prepare-reranker", str(folder), "--quiet"]) == 2
    assert PICKLE_WEIGHTS_FLAG in capsys.readouterr().err
    received = {}
    monkeypatch.setattr(
        cross_encoder, "prepare_cross_encoder", lambda *args, **options: received.update(options)
    )
    assert main(["models", "prepare-reranker", str(folder), PICKLE_WEIGHTS_FLAG, "--quiet"]) == 0
    assert received["allow_pickle_weights"] is True
