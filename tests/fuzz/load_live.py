"""Fuzz ``HybridIndex.load`` on hostile live index directories (``_mutate``): edited commit
points (segment names, counts, deletion masks), segment manifests, document and metadata
arrays and every leg's files, with checksums recomputed. The index has BM25, dense and SPLADE
legs, two segments, metadata and deleted documents.

Contract checked: the load raises ``IndexFormatError`` naming the directory (or another
documented error), or the engine it gives searches (strictly: a failing leg is an error,
not a silent degradation) into well-formed rows, with a filter too.
"""

from __future__ import annotations

import sys

import atheris
from dense_oracle import HashingEncoder
from sparse_oracle import HashingSparseEncoder

from hybrid_engine import HybridIndex
from hybrid_engine.pipeline.result import HybridResult
from tests.fuzz._corpus import corpus
from tests.fuzz._harness import main
from tests.fuzz._loading import edited, load_then_search, saved

ENCODER = HashingEncoder(8)
SPARSE = HashingSparseEncoder(64)


def save(path):  # type: ignore[no-untyped-def]
    docs = [
        {"_id": f"d{i}", "text": t, "metadata": {"year": 2000 + i % 7, "tags": ["a", "b"][: i % 3]}}
        for i, t in enumerate(corpus())
    ]
    engine = HybridIndex.build(
        docs[:30],
        retrievers=("bm25", "dense", "splade"),
        encoder=ENCODER,
        splade_encoder=SPARSE,
        dense_options={"exact_threshold": 8, "m": 4},
        num_threads=1,
    )
    engine.save(path)
    engine.close()
    engine = HybridIndex.load(path, encoder=ENCODER, splade_encoder=SPARSE)
    engine.add(docs[30:])
    engine.delete(["d3", "d31"])
    engine.commit()
    engine.close()


def searched(engine: HybridIndex, spec: dict | None) -> HybridResult:
    """A strict search, its hits read back from the documents."""
    result = engine.search(["running café", "東京"], 5, filter=spec, strict=True)
    result.doc_ids  # noqa: B018
    result.hits()
    return result


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    root = edited(saved("live", save), fdp)
    mmap = fdp.ConsumeBool()
    spec = fdp.PickValueInList([None, {"year": {"$gte": 2003}}, {"tags": "a"}])
    load_then_search(
        root,
        lambda: HybridIndex.load(root, encoder=ENCODER, splade_encoder=SPARSE, mmap=mmap),
        lambda engine: searched(engine, spec),
        lambda engine: len(engine.doc_ids),
    )


if __name__ == "__main__":
    main(one_input, sys.argv)
