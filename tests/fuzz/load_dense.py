"""Fuzz ``DenseIndex.load`` on hostile index directories (``_mutate``): edited vectors, ids,
manifest entries and HNSW graph bytes with checksums recomputed, with and without ``mmap``.

Contract checked: the load raises ``IndexFormatError`` naming the directory (or another
documented error), or the index it gives searches (graph and exact) into well-formed rows.
"""

from __future__ import annotations

import sys

import atheris
from dense_oracle import HashingEncoder

from hybrid_engine import DenseIndex
from tests.fuzz._corpus import corpus
from tests.fuzz._harness import main
from tests.fuzz._loading import edited, load_then_search, saved

ENCODER = HashingEncoder(8)


def save(path):  # type: ignore[no-untyped-def]
    docs = corpus()
    DenseIndex.build(
        [{"_id": f"d{i}", "text": t} for i, t in enumerate(docs)],
        encoder=ENCODER,
        exact_threshold=8,
        m=4,
        num_threads=1,
    ).save(path)


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    root = edited(saved("dense", save), fdp)
    mmap, exact = fdp.ConsumeBool(), fdp.ConsumeBool()
    load_then_search(
        root,
        lambda: DenseIndex.load(root, encoder=ENCODER, mmap=mmap),
        lambda index: index.search(["running café", "東京"], 5, exact=exact),
        lambda index: index.num_documents,
    )


if __name__ == "__main__":
    main(one_input, sys.argv)
