"""Strings compressed in blocks with zstandard, read back one block per access: the texts and
titles a segment stores.

Strings are cut, in order, into blocks of about ``BLOCK_BYTES`` of UTF-8; each block is one
zstandard frame (with its content size and checksum) holding the block's string lengths
(uint32, little-endian) and then their bytes. Reading string ``i`` decompresses its block
only; a few decompressed blocks are kept (``CACHED_BLOCKS``). A zstandard dictionary trained
on a sample of the strings is used when, measured on a sample of the blocks, it saves more
bytes than it costs (16% of the compressed texts of the 253,928 scale documents, 24% of
SciFact's; ``benchmarks/reports/text_compression_report.py``).

Saved as five arrays (``arrays``), which may be memory-mapped::

    <prefix>_zframes          uint8, the compressed blocks one after another
    <prefix>_zframe_offsets   int64 (blocks + 1), where each block's frame starts
    <prefix>_zfirst           int64 (blocks + 1), the first string of each block; last: count
    <prefix>_zraw_offsets     int64 (blocks + 1), the blocks' decompressed sizes, cumulated
    <prefix>_zdict            uint8, the dictionary (empty: none)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from itertools import pairwise
from pathlib import Path

import numpy as np
import zstandard

from hybrid_engine.errors import IndexFormatError
from hybrid_engine.packed import StringSequence
from hybrid_engine.storage import delimits

BLOCK_BYTES = 1 << 13
"""A block closes once it holds this many bytes of strings (a longer string is a block of its
own). 8 KiB: on the scale documents texts and titles take 82.6 bytes per document (16 KiB:
80.5, 4 KiB: 85.7) and ten hits' texts and titles read in 0.6 ms (16 KiB: 0.9, 4 KiB: 0.4)."""
LEVEL = 9
"""zstandard's level: on the scale texts in 16 KiB blocks, 3 gives 2.7x at 140 MB/s, 9 gives
3.0x at 30 MB/s; decompression runs at the same speed whatever the level."""
DICTIONARY_BYTES = 112_640
"""The size of a trained dictionary (zstandard's default, 110 KiB)."""
SAMPLE_STRINGS = 20_000
"""Strings a dictionary is trained on (a seeded sample), at most."""
SAMPLE_BLOCKS = 64
"""Blocks compressed with and without the dictionary to decide whether it pays, at most."""
CACHED_BLOCKS = 32
"""Decompressed blocks kept per ``CompressedStrings`` (the most recently read ones, about
256 KiB): a search that reranks reads its hits' texts twice, and a page of hits read again
costs microseconds instead of a decompression per hit."""
_SUFFIXES = ("zframes", "zframe_offsets", "zfirst", "zraw_offsets", "zdict")
_LENGTH = np.dtype("<u4")


