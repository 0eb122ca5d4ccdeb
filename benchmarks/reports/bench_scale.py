"""Build time, query throughput and peak memory of hybrid_engine and bm25s on synthetic corpora
of millions of documents.

Corpus generator (seeded, identical on every run and in every process for the same options)
------------------------------------------------------------------------------------------------
* Vocabulary: ``--vocab`` synthetic words (default 1,000,000) made of consonant-vowel syllables
  over consonants ``bdfghjkmprtvz`` and vowels ``aou``. Shorter words get the more frequent ranks
  (all 1-syllable words, then 2, 3, 4; shuffled within a length by the seeded generator). Words
  are kept only when both analyzers leave them unchanged: not one of Lucene's 33 English
  stopwords and a fixed point of the Snowball English stemmer (checked with PyStemmer and with
  our analyzer), so every generated token is one index term on both sides and the term
  statistics are exactly the generated ones.
* Term ranks: Zipf-Mandelbrot, ``p(r) ∝ (r + q)^-s`` for ranks ``r = 1..V``, with ``s = 1.1``
  (``--zipf``; the scale corpus's document frequencies fall with slope -1.17 over ranks
  100-10,000) and ``q = 33`` (``--zipf-offset``): the head of a natural-language Zipf curve
  with its 33 stopwords removed, as both analyzers do. The most frequent term then fills 0.5% of
  the tokens and appears in about 17% of the documents. Sampled by inverse CDF (searchsorted on
  the cumulative probabilities) from ``numpy.random.default_rng(seed)``.
* Document lengths (tokens): log-normal with the shape fitted to the analysed scale corpus
  (253,928 real documents: sigma of log length 0.80), its location shifted so the mean is
  ``--mean-length`` (default 40 tokens; the scale corpus's own mean is 23); at least 1.
* Queries: ``--queries`` of them (default 1,000), each of 3-8 terms (uniform), ranks from the
  same Zipf-Mandelbrot law truncated to the top ``--query-top`` ranks (default 50,000).

Measurements (each side in its own subprocess, so that memory of one never counts for the other)
------------------------------------------------------------------------------------------------
Each worker generates the corpus and the queries, then (peak = ``VmHWM`` of /proc/self/status,
reset to the current RSS through /proc/self/clear_refs right before each phase):

* ``build_s`` and ``build_docs_per_s``: build from the texts in memory, analysis included
  (ours: ``BM25Index.build`` with the bm25s-parity analyzer and all cores, or one thread with
  ``--ours-threads 1``; bm25s: ``bm25s.tokenize`` with stopwords "en" + PyStemmer english, then
  ``BM25(backend="numba").index``, single-threaded). Numba compilation is warmed up first on
  1,000 documents, outside the timing.
* ``build_peak_mib``: peak RSS during the build minus the RSS just before it (texts already in
  memory, so the texts are not counted).
* ``index_mib``: RSS after the build (temporaries dropped, ``gc.collect``) minus RSS before it:
  what keeping the built index in memory costs.
* ``query_k{k}_s`` / ``query_k{k}_qps``: one call with all queries as text, one thread
  (ours: ``search(queries, k, num_threads=1)``; bm25s: ``tokenize`` + ``retrieve(n_threads=1)``),
  after a warm-up call on 20 queries; median of ``--query-rounds`` calls.
* ``query_k{k}_peak_mib``: peak RSS during those calls minus the RSS before them.
* ``baseline_mib``: RSS after generation (interpreter, libraries, corpus texts and queries).

The parent prints a table and writes all figures, the options and the generator's statistics to
``--out`` (JSON). A side that fails or runs out of time is reported with its error, not dropped.

Example::

    PYTHONPATH=. python benchmarks/reports/bench_scale.py --n-docs 1000000 5000000 \\
        --out runs/scale.json
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

CONSONANTS = "bdfghjkmprtvz"
VOWELS = "aou"
LOG_LENGTH_SIGMA = 0.804  # fitted: std of log(analysed length) over the 253,928 scale documents
K_VALUES = (10, 1000)
CHUNK_DOCS = 250_000


# -- generator ---------------------------------------------------------------------------------


def _syllable_words(rng: np.random.Generator, count: int) -> list[str]:
    """``count`` candidate words, shortest first, shuffled within each length."""
    syllables = [c + v for c in CONSONANTS for v in VOWELS]
    words: list[str] = []
    level = [""]
    while len(words) < count:
        level = [w + s for w in level for s in syllables]
        shuffled = [level[i] for i in rng.permutation(len(level))]
        words.extend(shuffled)
    return words


def make_vocabulary(size: int, seed: int) -> list[str]:
    """``size`` words that both analyzers keep unchanged as one term (see the module docstring)."""
    import Stemmer

    from hybrid_engine import AnalyzerConfig
    from hybrid_engine.lexical.analysis import Analyzer

    rng = np.random.default_rng([seed, 1])
    stem = Stemmer.Stemmer("english").stemWord
    analyze = Analyzer(AnalyzerConfig(strip_accents=False)).analyze
    vocab: list[str] = []
    candidates = _syllable_words(rng, int(size * 1.3) + 100)
    for word in candidates:
        if stem(word) == word and analyze(word) == [word]:
            vocab.append(word)
            if len(vocab) == size:
                return vocab
    raise ValueError(f"only {len(vocab)} usable words for a vocabulary of {size}")


class ZipfMandelbrot:
    """Ranks ``0..V-1`` (0 = most frequent) with ``p(r) ∝ (r + 1 + q)^-s``."""

    def __init__(self, size: int, s: float, q: float) -> None:
        weights = (np.arange(1, size + 1, dtype=np.float64) + q) ** -s
        self.cdf = np.cumsum(weights)
        self.cdf /= self.cdf[-1]
        self.p = weights / weights.sum()

    def sample(self, rng: np.random.Generator, n: int, top: int | None = None) -> np.ndarray:
        u = rng.random(n)
        if top is not None:
            u *= self.cdf[top - 1]
        return np.minimum(np.searchsorted(self.cdf, u, side="right"), len(self.cdf) - 1).astype(
            np.int32
        )


def generate(args: argparse.Namespace, n_docs: int) -> tuple[list[str], list[str], dict[str, Any]]:
    """The corpus texts, the query texts and statistics of the generated corpus."""
    vocab = make_vocabulary(args.vocab, args.seed)
    zipf = ZipfMandelbrot(len(vocab), args.zipf, args.zipf_offset)
    # Words as fixed-width bytes with a trailing space; index len(vocab) is the document break.
    table = np.array([w.encode() + b" " for w in vocab] + [b"\n"])
    rng = np.random.default_rng([args.seed, 2])
    mu = np.log(args.mean_length) - LOG_LENGTH_SIGMA**2 / 2
    texts: list[str] = []
    total_tokens = 0
    df_top = np.zeros(1, dtype=np.int64)
    for start in range(0, n_docs, CHUNK_DOCS):
        n = min(CHUNK_DOCS, n_docs - start)
        lengths = np.maximum(1, np.rint(rng.lognormal(mu, LOG_LENGTH_SIGMA, n))).astype(np.int64)
        ranks = zipf.sample(rng, int(lengths.sum()))
        total_tokens += len(ranks)
        ends = np.cumsum(lengths)
        df_top[0] += np.count_nonzero(np.add.reduceat(ranks == 0, ends - lengths))
        stream = np.insert(ranks, ends, len(vocab))  # a break after each document
        blob = table[stream].tobytes().replace(b"\0", b"").decode("ascii")
        texts.extend(blob.split("\n")[:n])
    qrng = np.random.default_rng([args.seed, 3])
    q_lengths = qrng.integers(3, 9, args.queries)
    q_ranks = zipf.sample(qrng, int(q_lengths.sum()), top=min(args.query_top, len(vocab)))
    bounds = np.concatenate([[0], np.cumsum(q_lengths)])
    queries = [" ".join(vocab[r] for r in q_ranks[a:b]) for a, b in itertools.pairwise(bounds)]
    stats = {
        "docs": n_docs,
        "tokens": total_tokens,
        "mean_tokens_per_doc": total_tokens / n_docs,
        "vocabulary": len(vocab),
        "top_term_token_share": float(zipf.p[0]),
        "top_term_doc_share": float(df_top[0]) / n_docs,
        "queries": len(queries),
        "mean_terms_per_query": float(q_lengths.mean()),
        "text_mib": sum(map(len, texts)) / 2**20,
    }
    return texts, queries, stats


# -- memory ------------------------------------------------------------------------------------


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak() -> None:
    """Reset VmHWM to the current RSS (Linux >= 4.0)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


