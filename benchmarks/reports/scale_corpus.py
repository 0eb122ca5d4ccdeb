"""A seeded corpus of N documents derived from the 253,928 real scale documents, with the
MS MARCO query vectors and an exact float32 ground truth: scale data with real structure.

Random 384-d vectors have no neighbourhood structure and mislead every recall figure, so every
document here is a real one or a perturbed copy of a real one. With ``R`` = 253,928 the real
documents (``load_scale_texts`` order, vectors from ``embed_scale.py --docs all``) and
``d`` = 384, document ``j`` of a corpus of ``n`` (``seed``, ``sigma``, ``drop``) is:

* ``j < R``: real document ``j`` unchanged (its ``_id``, its title + text, its vector). The
  254k corpus is a prefix of every derived one.
* ``j >= R``: a copy of real document ``r(j)``, drawn uniformly with replacement; so at 1M each
  real document has about 3 copies, at 10M about 38.

  - vector: ``normalise(v[r(j)] + e)``, ``e ~ N(0, sigma^2 / d * I)`` (float32), so
    ``|e|`` is about ``sigma`` and the cosine to the source about ``1 / sqrt(1 + sigma^2)``;
  - text: the source's words (title + text, split on whitespace) with each word dropped
    independently with probability ``drop`` (all kept if none would be), so the lexical leg
    sees near-duplicates, not exact ones;
  - ``_id``: ``"<source _id>~<j>"``.

Rows are drawn in chunks of ``CHUNK`` documents, each from its own generators seeded
``[seed, chunk, 0]`` (the sources), ``[seed, chunk, 1]`` (the noise) and ``[seed, chunk, 2]``
(the word drops): the vectors and the texts agree without either holding the other, and any
chunk can be drawn alone.

Defaults: ``SIGMA`` = 0.8 (cosine to the source about 0.78, near the median cosine of a real
document to its nearest other one, 0.74), ``DROP`` = 0.1, ``SEED`` = 0. Sigma was chosen with
``--calibrate``: hnswlib's recall@10 (the engine's M=16, ef_construction=200; ef 64 / 128 /
256) on 100,000 derived vectors (25,000 real sources, about the copies per source of 1M) against
100,000 real ones, the same 1,000 queries: real 0.946 / 0.978 / 0.993; sigma 0.3: 0.920 / 0.967
/ 0.991; 0.5: 0.927 / 0.971 / 0.990; 0.8: 0.939 / 0.977 / 0.991, the closest.

Queries are the 6,980 MS MARCO dev-small query vectors; the ground truth is the exact float32
top-10 (inner product = cosine, unit rows) of ``QUERY_SAMPLE`` = 1,000 of them (a seeded sample,
ascending), computed chunk by chunk over the memory-mapped vectors.

Files, under ``scale_dir()/derived-<n>-s<seed>-sigma<sigma>-drop<drop>/``: ``vectors.npy``
(float32 ``(n, 384)``, written chunk by chunk: 10M is 15.4 GB on disk and never in RAM at
once), ``gt-queries.npy`` (int64 rows of the query file), ``gt-ids.npy`` (int64
``(1000, 10)``), ``gt-scores.npy`` (float32) and ``manifest.json`` (the parameters, timings).

    # once: the real vectors
    PYTHONPATH=. python benchmarks/reports/embed_scale.py --docs all
    # vectors + ground truth, cached
    PYTHONPATH=. python benchmarks/reports/scale_corpus.py --n 1000000
    # cosine to source, counts
    PYTHONPATH=. python benchmarks/reports/scale_corpus.py --n 1000000 --check

From code (benchmarks): ``corpus = derived(n)`` returns a ``DerivedCorpus`` (generated when
absent) with ``vectors`` (a read-only memmap), ``queries``, ``gt_queries``, ``gt_ids``,
``documents()`` (an iterator of ``{"_id", "text"}``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared helpers
from bench_common import SCALE_PARTS, doc_text, read_jsonl
from embed_scale import DATA, scale_dir

CHUNK = 65_536
"""Documents per drawn chunk (and per write of the memory map)."""
SIGMA = 0.8
DROP = 0.1
SEED = 0
QUERY_SAMPLE = 1000
K = 10
VARIANT = "int8"
"""The encoder variant of the cached real vectors (``Encoder.load()``'s default)."""


def real_vectors(variant: str = VARIANT) -> np.ndarray:
    """The cached vectors of the 253,928 real documents (read-only memmap), row ``i`` the
    ``i``-th of ``load_scale_texts``."""
    return _cached(f"scale-docs-{variant}.npy")


def query_vectors(variant: str = VARIANT) -> np.ndarray:
    """The cached vectors of the 6,980 MS MARCO dev-small queries, in file order."""
    return _cached(f"msmarco-queries-{variant}.npy")


def _cached(name: str) -> np.ndarray:
    path = scale_dir() / name
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is absent: run "
            "`PYTHONPATH=. python benchmarks/reports/embed_scale.py --docs all` once (about 25 "
            "minutes on 2 cores) to encode the scale corpus and the queries"
        )
    return np.load(path, mmap_mode="r")


