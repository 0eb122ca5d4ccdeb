"""CompressedStrings (a segment's texts and titles): round trips of any Unicode, random access
equal to the list it was built from, a trained dictionary, corrupt bytes refused by name; and
a live index that stores its texts so and gives back what it was given."""

from __future__ import annotations

import hashlib
import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_engine import HybridIndex, IndexFormatError
from hybrid_engine.compressed import DICTIONARY_BYTES, CompressedStrings
from hybrid_engine.live import segment

ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
"""Any code point, lone surrogates included (``PackedStrings`` keeps them too)."""


def _reloaded(store: CompressedStrings, count: int) -> CompressedStrings:
    """``store`` read back from its saved arrays, as a segment loads it."""
    return CompressedStrings.from_arrays(store.arrays("text"), count, "text", shown=Path("seg"))


@settings(max_examples=60, deadline=None)
@given(st.lists(ANY_TEXT, max_size=30), st.sampled_from([1, 8, 64, 1 << 14]))
def test_every_list_of_strings_round_trips(strings: list[str], block_bytes: int) -> None:
    """Empty strings, strings longer than a block, blocks of one string or of all of them."""
    store = _reloaded(
        CompressedStrings.from_strings(strings, block_bytes=block_bytes), len(strings)
    )
    assert len(store) == len(strings)
    assert list(store) == strings
    assert [store[i] for i in range(len(strings))] == strings
    assert store[:] == strings and store[::-2] == strings[::-2]


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_random_access_equals_the_list(data: st.DataObject) -> None:
    strings = data.draw(st.lists(ANY_TEXT, min_size=1, max_size=40))
    store = CompressedStrings.from_strings(strings, block_bytes=data.draw(st.sampled_from([4, 50])))
    positions = data.draw(st.lists(st.integers(0, len(strings) - 1), max_size=60))
    assert store.take(np.asarray(positions, dtype=np.int64)) == [strings[p] for p in positions]
    position = data.draw(st.integers(-len(strings), len(strings) - 1))
    assert store[position] == strings[position]


def test_out_of_range_positions_are_index_errors() -> None:
    store = CompressedStrings.from_strings(["a", "b", "c"])
    with pytest.raises(IndexError, match="out of range for 3 strings"):
        store[3]
    with pytest.raises(IndexError, match=r"\[0, 3\)"):
        store.take(np.array([0, -1]))
    assert store.take(np.array([], dtype=np.int64)) == []
    assert (
        len(CompressedStrings.from_strings([])) == 0
        and list(CompressedStrings.from_strings([])) == []
    )


def _corpus(n: int) -> list[str]:
    """``n`` documents of two to six sentences from a fixed set of 1,500 (seeded): text
    whose repeats lie further apart than a block, what a dictionary pays for."""
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(2_000)] + ["the", "of", "protein", "café", "é"]
    sentences = [" ".join(rng.choice(words, 10)) + "." for _ in range(1_500)]
    return [" ".join(rng.choice(sentences, int(rng.integers(2, 7)))) for _ in range(n)]


@pytest.fixture(scope="module")
def trained() -> tuple[list[str], CompressedStrings]:
    """Strings enough to train a dictionary, and their store."""
    strings = _corpus(5_000)
    return strings, CompressedStrings.from_strings(strings)


def test_a_trained_dictionary_is_saved_and_read_back(
    trained: tuple[list[str], CompressedStrings],
) -> None:
    strings, store = trained
    arrays = store.arrays("text")
    assert 0 < len(arrays["text_zdict"]) <= DICTIONARY_BYTES
    compressed = sum(a.nbytes for a in arrays.values())
    assert compressed < sum(len(s.encode()) for s in strings) / 2
    again = _reloaded(store, len(strings))
    assert list(again) == strings
    picked = np.random.default_rng(1).integers(0, len(strings), 100)
    assert again.take(picked) == [strings[p] for p in picked]


