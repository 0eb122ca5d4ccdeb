"""The small multilingual corpus the search harnesses index, and the words their queries mix
with fuzzed text so that queries hit documents."""

from __future__ import annotations

import numpy as np

WORDS = (
    "the a of retrieval index indexes indexing running runs ran café CAFÉ naïve über straße "
    "東京 日本語 中文 한국어 カタカナ ひらがな é e ε ελληνικά кошка x y z 0 42 3.14 _ snake_case "
    "😀 emoji don't it's \uff21\uff42\uff43 \ufb01ne İstanbul ǅ ß σς"
).split()
"""Words of several scripts, cases and widths (and a few stopwords)."""


def corpus(n_docs: int = 48, seed: int = 0) -> list[str]:
    """``n_docs`` documents of 1 to 12 words from ``WORDS`` (fixed seed); the first repeats a
    word, the last is one word."""
    rng = np.random.default_rng(seed)
    docs = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 13)))) for _ in range(n_docs)]
    docs[0] = "running running runs the café"
    docs[-1] = "東京"
    return docs