class CompressedStrings(StringSequence):
    """Strings by position, compressed in blocks (see the module) and decoded on access.

    Build with ``from_strings``, or from saved arrays with ``from_arrays``. Read-only;
    thread-safe (the cache of decompressed blocks and the idle decompressors are locked).
    """

    def __init__(
        self,
        frames: np.ndarray,
        frame_offsets: np.ndarray,
        first: np.ndarray,
        raw_offsets: np.ndarray,
        dictionary: np.ndarray,
        files: str,
    ) -> None:
        """Private: use ``from_strings`` or ``from_arrays``."""
        self._frames = frames
        self._frame_offsets = frame_offsets
        self._first = first
        self._raw_offsets = raw_offsets
        self._dictionary = dictionary
        self._files = files  # the arrays' path without the suffix, for messages
        self._cache: OrderedDict[int, tuple[np.ndarray, bytes]] = OrderedDict()
        self._lock = threading.Lock()
        self._idle: list[zstandard.ZstdDecompressor] = []

    @classmethod
    def from_strings(
        cls,
        strings: Sequence[str],
        *,
        block_bytes: int = BLOCK_BYTES,
        level: int = LEVEL,
        dictionary: bool = True,
    ) -> CompressedStrings:
        """Compress ``strings`` (each a ``str``; lone surrogates survive, as in
        ``packed.pack_utf8``) in blocks of about ``block_bytes``, at zstandard ``level``;
        with a trained dictionary where it pays, unless ``dictionary`` is False.

        Raises
        ------
        ValueError
            A string of 4 GiB or more of UTF-8 (a block records lengths as uint32).
        """
        lengths = np.fromiter(map(len, _encoded(strings, 0, len(strings))), np.int64, len(strings))
        if len(lengths) and lengths.max() > np.iinfo(_LENGTH).max:
            raise ValueError(
                f"string {int(lengths.argmax())} holds {int(lengths.max())} bytes of UTF-8; "
                "compressed strings hold less than 4 GiB each: split it"
            )
        first = _block_starts(lengths, block_bytes)
        ends = np.concatenate([[0], np.cumsum(lengths)])
        raw_sizes = ends[first[1:]] - ends[first[:-1]] + _LENGTH.itemsize * np.diff(first)
        trained = _dictionary(strings, first, int(raw_sizes.sum()), level) if dictionary else None
        compressor = zstandard.ZstdCompressor(
            level=level, dict_data=trained, write_checksum=True, write_content_size=True
        )
        # A block at a time: the strings' bytes are never all held at once.
        frames = [compressor.compress(_payload(strings, a, b)) for a, b in _pairs(first)]
        return cls(
            np.frombuffer(b"".join(frames), dtype=np.uint8),
            _offsets([len(f) for f in frames]),
            first,
            _offsets(raw_sizes.tolist()),
            np.frombuffer(trained.as_bytes() if trained else b"", dtype=np.uint8),
            "(in memory)",
        )

    @classmethod
    def from_arrays(
        cls, arrays: Mapping[str, np.ndarray], count: int, prefix: str, *, shown: Path
    ) -> CompressedStrings:
        """The strings saved as ``arrays(prefix)``, which must hold ``count`` of them, read
        from directory ``shown`` (which messages name).

        Raises
        ------
        ValueError
            The arrays are missing, of the wrong dtype or shape, or do not describe ``count``
            strings. A block whose bytes are corrupt raises ``IndexFormatError`` when read.
        """
        found = [arrays.get(f"{prefix}_{suffix}") for suffix in _SUFFIXES]
        dtypes = (np.uint8, np.int64, np.int64, np.int64, np.uint8)
        if any(
            a is None or a.dtype != d or a.ndim != 1 for a, d in zip(found, dtypes, strict=True)
        ):
            raise ValueError(f"{prefix}_z*.npy do not hold compressed strings")
        frames, frame_offsets, first, raw_offsets, dictionary = found
        assert frames is not None and frame_offsets is not None and first is not None
        assert raw_offsets is not None and dictionary is not None
        blocks = len(frame_offsets) - 1
        if not (
            delimits(frame_offsets, frames, blocks)
            and len(first) == len(raw_offsets) == blocks + 1
            and first[0] == 0
            and first[-1] == count
            and not np.any(np.diff(first) < (1 if count else 0))
            and raw_offsets[0] == 0
            and not np.any(np.diff(raw_offsets) < _LENGTH.itemsize * np.diff(first))
        ):
            raise ValueError(f"{prefix}_z*.npy do not hold {count} strings")
        return cls(frames, frame_offsets, first, raw_offsets, dictionary, str(shown / prefix))

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """The five arrays to save (see the module), named ``<prefix>_z...``."""
        found = (
            self._frames,
            self._frame_offsets,
            self._first,
            self._raw_offsets,
            self._dictionary,
        )
        return {f"{prefix}_{s}": a for s, a in zip(_SUFFIXES, found, strict=True)}

    @property
    def num_blocks(self) -> int:
        """How many blocks the strings are cut into."""
        return len(self._frame_offsets) - 1

    def __len__(self) -> int:
        return int(self._first[-1])

    def _at(self, index: int) -> str:
        block = int(np.searchsorted(self._first, index, side="right")) - 1
        return self._string(self._block(block), index - int(self._first[block]))

    def _slice(self, positions: slice) -> list[str]:
        return self.take(np.arange(len(self), dtype=np.int64)[positions])

    def take(self, positions: np.ndarray) -> list[str]:
        """The strings at ``positions`` (1-d int, each in ``[0, len(self))``), in that order;
        each block they fall in decompressed once."""
        positions = np.asarray(positions, dtype=np.int64)
        if len(positions) and (positions.min() < 0 or positions.max() >= len(self)):
            raise IndexError(f"positions must lie in [0, {len(self)}) for {len(self)} strings")
        blocks = np.searchsorted(self._first, positions, side="right") - 1
        order = np.argsort(blocks, kind="stable")  # grouped by block: linear in positions
        within = (positions - self._first[blocks]).tolist()
        strings = [""] * len(positions)
        content: tuple[np.ndarray, bytes] | None = None
        read = -1
        for i, block in zip(order.tolist(), blocks[order].tolist(), strict=True):
            if block != read or content is None:
                content, read = self._block(block), block
            strings[i] = self._string(content, within[i])
        return strings

    def __iter__(self) -> Iterator[str]:
        """Every string in order, a block at a time (the blocks read are not cached)."""
        for block in range(self.num_blocks):
            ends, data = self._decompressed(block)
            text = data.decode("utf-8", "surrogatepass")
            if len(text) == len(data):  # ASCII: character and byte positions agree
                yield from (
                    text[a:b] for a, b in zip([0, *ends[:-1].tolist()], ends.tolist(), strict=True)
                )
            else:
                yield from (self._string((ends, data), i) for i in range(len(ends)))

    def _string(self, content: tuple[np.ndarray, bytes], i: int) -> str:
        ends, data = content
        start = int(ends[i - 1]) if i else 0
        return data[start : int(ends[i])].decode("utf-8", "surrogatepass")

    def _block(self, block: int) -> tuple[np.ndarray, bytes]:
        """Block ``block``'s string ends (int64, in its bytes) and bytes, from the cache."""
        with self._lock:
            content = self._cache.get(block)
            if content is not None:
                self._cache.move_to_end(block)
                return content
        content = self._decompressed(block)
        with self._lock:
            self._cache[block] = content
            if len(self._cache) > CACHED_BLOCKS:
                self._cache.popitem(last=False)
        return content

    def _decompressed(self, block: int) -> tuple[np.ndarray, bytes]:
        """Decompress and check block ``block``.

        Raises
        ------
        IndexFormatError
            Its frame is corrupt (zstandard's checksum, sizes that disagree with the index).
        """
        frame = self._frames[self._frame_offsets[block] : self._frame_offsets[block + 1]].data
        size = int(self._raw_offsets[block + 1] - self._raw_offsets[block])
        count = int(self._first[block + 1] - self._first[block])
        try:
            if zstandard.frame_content_size(frame) != size:
                raise zstandard.ZstdError("its size disagrees with the index")
            payload = self._decompress(frame)
        except zstandard.ZstdError as exc:
            raise self._corrupt(block, str(exc)) from None
        lengths = np.frombuffer(payload, dtype=_LENGTH, count=count)
        ends = np.cumsum(lengths, dtype=np.int64)
        data = payload[count * _LENGTH.itemsize :]
        if (int(ends[-1]) if count else 0) != len(data):
            raise self._corrupt(block, "its string lengths disagree with its bytes")
        return ends, data

    def _corrupt(self, block: int, why: str) -> IndexFormatError:
        dictionary = (
            f" (or their dictionary, {self._files}_zdict.npy)" if len(self._dictionary) else ""
        )
        return IndexFormatError(
            f"{self._files}_zframes.npy: block {block} of the compressed strings{dictionary} is "
            f"corrupt ({why}); rebuild the index"
        )

    def _decompress(self, frame: memoryview) -> bytes:
        """``frame`` decompressed by an idle decompressor of this store's (a new one when all
        are busy: zstandard's are not thread-safe). As many exist as threads ever read at
        once, each holding its context and the dictionary, so idle threads cost nothing."""
        with self._lock:
            decompressor = self._idle.pop() if self._idle else None
        if decompressor is None:
            dictionary = None
            if len(self._dictionary):
                dictionary = zstandard.ZstdCompressionDict(self._dictionary.tobytes())
            decompressor = zstandard.ZstdDecompressor(dict_data=dictionary)
        try:
            return decompressor.decompress(frame)
        finally:
            with self._lock:
                self._idle.append(decompressor)