def real_documents(data: Path = DATA) -> tuple[list[str], list[str]]:
    """(ids, texts) of the 253,928 real documents, texts as title + " " + text."""
    ids: list[str] = []
    texts: list[str] = []
    for part in SCALE_PARTS:
        for doc in read_jsonl(data / "scale" / part / "corpus.jsonl.gz"):
            ids.append(doc["_id"])
            texts.append(doc_text(doc))
    return ids, texts


def sources(chunk: int, n: int, n_real: int, seed: int) -> np.ndarray:
    """The real row each document of ``chunk`` (of a corpus of ``n``) derives from."""
    lo, hi = chunk * CHUNK, min((chunk + 1) * CHUNK, n)
    drawn = np.random.default_rng([seed, chunk, 0]).integers(n_real, size=hi - lo)
    rows = np.arange(lo, hi)
    return np.where(rows < n_real, rows, drawn)


def chunk_vectors(
    real: np.ndarray, chunk: int, n: int, seed: int, sigma: float
) -> tuple[np.ndarray, np.ndarray]:
    """(vectors, sources) of ``chunk``: the real rows unchanged, the copies perturbed."""
    src = sources(chunk, n, len(real), seed)
    out = np.asarray(real[src], dtype=np.float32)
    copies = np.arange(chunk * CHUNK, chunk * CHUNK + len(src)) >= len(real)
    noise = np.random.default_rng([seed, chunk, 1]).standard_normal(
        (len(src), real.shape[1]), dtype=np.float32
    )
    perturbed = out[copies] + noise[copies] * np.float32(sigma / np.sqrt(real.shape[1]))
    out[copies] = perturbed / np.linalg.norm(perturbed, axis=1, keepdims=True)
    return out, src


