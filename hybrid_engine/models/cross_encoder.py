"""The cross-encoder: (query, passage) pairs to relevance scores with an ONNX model, no PyTorch."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from tokenizers import Encoding, Tokenizer

from hybrid_engine.checks import check_texts
from hybrid_engine.models._batching import length_runs, pad_encodings
from hybrid_engine.models.heap import release_free_heap
from hybrid_engine.models.session import OnnxModel, run_slots, shrinking_run_options
from hybrid_engine.models.store import (
    CROSS_ENCODER,
    TOKENIZER_FILE,
    ModelInfo,
    read_model,
)

QUERY_MAX_TOKENS = 64
"""Most query tokens in a pair (special tokens not counted), and at most half of the pair's
room; the passage gets the rest."""
TOKENS_PER_RUN = 2048
"""Most tokens (pairs x padded length) in one ONNX Runtime call."""
PAIRS_PER_CHUNK = 64
"""Most pairs tokenized at a time by ``score``, and so most pairs in one ONNX Runtime call.
A pair's encodings take about 50 KB at 512 tokens while they live, and glibc keeps what a
thread frees in that thread's own heap: tokenizing a reranked batch of 1,500 pairs at once
left ~65 MiB in every thread that ever reranked. Chunks of 64 leave ~5 MiB per thread, for
3.7% more padded tokens than one length sort over all pairs (SciFact top 30, 512 tokens;
docs/hardening.md, "Memory under load")."""


PREFIX_CHARS_PER_TOKEN = 12
"""Characters of a passage tokenized per token of room before falling back to all of it
(``CrossEncoder._passage_tokens``): English WordPiece tokens average 4-5 characters."""


class CrossEncoder(OnnxModel):
    """A cross-encoder (one relevance logit per query-passage pair) on ONNX Runtime.

    Load one with ``CrossEncoder.load`` from a folder prepared by
    ``hybrid-engine models prepare-reranker SOURCE``.

    Notes
    -----
    A pair is as the model's tokenizer joins two texts: for BERT ``[CLS] query [SEP] passage
    [SEP]`` (RoBERTa's ``<s> query </s></s> passage </s>``), with BERT's token types 0 for the
    query part and 1
    for the passage part, as the model was trained. Truncation: the query keeps at most its
    first ``query_max_tokens`` tokens (``QUERY_MAX_TOKENS`` = 64, or half of the room left by
    the special tokens when ``max_length`` is below 131), then the passage keeps as many of
    its first tokens as fit in ``max_length`` tokens for the whole pair, special tokens
    included.

    Thread-safe: ``score`` may be called from several threads; the session releases the GIL.
    At most ``cores // num_threads`` of its model calls run at once (``session.run_slots``);
    the others wait for a turn between calls, tokenizing meanwhile.
    """

    def __init__(
        self, info: ModelInfo, variant: str, num_threads: int | None, max_length: int | None
    ) -> None:
        """Private: use ``load``."""
        self._max_length = _check_max_length(max_length, info)
        super().__init__(info, variant, num_threads)
        tokenizer = Tokenizer.from_file(str(info.path / TOKENIZER_FILE))
        # Queries and passages are tokenized alone, truncated here, then joined by the
        # tokenizer's own pair template (post_process).
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tokenizer = tokenizer
        # Reranking runs big batches, often from several threads at once: the arena would keep
        # their summed peak.
        self._run_options = shrinking_run_options()
        self._slots = run_slots(num_threads)
        self._specials = tokenizer.num_special_tokens_to_add(is_pair=True)
        self._query_max_tokens = min(QUERY_MAX_TOKENS, (self._max_length - self._specials) // 2)
        self._model_hash = info.model_hash(
            variant, max_length=self._max_length, query_max_tokens=self._query_max_tokens
        )

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        variant: str | None = None,
        num_threads: int | None = None,
        max_length: int | None = None,
    ) -> CrossEncoder:
        """Load a prepared cross-encoder folder.

        By default a model the engine trained loads as its validation gate scored it (the
        ``variant`` and ``max_length`` of the training record's ``validation``), so that what
        is served is what was validated; give either only to serve another configuration.

        Parameters
        ----------
        path : path-like
            The folder, or the name of a model prepared into ``store.models_dir()``
            (a plain name that is not an existing folder).
        variant : {"fp32", "int8"}, optional
            The full-precision graph, or dynamically quantized int8 weights (faster, slightly
            different scores). None: the validated variant, else ``"fp32"``.
        num_threads : int, optional
            ONNX Runtime intra-op threads; all cores when None.
        max_length : int, optional
            Tokens per pair, special tokens included, at most the model's ``max_length``.
            Shorter pairs are faster: this is the passage truncation. None: the validated
            ``max_length``, else the model's.

        Raises
        ------
        ModelNotFoundError
            No prepared model there, or not that variant; the message names the command that
            prepares it.
        IndexFormatError
            The folder is corrupt (a sha256 mismatch, say), incomplete, or holds a bi-encoder.
        ValueError
            ``max_length`` is not an int between 8 and the model's ``max_length``.
        """
        info = read_model(path, kind=CROSS_ENCODER)
        validated = _validated_configuration(info.manifest)
        return cls(
            info,
            variant if variant is not None else validated.get("variant", "fp32"),
            num_threads,
            max_length if max_length is not None else validated.get("max_length"),
        )

    @property
    def max_length(self) -> int:
        """Tokens kept per pair, special tokens included."""
        return self._max_length

    @property
    def query_max_tokens(self) -> int:
        """Most query tokens kept per pair (special tokens not counted)."""
        return self._query_max_tokens

    @property
    def training(self) -> dict[str, Any] | None:
        """What the engine's trainer recorded (data, settings, validation metrics), or None
        for a model trained elsewhere."""
        training = self._info.manifest.get("training")
        return dict(training) if isinstance(training, dict) else None

    def __repr__(self) -> str:
        return (
            f"CrossEncoder({self.name!r}, variant={self.variant!r}, max_length={self.max_length})"
        )

    def encode_pairs(self, queries: Sequence[str], passages: Sequence[str]) -> list[Encoding]:
        """Token sequences of aligned pairs, truncated as the class notes say.

        Parameters
        ----------
        queries, passages : sequence of str
            Aligned, already checked texts (``score`` checks them).

        Returns
        -------
        list of tokenizers.Encoding
            One per pair: ``ids`` and ``type_ids`` (0 up to the first ``[SEP]``, then 1), at
            most ``max_length`` tokens.
        """
        unique = list(dict.fromkeys(queries))
        query_tokens = dict(
            zip(unique, self._tokenizer.encode_batch(unique, add_special_tokens=False), strict=True)
        )
        for encoding in query_tokens.values():
            encoding.truncate(self._query_max_tokens)
        rooms = [self._max_length - self._specials - len(query_tokens[q].ids) for q in queries]
        passage_tokens = self._passage_tokens(passages, rooms)
        pairs = []
        for query, passage, room in zip(queries, passage_tokens, rooms, strict=True):
            passage.truncate(room)
            pairs.append(
                self._tokenizer.post_process(query_tokens[query], passage, add_special_tokens=True)
            )
        return pairs

    def _passage_tokens(self, passages: Sequence[str], rooms: Sequence[int]) -> list[Encoding]:
        """Tokens of each passage, at least its first ``room`` (all, when it has fewer).

        A long passage is tokenized from a prefix of ``PREFIX_CHARS_PER_TOKEN`` characters per
        token of room, cut at a space: BERT's tokenizer splits words at spaces and tokenizes
        each word alone, so such a prefix's tokens begin the whole passage's tokens. A prefix
        that gives fewer than ``room`` tokens is tokenized again whole, so the result is always
        the whole passage's tokens truncated, without tokenizing long passages to the end
        (25-50 ms for 30 SciFact abstracts, against 130 ms for the int8 model at 64 tokens).
        """
        limits = [room * PREFIX_CHARS_PER_TOKEN for room in rooms]
        cuts = [
            passage.rfind(" ", 0, limit) if len(passage) > limit else -1
            for passage, limit in zip(passages, limits, strict=True)
        ]
        texts = [p[:cut] if cut > 0 else p for p, cut in zip(passages, cuts, strict=True)]
        tokens = self._tokenizer.encode_batch(texts, add_special_tokens=False)
        short = [
            i
            for i, (cut, encoding, room) in enumerate(zip(cuts, tokens, rooms, strict=True))
            if cut > 0 and len(encoding.ids) < room
        ]
        if short:
            whole = self._tokenizer.encode_batch(
                [passages[i] for i in short], add_special_tokens=False
            )
            for i, encoding in zip(short, whole, strict=True):
                tokens[i] = encoding
        return tokens

    def score(
        self, queries: str | Sequence[str] | np.ndarray, passages: Sequence[str] | np.ndarray
    ) -> np.ndarray:
        """Relevance scores of (query, passage) pairs.

        Parameters
        ----------
        queries : str, sequence of str or 1-d numpy array of str
            One query per passage (aligned), or one str paired with every passage. Non-blank.
        passages : sequence of str or 1-d numpy array of str
            Non-blank passages; tokens past the pair's ``max_length`` are dropped.

        Returns
        -------
        numpy.ndarray
            float32, shape ``(len(passages),)``: the model's logit per pair, higher is more
            relevant. Pairs are tokenized ``PAIRS_PER_CHUNK`` at a time, sorted by token
            count within each chunk and run in groups of at most ``TOKENS_PER_RUN`` tokens;
            the output is in input order and does not depend on the grouping. The C heap's
            free memory goes back to the system after each run (``heap.release_free_heap``).

        Raises
        ------
        TypeError
            A query or passage that is not a str.
        ValueError
            A blank query or passage, or ``len(queries) != len(passages)``.
        """
        passage_list = check_texts(passages, "passage")
        if isinstance(queries, str):
            query_list = check_texts([queries] * len(passage_list), "query")
        else:
            query_list = check_texts(queries, "query")
        if len(query_list) != len(passage_list):
            raise ValueError(
                f"got {len(query_list)} queries and {len(passage_list)} passages; score takes "
                "aligned pairs (or one query str for all passages)"
            )
        out = np.empty(len(passage_list), np.float32)
        if not passage_list:
            return out
        for positions, feed in self._feeds(query_list, passage_list):
            with self._slots:  # runs past the cores would only queue, holding their memory
                out[positions] = self._session.run(None, feed, self._run_options)[0][:, 0]
            release_free_heap()  # else this thread's malloc arena keeps the run's peak
        return out

    def _feeds(
        self, queries: Sequence[str], passages: Sequence[str]
    ) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
        """The model calls of aligned, checked pairs, as (positions, ONNX feed), the pairs
        tokenized ``PAIRS_PER_CHUNK`` at a time (``_chunk_feeds``)."""
        for start in range(0, len(passages), PAIRS_PER_CHUNK):
            stop = start + PAIRS_PER_CHUNK
            for positions, feed in self._chunk_feeds(queries[start:stop], passages[start:stop]):
                yield start + positions, feed

    def _chunk_feeds(
        self, queries: Sequence[str], passages: Sequence[str]
    ) -> list[tuple[np.ndarray, dict[str, np.ndarray]]]:
        """The model calls of one chunk of pairs: length-sorted runs of at most
        ``TOKENS_PER_RUN`` padded tokens, as (positions into the chunk, ONNX feed). Eager, so
        the chunk's encodings are freed before the next chunk is tokenized."""
        pairs = self.encode_pairs(queries, passages)
        lengths = np.fromiter((len(e.ids) for e in pairs), np.int64, len(pairs))
        return [
            (positions, pad_encodings([pairs[p] for p in positions], self._inputs))
            for positions in length_runs(lengths, PAIRS_PER_CHUNK, TOKENS_PER_RUN)
        ]


def _validated_configuration(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The ``variant`` and ``max_length`` a prepared model's validation gate scored, from its
    manifest's ``training["validation"]``; empty when the record names none."""
    training = manifest.get("training")
    validation = training.get("validation") if isinstance(training, Mapping) else None
    if not isinstance(validation, Mapping):
        return {}
    return {key: validation[key] for key in ("variant", "max_length") if validation.get(key)}


def _check_max_length(max_length: int | None, info: ModelInfo) -> int:
    if max_length is None:
        return info.max_length
    if (
        isinstance(max_length, bool)
        or not isinstance(max_length, int)
        or not 8 <= max_length <= info.max_length
    ):
        raise ValueError(
            f"max_length must be an int from 8 to the model's {info.max_length}, got {max_length!r}"
        )
    return max_length
