"""Bytes per document of the default hybrid engine over the scale corpus, on disk and resident,
per component, with load time and hybrid latency (issue 25).

``build``: the default engine (BM25 and the int8 bi-encoder's dense leg, its graph on the
codes ``--quantization`` says, the engine's default, binary, unless told) over the 253,928 scale
documents (gcide, wordnet, Wikipedia summaries; ``{_id, title, text}``), their vectors read from
the embedding cache (``benchmarks/reports/embed_scale.py --docs all`` fills it once), saved to
``--index``; prints the build's wall time and the bytes on disk of each component.

``build --derived N``: the same engine over the N documents
``benchmarks/reports/scale_corpus.py`` derives from the real ones (their vectors given to the
dense leg: ``HybridIndex.from_legs``).

``measure``: in a fresh process per ``--mmap`` mode (False, True, ``cold``): imports, the
bi-encoder loaded, the numba kernels compiled on a tiny index (their memory reported apart as
``jit``), then the index loaded (timed), then ``--queries`` MS MARCO dev queries searched one per
call from text (p50/p95 ms). Resident memory (``VmRSS``, and its anonymous and file-backed
parts) after the load and after the queries, less the baseline before the load, per document;
file-backed pages attributed to components by file (``/proc/self/smaps``). ``--skip`` starts
at a later query (one no earlier run read rows for, so the page cache does not favour it);
``--search-threads`` is ``search``'s ``num_threads`` (None: every core); each stage's p50/p95
comes from the results' ``timings``. ``--ef-search E`` measures the engine as if built with
``dense_options={"ef_search": E}``: each segment's ``DenseIndex.ef_search`` set after the load
(the walk's list size is a search setting, saved in the manifest; the graphs do not depend
on it).

``reads --index I``: random rows read from the index's vectors files by position, asked for
first (``posix_fadvise``) or one after the other (``dense/vector_file.py``).

``recall --index I --derived N``: the dense leg's recall@10 of the engine built with
``build --derived N`` against the derived corpus's exact top 10 (``--ef-search`` as above).

    PYTHONPATH=. python benchmarks/reports/memory_report.py build --index runs/scale-index
    PYTHONPATH=. python benchmarks/reports/memory_report.py measure --index runs/scale-index \\
        --json m.json
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared helpers
from bench_common import SCALE_PARTS, read_jsonl
from process_memory import memory

from hybrid_engine.cli.demo import DEFAULT_DATASET

DATA = DEFAULT_DATASET.parents[1]
QUERIES = DATA / "queries" / "msmarco-passage-dev-small.jsonl"
MODES = {"False": False, "True": True, "cold": "cold"}


def component(relative: str) -> str:
    """The component a file of a live index directory belongs to."""
    name = relative.rsplit("/", 1)[-1]
    if "/bm25/" in f"/{relative}":
        return "bm25"
    if "/dense/" in f"/{relative}":
        if name.startswith("vectors"):
            return "dense vectors (float32)"
        if name.startswith(("links0", "upper")):
            return "dense graph links"
        if name.startswith(("codes", "code_")):
            return "dense codes"
        if name.startswith("graph"):
            return "dense graph (hnswlib file)"
        return "dense other"
    if name.startswith("text_"):
        return "texts"
    if name.startswith("title_"):
        return "titles"
    if name.startswith("id_"):
        return "ids"
    if name.startswith("meta_"):
        return "metadata"
    return "manifests, masks, commit points"


def disk_bytes(index: Path) -> dict[str, int]:
    """Bytes on disk of each component."""
    sizes: dict[str, int] = defaultdict(int)
    for file in index.rglob("*"):
        if file.is_file():
            sizes[component(str(file.relative_to(index)))] += file.stat().st_size
    return dict(sizes)


def mapped_bytes(index: Path) -> dict[str, int]:
    """Resident bytes of this process's file mappings of ``index``, by component (smaps)."""
    sizes: dict[str, int] = defaultdict(int)
    root = str(index.resolve())
    current = None
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = re.match(r"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$", line)
        if head:
            path = head.group(1)
            current = path if path.startswith(root) else None
        elif current and line.startswith("Rss:"):
            sizes[component(current[len(root) + 1 :])] += int(line.split()[1]) * 1024
    return dict(sizes)