class Phase:
    """Wall time and peak RSS above the starting RSS of a block of code."""

    def __enter__(self) -> Phase:
        gc.collect()
        self.rss_before = _status_kib("VmRSS")
        _reset_peak()
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.t0
        self.peak_mib = (_status_kib("VmHWM") - self.rss_before) / 1024


# -- workers -----------------------------------------------------------------------------------


def _ours(threads: int | None) -> tuple[Any, Any]:
    from hybrid_engine import AnalyzerConfig, BM25Index

    analyzer = AnalyzerConfig(strip_accents=False)

    def build(texts: list[str]) -> Any:
        return BM25Index.build(
            texts, k1=0.9, b=0.4, method="lucene", analyzer=analyzer, num_threads=threads
        )

    def search(index: Any, queries: list[str], k: int) -> Any:
        return index.search(queries, k=k, num_threads=1)

    return build, search


def _bm25s() -> tuple[Any, Any]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")

    def build(texts: list[str]) -> Any:
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
        retriever = bm25s.BM25(k1=0.9, b=0.4, method="lucene", backend="numba")
        retriever.index(tokens, show_progress=False)
        return retriever

    def search(retriever: Any, queries: list[str], k: int) -> Any:
        tokens = bm25s.tokenize(
            queries, stopwords="en", stemmer=stemmer, return_ids=True, show_progress=False
        )
        return retriever.retrieve(tokens, k=k, n_threads=1, show_progress=False)

    return build, search


