"""Type stubs of the private C++ extension (csrc/bindings.cpp)."""

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

class AnalyzerConfig:
    lowercase: bool
    strip_accents: bool
    stopwords: bool
    stemmer: str
    min_token_length: int
    max_token_length: int
    cjk: str
    def __init__(self) -> None: ...

class Analyzer:
    def __init__(self, config: AnalyzerConfig) -> None: ...
    def analyze(self, text: str) -> list[str]: ...

def stem_english(word: str) -> str: ...

class IndexBuilder:
    def __init__(
        self, config: AnalyzerConfig, num_threads: int, positions: bool = False
    ) -> None: ...
    def add(self, texts: Sequence[str]) -> None: ...
    @property
    def num_documents(self) -> int: ...
    def terms(self) -> list[str]: ...
    def finish(self) -> dict[str, npt.NDArray[np.generic]]: ...
    def finish_mapped(
        self,
        targets: npt.NDArray[np.int32],
        vocab_bytes: npt.NDArray[np.uint8],
        vocab_offsets: npt.NDArray[np.int64],
    ) -> dict[str, npt.NDArray[np.generic]]: ...

class StringTable:
    def __init__(self) -> None: ...
    def __len__(self) -> int: ...
    def insert_arena(
        self, bytes: npt.NDArray[np.uint8], offsets: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64]: ...
    def keys(self) -> list[str]: ...
    def find_arena(
        self, bytes: npt.NDArray[np.uint8], offsets: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64]: ...
    def take(self, ids: npt.NDArray[np.int64]) -> list[str]: ...

def invert_impacts(
    doc_offsets: npt.NDArray[np.int64],
    terms: npt.NDArray[np.int32],
    impacts: npt.NDArray[np.uint8],
    n_terms: int,
) -> dict[str, npt.NDArray[np.generic]]: ...
def vocab_slots(
    vocab_bytes: npt.NDArray[np.uint8], vocab_offsets: npt.NDArray[np.int64]
) -> npt.NDArray[np.uint64]: ...
def check_vocab_slots(
    vocab_bytes: npt.NDArray[np.uint8],
    vocab_offsets: npt.NDArray[np.int64],
    vocab_slots: npt.NDArray[np.uint64],
) -> None: ...

class QueryEncoder:
    def __init__(
        self,
        config: AnalyzerConfig,
        vocab_bytes: npt.NDArray[np.uint8],
        vocab_offsets: npt.NDArray[np.int64],
        vocab_slots: npt.NDArray[np.uint64],
    ) -> None: ...
    def encode(
        self, queries: Sequence[str]
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32], npt.NDArray[np.int64]]: ...
    def term_id(self, term: str) -> int: ...
