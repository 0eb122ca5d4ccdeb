"""Load time and tokens/s of the local generator (llama.cpp) at 1 and 2 threads.

Usage: PYTHONPATH=. python benchmarks/reports/generator_speed.py [--threads 1 2]

Prompt processing: a ~400-token prompt with one generated token. Generation: 64 tokens with no
stop sequence, minus the prompt's share (a short prompt). Median of 3 runs each.
"""

from __future__ import annotations

import argparse
import statistics
import time

from hybrid_engine.generation import LocalGenerator, weights_path

PROMPT = "Question: what does the inverted index of a search engine store?\nPassage:"
LONG = " ".join(["The index maps each term to the documents that contain it."] * 34)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    path = weights_path()
    for threads in args.threads:
        start = time.perf_counter()
        gen = LocalGenerator.load(path, num_threads=threads)
        load = time.perf_counter() - start
        long_tokens = len(gen.tokenize(LONG))
        pp, tg = [], []
        for _ in range(3):
            start = time.perf_counter()
            gen.generate(LONG, max_tokens=1, stop=())
            pp.append(long_tokens / (time.perf_counter() - start))
            before = gen.stats
            gen.generate(PROMPT, max_tokens=64, stop=())
            after = gen.stats
            tg.append(
                (after.generated_tokens - before.generated_tokens)
                / (after.seconds - before.seconds)
            )
        print(
            f"threads={threads} load={load:.2f}s prompt={statistics.median(pp):.0f} tok/s "
            f"({long_tokens} tokens) generate={statistics.median(tg):.1f} tok/s (64 tokens)"
        )


if __name__ == "__main__":
    main()