def test_a_corrupt_dictionary_is_a_format_error_naming_it(
    trained: tuple[list[str], CompressedStrings],
) -> None:
    strings, store = trained
    arrays = store.arrays("text")
    damaged = dict(arrays, text_zdict=arrays["text_zdict"] ^ np.uint8(0x5A))
    reader = CompressedStrings.from_arrays(damaged, len(strings), "text", shown=Path("seg"))
    with pytest.raises(IndexFormatError, match=r"seg/text_zframes\.npy: .*seg/text_zdict\.npy"):
        list(reader)


def test_few_strings_get_no_dictionary() -> None:
    store = CompressedStrings.from_strings(_corpus(50))
    assert len(store.arrays("text")["text_zdict"]) == 0


def test_concurrent_reads_equal_the_list() -> None:
    strings = _corpus(3_000)
    store = CompressedStrings.from_strings(strings, block_bytes=512)
    rng = np.random.default_rng(2)
    batches = [rng.integers(0, len(strings), 20) for _ in range(200)]
    with ThreadPoolExecutor(8) as pool:
        found = list(pool.map(store.take, batches))
    assert found == [[strings[p] for p in batch] for batch in batches]


@pytest.mark.parametrize("flip", [0x01, 0x80, 0xFF])
def test_every_corrupt_byte_is_a_format_error_naming_the_file(flip: int) -> None:
    """Whichever byte of the compressed blocks is damaged, reading its block raises
    IndexFormatError naming the file and the rebuild: never a crash nor other text."""
    strings = ["alpha beta", "", "γάμμα δέλτα", "epsilon " * 30, "zeta"]
    store = CompressedStrings.from_strings(strings, block_bytes=24)
    arrays = store.arrays("text")
    for byte in range(len(arrays["text_zframes"])):
        damaged = dict(arrays, text_zframes=arrays["text_zframes"].copy())
        damaged["text_zframes"][byte] ^= flip
        reader = CompressedStrings.from_arrays(damaged, len(strings), "text", shown=Path("seg"))
        with pytest.raises(IndexFormatError, match=r"seg/text_zframes\.npy: block \d+ .*rebuild"):
            list(reader)


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("text_zfirst", lambda a: a[::-1].copy()),
        ("text_zframe_offsets", lambda a: a + 1),
        ("text_zraw_offsets", lambda a: a // 8),
        ("text_zdict", lambda a: a.astype(np.int8)),
        ("text_zframes", None),
    ],
)
def test_arrays_that_disagree_are_refused(name: str, change: object) -> None:
    arrays = CompressedStrings.from_strings(["a", "bb", "ccc"], block_bytes=2).arrays("text")
    if change is None:
        del arrays[name]
    else:
        arrays[name] = change(arrays[name])  # type: ignore[operator]
    with pytest.raises(ValueError, match="text_z"):
        CompressedStrings.from_arrays(arrays, 3, "text", shown=Path("seg"))


def test_a_count_the_arrays_do_not_hold_is_refused() -> None:
    arrays = CompressedStrings.from_strings(["a", "bb"]).arrays("text")
    with pytest.raises(ValueError, match="do not hold 3 strings"):
        CompressedStrings.from_arrays(arrays, 3, "text", shown=Path("seg"))


# -- in a live index ---------------------------------------------------------------------------


def _document(i: int) -> dict[str, str]:
    """Document ``i``: Unicode titles and texts; no title, no text, a text longer than a
    block among them."""
    words = ["río", "snow", "风", "Ωmega", "café", "🐟 fish", "moon", "stone"]
    text = " ".join(words[(i * j) % len(words)] for j in range(3 + i % 7))
    if i == 3:
        text = " ".join(f"{words[j % len(words)]}{j}" for j in range(6_000))  # > a block
    title = "" if i % 5 == 0 else f"Título {i} {words[i % len(words)]}"
    return {"_id": f"d{i}", "title": title, "text": "" if i == 7 else text}


