"""Shared pytest fixtures."""

import os
from pathlib import Path

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
    from hybrid_engine.model_store import PREPARE_COMMAND, default_model_path

    path = default_model_path()
    if not (path / "manifest.json").is_file():
        message = f"no prepared model at {path}; run `{PREPARE_COMMAND}`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def encoder(model_path: Path):  # type: ignore[no-untyped-def]
    """The default fp32 ``Encoder``, loaded once per session."""
    from hybrid_engine.encoder import Encoder

    return Encoder.load(model_path)


@pytest.fixture(scope="session")
def splade_path() -> Path:
    """The prepared SPLADE model folder (``hybrid-engine models prepare``).

    Absent: the test fails under CI (whose set-up prepares it) and skips, with the command to
    run, elsewhere.
    """
    from hybrid_engine.model_store import PREPARE_COMMAND, SPLADE_MODEL, default_model_path

    path = default_model_path(SPLADE_MODEL)
    if not (path / "manifest.json").is_file():
        message = f"no prepared SPLADE model at {path}; run `{PREPARE_COMMAND}`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def splade_encoder(splade_path: Path):  # type: ignore[no-untyped-def]
    """The default fp32 ``SpladeEncoder``, loaded once per session."""
    from hybrid_engine.splade_encoder import SpladeEncoder

    return SpladeEncoder.load(splade_path)
