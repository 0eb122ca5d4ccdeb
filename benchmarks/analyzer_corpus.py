"""Texts of a language for analyzer benchmarks: words of its Snowball vocabulary drawn with a
Zipf law, so that a corpus has the long tail of distinct words real text has (the work a
language analyzer does per distinct word, not per occurrence).

The vocabulary is the Snowball project's published one (``voc.txt`` of a snowball-data
checkout) when ``SNOWBALL_DATA`` names one, else the sample of it in ``tests/data/snowball``.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np

SAMPLES = Path(__file__).resolve().parents[1] / "tests" / "data" / "snowball"


def vocabulary(language: str) -> list[str]:
    """The language's published words (all of them, or the 2,000 of the test sample)."""
    checkout = os.environ.get("SNOWBALL_DATA")
    if checkout:
        return (Path(checkout) / language / "voc.txt").read_text(encoding="utf-8").split()
    text = gzip.decompress((SAMPLES / f"{language}.tsv.gz").read_bytes()).decode("utf-8")
    return [line.split("\t")[0] for line in text.splitlines()]


def zipf_corpus(language: str, n_docs: int, words_per_doc: int = 60, seed: int = 0) -> list[str]:
    """``n_docs`` texts of ``words_per_doc`` words, each drawn from the vocabulary in a seeded
    random order with probability proportional to ``1 / rank``."""
    rng = np.random.default_rng(seed)
    words = np.array(vocabulary(language), dtype=object)
    rng.shuffle(words)
    weights = 1.0 / np.arange(1, len(words) + 1)
    drawn = rng.choice(len(words), size=(n_docs, words_per_doc), p=weights / weights.sum())
    return [" ".join(words[row]) for row in drawn]