def build_derived(args: argparse.Namespace) -> tuple[Any, int, float]:
    """The engine over ``scale_corpus.derived(args.derived)``: BM25 over its texts and the
    dense leg from its vectors (``from_legs``; no text is encoded), with the engine's default
    dense options; the number of documents; the dense leg's recall@10 against the corpus's
    exact float32 top 10 of its query sample."""
    from scale_corpus import derived

    from hybrid_engine import BM25Index, DenseIndex, HybridIndex
    from hybrid_engine.models.bi_encoder import Encoder
    from hybrid_engine.pipeline.legs import DEFAULT_DENSE_OPTIONS

    corpus = derived(args.derived)
    documents = list(corpus.documents())
    ids = [d["_id"] for d in documents]
    bm25 = BM25Index.build(documents, show_progress=True)
    options = {**DEFAULT_DENSE_OPTIONS, **_quantization(args)}
    dense = DenseIndex.from_vectors(
        corpus.vectors, ids=ids, encoder=Encoder.load(), exact_threshold=0, **options
    )
    found = dense.search(corpus.queries[corpus.gt_queries], 10).ids
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found, corpus.gt_ids, strict=True)])
    engine = HybridIndex.from_legs(documents, bm25=bm25, dense=dense)
    return engine, len(documents), float(recall)


class GivenVectors:
    """The embedding-cache door of a commit (``commit(embedding_cache=...)``) handing it the
    derived corpus's own vectors, which no encoder made, for the texts it indexes: the next
    rows of ``vectors`` at each call (a commit encodes its documents in order, chunk by
    chunk)."""

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = vectors
        self.taken = 0

    def encode(self, encoder: Any, texts: list[str], **_: Any) -> np.ndarray:
        stop = self.taken + len(texts)
        if stop > len(self.vectors):
            raise ValueError(f"{stop} texts asked for {len(self.vectors)} given vectors")
        rows = np.array(self.vectors[self.taken : stop], dtype=np.float32)
        self.taken = stop
        return rows


def build_segments(args: argparse.Namespace) -> dict[str, Any]:
    """The engine over ``scale_corpus.derived(args.derived)`` built as a live index of
    ``args.segment_size`` documents per segment, one commit each (the merge policy merges past
    ten segments: 10M in 1M segments stays ten), the engine
    reopened with ``mmap="cold"`` before each: what one segment's build holds (its texts,
    its vectors, hnswlib's graph) bounds the memory, not the corpus. An existing ``--index``
    is taken up where its last commit stopped (the wall time is then this run's). Reports
    the build's wall time, peak RSS, bytes on disk per component and the dense leg's
    recall@10 (its segments searched and merged, as a search does) against the corpus's
    exact top 10."""
    from itertools import islice

    from scale_corpus import derived

    from hybrid_engine import HybridIndex

    corpus = derived(args.derived)
    documents = corpus.documents()
    options = {**_quantization(args), "ef_construction": args.ef_construction}
    done = 0
    if args.index.exists():  # a build stopped between two commits goes on from the last one
        with HybridIndex.load(args.index, mmap="cold") as engine:
            done = len(engine)
        documents = islice(documents, done, None)
    start = time.perf_counter()
    steps = []
    for lo in range(done, corpus.n, args.segment_size):
        hi = min(lo + args.segment_size, corpus.n)
        chunk = list(islice(documents, hi - lo))
        given = GivenVectors(corpus.vectors[lo:hi])
        if lo == 0:
            engine = HybridIndex.build(
                chunk, embedding_cache=given, dense_options=options, show_progress=True
            )
            engine.save(args.index)
        else:
            engine = HybridIndex.load(args.index, mmap="cold")
            engine.add(chunk)
            engine.commit(embedding_cache=given, show_progress=True)
        engine.close()
        del engine, chunk, given
        steps.append({"documents": hi, "s": round(time.perf_counter() - start, 1),
                      "peak_rss_gib": round(_peak_rss() / 2**30, 2)})  # fmt: skip
        print(json.dumps(steps[-1]), file=sys.stderr, flush=True)
    built = time.perf_counter() - start
    recall = _segments_recall(args.index, corpus)
    return {
        **_built(args, corpus.n, built),
        "segment_size": args.segment_size,
        "ef_construction": args.ef_construction,
        "peak_rss_gib": round(_peak_rss() / 2**30, 2),
        "steps": steps,
        "dense_recall@10": round(recall, 4),
    }


def _peak_rss() -> int:
    """This process's peak resident set, bytes."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _set_ef_search(engine: Any, ef_search: int | None) -> None:
    """Each segment's dense leg walking with lists of ``ef_search`` (None: as saved)."""
    if ef_search is not None:
        for segment in engine._snapshot.segments:
            segment.dense.ef_search = ef_search


