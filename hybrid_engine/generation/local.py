"""``LocalGenerator``: a GGUF causal language model run by llama.cpp (``llama-cpp-python``) on
the CPU, as a ``generate(prompt) -> str`` callable."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, redirect_stderr
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybrid_engine.generation.repetition import cut_repetition
from hybrid_engine.generation.weights import INSTALL_HINT, weights_path


@dataclass(frozen=True)
class GenerationStats:
    """What a generator has done since it was loaded (a snapshot).

    Attributes
    ----------
    calls : int
        Completed ``generate`` calls.
    prompt_tokens : int
        Prompt tokens processed, the BOS token included.
    generated_tokens : int
        Tokens sampled (before any stop sequence or repetition cut trims the text).
    seconds : float
        Wall time inside the model, waiting for the lock excluded.
    """

    calls: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    seconds: float = 0.0

    def add(self, prompt_tokens: int, generated_tokens: int, seconds: float) -> GenerationStats:
        """These figures with one more call's added."""
        return GenerationStats(
            self.calls + 1,
            self.prompt_tokens + prompt_tokens,
            self.generated_tokens + generated_tokens,
            self.seconds + seconds,
        )


@contextmanager
def _quiet_stderr() -> Iterator[None]:
    """``sys.stderr`` and file descriptor 2 sent to /dev/null: llama.cpp logs a few lines even
    with ``verbose=False`` (the KV cache notice of context set-up)."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            with redirect_stderr(null):
                yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


_PATCH_LOCK = threading.Lock()


def cpu_has_amx() -> bool:
    """Whether this CPU reports Intel AMX tiles (``amx_tile`` in ``/proc/cpuinfo``)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            return any(line.startswith("flags") and " amx_tile" in line for line in info)
    except OSError:
        return False


@contextmanager
def _cpu_buffers_checked(llama_cpp: Any) -> Iterator[None]:
    """Load a model inside without ggml's extra CPU buffer types where the CPU has AMX.

    On a CPU with AMX (here a sandboxed Sapphire Rapids machine), ggml's AMX matrix multiply
    (``ggml_backend_amx_mul_mat``, one of those buffer types) segfaulted in the first decode;
    without them llama.cpp runs its plain CPU kernels. ``Llama`` takes no such option, so the
    default model parameters it starts from are wrapped while it loads. Elsewhere nothing
    changes (the buffer types also repack weights, which is faster there).
    """
    if not cpu_has_amx():
        yield
        return
    low = llama_cpp.llama_cpp
    with _PATCH_LOCK:
        default = low.llama_model_default_params

        def without_extra_buffers() -> Any:
            params = default()
            params.use_extra_bufts = False
            return params

        low.llama_model_default_params = without_extra_buffers
        try:
            yield
        finally:
            low.llama_model_default_params = default


def import_llama() -> Any:
    """The ``llama_cpp`` module, or an ImportError that says how to install it."""
    try:
        import llama_cpp
    except ImportError as error:
        raise ImportError(
            f"local generation needs llama-cpp-python; install it with: {INSTALL_HINT}"
        ) from error
    return llama_cpp


