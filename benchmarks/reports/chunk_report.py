"""Chunking of a BEIR corpus at a budget: how long documents are in the bi-encoder's tokens, how
many chunks each gives, and how long sentence splitting and chunking take (docs/chunking.md).

Data: a BEIR-layout folder's ``corpus.jsonl``, read in place (SciFact by default)::

    PYTHONPATH=. python benchmarks/reports/chunk_report.py [--corpus ../shared/data/beir/scifact]
        [--max-tokens 200] [--overlap-tokens 40]

Prints, for the documents' ``text`` (what is chunked) and for ``title + " " + text`` (what the
engine encodes today, ``corpus.document_text``): token counts with [CLS] and [SEP] against the
model's window, the documents over it; the title lengths; the histogram of chunks per
document; and the seconds for one tokenization of every text, ``sentence_spans`` and
``Chunker.chunk_documents`` over the whole corpus (best of ``--repeat``).
"""

from __future__ import annotations

import argparse
import collections
import itertools
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from tokenizers import Tokenizer

from hybrid_engine.chunking import Chunker, sentence_spans
from hybrid_engine.corpus import document_text
from hybrid_engine.evaluation.datasets import load_corpus
from hybrid_engine.models.store import TOKENIZER_FILE, read_model

DEFAULT_CORPUS = Path(__file__).resolve().parents[3] / "shared" / "data" / "beir" / "scifact"


def quantiles(values: list[int]) -> str:
    """Median, 90th and 99th percentile and maximum of ``values``."""
    ordered = sorted(values)
    pick = [ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in (0.5, 0.9, 0.99)]
    return f"median {pick[0]}, p90 {pick[1]}, p99 {pick[2]}, max {ordered[-1]}"


def best_seconds(run: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` timed calls of ``run``."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--model", default=None, help="prepared bi-encoder (default model)")
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--overlap-tokens", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    docs = load_corpus(args.corpus)
    info = read_model(args.model)
    window = info.max_length
    chunker = Chunker.load(
        info.path, max_tokens=args.max_tokens, overlap_tokens=args.overlap_tokens
    )
    counter = Tokenizer.from_file(str(info.path / TOKENIZER_FILE))
    counter.no_truncation()
    specials = counter.num_special_tokens_to_add(False)

    def tokens(texts: list[str]) -> list[int]:
        encodings = counter.encode_batch(texts, add_special_tokens=False)
        return [len(e.ids) + specials for e in encodings]

    print(f"{args.corpus}: {len(docs)} documents; window {window} tokens with specials")
    for label, texts in (
        ("text", [d["text"] for d in docs]),
        ("title + text", [document_text(d, i)[0] for i, d in enumerate(docs)]),
    ):
        counts = tokens(texts)
        over = sum(c > window for c in counts)
        print(
            f"  {label}: tokens {quantiles(counts)}; over {window}: {over} "
            f"({100 * over / len(docs):.1f}%); tokens past the window: "
            f"{sum(max(0, c - window) for c in counts)} of {sum(counts)}"
        )
    titles = [len(e.ids) for e in counter.encode_batch([d.get("title") or "" for d in docs])]
    titles = [t - specials for t in titles]
    print(f"  title tokens: {quantiles(titles)}")

    texts = [d["text"] for d in docs]
    encode = best_seconds(lambda: [counter.encode(t) for t in texts], args.repeat)
    split = best_seconds(lambda: [sentence_spans(t) for t in texts], args.repeat)
    n_sentences = sum(len(sentence_spans(t)) for t in texts)
    chunked = best_seconds(lambda: chunker.chunk_documents(docs), args.repeat)
    chunks = chunker.chunk_documents(docs)
    print(
        f"  one tokenization of every text: {encode:.2f} s; sentence_spans: {split:.2f} s "
        f"({n_sentences} sentences); chunk_documents: {chunked:.2f} s"
    )
    per_doc = collections.Counter(c.parent_id for c in chunks)
    histogram = collections.Counter(per_doc.get(str(d["_id"]), 0) for d in docs)
    print(
        f"  max_tokens={args.max_tokens}, overlap_tokens={args.overlap_tokens}: {len(chunks)} "
        f"chunks, {statistics.mean(per_doc.values()):.3f} per document"
    )
    for n in sorted(histogram):
        print(f"    {n} chunk(s): {histogram[n]} documents")
    sizes = [c.num_tokens for c in chunks]
    overlapped = sum(
        b.start < a.end for a, b in itertools.pairwise(chunks) if a.parent_id == b.parent_id
    )
    print(f"  chunk tokens: {quantiles(sizes)}; chunk pairs with an overlap: {overlapped}")


if __name__ == "__main__":
    main()