def _segments_recall(index: Path, corpus: Any, ef_search: int | None = None) -> float:
    """recall@10 of the dense leg of the engine at ``index`` (loaded ``mmap="cold"``; its
    segments hold the corpus's rows in order, so a position is a row) against the corpus's
    exact float32 top 10."""
    from hybrid_engine import HybridIndex

    with HybridIndex.load(index, mmap="cold") as engine:
        _set_ef_search(engine, ef_search)
        snapshot = engine._snapshot
        queries = corpus.queries[corpus.gt_queries]
        found = snapshot.search_dense(queries, 10, None, [None] * len(snapshot.segments)).ids
    pairs = zip(found.tolist(), corpus.gt_ids.tolist(), strict=True)
    return float(np.mean([len(set(a) & set(b)) / 10 for a, b in pairs]))


def _quantization(args: argparse.Namespace) -> dict[str, Any]:
    """``dense_options`` for ``--quantization``."""
    if args.quantization == "default":
        return {}
    return {"quantization": None if args.quantization == "none" else args.quantization}


def build(args: argparse.Namespace) -> dict[str, Any]:
    from hybrid_engine import HybridIndex
    from hybrid_engine.dense.embedding_cache import EmbeddingCache

    if args.derived and args.segment_size:
        return build_segments(args)
    if args.derived:
        start = time.perf_counter()
        engine, n, recall = build_derived(args)
        built = time.perf_counter() - start
        engine.save(args.index)
        engine.close()
        return {**_built(args, n, built), "dense_recall@10": round(recall, 4)}

    records = [
        {"_id": d["_id"], "title": d.get("title") or "", "text": d["text"]}
        for part in SCALE_PARTS
        for d in read_jsonl(DATA / "scale" / part / "corpus.jsonl.gz")
    ][: args.limit]
    start = time.perf_counter()
    engine = HybridIndex.build(
        records,
        embedding_cache=EmbeddingCache(),
        dense_options=_quantization(args),
        show_progress=True,
    )
    built = time.perf_counter() - start
    engine.save(args.index)
    engine.close()
    return _built(args, len(records), built)


def _built(args: argparse.Namespace, n: int, built: float) -> dict[str, Any]:
    """What ``build`` reports of the saved engine of ``n`` documents."""
    sizes = disk_bytes(args.index)
    return {
        "documents": n,
        "quantization": args.quantization,
        "build_s": round(built, 1),
        "disk_bytes_per_document": {k: round(v / n, 1) for k, v in sorted(sizes.items())},
        "disk_bytes_per_document_total": round(sum(sizes.values()) / n, 1),
    }