class LocalGenerator:
    """A GGUF model behind ``gen(prompt) -> str``, greedy (deterministic) by default.

    Build with :meth:`load` (or ``load_generator``), never directly. The model continues the
    prompt: a base model such as Gemma 3 270M needs prompts written as the start of the wanted
    text (``"Question: ...\\nPassage:"``), and stop sequences plus a token cap end its output.

    Thread-safety: calls from several threads are serialised by a lock (a llama.cpp context
    is not thread-safe); each call starts from an empty KV cache, so its text does not depend
    on earlier calls.
    """

    def __init__(
        self,
        llama: Any,
        path: Path,
        *,
        max_tokens: int,
        temperature: float,
        seed: int,
        stop: tuple[str, ...],
        cut_repeats: bool,
    ) -> None:
        self._llama = llama
        self._lock = threading.Lock()
        self._stats = GenerationStats()
        self.path = path
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.stop = stop
        self.cut_repeats = cut_repeats

    @classmethod
    def load(
        cls,
        model: str | os.PathLike[str] | None = None,
        *,
        max_tokens: int = 128,
        temperature: float = 0.0,
        seed: int = 0,
        n_ctx: int = 2048,
        num_threads: int | None = None,
        stop: Sequence[str] = ("\n\n",),
        cut_repeats: bool = False,
    ) -> LocalGenerator:
        """Load a GGUF model file.

        Parameters
        ----------
        model : str or path-like, optional
            The ``.gguf`` file; ``None`` for the default model of ``load_generator``
            (Gemma 3 270M Q4_K_M, assembled from its package into the user cache).
        max_tokens : int
            Default cap on generated tokens per call (>= 1).
        temperature : float
            0 for greedy decoding (the same prompt gives the same text); above 0 samples,
            reproducibly for a given ``seed``.
        seed : int
            Sampling seed (>= 0), used on every call.
        n_ctx : int
            Context length in tokens: prompt plus generated text.
        num_threads : int, optional
            CPU threads; ``None`` for all the cores this process may use.
        stop : sequence of str
            Default stop sequences: the text ends before the first one, which is not returned.
        cut_repeats : bool
            Cut each output before its first repeated sentence (``cut_repetition``).

        Returns
        -------
        LocalGenerator

        Raises
        ------
        ImportError
            llama-cpp-python (or the default model's package) is not installed.
        FileNotFoundError
            ``model`` does not exist.
        ValueError
            An option is out of range.
        """
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        if seed < 0:
            raise ValueError(f"seed must be >= 0, got {seed}")
        if n_ctx < 2:
            raise ValueError(f"n_ctx must be >= 2, got {n_ctx}")
        if num_threads is not None and num_threads < 1:
            raise ValueError(f"num_threads must be >= 1 or None, got {num_threads}")
        llama_cpp = import_llama()
        if model is None:
            path = weights_path()
        else:
            path = Path(model)
        if not path.is_file():
            raise FileNotFoundError(f"no GGUF model file at {path}")
        threads = num_threads or len(os.sched_getaffinity(0))
        with _quiet_stderr(), _cpu_buffers_checked(llama_cpp):
            llama = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=threads,
                n_threads_batch=threads,
                seed=seed,
                verbose=False,
            )
        return cls(
            llama,
            path,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            stop=tuple(stop),
            cut_repeats=cut_repeats,
        )

    @property
    def n_ctx(self) -> int:
        """Context length in tokens."""
        return int(self._llama.n_ctx())

    @property
    def stats(self) -> GenerationStats:
        """Calls, tokens and model time so far (a snapshot)."""
        with self._lock:
            return self._stats

    def tokenize(self, text: str, *, add_bos: bool = True) -> list[int]:
        """Token ids of ``text`` under the model's tokenizer (with its BOS token first unless
        ``add_bos=False``)."""
        return list(self._llama.tokenize(text.encode("utf-8"), add_bos=add_bos))

    def __call__(self, prompt: str) -> str:
        """``generate(prompt)`` with the defaults set at load."""
        return self.generate(prompt)

    def generate(
        self, prompt: str, *, max_tokens: int | None = None, stop: Sequence[str] | None = None
    ) -> str:
        """The model's continuation of ``prompt``.

        Parameters
        ----------
        prompt : str
            Text to continue; the model's BOS token is put in front.
        max_tokens : int, optional
            Cap on generated tokens (>= 1); ``None`` for the load-time default. Lowered to the
            room the prompt leaves in the context.
        stop : sequence of str, optional
            Stop sequences; ``None`` for the load-time ones, ``()`` for none.

        Returns
        -------
        str
            The continuation, without the stop sequence that ended it.

        Raises
        ------
        ValueError
            The prompt leaves no room in the context for a generated token (the message gives
            both lengths), or ``max_tokens`` < 1.
        """
        cap = self.max_tokens if max_tokens is None else max_tokens
        if cap < 1:
            raise ValueError(f"max_tokens must be >= 1, got {cap}")
        tokens = self.tokenize(prompt)
        room = self.n_ctx - len(tokens)
        if room < 1:
            raise ValueError(
                f"the prompt is {len(tokens)} tokens but the context holds {self.n_ctx} "
                "(prompt and generated text together): shorten the prompt or load the "
                "generator with a larger n_ctx"
            )
        stops = list(self.stop if stop is None else stop)
        with self._lock:
            start = time.perf_counter()
            self._llama.reset()
            out = self._llama.create_completion(
                tokens,
                max_tokens=min(cap, room),
                temperature=self.temperature,
                stop=stops,
                seed=self.seed,
            )
            seconds = time.perf_counter() - start
            usage = out["usage"]
            self._stats = self._stats.add(
                usage["prompt_tokens"], usage["completion_tokens"], seconds
            )
        text: str = out["choices"][0]["text"]
        return cut_repetition(text) if self.cut_repeats else text