@dataclass(frozen=True)
class DerivedCorpus:
    """A derived corpus on disk (see the module docstring), its files memory-mapped."""

    folder: Path
    n: int
    seed: int
    sigma: float
    drop: float

    @property
    def vectors(self) -> np.ndarray:
        """float32 ``(n, 384)``, unit rows, read-only memmap."""
        return np.load(self.folder / "vectors.npy", mmap_mode="r")

    @property
    def queries(self) -> np.ndarray:
        """The 6,980 query vectors (``query_vectors()``)."""
        return query_vectors()

    @property
    def gt_queries(self) -> np.ndarray:
        """Rows of ``queries`` that have a ground truth (int64, ascending)."""
        return np.load(self.folder / "gt-queries.npy")

    @property
    def gt_ids(self) -> np.ndarray:
        """Exact float32 top-10 rows of each ground-truth query (int64, best first)."""
        return np.load(self.folder / "gt-ids.npy")

    @property
    def gt_scores(self) -> np.ndarray:
        """Their inner products (float32)."""
        return np.load(self.folder / "gt-scores.npy")

    def documents(self, data: Path = DATA) -> Iterator[dict[str, str]]:
        """The ``n`` documents as ``{"_id", "text"}``, in row order, drawn chunk by chunk."""
        ids, texts = real_documents(data)
        for chunk in range(-(-self.n // CHUNK)):
            src = sources(chunk, self.n, len(ids), self.seed)
            rng = np.random.default_rng([self.seed, chunk, 2])
            for offset, r in enumerate(src.tolist()):
                j = chunk * CHUNK + offset
                if j < len(ids):
                    yield {"_id": ids[j], "text": texts[j]}
                    continue
                words = texts[r].split()
                keep = rng.random(len(words)) >= self.drop
                kept = [w for w, k in zip(words, keep, strict=True) if k] or words
                yield {"_id": f"{ids[r]}~{j}", "text": " ".join(kept)}


def corpus_folder(n: int, seed: int, sigma: float, drop: float) -> Path:
    """Where the derived corpus of these parameters is cached."""
    return scale_dir() / f"derived-{n}-s{seed}-sigma{sigma:g}-drop{drop:g}"


def write_vectors(path: Path, n: int, seed: int, sigma: float) -> None:
    """Draw the ``n`` vectors chunk by chunk into a ``.npy`` at ``path`` (plain writes, no
    memory map, so the process never holds more than a chunk), which appears only once
    complete."""
    real = np.ascontiguousarray(real_vectors())
    partial = path.with_name(path.name + ".partial.npy")
    with open(partial, "wb") as f:
        header = {"descr": "<f4", "fortran_order": False, "shape": (n, real.shape[1])}
        np.lib.format.write_array_header_1_0(f, header)
        for chunk in range(-(-n // CHUNK)):
            f.write(chunk_vectors(real, chunk, n, seed, sigma)[0].tobytes())
    partial.replace(path)


def in_chunks(vectors: np.ndarray, size: int = 2 * CHUNK) -> Iterator[tuple[int, np.ndarray]]:
    """(first row, rows) of ``vectors`` (an array or a memmap), ``size`` rows at a time."""
    for lo in range(0, len(vectors), size):
        yield lo, np.asarray(vectors[lo : lo + size], dtype=np.float32)


def file_chunks(path: Path, size: int = 2 * CHUNK) -> Iterator[tuple[int, np.ndarray]]:
    """(first row, rows) of a float32 ``.npy`` file read with plain reads, ``size`` rows at a
    time: no memory map, so the pages read are not resident in this process."""
    with open(path, "rb") as f:
        fmt = np.lib.format
        v1 = fmt.read_magic(f) == (1, 0)
        shape, _, _ = (fmt.read_array_header_1_0 if v1 else fmt.read_array_header_2_0)(f)
        dim = shape[1]
        for lo in range(0, shape[0], size):
            rows = min(size, shape[0] - lo)
            yield lo, np.fromfile(f, np.float32, rows * dim).reshape(rows, dim)


def exact_top_k(
    chunks: Iterable[tuple[int, np.ndarray]], queries: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """(ids int64, scores float32) of the exact top-``k`` inner products of each query over
    the vectors given as ``chunks`` (``in_chunks``, ``file_chunks``), best first; ties by
    lower id."""
    q = np.ascontiguousarray(queries, dtype=np.float32)
    best_ids = np.full((len(q), k), -1, np.int64)
    best = np.full((len(q), k), -np.inf, np.float32)
    for lo, rows in chunks:
        scores = q @ rows.T
        top = np.argpartition(-scores, min(k, scores.shape[1]) - 1, axis=1)[:, :k]
        ids = np.concatenate([best_ids, top + lo], axis=1)
        vals = np.concatenate([best, np.take_along_axis(scores, top, axis=1)], axis=1)
        order = np.lexsort((ids, -vals), axis=1)[:, :k]
        best_ids = np.take_along_axis(ids, order, axis=1)
        best = np.take_along_axis(vals, order, axis=1)
    return best_ids, best


def query_sample(n_queries: int, size: int = QUERY_SAMPLE, seed: int = SEED) -> np.ndarray:
    """A seeded sample of ``size`` query rows (int64, ascending)."""
    rng = np.random.default_rng([seed, 7])
    return np.sort(rng.choice(n_queries, size=min(size, n_queries), replace=False))


def derived(
    n: int, *, seed: int = SEED, sigma: float = SIGMA, drop: float = DROP, quiet: bool = True
) -> DerivedCorpus:
    """The derived corpus of ``n`` documents, generated (vectors, ground truth) when absent.

    Raises
    ------
    FileNotFoundError
        The real vectors are not cached yet (the message names the command that makes them).
    ValueError
        ``n`` is below 1.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1 documents, got {n}")
    folder = corpus_folder(n, seed, sigma, drop)
    corpus = DerivedCorpus(folder, n, seed, sigma, drop)
    if (folder / "manifest.json").exists():
        return corpus
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    write_vectors(folder / "vectors.npy", n, seed, sigma)
    vectors_s = time.perf_counter() - start
    if not quiet:
        print(f"{n} vectors in {vectors_s:.1f}s", flush=True)
    rows = query_sample(len(query_vectors()), seed=seed)
    start = time.perf_counter()
    ids, scores = exact_top_k(file_chunks(folder / "vectors.npy"), query_vectors()[rows], K)
    truth_s = time.perf_counter() - start
    if not quiet:
        print(f"ground truth of {len(rows)} queries in {truth_s:.1f}s", flush=True)
    np.save(folder / "gt-queries.npy", rows)
    np.save(folder / "gt-ids.npy", ids)
    np.save(folder / "gt-scores.npy", scores)
    manifest = {
        "n": n,
        "seed": seed,
        "sigma": sigma,
        "drop": drop,
        "chunk": CHUNK,
        "variant": VARIANT,
        "queries": len(rows),
        "k": K,
        "vectors_seconds": round(vectors_s, 1),
        "ground_truth_seconds": round(truth_s, 1),
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return corpus


def check(corpus: DerivedCorpus, chunks: int = 4) -> dict[str, float]:
    """Cosine of derived vectors to their sources (the copies of ``chunks`` seeded chunks),
    and the ground truth's mean top-1 / 10th cosine and share of real documents."""
    real = real_vectors()
    n_real = len(real)
    first = n_real // CHUNK + 1  # the first chunk of copies only
    last = -(-corpus.n // CHUNK)
    if last <= first:
        return {"copies": max(corpus.n - n_real, 0)}
    picked = np.random.default_rng(1).choice(
        np.arange(first, last), size=min(chunks, last - first), replace=False
    )
    cos = []
    for chunk in picked.tolist():
        src = sources(chunk, corpus.n, n_real, corpus.seed)
        derived_rows = np.asarray(corpus.vectors[chunk * CHUNK : chunk * CHUNK + len(src)])
        cos.append(np.einsum("ij,ij->i", derived_rows, real[src]))
    cosines = np.concatenate(cos)
    scores = corpus.gt_scores
    return {
        "copies": corpus.n - n_real,
        "cos_to_source_mean": float(cosines.mean()),
        "cos_to_source_p5": float(np.percentile(cosines, 5)),
        "expected": float(1 / np.sqrt(1 + corpus.sigma**2)),
        "gt_top1_mean": float(scores[:, 0].mean()),
        "gt_top10_mean": float(scores[:, -1].mean()),
        "gt_real_share": float((corpus.gt_ids < n_real).mean()),
    }


def derive_from(real: np.ndarray, n: int, seed: int, sigma: float) -> np.ndarray:
    """The first ``n`` derived vectors with ``real`` as the real documents, in memory (for
    ``calibrate``: a small real set and its copies)."""
    return np.concatenate(
        [chunk_vectors(real, c, n, seed, sigma)[0] for c in range(-(-n // CHUNK))]
    )


def hnswlib_recall(vectors: np.ndarray, queries: np.ndarray, efs: tuple[int, ...]) -> list[float]:
    """hnswlib's recall@10 at each ``ef`` (M=16, ef_construction=200, the engine's defaults;
    2 build threads) against the exact top-10."""
    import hnswlib

    truth, _ = exact_top_k(in_chunks(vectors), queries, K)
    index = hnswlib.Index("ip", vectors.shape[1])
    index.init_index(max_elements=len(vectors), M=16, ef_construction=200)
    index.add_items(vectors, num_threads=2)
    out = []
    for ef in efs:
        index.set_ef(ef)
        found = index.knn_query(queries, k=K, num_threads=2)[0]
        out.append(
            float(np.mean([len(set(f) & set(t)) / K for f, t in zip(found, truth, strict=True)]))
        )
    return out


def calibrate(
    n: int, sigmas: tuple[float, ...], efs: tuple[int, ...] = (64, 128, 256)
) -> dict[str, object]:
    """What ``SIGMA`` is chosen from: hnswlib's recall@10 on a seeded sample of ``n`` real
    vectors against ``n`` derived ones (from ``n // 4`` real sources, about the copies per
    source of 1M) at each sigma, the same 1,000 queries; and the cosine of a real document to
    its nearest other real document (median over 1,000), to set the copies' distance against."""
    real = np.ascontiguousarray(real_vectors())
    rng = np.random.default_rng([SEED, 11])
    queries = np.ascontiguousarray(query_vectors()[query_sample(len(query_vectors()))])
    probe = rng.choice(len(real), size=1000, replace=False)
    scores = exact_top_k(in_chunks(real), real[probe], 2)[1]
    report: dict[str, object] = {
        "n": n,
        "efs": list(efs),
        "real_nn_cosine_median": float(np.median(scores[:, 1])),
        "real_nn_cosine_p10": float(np.percentile(scores[:, 1], 10)),
        "real": hnswlib_recall(
            real[np.sort(rng.choice(len(real), n, replace=False))], queries, efs
        ),
    }
    sources = real[np.sort(rng.choice(len(real), n // 4, replace=False))]
    for sigma in sigmas:
        report[f"derived_sigma{sigma:g}"] = hnswlib_recall(
            derive_from(sources, n, SEED, sigma), queries, efs
        )
        print(report, flush=True)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, required=True, help="documents, e.g. 1000000")
    parser.add_argument(
        "--calibrate",
        type=float,
        nargs="+",
        default=None,
        help="sigmas: hnswlib recall on --n real vs --n derived vectors (see calibrate)",
    )
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--sigma", type=float, default=SIGMA)
    parser.add_argument("--drop", type=float, default=DROP)
    parser.add_argument("--check", action="store_true", help="print cosine to source etc.")
    args = parser.parse_args()
    if args.calibrate:
        print(json.dumps(calibrate(args.n, tuple(args.calibrate)), indent=2))
        return
    corpus = derived(args.n, seed=args.seed, sigma=args.sigma, drop=args.drop, quiet=False)
    print(f"{corpus.folder}")
    print((corpus.folder / "manifest.json").read_text())
    if args.check:
        print(json.dumps(check(corpus), indent=2))


if __name__ == "__main__":
    main()
