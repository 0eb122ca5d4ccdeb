"""SciFact's test queries through ``ParentDocumentIndex``: the engine's chunked search end to
end, against the figures of ``benchmarks/reports/chunking_report.py`` (docs/chunking.md).

Builds the index twice over ``../shared/data/beir/scifact`` (int8 all-MiniLM-L6-v2,
``Chunker.load()``, exact dense search): the dense leg alone, where MaxP and first must give
the report's chunk figures, and BM25 + dense over the chunks (fused per chunk by the engine's
default, then aggregated). ``k=100`` parents from ``chunk_depth=1000`` chunks, as the report's
top 1,000. ``--collection scifact-long`` runs the same over the long-document set of
``chunking_report`` (its default seed and size). Embeddings go through the embedding cache::

    PYTHONPATH=. python benchmarks/reports/parent_documents_check.py [--collection scifact-long]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared helpers
from chunking_report import LONG, beir_collection, long_collection
from long_documents import WIKIPEDIA

from hybrid_engine import EmbeddingCache, Encoder, ParentDocumentIndex
from hybrid_engine.chunking import Chunker
from hybrid_engine.evaluation import evaluate

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "beir" / "scifact"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collection", choices=("scifact", LONG), default="scifact")
    args = parser.parse_args()
    if args.collection == LONG:
        collection = long_collection(DATA, WIKIPEDIA, 1000, 0)
    else:
        collection = beir_collection(DATA)
    corpus, qrels = collection.corpus, collection.qrels
    query_ids, queries = collection.query_ids, collection.query_texts
    encoder, chunker = Encoder.load(variant="int8"), Chunker.load()
    for retrievers in (("dense",), ("bm25", "dense")):
        tick = time.perf_counter()
        index = ParentDocumentIndex.build(
            corpus,
            chunker=chunker,
            retrievers=retrievers,
            encoder=encoder,
            embedding_cache=EmbeddingCache(),
            dense_options={"exact_threshold": 10**6},
        )
        built = time.perf_counter() - tick
        for aggregate in ("max", "first"):
            tick = time.perf_counter()
            result = index.search(queries, 100, aggregate=aggregate, chunk_depth=1000)
            searched = time.perf_counter() - tick
            assert result.documents is not None
            run = {
                q: {hit.id: hit.score for hit in row}
                for q, row in zip(query_ids, result.documents, strict=True)
            }
            metrics = evaluate(run, qrels, ("ndcg@10", "recall@100"))
            print(
                f"{'+'.join(retrievers):10} {aggregate:5} {len(index.engine)} chunks  "
                f"nDCG@10 {metrics['ndcg@10']:.4f}  R@100 {metrics['recall@100']:.4f}  "
                f"build {built:.0f} s  search {searched:.1f} s",
                flush=True,
            )


if __name__ == "__main__":
    main()