def measure_one(args: argparse.Namespace) -> dict[str, Any]:
    """One mode, in this (fresh) process."""
    from hybrid_engine import HybridIndex
    from hybrid_engine.models.bi_encoder import Encoder

    mode = MODES[args.mode]
    encoder = Encoder.load(num_threads=1)
    before_jit = memory()
    tiny = [{"_id": str(i), "text": f"word{i} shared text {i % 7}"} for i in range(64)]
    with HybridIndex.build(
        tiny, encoder=encoder, dense_options={"exact_threshold": 0}, num_threads=1
    ) as warm:
        warm.search(["shared text"], 10)
    baseline = memory()
    start = time.perf_counter()
    engine = HybridIndex.load(args.index, encoder=encoder, mmap=mode, num_threads=1)
    load_s = time.perf_counter() - start
    _set_ef_search(engine, args.ef_search)
    loaded = memory()
    mapped_after_load = mapped_bytes(args.index)
    n = len(engine)
    queries = [q["text"] for q in read_jsonl(QUERIES)][args.skip : args.skip + args.queries]
    times, stages = [], []
    for query in queries:
        t0 = time.perf_counter()
        found = engine.search([query], 10, num_threads=args.search_threads)
        times.append((time.perf_counter() - t0) * 1000)
        stages.append(found.timings)
    after = memory()
    mapped_after = mapped_bytes(args.index)

    def per_doc(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
        return {k: round((a[k] - b[k]) * 2**20 / n, 1) for k in ("VmRSS", "RssAnon", "RssFile")}

    return {
        "mmap": args.mode,
        "documents": n,
        "load_s": round(load_s, 3),
        "jit_MiB": round(baseline["VmRSS"] - before_jit["VmRSS"], 1),
        "baseline_MiB": round(baseline["VmRSS"], 1),
        "rss_per_document_after_load": per_doc(loaded, baseline),
        "rss_per_document_after_queries": per_doc(after, baseline),
        "mapped_per_document_after_load": {
            k: round(v / n, 1) for k, v in sorted(mapped_after_load.items())
        },
        "mapped_per_document_after_queries": {
            k: round(v / n, 1) for k, v in sorted(mapped_after.items())
        },
        "peak_rss_MiB": round(after["VmHWM"], 1),
        "queries": len(times),
        "hybrid_p50_ms": round(float(np.percentile(times, 50)), 2),
        "hybrid_p95_ms": round(float(np.percentile(times, 95)), 2),
        "search_threads": args.search_threads,
        "ef_search": args.ef_search,
        "stage_p50_p95_ms": {
            stage: _percentiles([t.get(stage, 0.0) for t in stages])
            for stage in ("bm25", "dense", "fusion")
        },
    }


def reads(args: argparse.Namespace) -> dict[str, Any]:
    """p50/p95 ms of reading ``--rows`` random rows of one segment's vectors file by position
    (``VectorFile.take``), the rows asked for first (``VectorFile.advise``) and not, alternating
    per draw, over ``--draws`` draws cycling through the segments (fresh random rows each:
    mostly cold on a corpus larger than the page cache)."""
    from hybrid_engine import HybridIndex

    rng = np.random.default_rng(args.seed)
    times: dict[str, list[float]] = {"advised": [], "one by one": []}
    with HybridIndex.load(args.index, mmap="cold") as engine:
        segments = engine._snapshot.segments
        for draw in range(args.draws):
            dense = segments[draw % len(segments)].dense
            assert dense is not None
            file = dense._store._file
            assert file is not None
            rows = np.sort(rng.choice(len(dense), args.rows, replace=False))
            way = "advised" if draw % 2 == 0 else "one by one"
            start = time.perf_counter()
            if way == "advised":
                file.advise(rows)
            file.take(rows)
            times[way].append((time.perf_counter() - start) * 1000)
    return {way: _percentiles(t) for way, t in times.items()} | {"rows": args.rows}


def _percentiles(times: list[float]) -> list[float]:
    """p50 and p95 of ``times``, ms, rounded."""
    return [round(float(np.percentile(times, p)), 2) for p in (50, 95)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    b = sub.add_parser("build")
    b.add_argument("--index", type=Path, default=Path("runs/scale-index"))
    b.add_argument(
        "--quantization", choices=("default", "none", "int8", "binary"), default="default"
    )
    b.add_argument("--limit", type=int, default=None, help="the first N documents only")
    b.add_argument(
        "--derived",
        type=int,
        default=None,
        metavar="N",
        help="the N-document corpus of scale_corpus.py (texts and vectors derived from the "
        "real ones) instead of the scale corpus",
    )
    b.add_argument(
        "--segment-size",
        type=int,
        default=None,
        metavar="S",
        help="with --derived: build a live index of S documents per segment (one commit "
        "each, reopened mmap='cold' between), so that the build's memory is one segment's",
    )
    b.add_argument(
        "--ef-construction", type=int, default=200, help="with --segment-size: the graph's"
    )
    m = sub.add_parser("measure")
    m.add_argument("--index", type=Path, default=Path("runs/scale-index"))
    m.add_argument("--queries", type=int, default=1000)
    m.add_argument("--mode", choices=tuple(MODES), help="one mode, in this process")
    m.add_argument("--json", type=Path)
    m.add_argument(
        "--skip",
        type=int,
        default=0,
        help="start at this query of the file (queries no earlier run has read from disk)",
    )
    m.add_argument(
        "--search-threads", type=int, default=None, help="num_threads of search (None: all)"
    )
    m.add_argument("--ef-search", type=int, help="each segment's walk list (default: as saved)")
    d = sub.add_parser("reads", help="random rows read from a cold index's vectors files")
    d.add_argument("--index", type=Path, required=True)
    d.add_argument("--rows", type=int, default=256)
    d.add_argument("--draws", type=int, default=80)
    d.add_argument("--seed", type=int, default=0)
    r = sub.add_parser("recall", help="the dense leg's recall@10 of a --derived index")
    r.add_argument("--index", type=Path, required=True)
    r.add_argument("--derived", type=int, required=True, metavar="N")
    r.add_argument("--ef-search", type=int, help="each segment's walk list (default: as saved)")
    args = parser.parse_args()
    if args.step == "build":
        print(json.dumps(build(args)))
        return
    if args.step == "reads":
        print(json.dumps(reads(args)))
        return
    if args.step == "recall":
        from scale_corpus import derived

        print(
            json.dumps(
                {
                    "dense_recall@10": round(
                        _segments_recall(args.index, derived(args.derived), args.ef_search), 4
                    )
                }
            )
        )
        return
    if args.mode is not None:
        print(json.dumps(measure_one(args)))
        return
    rows = []
    for mode in MODES:
        done = subprocess.run(
            [sys.executable, __file__, "measure", "--index", str(args.index), "--mode", mode,
             "--queries", str(args.queries), "--skip", str(args.skip),
             *(["--search-threads", str(args.search_threads)] if args.search_threads else []),
             *(["--ef-search", str(args.ef_search)] if args.ef_search else [])],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        rows.append(json.loads(done.stdout.splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