def _assert_holds(
    engine: HybridIndex, docs: list[dict[str, str]], stored: list[dict[str, str]]
) -> None:
    """``engine``'s live documents are ``docs``, in order (by ``get``, as hits), and its
    positions hold ``stored`` (``texts``, ``titles``: deleted documents until a merge)."""
    ids = [d["_id"] for d in docs]
    assert [(h.id, h.title, h.text) for h in engine.get(ids)] == [
        (d["_id"], d["title"], d["text"]) for d in docs
    ]
    by_id = {d["_id"]: d for d in docs}
    rows = engine.search(["snow moon", "café", "fish stone", "Título"], 8).hits()
    assert sum(len(row) for row in rows) > 0
    for row in rows:
        assert [(h.title, h.text) for h in row] == [
            (by_id[h.id]["title"], by_id[h.id]["text"]) for h in row
        ]
    assert engine.titles[:] == [d["title"] for d in stored]
    assert engine.texts[:] == [
        f"{d['title']} {d['text']}" if d["title"] else d["text"] for d in stored
    ]


def _segments(path: Path) -> list[dict[str, Any]]:
    return [json.loads(m.read_text()) for m in sorted(path.glob("seg-*/manifest.json"))]


def test_a_live_index_returns_the_texts_it_was_given(tmp_path: Path) -> None:
    """Built, saved, added to, deleted from, merged and reloaded (memory-mapped or not), the
    engine's segments hold compressed texts and give back each document's title and text."""
    docs = [_document(i) for i in range(60)]
    path = tmp_path / "index"
    with HybridIndex.build(docs[:40], retrievers=("bm25",)) as engine:
        engine.save(path)
        engine.add(docs[40:])
        engine.commit()
        engine.delete(["d1", "d45"])
        engine.commit()
        live = [d for d in docs if d["_id"] not in ("d1", "d45")]
        _assert_holds(engine, live, docs)
    for saved in _segments(path):
        assert saved["format_version"] == segment.FORMAT_VERSION == 2
        assert "text_zframes.npy" in saved["files"] and "text_bytes.npy" not in saved["files"]
    for mmap in (False, True):
        with HybridIndex.load(path, mmap=mmap) as engine:
            assert engine.num_segments == 2
            _assert_holds(engine, live, docs)
    with HybridIndex.load(path) as engine:
        engine.merge()
    with HybridIndex.load(path, mmap=True) as engine:
        assert engine.num_segments == 1
        _assert_holds(engine, live, live)


def _flip_a_block_byte(path: Path) -> Path:
    """Flip a byte inside the first compressed block of the index's one segment's texts."""
    (folder,) = path.glob("seg-*")
    file = folder / "text_zframes.npy"
    data = bytearray(file.read_bytes())
    data[-len(np.load(file)) + 8] ^= 0x40
    file.write_bytes(bytes(data))
    return file


def test_a_corrupt_text_file_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "index"
    docs = [_document(i) for i in range(20)]
    HybridIndex.build(docs, retrievers=("bm25",)).save(path)
    file = _flip_a_block_byte(path)
    with pytest.raises(IndexFormatError, match=rf"{re.escape(str(file))} fails .*rebuild"):
        HybridIndex.load(path)
    # Damage that the manifest's checksum does not see (the manifest rewritten with it) is
    # found by the block's own checksum when a hit reads it.
    (manifest_file,) = path.glob("seg-*/manifest.json")
    manifest = json.loads(manifest_file.read_text())
    manifest["files"]["text_zframes.npy"]["sha256"] = hashlib.sha256(file.read_bytes()).hexdigest()
    manifest_file.write_text(json.dumps(manifest))
    for mmap in (False, True):
        with HybridIndex.load(path, mmap=mmap) as engine:
            with pytest.raises(
                IndexFormatError, match=rf"{re.escape(str(file))}: block 0 .*rebuild"
            ):
                engine.get(["d0"])
