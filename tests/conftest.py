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