def worker(args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.perf_counter()
    texts, queries, stats = generate(args, args.worker_docs)
    result: dict[str, Any] = {"side": args.worker, "generate_s": time.perf_counter() - t0}
    result["corpus"] = stats
    build, search = _ours(args.ours_threads) if args.worker == "ours" else _bm25s()
    warm = build(texts[:1000])
    search(warm, queries[:20], 10)
    del warm
    gc.collect()
    result["baseline_mib"] = _status_kib("VmRSS") / 1024
    with Phase() as phase:
        index = build(texts)
    result["build_s"] = phase.seconds
    result["build_docs_per_s"] = len(texts) / phase.seconds
    result["build_peak_mib"] = phase.peak_mib
    gc.collect()
    result["index_mib"] = (_status_kib("VmRSS") - phase.rss_before) / 1024
    for k in K_VALUES:
        search(index, queries[:20], k)  # k-specific warm-up
        times = []
        with Phase() as phase:
            for _ in range(args.query_rounds):
                t = time.perf_counter()
                search(index, queries, k)
                times.append(time.perf_counter() - t)
        seconds = float(np.median(times))
        result[f"query_k{k}_s"] = seconds
        result[f"query_k{k}_qps"] = len(queries) / seconds
        result[f"query_k{k}_peak_mib"] = phase.peak_mib
    result["process_peak_mib"] = _status_kib("VmHWM") / 1024  # since the last reset only
    return result


# -- parent ------------------------------------------------------------------------------------


def run_side(args: argparse.Namespace, side: str, n_docs: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", side, "--worker-docs", str(n_docs)]
    for name in (
        "vocab",
        "zipf",
        "zipf_offset",
        "mean_length",
        "queries",
        "query_top",
        "seed",
        "query_rounds",
    ):
        cmd += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    if args.ours_threads is not None:
        cmd += ["--ours-threads", str(args.ours_threads)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"side": side, "error": f"did not finish within --timeout {args.timeout} s"}
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        how = "killed (out of memory?)" if proc.returncode < 0 else f"exit {proc.returncode}"
        return {
            "side": side,
            "error": f"{how} after {time.perf_counter() - t0:.0f} s: " + " | ".join(tail),
        }
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fmt(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_table(runs: list[dict[str, Any]]) -> None:
    cols = [
        ("build docs/s", "build_docs_per_s", ",.0f"),
        ("build peak MiB", "build_peak_mib", ",.0f"),
        ("index MiB", "index_mib", ",.0f"),
        ("k=10 q/s", "query_k10_qps", ",.0f"),
        ("k=10 peak MiB", "query_k10_peak_mib", ",.0f"),
        ("k=1000 q/s", "query_k1000_qps", ",.0f"),
        ("k=1000 peak MiB", "query_k1000_peak_mib", ",.0f"),
    ]
    print(f"{'docs':>10} {'side':>6} " + " ".join(f"{c[0]:>15}" for c in cols))
    for run in runs:
        by_side = {r["side"]: r for r in run["sides"]}
        for side, r in by_side.items():
            if "error" in r:
                print(f"{run['docs']:>10,} {side:>6}  FAILED: {r['error']}")
                continue
            print(
                f"{run['docs']:>10,} {side:>6} "
                + " ".join(f"{_fmt(r.get(key), spec):>15}" for _, key, spec in cols)
            )
        ratios = run.get("ratios", {})
        if ratios:
            print(
                f"{'':>10} {'ratio':>6} "
                + " ".join(f"{_fmt(ratios.get(key), '.2f'):>15}" for _, key, _ in cols)
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-docs", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument("--sides", nargs="+", default=["ours", "bm25s"], choices=["ours", "bm25s"])
    parser.add_argument("--vocab", type=int, default=1_000_000)
    parser.add_argument("--zipf", type=float, default=1.1, help="Zipf exponent s")
    parser.add_argument("--zipf-offset", type=float, default=33.0, help="Mandelbrot offset q")
    parser.add_argument("--mean-length", type=float, default=40.0, help="mean tokens per doc")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--query-top", type=int, default=50_000)
    parser.add_argument("--query-rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--ours-threads",
        type=int,
        default=None,
        help="analysis threads of our build (default: all cores)",
    )
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per side and size")
    parser.add_argument("--out", type=Path, default=Path("runs/bench_scale.json"))
    parser.add_argument("--worker", choices=["ours", "bm25s"], help=argparse.SUPPRESS)
    parser.add_argument("--worker-docs", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        print(json.dumps(worker(args)))
        return

    runs = []
    for n_docs in args.n_docs:
        sides = []
        for side in args.sides:
            print(f"{n_docs:,} docs: {side} ...", file=sys.stderr, flush=True)
            sides.append(run_side(args, side, n_docs))
        run: dict[str, Any] = {"docs": n_docs, "sides": sides}
        by_side = {r["side"]: r for r in sides if "error" not in r}
        if "ours" in by_side and "bm25s" in by_side:
            o, t = by_side["ours"], by_side["bm25s"]
            # One direction for every figure, ours's advantage (> 1: ours better): throughput
            # ours / bm25s, memory bm25s / ours.
            run["ratios"] = {
                key: (o[key] / t[key] if key.endswith(("qps", "per_s")) else t[key] / o[key])
                for key in o
                if isinstance(o[key], float)
                and key in t
                and key.endswith(("qps", "per_s", "mib"))
                and o[key] > 0
                and key != "baseline_mib"
            }
        runs.append(run)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        options = {k: v for k, v in vars(args).items() if not k.startswith("worker")}
        options["out"] = str(args.out)
        args.out.write_text(json.dumps({"options": options, "runs": runs}, indent=2))
    print_table(runs)
    print(
        "ratio row: ours advantage, > 1 is better for ours (throughput ours/bm25s, memory "
        "bm25s/ours)"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
