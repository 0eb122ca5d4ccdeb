"""Shared fixtures of the speed benchmarks: data location, corpora, query sets, peer engines.

Every benchmark compares ``hybrid_engine`` against a peer (bm25s, rank_bm25) in the same run, so
the figures worth reading are ratios, not absolute times (see ``benchmarks/README.md``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from bench_common import (
    SCALE_PARTS,
    build_bm25s,
    build_ours,
    doc_text,
    load_scale_texts,
    ratio_rows,
    read_jsonl,
)

_DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def pytest_configure(config: pytest.Config) -> None:
    # The project config runs with --strict-markers: register the markers used here.
    config.addinivalue_line(
        "markers",
        "scale: uses large data, the 253,928-document scale corpus or 200,000 synthetic "
        'vectors (slow to load and index; deselect with -m "not scale")',
    )


# -- data --------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder: ``$HYBRID_ENGINE_DATA``, else ``<repo>/../shared/data``."""
    override = os.environ.get("HYBRID_ENGINE_DATA")
    path = Path(override) if override else _DEFAULT_DATA
    if not path.is_dir():
        pytest.skip(f"shared data folder {path} is absent; set HYBRID_ENGINE_DATA to its location")
    return path


def _require(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is absent from the shared data folder")
    return path


@pytest.fixture(scope="session")
def scifact_texts(shared_data: Path) -> list[str]:
    """The 5,183 SciFact documents as title + " " + text."""
    return [doc_text(d) for d in read_jsonl(_require(shared_data / "beir/scifact/corpus.jsonl"))]


@pytest.fixture(scope="session")
def scifact_queries(shared_data: Path) -> list[str]:
    """All 1,109 SciFact queries (train and test claims) of ``queries.jsonl``."""
    return [q["text"] for q in read_jsonl(_require(shared_data / "beir/scifact/queries.jsonl"))]


@pytest.fixture(scope="session")
def scale_texts(shared_data: Path) -> list[str]:
    """The scale corpus: gcide + wordnet + wikipedia_summaries_en, 253,928 texts in memory."""
    for part in SCALE_PARTS:
        _require(shared_data / "scale" / part / "corpus.jsonl.gz")
    return load_scale_texts(shared_data)


@pytest.fixture(scope="session")
def msmarco_queries(shared_data: Path) -> list[str]:
    """The 6,980 MS MARCO passage dev-small queries (real web queries, no matching corpus)."""
    path = _require(shared_data / "queries/msmarco-passage-dev-small.jsonl")
    return [q["text"] for q in read_jsonl(path)]


# -- engines -----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def parity_analyzer() -> Any:
    """Our analyzer set to produce exactly bm25s's tokens (``\\w\\w+``, en stopwords, Snowball)."""
    from hybrid_engine import AnalyzerConfig

    return AnalyzerConfig(strip_accents=False)


@pytest.fixture(scope="session")
def stemmer() -> Any:
    Stemmer = pytest.importorskip("Stemmer", reason="PyStemmer is needed for the bm25s peer")
    return Stemmer.Stemmer("english")


@pytest.fixture(scope="session")
def bm25s_module() -> Any:
    return pytest.importorskip("bm25s", reason="bm25s is the peer these benchmarks compare with")


@pytest.fixture(scope="session")
def scifact_engines(
    scifact_texts: list[str], parity_analyzer: Any, bm25s_module: Any, stemmer: Any
) -> tuple[Any, Any]:
    """(our index, bm25s retriever) over SciFact."""
    return build_ours(scifact_texts, parity_analyzer), build_bm25s(
        bm25s_module, scifact_texts, stemmer
    )


@pytest.fixture(scope="session")
def scale_engines(
    scale_texts: list[str], parity_analyzer: Any, bm25s_module: Any, stemmer: Any
) -> tuple[Any, Any]:
    """(our index, bm25s retriever) over the scale corpus."""
    return build_ours(scale_texts, parity_analyzer), build_bm25s(bm25s_module, scale_texts, stemmer)


# -- summary ----------------------------------------------------------------------------------


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print every ratio of this run (nothing under ``--benchmark-disable``)."""
    rows = ratio_rows()
    if not rows:
        return
    tr = terminalreporter
    tr.section("ratios: median time of a side / median time of the reference side")
    for group, side, side_s, ref, ref_s in rows:
        tr.write_line(
            f"{group:<36} {side:>10} {side_s * 1e3:10.1f} ms / {ref:<10} {ref_s * 1e3:10.1f} ms"
            f" = {side_s / ref_s:6.2f}"
        )
