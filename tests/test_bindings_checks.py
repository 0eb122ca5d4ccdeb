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


def test_query_encoder_on_a_good_vocabulary() -> None:
    encoder = _core.QueryEncoder(_core.AnalyzerConfig(), VOCAB, _i64(0, 3, 7))
    assert encoder.term_id("cat") == 0 and encoder.term_id("dogs") == 1
    assert encoder.term_id("cats") == -1


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
def test_query_encoder_refuses_bad_offsets(offsets: np.ndarray, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        _core.QueryEncoder(_core.AnalyzerConfig(), VOCAB.copy(), offsets)


def test_query_encoder_refuses_a_repeated_term() -> None:
    vocab = np.frombuffer(b"catcat", np.uint8)
    with pytest.raises(ValueError, match="'cat' twice"):
        _core.QueryEncoder(_core.AnalyzerConfig(), vocab, _i64(0, 3, 6))


@pytest.mark.parametrize(
    ("vocab", "offsets"),
    [
        (VOCAB.astype(np.int8), _i64(0, 3, 7)),
        (VOCAB, _i64(0, 3, 7).astype(np.uint64)),
        (VOCAB, np.repeat(_i64(0, 3, 7), 2)[::2]),  # not contiguous
    ],
)
def test_query_encoder_refuses_other_dtypes_and_layouts(
    vocab: np.ndarray, offsets: np.ndarray
) -> None:
    with pytest.raises(TypeError):
        _core.QueryEncoder(_core.AnalyzerConfig(), vocab, offsets)
