"""Fuzz ``SpladeIndex.load`` on hostile index directories (``_mutate``): edited postings,
ids and manifest entries (the quantization, the counts) with checksums recomputed.

Contract checked: the load raises ``IndexFormatError`` naming the directory (or another
documented error), or the index it gives searches into well-formed rows.
"""

from __future__ import annotations

import sys

import atheris
from sparse_oracle import HashingSparseEncoder

from hybrid_engine import SpladeIndex
from tests.fuzz._corpus import corpus
from tests.fuzz._harness import main
from tests.fuzz._loading import edited, load_then_search, saved

ENCODER = HashingSparseEncoder(64)


def save(path):  # type: ignore[no-untyped-def]
    SpladeIndex.build(corpus(), encoder=ENCODER).save(path)


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    root = edited(saved("splade", save), fdp)
    mmap = fdp.ConsumeBool()
    load_then_search(
        root,
        lambda: SpladeIndex.load(root, encoder=ENCODER, mmap=mmap),
        lambda index: index.search(["running café", "東京 the"], 5),
        lambda index: index.num_documents,
    )


if __name__ == "__main__":
    main(one_input, sys.argv)