def _offsets(sizes: Sequence[int]) -> np.ndarray:
    """int64 ``len(sizes) + 1``: 0, then the running sums of ``sizes``."""
    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return offsets


def _encoded(strings: Sequence[str], start: int, stop: int) -> list[bytes]:
    """The UTF-8 of ``strings[start:stop]`` (lone surrogates kept, ``surrogatepass``)."""
    return [strings[i].encode("utf-8", "surrogatepass") for i in range(start, stop)]


def _block_starts(lengths: np.ndarray, block_bytes: int) -> np.ndarray:
    """int64: the first string of each block, then the count. A block closes once its strings'
    ``lengths`` (bytes) reach ``block_bytes``, and at the last string."""
    first = [0]
    size = 0
    for i, length in enumerate(lengths.tolist()):
        size += length
        if size >= block_bytes or i == len(lengths) - 1:
            first.append(i + 1)
            size = 0
    return np.asarray(first, dtype=np.int64)


def _pairs(first: np.ndarray) -> list[tuple[int, int]]:
    """Each block's (first string, end) from ``_block_starts``."""
    bounds = first.tolist()
    return list(pairwise(bounds))


def _payload(strings: Sequence[str], start: int, stop: int) -> bytes:
    """What a block of ``strings[start:stop]`` compresses: their lengths (uint32,
    little-endian), then their UTF-8 bytes."""
    encoded = _encoded(strings, start, stop)
    return np.asarray([len(e) for e in encoded], dtype=_LENGTH).tobytes() + b"".join(encoded)


