"""The one place ONNX Runtime sessions are created, with explicit CPU thread settings, and the
base of the models that run in them."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from typing import ClassVar, TypeVar

import numpy as np
import onnxruntime as ort
from tokenizers import Encoding, Tokenizer

from hybrid_engine._threads import default_threads
from hybrid_engine.checks import check_threads
from hybrid_engine.models._batching import length_runs
from hybrid_engine.models.store import TOKENIZER_FILE, ModelInfo, read_model
from hybrid_engine.progress import progress_bar

_Model = TypeVar("_Model", bound="TextModel")


def create_session(path: str | os.PathLike[str], num_threads: int | None) -> ort.InferenceSession:
    """An ONNX Runtime CPU session for the model file at ``path``.

    Parameters
    ----------
    path : path-like
        An ``.onnx`` file.
    num_threads : int, optional
        Intra-op threads (all cores when None). Operators run one after another
        (``inter_op_num_threads=1``): a transformer's graph is a chain, so a second pool would
        only compete for the same cores.

    Notes
    -----
    ``InferenceSession.run`` is thread-safe and releases the GIL.
    """
    options = ort.SessionOptions()
    options.intra_op_num_threads = check_threads(num_threads)
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # warnings about unused initializers are noise to users
    # Idle pool threads sleep instead of spinning: the engine runs several models one after
    # another (bi-encoder, SPLADE, cross-encoder), and a spinning pool of one steals the
    # cores of the next.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # Memory patterns are planned and kept per input shape, and text batches keep coming in
    # new (batch, length) shapes: with them one session grew with every new shape
    # (docs/hardening.md, "Memory under load").
    options.enable_mem_pattern = False
    return ort.InferenceSession(os.fspath(path), options, providers=["CPUExecutionProvider"])


def shrinking_run_options() -> ort.RunOptions:
    """Options for ``InferenceSession.run`` that hand the session's CPU memory arena its unused
    regions back at the end of each run.

    Without them the arena keeps the largest memory it ever held for the session's life, and
    concurrent runs add up: eight threads scoring 512-token pairs at once grew one
    cross-encoder session by ~580 MiB that it kept (docs/hardening.md, "Memory under load").
    The arena allocates again at the next run.
    """
    options = ort.RunOptions()
    options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options


def run_slots(num_threads: int | None) -> threading.BoundedSemaphore:
    """A semaphore admitting as many concurrent runs of a session of ``num_threads`` intra-op
    threads (``create_session``) as the cores keep busy: ``default_threads() // threads``, at
    least 1.

    More runs at once only queue for the same cores inside ONNX Runtime, each holding its
    working memory while it waits: eight threads reranking at once on 2 cores held about
    eight runs' worth (docs/hardening.md, "Memory under load").
    """
    return threading.BoundedSemaphore(max(1, default_threads() // check_threads(num_threads)))


class OnnxModel:
    """What every model of the engine shares: its prepared folder, variant, ONNX Runtime
    session and identity (``Encoder``, ``SpladeEncoder`` and ``CrossEncoder`` extend it).

    Subclasses add their tokenizer; one whose runtime settings change the outputs (the
    cross-encoder's truncation) replaces ``_model_hash`` with ``info.model_hash(variant,
    **settings)``.
    """

    def __init__(self, info: ModelInfo, variant: str, num_threads: int | None) -> None:
        """Private: use the subclass's ``load``."""
        self._info = info
        self._variant = variant
        self._session = create_session(info.variant_file(variant), num_threads)
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._model_hash = info.model_hash(variant)

    @property
    def name(self) -> str:
        """Model name, e.g. ``"all-MiniLM-L6-v2"`` (the manifest's)."""
        return self._info.name

    @property
    def variant(self) -> str:
        """``"fp32"`` or ``"int8"``."""
        return self._variant

    @property
    def model_hash(self) -> str:
        """sha256 identifying what decides the outputs: graph, tokenizer, length, pooling,
        normalisation (and any runtime setting that changes them)."""
        return self._model_hash

    @property
    def info(self) -> ModelInfo:
        """The prepared folder's manifest."""
        return self._info


def load_tokenizer(info: ModelInfo) -> Tokenizer:
    """A prepared model's tokenizer: never padding, truncating at the manifest's
    ``max_length`` (the manifest is the authority on length)."""
    tokenizer = Tokenizer.from_file(str(info.path / TOKENIZER_FILE))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=info.max_length)
    return tokenizer


class TextModel(OnnxModel):
    """A model of single texts (the bi-encoder, the SPLADE encoder): its tokenizer truncates
    each text at the manifest's ``max_length``. Subclasses name their ``kind``."""

    kind: ClassVar[str]
    preferred_variant: ClassVar[str] = "fp32"
    """The variant ``load`` takes when given none and the folder has it (else fp32)."""

    def __init__(self, info: ModelInfo, variant: str, num_threads: int | None) -> None:
        """Private: use ``load``."""
        super().__init__(info, variant, num_threads)
        self._tokenizer = load_tokenizer(info)

    @classmethod
    def load(
        cls: type[_Model],
        path: str | os.PathLike[str] | None = None,
        *,
        variant: str | None = None,
        num_threads: int | None = None,
    ) -> _Model:
        """Load a prepared model folder.

        Parameters
        ----------
        path : path-like, optional
            The folder, or the name of a model prepared into ``store.models_dir()``; the
            default model of this kind (``store.DEFAULT_MODELS``) when None.
        variant : {"fp32", "int8"}, optional
            The full-precision graph, or dynamically quantized int8 weights (faster, slightly
            different outputs: see docs/quantization.md for the measured quality). None: the
            class's ``preferred_variant`` when the folder has it, else fp32.
        num_threads : int, optional
            ONNX Runtime intra-op threads; all cores when None.

        Raises
        ------
        ModelNotFoundError
            No prepared model there, or not that variant; the message names the command that
            prepares it.
        IndexFormatError
            The folder is corrupt (a sha256 mismatch, say), incomplete, or holds another kind
            of model.
        """
        info = read_model(path, kind=cls.kind)
        if variant is None:
            variant = cls.preferred_variant if cls.preferred_variant in info.variants else "fp32"
        return cls(info, variant, num_threads)

    @property
    def max_length(self) -> int:
        """Tokens kept per text, special tokens included."""
        return self._info.max_length

    def _runs(
        self,
        texts: Sequence[str],
        batch_size: int,
        tokens_per_run: int,
        show_progress: bool,
        desc: str,
    ) -> Iterator[tuple[np.ndarray, list[Encoding]]]:
        """Checked ``texts`` tokenized and grouped into model calls: length-sorted runs of at
        most ``batch_size`` texts and ``tokens_per_run`` padded tokens, as (positions,
        encodings), a progress bar (``desc``) counting the texts.

        Raises
        ------
        ValueError
            ``batch_size < 1`` (at once, before any text is tokenized).
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        encodings = self._tokenizer.encode_batch(list(texts)) if texts else []
        lengths = np.fromiter((len(e.ids) for e in encodings), np.int64, len(encodings))

        def runs() -> Iterator[tuple[np.ndarray, list[Encoding]]]:
            with progress_bar(total=len(texts), unit="text", desc=desc, show=show_progress) as bar:
                for positions in length_runs(lengths, batch_size, tokens_per_run):
                    yield positions, [encodings[p] for p in positions]
                    bar.update(len(positions))

        return runs()
