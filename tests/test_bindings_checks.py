"""The compiled core refuses malformed arrays with a ValueError before reading through them.

Each case calls ``hybrid_engine._core`` directly, as a corrupt index file or a caller's bug
would, and expects a message naming the array at fault: never a crash, an out-of-bounds read
(an AddressSanitizer build of the extension reports none) or an absurd allocation.
"""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_engine import _core


def _i64(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


def _i32(*values: int) -> np.ndarray:
    return np.array(values, np.int32)


def _u8(*values: int) -> np.ndarray:
    return np.array(values, np.uint8)


# Two documents over a vocabulary of 3: {0: 5, 2: 7} and {1: 1, 2: 0 (no posting)}.
OFFSETS, TERMS, IMPACTS, N_TERMS = _i64(0, 2, 4), _i32(0, 2, 1, 2), _u8(5, 7, 1, 0), 3


def test_invert_impacts_on_good_input() -> None:
    out = _core.invert_impacts(OFFSETS, TERMS, IMPACTS, N_TERMS)
    assert out["posting_offsets"].tolist() == [0, 1, 2, 3]
    assert out["doc_freqs"].tolist() == [1, 1, 1]
    assert out["doc_ids"].tolist() == [0, 1, 0]
    assert out["impacts"].tolist() == [5, 1, 7]


@pytest.mark.parametrize(
    ("offsets", "match"),
    [
        (_i64(0, 6, 4), "doc_offsets must not decrease: entry 2"),  # doc 0 runs past terms
        (_i64(0, 2**40, 4), "doc_offsets must not decrease: entry 2"),
        (_i64(0, 3, 1, 4), "doc_offsets must not decrease: entry 2"),
        (_i64(0, -1, 4), "doc_offsets must not decrease: entry 1"),
        (_i64(-2, 2, 4), "doc_offsets must start at 0"),
        (_i64(1, 2, 4), "doc_offsets must start at 0"),
        (_i64(0, 2, 3), r"doc_offsets must end at len\(terms\) \(4\)"),
        (_i64(0, 2, 5), r"doc_offsets must end at len\(terms\) \(4\)"),
        (_i64(), "non-empty"),
    ],
)
def test_invert_impacts_refuses_bad_offsets(offsets: np.ndarray, match: str) -> None:
    # Four distinct terms in a large vocabulary: nothing stops a read past them but the offsets.
    terms, impacts = np.arange(4, dtype=np.int32), np.ones(4, np.uint8)
    with pytest.raises(ValueError, match=match):
        _core.invert_impacts(offsets, terms, impacts, 2**16)


@pytest.mark.parametrize("term", [-1, 3, 2**31 - 1, -(2**31)])
def test_invert_impacts_refuses_term_ids_outside_the_vocabulary(term: int) -> None:
    terms = TERMS.copy()
    terms[1] = term
    with pytest.raises(ValueError, match=f"term id {term}, outside the vocabulary"):
        _core.invert_impacts(OFFSETS, terms, IMPACTS, N_TERMS)


@pytest.mark.parametrize(
    ("n_terms", "match"),
    [(-1, "n_terms must be"), (2**31 + 1, "n_terms must be"), (2**40, "n_terms must be")],
)
def test_invert_impacts_refuses_a_bad_vocabulary_size(n_terms: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        _core.invert_impacts(OFFSETS, TERMS, IMPACTS, n_terms)


def test_invert_impacts_refuses_a_repeated_term() -> None:
    with pytest.raises(ValueError, match="repeats term id 0"):
        _core.invert_impacts(_i64(0, 2), _i32(0, 0), _u8(1, 1), 1)


@pytest.mark.parametrize(
    ("offsets", "terms", "impacts", "match"),
    [
        (OFFSETS, TERMS, IMPACTS[:3], "same length"),
        (OFFSETS.reshape(1, 3), TERMS, IMPACTS, "1-d"),
        (OFFSETS, TERMS.reshape(2, 2), IMPACTS.reshape(2, 2), "1-d"),
    ],
)
def test_invert_impacts_refuses_bad_shapes(
    offsets: np.ndarray, terms: np.ndarray, impacts: np.ndarray, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        _core.invert_impacts(offsets, terms, impacts, N_TERMS)


@pytest.mark.parametrize(
    ("offsets", "terms"),
    [
        (OFFSETS.astype(np.int32), TERMS),
        (OFFSETS, TERMS.astype(np.int64)),
        (np.repeat(OFFSETS, 2)[::2], TERMS),  # not contiguous
    ],
)
def test_invert_impacts_refuses_other_dtypes_and_layouts(
    offsets: np.ndarray, terms: np.ndarray
) -> None:
    with pytest.raises(TypeError):
        _core.invert_impacts(offsets, terms, IMPACTS, N_TERMS)


VOCAB = np.frombuffer(b"catdogs", np.uint8)  # "cat", "dogs"
VOCAB_OFFSETS = _i64(0, 3, 7)


def _encoder(
    offsets: np.ndarray = VOCAB_OFFSETS, slots: np.ndarray | None = None
) -> _core.QueryEncoder:
    """An encoder of ``VOCAB`` cut by ``offsets``, its table ``slots`` (the built one if None)."""
    if slots is None:
        slots = _core.vocab_slots(VOCAB, offsets)
    return _core.QueryEncoder(_core.AnalyzerConfig(), VOCAB, offsets, slots)


def test_query_encoder_on_a_good_vocabulary() -> None:
    encoder = _encoder()
    assert encoder.term_id("cat") == 0 and encoder.term_id("dogs") == 1
    assert encoder.term_id("cats") == -1


def test_the_built_table_passes_its_check() -> None:
    _core.check_vocab_slots(VOCAB, _i64(0, 3, 7), _core.vocab_slots(VOCAB, _i64(0, 3, 7)))


@pytest.mark.parametrize(
    ("offsets", "match"),
    [
        (_i64(0, 9, 7), "vocab_offsets must not decrease: entry 2"),  # "cat" runs past the end
        (_i64(0, 2**40, 7), "vocab_offsets must not decrease: entry 2"),
        (_i64(0, 5, 3, 7), "vocab_offsets must not decrease: entry 2"),
        (_i64(0, -3, 7), "vocab_offsets must not decrease: entry 1"),
        (_i64(-1, 3, 7), "vocab_offsets must start at 0"),
        (_i64(3, 7), "vocab_offsets must start at 0"),
        (_i64(0, 3, 6), r"vocab_offsets must end at len\(vocab_bytes\) \(7\)"),
        (_i64(0, 3, 8), r"vocab_offsets must end at len\(vocab_bytes\) \(7\)"),
        (_i64(), "non-empty"),
        (_i64(0, 3, 7).reshape(1, 3), "1-d"),
    ],
)
def test_vocabulary_table_refuses_bad_offsets(offsets: np.ndarray, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        _core.vocab_slots(VOCAB.copy(), offsets)
    slots = _core.vocab_slots(VOCAB, _i64(0, 3, 7))
    if offsets.ndim == 1 and len(offsets) == 3:  # the check of a saved table finds them too
        with pytest.raises(ValueError, match=match):
            _core.check_vocab_slots(VOCAB.copy(), offsets, slots)


@pytest.mark.parametrize(
    "offsets", [_i64(0, 9, 7), _i64(0, 2**40, 7), _i64(0, -3, 7), _i64(-1, 3, 7), _i64(0, 3, 8)]
)
def test_query_encoder_over_bad_offsets_finds_nothing_there(offsets: np.ndarray) -> None:
    """Unchecked offsets (a load without verify) never read outside the arena."""
    encoder = _encoder(offsets, _core.vocab_slots(VOCAB, _i64(0, 3, 7)))
    for term in ("cat", "dogs", "catdogs", ""):
        assert encoder.term_id(term) in (-1, 0, 1)


def test_vocabulary_table_refuses_a_repeated_term() -> None:
    vocab = np.frombuffer(b"catcat", np.uint8)
    with pytest.raises(ValueError, match="'cat' twice"):
        _core.vocab_slots(vocab, _i64(0, 3, 6))
    slots = _core.vocab_slots(np.frombuffer(b"catdog", np.uint8), _i64(0, 3, 6))
    with pytest.raises(ValueError, match="vocabulary holds term 1 twice"):
        _core.check_vocab_slots(vocab, _i64(0, 3, 6), slots)


def _slots_with(entries: dict[int, int], size: int = 16) -> np.ndarray:
    slots = np.zeros(size, np.uint64)
    for slot, entry in entries.items():
        slots[slot] = entry
    return slots


@pytest.mark.parametrize(
    ("slots", "match"),
    [
        (np.zeros(12, np.uint64), "power of two >= 2 of slots, got 12"),
        (np.zeros(1, np.uint64), "power of two >= 2 of slots, got 1"),
        (np.zeros(0, np.uint64), "power of two >= 2 of slots, got 0"),
        (np.zeros(2, np.uint64), "2 slots for 2 terms"),  # more than half full
        (np.zeros((2, 8), np.uint64), "vocab_slots must be 1-d"),
    ],
)
def test_query_encoder_refuses_a_bad_table_size(slots: np.ndarray, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        _encoder(slots=slots)
    with pytest.raises(ValueError, match=match):
        _core.check_vocab_slots(VOCAB, _i64(0, 3, 7), slots)


def _hostile_tables() -> list[np.ndarray]:
    built = _core.vocab_slots(VOCAB, _i64(0, 3, 7))
    full = np.arange(1, 17, dtype=np.uint64) << np.uint64(32) | np.uint64(1)  # wrong tags
    return [
        np.zeros(16, np.uint64),  # empty: no term is found
        full,  # no empty slot: probes must stop
        np.full(16, 0xFFFFFFFFFFFFFFFF, np.uint64),  # ids past n, in every slot
        np.full(16, 0xFFFFFFFF00000000, np.uint64),  # id + 1 == 0 with a tag: not empty
        (built & np.uint64(0xFFFFFFFF00000000)) | np.uint64(3),  # the right tags, id 2 of 2
        np.concatenate([built, built]),  # twice the size: keys not at their home slots
    ]


@pytest.mark.parametrize("index", range(6))
def test_a_hostile_table_finds_no_term_and_fails_its_check(index: int) -> None:
    slots = _hostile_tables()[index]
    encoder = _encoder(slots=slots)
    for term in ("cat", "dogs", "bird", ""):
        assert encoder.term_id(term) in (-1, 0, 1)
    terms, _, row_offsets = encoder.encode(["cat dogs bird", ""])
    assert len(row_offsets) == 3 and set(terms.tolist()) <= {0, 1}
    with pytest.raises(ValueError, match="vocab"):
        _core.check_vocab_slots(VOCAB, _i64(0, 3, 7), slots)


def test_a_table_holding_a_term_twice_fails_its_check() -> None:
    built = _core.vocab_slots(VOCAB, _i64(0, 3, 7))
    entry = built[built != 0][0]
    spare = int(np.flatnonzero(built == 0)[0])
    built[spare] = entry
    with pytest.raises(ValueError, match=r"vocab_slots holds term \d twice"):
        _core.check_vocab_slots(VOCAB, _i64(0, 3, 7), built)


def test_query_encoder_keeps_its_arrays_alive() -> None:
    vocab, offsets = VOCAB.copy(), _i64(0, 3, 7)
    encoder = _core.QueryEncoder(
        _core.AnalyzerConfig(), vocab, offsets, _core.vocab_slots(vocab, offsets)
    )
    del vocab, offsets
    assert encoder.term_id("dogs") == 1


@pytest.mark.parametrize(
    ("vocab", "offsets", "slots"),
    [
        (VOCAB.astype(np.int8), _i64(0, 3, 7), np.zeros(16, np.uint64)),
        (VOCAB, _i64(0, 3, 7).astype(np.uint64), np.zeros(16, np.uint64)),
        (VOCAB, np.repeat(_i64(0, 3, 7), 2)[::2], np.zeros(16, np.uint64)),  # not contiguous
        (VOCAB, _i64(0, 3, 7), np.zeros(16, np.int64)),
        (VOCAB, _i64(0, 3, 7), np.zeros(32, np.uint64)[::2]),
    ],
)
def test_query_encoder_refuses_other_dtypes_and_layouts(
    vocab: np.ndarray, offsets: np.ndarray, slots: np.ndarray
) -> None:
    with pytest.raises(TypeError):
        _core.QueryEncoder(_core.AnalyzerConfig(), vocab, offsets, slots)
    with pytest.raises(TypeError):
        _core.check_vocab_slots(vocab, offsets, slots)
