"""Fuzz ``BM25Index.load`` on hostile index directories (``_mutate``): edited arrays and
manifest entries with checksums recomputed, with and without ``mmap``, ``verify`` and the
impact cache.

Contract checked: the load raises ``IndexFormatError`` naming the directory (or another
documented error), or the index it gives searches into well-formed rows.
"""

from __future__ import annotations

import sys

import atheris

from hybrid_engine import BM25Index
from tests.fuzz._corpus import corpus
from tests.fuzz._harness import main
from tests.fuzz._loading import edited, load_then_search, saved

QUERIES = ["running café", "東京 the", "naïve retrieval x", ""]


def save(path):  # type: ignore[no-untyped-def]
    docs = corpus()
    ids = [f"d{i}" for i in range(len(docs))]
    BM25Index.build([{"_id": i, "text": t} for i, t in zip(ids, docs)], num_threads=1).save(path)


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    root = edited(saved("bm25", save), fdp)
    mmap, verify = fdp.ConsumeBool(), fdp.ConsumeBool()
    cache = fdp.PickValueInList([None, True, False])
    load_then_search(
        root,
        lambda: BM25Index.load(root, mmap=mmap, verify=verify, cache_impacts=cache),
        lambda index: index.search(QUERIES, 7),
        lambda index: index.num_documents,
    )


if __name__ == "__main__":
    main(one_input, sys.argv)