def _dictionary(
    strings: Sequence[str], first: np.ndarray, raw: int, level: int
) -> zstandard.ZstdCompressionDict | None:
    """A dictionary trained on a seeded sample of ``strings``, when it saves more than its
    own size on their blocks (``first``: ``_block_starts``; ``raw``: their bytes), estimated
    on up to ``SAMPLE_BLOCKS`` of them; None when the strings are too few to train one or it
    does not pay."""
    if raw < 8 * DICTIONARY_BYTES:
        return None
    rng = np.random.default_rng(0)
    picked = rng.choice(len(strings), min(len(strings), SAMPLE_STRINGS), replace=False)
    samples: list[bytes | bytearray | memoryview] = [
        e for i in np.sort(picked).tolist() for e in _encoded(strings, i, i + 1) if e
    ]
    try:
        dictionary = zstandard.train_dictionary(DICTIONARY_BYTES, samples, level=level)
    except zstandard.ZstdError:  # too few or too alike samples
        return None
    pairs = _pairs(first)
    blocks = np.unique(np.linspace(0, len(pairs) - 1, SAMPLE_BLOCKS).astype(np.int64))
    sample = [_payload(strings, *pairs[b]) for b in blocks.tolist()]
    plain = zstandard.ZstdCompressor(level=level)
    trained = zstandard.ZstdCompressor(level=level, dict_data=dictionary)
    saved = sum(len(plain.compress(p)) - len(trained.compress(p)) for p in sample)
    pays = saved * len(pairs) / len(sample) > len(dictionary.as_bytes())
    return dictionary if pays else None
