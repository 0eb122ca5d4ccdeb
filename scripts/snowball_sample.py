"""A seeded sample of the Snowball project's published test vocabularies, for the stemmer
oracle test (tests/test_languages.py).

snowball-data (https://github.com/snowballstem/snowball-data) publishes, per stemmer, a
vocabulary (``voc.txt``) and the reference stem of each word (``output.txt``). This writes
``SAMPLE`` word/stem pairs of each (all of a shorter list), drawn with a fixed seed, to
``tests/data/snowball/<stemmer>.tsv.gz`` (``word<TAB>stem`` per line, gzip), so that the test runs
without the 43 MB repository:

    git clone https://github.com/snowballstem/snowball-data /tmp/snowball-data
    python scripts/snowball_sample.py /tmp/snowball-data
"""

from __future__ import annotations

import argparse
import gzip
import random
from pathlib import Path

SAMPLE = 2000
SEED = 0
OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "snowball"


def read_lines(folder: Path, name: str) -> list[str] | None:
    """The lines of ``name`` (or ``name.gz``) in ``folder``, None when neither is there."""
    plain, packed = folder / name, folder / f"{name}.gz"
    if plain.is_file():
        return plain.read_text(encoding="utf-8").splitlines()
    if packed.is_file():
        return gzip.decompress(packed.read_bytes()).decode("utf-8").splitlines()
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snowball_data", type=Path, help="a checkout of snowball-data")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    import Stemmer

    for stemmer in sorted(Stemmer.algorithms()):
        folder = args.snowball_data / stemmer
        words, stems = read_lines(folder, "voc.txt"), read_lines(folder, "output.txt")
        if words is None or stems is None or len(words) != len(stems):
            print(f"{stemmer}: no vocabulary with its output")
            continue
        pairs = sorted(random.Random(f"{SEED}-{stemmer}").sample(
            list(zip(words, stems, strict=True)), min(SAMPLE, len(words))))  # fmt: skip
        text = "".join(f"{word}\t{stem}\n" for word, stem in pairs)
        packed = gzip.compress(text.encode("utf-8"), mtime=0)
        (OUT / f"{stemmer}.tsv.gz").write_bytes(packed)
        print(f"{stemmer}: {len(pairs)} of {len(words)}")


if __name__ == "__main__":
    main()
