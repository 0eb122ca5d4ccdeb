"""Saving and loading BM25 indexes: identical results in every load mode; corrupt, truncated,
foreign or crafted directories raise IndexFormatError; saves are atomic and never clobber."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest
from index_dirs import copy_index, edit_manifest, fix_checksums, rewrite

from hybrid_engine import BM25Index, IndexFormatError, __version__, storage
from hybrid_engine.lexical.format import FORMAT, FORMAT_VERSION

CORPUS = [
    {
        "_id": f"doc-{i}",
        "title": f"w{i % 5}",
        "text": f"w{i % 7} w{i % 11} w{i % 3} common ü{i % 4}",
    }
    for i in range(300)
]
QUERIES = ["w1 w3", "common", "w10 w6 w6", "ü2 w0", "nothing here", "w4"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> tuple[BM25Index, Path]:
    index = BM25Index.build(CORPUS, method="bm25+", k1=1.1, b=0.6, delta=0.7)
    path = tmp_path_factory.mktemp("saved") / "bm25"
    index.save(path)
    return index, path


@pytest.fixture
def copy(saved, tmp_path) -> Path:
    """A fresh, writable copy of the saved index to corrupt."""
    return copy_index(saved[1], tmp_path / "copy")


def assert_same_results(a: BM25Index, b: BM25Index) -> None:
    for k in (1, 10, 33, 400):
        ra, rb = a.search(QUERIES, k), b.search(QUERIES, k)
        np.testing.assert_array_equal(ra.ids, rb.ids)
        np.testing.assert_array_equal(ra.scores, rb.scores)


# --- roundtrip ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mmap", [False, True])
@pytest.mark.parametrize("verify", [True, False])
@pytest.mark.parametrize("cache", [None, True, False])
def test_roundtrip_identical(saved, mmap: bool, verify: bool, cache) -> None:
    index, path = saved
    loaded = BM25Index.load(path, mmap=mmap, verify=verify, cache_impacts=cache)
    assert_same_results(index, loaded)
    assert loaded.params == index.params and loaded.analyzer == index.analyzer
    assert loaded.doc_ids[:] == index.doc_ids[:] == [d["_id"] for d in CORPUS]
    assert (loaded.num_terms, loaded.num_postings, loaded.avg_doc_length) == (
        index.num_terms,
        index.num_postings,
        index.avg_doc_length,
    )
    for name, array in index._arrays.items():
        np.testing.assert_array_equal(loaded._arrays[name], array)


def test_roundtrip_positional_ids(tmp_path) -> None:
    index = BM25Index.build([d["text"] for d in CORPUS])
    index.save(tmp_path / "idx")
    assert not (tmp_path / "idx" / "doc_id_bytes.npy").exists()
    loaded = BM25Index.load(tmp_path / "idx")
    assert not loaded.doc_ids.explicit and loaded.doc_ids[7] == "7"
    assert_same_results(index, loaded)


def test_manifest_records_format_params_and_checksums(saved) -> None:
    index, path = saved
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["format"] == FORMAT and manifest["format_version"] == FORMAT_VERSION
    assert manifest["library_version"] == __version__
    assert manifest["params"] == {"method": "bm25+", "k1": 1.1, "b": 0.6, "delta": 0.7}
    assert manifest["analyzer"] == index.analyzer.to_dict()
    assert manifest["doc_ids"] == "explicit"
    for name, info in manifest["files"].items():
        data = (path / name).read_bytes()
        assert info == {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    assert sorted(p.name for p in path.iterdir()) == sorted([*manifest["files"], "manifest.json"])


def test_mmap_arrays_are_read_only(saved) -> None:
    loaded = BM25Index.load(saved[1], mmap=True)
    assert isinstance(loaded._arrays["postings"], np.memmap)
    assert not loaded._arrays["postings"].flags.writeable


def test_save_over_an_existing_index_replaces_it(saved, copy) -> None:
    other = BM25Index.build(["completely different words"])
    other.save(copy)
    assert BM25Index.load(copy).num_documents == 1
    assert [p.name for p in copy.parent.iterdir() if p.name.startswith(".")] == []


def test_saved_index_saves_again(saved, tmp_path) -> None:
    loaded = BM25Index.load(saved[1], mmap=True)
    loaded.save(tmp_path / "again")
    assert_same_results(saved[0], BM25Index.load(tmp_path / "again"))


# --- refused directories -------------------------------------------------------------------


def test_missing_path(tmp_path) -> None:
    with pytest.raises(IndexFormatError, match="is not a directory"):
        BM25Index.load(tmp_path / "nope")


def test_path_is_a_regular_file(tmp_path) -> None:
    (tmp_path / "file").write_text("hello")
    with pytest.raises(IndexFormatError, match="is not a directory"):
        BM25Index.load(tmp_path / "file")


def test_missing_manifest(copy) -> None:
    (copy / "manifest.json").unlink()
    with pytest.raises(
        IndexFormatError, match=r"has no manifest\.json: it is not a hybrid_engine index"
    ):
        BM25Index.load(copy)


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe\x00garbage", b""])
def test_manifest_not_json(copy, content: bytes) -> None:
    (copy / "manifest.json").write_bytes(content)
    with pytest.raises(IndexFormatError, match="is not valid JSON"):
        BM25Index.load(copy)


@pytest.mark.parametrize("manifest", ["[1, 2]", '"text"', "null", '{"format": "faiss.index"}'])
def test_foreign_format(copy, manifest: str) -> None:
    (copy / "manifest.json").write_text(manifest)
    with pytest.raises(IndexFormatError, match=f"expected '{FORMAT}'"):
        BM25Index.load(copy)


@pytest.mark.parametrize("version", [FORMAT_VERSION + 1, 0, "1", None])
def test_wrong_format_version(copy, version) -> None:
    edit_manifest(copy, format_version=version)
    with pytest.raises(IndexFormatError, match=rf"format version {version!r}.*rebuild the index"):
        BM25Index.load(copy)


def test_manifest_without_files(copy) -> None:
    edit_manifest(copy, files=None)
    with pytest.raises(IndexFormatError, match="lists no files"):
        BM25Index.load(copy)


@pytest.mark.parametrize("name", ["../escape.npy", "sub/postings.npy", "postings.pkl"])
def test_manifest_names_unexpected_file(copy, name: str) -> None:
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["files"][name] = {"sha256": "0", "bytes": 0}
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="unexpected file"):
        BM25Index.load(copy)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("params", {"method": "bm99", "k1": 1, "b": 0.5, "delta": 0}, "unknown BM25 method"),
        ("params", {"method": "lucene", "k1": -1, "b": 0.5, "delta": 0}, "k1 must be in"),
        ("params", {"k1": 1}, r"params .* must set exactly \['b', 'delta', 'k1', 'method'\]"),
        (
            "params",
            {"method": "lucene", "k1": 1, "b": 0.5, "delta": 0, "k3": 8},
            "must set exactly",
        ),
        ("params", [1, 2], "must set exactly"),
        ("analyzer", {"lowercase": True}, "missing keys"),
        ("stats", {}, "num_documents"),
        ("doc_ids", None, "doc_ids is None, not 'explicit' or 'positions'"),
        ("doc_ids", "positions", "doc_ids is 'positions' but the id arrays are present"),
    ],
)
def test_bad_manifest_entries(copy, field: str, value, message: str) -> None:
    edit_manifest(copy, **{field: value})
    with pytest.raises(IndexFormatError, match=message):
        BM25Index.load(copy)


def test_wrong_document_count(copy) -> None:
    edit_manifest(copy, stats={"num_documents": 299})
    with pytest.raises(IndexFormatError, match="doc_lengths has 300 entries for 299 documents"):
        BM25Index.load(copy)


@pytest.mark.parametrize("name", ["postings", "doc_lengths", "vocab_bytes", "doc_id_offsets"])
def test_missing_array_file(copy, name: str) -> None:
    (copy / f"{name}.npy").unlink()
    with pytest.raises(IndexFormatError, match=f"is missing {name}.npy"):
        BM25Index.load(copy)


@pytest.mark.parametrize("verify", [True, False])
def test_truncated_array_file(copy, verify: bool) -> None:
    data = (copy / "postings.npy").read_bytes()
    (copy / "postings.npy").write_bytes(data[: len(data) // 2])
    with pytest.raises(IndexFormatError, match="is truncated or was changed"):
        BM25Index.load(copy, verify=verify)


@pytest.mark.parametrize("mmap", [False, True])
def test_truncated_array_with_matching_manifest(copy, mmap: bool) -> None:
    data = (copy / "postings.npy").read_bytes()
    (copy / "postings.npy").write_bytes(data[: len(data) - 100])
    fix_checksums(copy)
    with pytest.raises(IndexFormatError, match="is not a readable numpy array"):
        BM25Index.load(copy, mmap=mmap)


@pytest.mark.parametrize("name", ["postings", "doc_freqs", "vocab_bytes", "doc_id_bytes"])
def test_flipped_byte_fails_checksum(copy, name: str) -> None:
    file = copy / f"{name}.npy"
    data = bytearray(file.read_bytes())
    data[-3] ^= 0x10
    file.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match=f"{name}.npy fails its sha256 check: it is corrupt"):
        BM25Index.load(copy)


def test_pickled_array_is_never_loaded(copy) -> None:
    rewrite(copy, "postings", np.array([{"evil": 1}], dtype=object))
    with pytest.raises(IndexFormatError, match=r"holds Python objects.*refused; rebuild"):
        BM25Index.load(copy)


# --- crafted corruption with consistent checksums: the structural check ------------------------


def postings_of(path: Path) -> tuple[np.ndarray, np.ndarray]:
    return np.load(path / "postings.npy"), np.load(path / "posting_offsets.npy")


@pytest.mark.parametrize("verify", [True, False])
def test_doc_gap_past_the_last_document(saved, copy, verify: bool) -> None:
    postings, offsets = postings_of(copy)
    term = len(offsets) - 2
    assert postings[offsets[term + 1] - 2] < 0x80  # last posting's gap is one byte
    postings[offsets[term + 1] - 2] = 0x7F  # now points ~100 past the last document
    rewrite(copy, "postings", postings)
    malformed = f"the postings of term {term} are malformed"
    if verify:  # checked at load, whatever the layout
        for mmap in (False, True):
            with pytest.raises(IndexFormatError, match=malformed):
                BM25Index.load(copy, mmap=mmap, verify=True, cache_impacts=False)
        return
    cached = BM25Index.load(copy, verify=False, cache_impacts=True)
    with pytest.raises(IndexFormatError, match=malformed):  # the first search builds the
        cached.search([cached.terms[0]], 3)  # impact cache, which decodes every list
    # Without verify and without the cache, each posting list is checked when first read:
    # the load succeeds, a search reading the broken list raises, one that does not is served.
    for index in (  # the defaults of a memory-mapped load: no verify, no impact cache
        BM25Index.load(copy, verify=False, cache_impacts=False),
        BM25Index.load(copy, mmap=True),
    ):
        broken, other = index.terms[term], index.terms[0]
        for _ in range(2):  # a failed check is not remembered as a pass
            with pytest.raises(IndexFormatError, match=f"{copy}: {malformed}"):
                index.search_weighted([{other: 1.0}, {broken: 1.0}], 3)
        served = index.search_weighted([{other: 1.0}], 3)
        built = saved[0].search_weighted([{other: 1.0}], 3)
        np.testing.assert_array_equal(served.ids, built.ids)
        np.testing.assert_array_equal(served.scores, built.scores)


def test_unterminated_varint(copy) -> None:
    postings, offsets = postings_of(copy)
    postings[offsets[1] - 1] |= 0x80  # term 0's last byte claims a continuation
    rewrite(copy, "postings", postings)
    with pytest.raises(IndexFormatError, match="the postings of term 0 are malformed"):
        BM25Index.load(copy)


def test_zero_term_frequency(copy) -> None:
    postings, offsets = postings_of(copy)
    postings[offsets[2] - 1] = 0  # term 1's last tf
    rewrite(copy, "postings", postings)
    with pytest.raises(IndexFormatError, match="the postings of term 1 are malformed"):
        BM25Index.load(copy)


def test_doc_freq_disagrees_with_postings(copy) -> None:
    doc_freqs = np.load(copy / "doc_freqs.npy")
    doc_freqs[3] += 1  # the impact cache would write past its arrays
    rewrite(copy, "doc_freqs", doc_freqs)
    with pytest.raises(IndexFormatError, match="the postings of term 3 are malformed"):
        BM25Index.load(copy)


@pytest.mark.parametrize("verify", [True, False])
@pytest.mark.parametrize(
    "name, corrupt, message",
    [
        (
            "posting_offsets",
            lambda a: a.__setitem__(5, a[4] - 1),
            "posting_offsets does not delimit",
        ),
        (
            "posting_offsets",
            lambda a: a.__setitem__(-1, a[-1] + 1),
            "posting_offsets does not delimit",
        ),
        ("vocab_offsets", lambda a: a.__setitem__(0, 1), "vocab_offsets does not delimit"),
        (
            "doc_id_offsets",
            lambda a: a.__setitem__(2, 10**6),
            "doc_id_bytes and doc_id_offsets do not hold",
        ),
        ("doc_freqs", lambda a: a.__setitem__(0, 0), "negative document lengths or empty posting"),
        ("doc_lengths", lambda a: a.__setitem__(9, -4), "negative document lengths"),
    ],
)
def test_shallow_structure_checked_even_without_verify(
    copy, verify, name, corrupt, message
) -> None:
    array = np.load(copy / f"{name}.npy")
    corrupt(array)
    rewrite(copy, name, array)
    with pytest.raises(IndexFormatError, match=message):
        BM25Index.load(copy, verify=verify)


@pytest.mark.parametrize(
    "name, array, message",
    [
        ("postings", lambda a: a.astype(np.int64), "postings is int64"),
        ("doc_lengths", lambda a: a.reshape(1, -1), "doc_lengths is int32 with 2 dims"),
        ("doc_freqs", lambda a: a.astype(np.float32), "doc_freqs is float32"),
    ],
)
def test_wrong_dtype_or_shape(copy, name, array, message) -> None:
    rewrite(copy, name, array(np.load(copy / f"{name}.npy")))
    with pytest.raises(IndexFormatError, match=message):
        BM25Index.load(copy)


def test_missing_array_in_manifest(copy) -> None:
    manifest = json.loads((copy / "manifest.json").read_text())
    del manifest["files"]["doc_lengths.npy"]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="expected arrays"):
        BM25Index.load(copy)


def test_explicit_ids_without_id_arrays(tmp_path) -> None:
    BM25Index.build(["no ids here"]).save(tmp_path / "idx")
    edit_manifest(tmp_path / "idx", doc_ids="explicit")
    with pytest.raises(
        IndexFormatError, match="doc_ids is 'explicit' but the id arrays are absent"
    ):
        BM25Index.load(tmp_path / "idx")


def test_duplicate_vocabulary_term(copy) -> None:
    vocab, offsets = np.load(copy / "vocab_bytes.npy"), np.load(copy / "vocab_offsets.npy")
    lengths = np.diff(offsets)
    a, b = next(
        (a, b)
        for a in range(len(lengths))
        for b in range(a + 1, len(lengths))
        if lengths[a] == lengths[b]
    )
    vocab[offsets[b] : offsets[b + 1]] = vocab[offsets[a] : offsets[a + 1]]
    rewrite(copy, "vocab_bytes", vocab)
    with pytest.raises(IndexFormatError, match="twice"):
        BM25Index.load(copy)


# --- atomic saves ------------------------------------------------------------------------------


def test_refuses_to_overwrite_a_non_index_directory(saved, tmp_path) -> None:
    target = tmp_path / "precious"
    target.mkdir()
    (target / "thesis.txt").write_text("do not delete")
    with pytest.raises(FileExistsError, match="is not a hybrid_engine index; remove it"):
        saved[0].save(target)
    assert [p.name for p in target.iterdir()] == ["thesis.txt"]
    assert (target / "thesis.txt").read_text() == "do not delete"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["precious"]


def test_refuses_to_overwrite_a_file(saved, tmp_path) -> None:
    (tmp_path / "file").write_text("data")
    with pytest.raises(FileExistsError, match="not a hybrid_engine index"):
        saved[0].save(tmp_path / "file")
    assert (tmp_path / "file").read_text() == "data"


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_interrupted_array_write_keeps_previous_index(saved, copy, monkeypatch) -> None:
    real_save, calls = np.save, []

    def failing_save(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise OSError("disk full (simulated)")
        return real_save(*args, **kwargs)

    monkeypatch.setattr(storage.index_dir.np, "save", failing_save)
    with pytest.raises(OSError, match="simulated"):
        BM25Index.build(["another corpus entirely"]).save(copy)
    monkeypatch.undo()
    assert leftovers(copy.parent) == []
    assert_same_results(saved[0], BM25Index.load(copy))


@pytest.mark.parametrize("fail_on", ["exchange", "first rename", "second rename"])
def test_interrupted_swap_keeps_previous_index(saved, copy, monkeypatch, fail_on: str) -> None:
    """The exchange that swaps the new index in may fail; so may either rename of the two that
    replace it where the filesystem cannot exchange (old index aside, new one in)."""

    def fail(*args):
        raise OSError("rename failed (simulated)")

    if fail_on == "exchange":
        monkeypatch.setattr(storage.replace._rename, "exchange", fail)
    else:
        monkeypatch.setattr(storage.replace._rename, "exchange", lambda a, b: False)
        real_rename, calls = os.rename, []

        def failing_rename(src, dst):
            calls.append((src, dst))
            if len(calls) == (1 if fail_on == "first rename" else 2):
                fail()
            return real_rename(src, dst)

        monkeypatch.setattr(storage.replace.os, "rename", failing_rename)
    with pytest.raises(OSError, match="simulated"):
        BM25Index.build(["another corpus entirely"]).save(copy)
    monkeypatch.undo()
    assert leftovers(copy.parent) == []
    assert_same_results(saved[0], BM25Index.load(copy))


def test_interrupted_first_save_leaves_nothing(monkeypatch, tmp_path) -> None:
    def interrupt(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(storage.replace._rename, "rename_noreplace", interrupt)
    with pytest.raises(KeyboardInterrupt):
        BM25Index.build(["text here"]).save(tmp_path / "new")
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []
