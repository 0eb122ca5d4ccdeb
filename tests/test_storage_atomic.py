"""A save never replaces another format's directory, nor one that is not an index; it replaces
an index of its own format, whatever its version."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hybrid_engine import BM25Index, SearchResult, storage

_rng = np.random.default_rng(9)
QUERIES = [" ".join(f"w{t}" for t in _rng.zipf(1.2, n) % 1500) for n in (1, 2, 3, 4) * 5]


def corpus(n_docs: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [
        " ".join(f"w{t}" for t in rng.zipf(1.2, rng.integers(5, 40)) % 1500) for _ in range(n_docs)
    ]


class Versions:
    """Three indexes of different corpora (told apart by their sizes) and the results a fresh
    build of each gives."""

    def __init__(self) -> None:
        self.indexes = [
            BM25Index.build(corpus(n, seed)) for seed, n in enumerate((2000, 2300, 2600))
        ]
        self.expected = [index.search(QUERIES, 10) for index in self.indexes]

    def which(self, loaded: BM25Index) -> int:
        """The version ``loaded`` is, after checking that it searches exactly like it."""
        version = [len(index) for index in self.indexes].index(len(loaded))
        assert_equal(loaded.search(QUERIES, 10), self.expected[version])
        return version


def assert_equal(got: SearchResult, expected: SearchResult) -> None:
    np.testing.assert_array_equal(got.ids, expected.ids)
    np.testing.assert_array_equal(got.scores, expected.scores)


@pytest.fixture(scope="module")
def versions() -> Versions:
    return Versions()


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# --- what a save refuses to replace ------------------------------------------------------------


def test_refuses_to_replace_another_formats_directory(versions, tmp_path) -> None:
    model = tmp_path / "model"
    storage.write_index_dir(
        model, "hybrid_engine.model", 1, {}, {}, {"model.onnx": lambda f: f.write_bytes(b"w")}
    )
    before = {p.name: p.read_bytes() for p in model.iterdir()}
    with pytest.raises(
        FileExistsError,
        match=r"of format 'hybrid_engine\.model', not 'hybrid_engine\.bm25'.*choose another path",
    ):
        versions.indexes[0].save(model)
    assert {p.name: p.read_bytes() for p in model.iterdir()} == before
    assert names(tmp_path) == ["model"]


def test_refuses_a_directory_whose_manifest_is_unreadable(versions, tmp_path) -> None:
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "manifest.json").write_text("{not json")
    with pytest.raises(FileExistsError, match=r"unreadable manifest\.json.*remove it"):
        versions.indexes[0].save(tmp_path / "odd")
    assert names(tmp_path / "odd") == ["manifest.json"]


def test_refuses_a_directory_that_is_no_index(versions, tmp_path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("keep")
    with pytest.raises(FileExistsError, match="is not a hybrid_engine index; remove it"):
        versions.indexes[0].save(tmp_path / "notes")
    assert names(tmp_path) == ["notes"] and names(tmp_path / "notes") == ["todo.txt"]


def test_replaces_its_own_format_of_another_version(versions, tmp_path) -> None:
    path = tmp_path / "index"
    storage.write_index_dir(path, "hybrid_engine.bm25", 0, {}, {})
    versions.indexes[1].save(path)
    assert versions.which(BM25Index.load(path)) == 1
    assert names(tmp_path) == ["index"]
