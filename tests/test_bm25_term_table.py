"""The vocabulary's hash table saved with a BM25 index (format version 2 on, ``vocab_slots``):
loads look terms up in it in place and find what a fresh build finds; a version 1 index
(without it) builds it at load; a hostile table is refused by a verified load and never
crashes an unverified one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from index_dirs import copy_index, edit_manifest, rewrite

from hybrid_engine import BM25Index, IndexFormatError
from hybrid_engine.lexical.format import FORMAT_VERSION

CORPUS = [
    {"_id": f"d{i}", "text": f"t{i % 13} t{i % 29} u{i % 101} café{i % 3} 東京{i % 5} common"}
    for i in range(400)
]
QUERIES = ["t1 t2", "u7 u100 common", "café2 東京4", "absent words", "", "t12 t12 u3"]
ABSENT = ["absent", "t29", "u101", "cafe", "", "x" * 300]


@pytest.fixture(scope="module")
def built() -> BM25Index:
    return BM25Index.build(CORPUS, num_threads=1)


@pytest.fixture(scope="module")
def saved(built: BM25Index, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("v2") / "bm25"
    built.save(path)
    return path


@pytest.fixture
def copy(saved: Path, tmp_path: Path) -> Path:
    return copy_index(saved, tmp_path / "copy")


def assert_same_as_built(index: BM25Index, built: BM25Index) -> None:
    """Every term's id, absent terms' -1 and every query's results equal the fresh build's."""
    terms = list(built.terms)
    assert not set(ABSENT) & set(terms)
    assert [index.term_id(t) for t in terms] == list(range(len(terms)))
    assert [index.term_id(t) for t in ABSENT] == [-1] * len(ABSENT)
    for k in (1, 10, len(CORPUS) + 3):
        ours, expected = index.search(QUERIES, k), built.search(QUERIES, k)
        np.testing.assert_array_equal(ours.ids, expected.ids)
        np.testing.assert_array_equal(ours.scores, expected.scores)


def as_version_1(path: Path) -> None:
    """Make the version 2 index at ``path`` a version 1 one: no ``vocab_slots``."""
    (path / "vocab_slots.npy").unlink()
    manifest = json.loads((path / "manifest.json").read_text())
    del manifest["files"]["vocab_slots.npy"]
    manifest["format_version"] = 1
    (path / "manifest.json").write_text(json.dumps(manifest))


def test_a_save_writes_the_current_version_with_the_table(saved: Path) -> None:
    manifest = json.loads((saved / "manifest.json").read_text())
    assert manifest["format_version"] == FORMAT_VERSION == 3  # 3: optional positions
    slots = np.load(saved / "vocab_slots.npy")
    assert slots.dtype == np.uint64 and slots.ndim == 1
    n_terms = len(np.load(saved / "doc_freqs.npy"))
    assert len(slots) & (len(slots) - 1) == 0 and len(slots) >= 2 * n_terms
    assert np.count_nonzero(slots) == n_terms
    assert sorted((slots[slots != 0] & np.uint64(0xFFFFFFFF)).tolist()) == list(
        range(1, n_terms + 1)
    )


@pytest.mark.parametrize("mmap", [True, False])
@pytest.mark.parametrize("verify", [None, True, False])
def test_a_load_of_the_saved_table_finds_what_a_fresh_build_finds(
    saved: Path, built: BM25Index, mmap: bool, verify: bool | None
) -> None:
    index = BM25Index.load(saved, mmap=mmap, verify=verify)
    assert_same_as_built(index, built)
    if mmap:  # looked up in place, not copied
        assert isinstance(index._arrays["vocab_slots"], np.memmap)


def test_the_encoder_keeps_the_mapped_arrays_alive(saved: Path, built: BM25Index) -> None:
    index = BM25Index.load(saved, mmap=True)
    view = index.with_statistics(index.statistics, index.doc_freqs.astype(np.int64))
    del index
    assert view.term_id(built.terms[5]) == 5


@pytest.mark.parametrize("mmap", [True, False])
def test_a_version_1_index_loads_and_saves_as_the_current_version(
    copy: Path, built: BM25Index, tmp_path: Path, mmap: bool
) -> None:
    as_version_1(copy)
    index = BM25Index.load(copy, mmap=mmap)
    assert_same_as_built(index, built)
    index.save(tmp_path / "again")
    saved = json.loads((tmp_path / "again" / "manifest.json").read_text())
    assert saved["format_version"] == FORMAT_VERSION
    assert_same_as_built(BM25Index.load(tmp_path / "again", mmap=True, verify=True), built)


def test_a_version_1_index_with_a_table_is_refused(copy: Path) -> None:
    edit_manifest(copy, format_version=1)
    with pytest.raises(IndexFormatError, match="expected arrays"):
        BM25Index.load(copy)


def test_an_index_of_version_2_on_without_its_table_is_refused(copy: Path) -> None:
    as_version_1(copy)
    edit_manifest(copy, format_version=2)
    with pytest.raises(IndexFormatError, match="expected arrays"):
        BM25Index.load(copy, mmap=True, verify=False)


HOSTILE = (
    "all full, wrong tags",
    "ids past the terms",
    "id + 1 == 0",
    "empty",
    "shuffled",
    "random",
    "a term twice",
    "a term dropped",
    "ids shifted",
    "doubled",
    "halved",
    "not a power of two",
    "one slot",
    "no slot",
)


def _hostile(slots: np.ndarray, n_terms: int, case: str) -> np.ndarray:
    """A crafted table from the saved ``slots``: each is wrong, most in a way only a full
    check sees."""
    size, low = len(slots), np.uint64(0xFFFFFFFF)
    filled, empty = np.flatnonzero(slots), np.flatnonzero(slots == 0)
    rng = np.random.default_rng(7)
    if case == "all full, wrong tags":
        return (np.arange(1, size + 1, dtype=np.uint64) << np.uint64(32)) | np.uint64(1)
    if case == "ids past the terms":
        return slots | low
    if case == "id + 1 == 0":  # a tag with no id: not an empty slot
        return (slots & ~low) | np.uint64(1 << 40)
    if case == "empty":
        return np.zeros(size, np.uint64)
    if case == "shuffled":
        return rng.permutation(slots)
    if case == "random":
        return rng.integers(0, 2**63, size, dtype=np.uint64)
    out = slots.copy()
    if case == "a term twice":
        out[empty[0]] = slots[filled[0]]
        return out
    if case == "a term dropped":
        out[filled[len(filled) // 2]] = 0
        return out
    if case == "ids shifted":
        out[filled] = (slots[filled] & ~low) | (slots[filled] & low) % np.uint64(n_terms) + 1
        return out
    return {
        "doubled": np.concatenate([slots, slots]),
        "halved": slots[: size // 2],
        "not a power of two": np.concatenate([slots, np.zeros(3, np.uint64)]),
        "one slot": np.zeros(1, np.uint64),
        "no slot": np.zeros(0, np.uint64),
    }[case]


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_table_never_crashes_a_load(
    saved: Path, built: BM25Index, tmp_path: Path, case: str
) -> None:
    slots = np.load(saved / "vocab_slots.npy")
    path = copy_index(saved, tmp_path / "hostile")
    rewrite(path, "vocab_slots", _hostile(slots, built.num_terms, case))
    for mmap in (False, True):
        with pytest.raises(IndexFormatError, match=str(path)):
            BM25Index.load(path, mmap=mmap, verify=True)
    terms = list(built.terms)
    for mmap in (False, True):
        try:
            index = BM25Index.load(path, mmap=mmap, verify=False)
        except IndexFormatError as exc:
            assert str(path) in str(exc)
            continue
        # A term is found under its own id or not at all; searches are served.
        assert all(index.term_id(t) in (-1, i) for i, t in enumerate(terms))
        assert all(index.term_id(t) == -1 for t in ABSENT)
        result = index.search(QUERIES, 5)
        assert result.ids.shape == (len(QUERIES), 5)
        assert ((result.ids >= -1) & (result.ids < len(CORPUS))).all()


@pytest.mark.parametrize("version", [0, 4, True, 1.0])
def test_other_versions_are_refused_naming_those_read(copy: Path, version: object) -> None:
    edit_manifest(copy, format_version=version)
    with pytest.raises(
        IndexFormatError, match=r"format version .*reads version 1, 2 and 3: rebuild"
    ):
        BM25Index.load(copy)
