"""Regenerate the on-disk format fixtures of the current version (tests/fixtures/formats/).

Writes, from the corpus in ``corpus.json`` (kept as it is) and fixed seeds:

- ``tiny-bert-source/``: a sentence-transformers folder of a 2-layer BERT with random weights
  (numpy ``default_rng(0)``, saved as safetensors) and a WordPiece tokenizer over the corpus's
  words; the source the model folder is exported from;
- ``models/tiny-bert/``: that model prepared by ``prepare_encoder`` (format
  ``hybrid_engine.model``), the project's own export path;
- ``bm25/``, ``dense/`` (the tiny model's vectors, a graph walked on int8 codes),
  ``splade/`` (``tests/sparse_oracle``'s hashing encoder): the three leg formats;
- ``hybrid/``: ``HybridIndex.build(...).save`` (BM25 and dense, the model recorded by name);
- ``live/``: the same engine after the adds, deletes and upserts of ``corpus.json["live"]``,
  one commit each (several segments, deletion masks, commit points);
- ``segment/``: ``HybridIndex.build(..., retrievers=("bm25",)).save``, a live index whose
  segment is of the current segment format (texts and titles compressed);

and updates their entries in ``fixtures.json`` (format, version, the commit of the code that
wrote them); the entries of older versions' fixtures are kept. Output is the same on every run
at one commit with one set of package versions (the model manifest records the source folder's
absolute path and the export packages' versions).

Needs the ``export`` extra. Run from the repository root::

    python scripts/make_format_fixtures.py

``--only bm25`` (or ``dense``, ``splade``, ``segment``) rewrites only those fixtures and their
entries, the others left as they are: after one leg's (or the segment's) format version
changes, once its old fixture is kept under a new name (the engine and live fixtures keep legs
and segments of the old version that way).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this checkout's hybrid_engine; the oracles' fakes
FIXTURES = ROOT / "tests" / "fixtures" / "formats"
MODEL_NAME = "tiny-bert"
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
BERT = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 64,
    "type_vocab_size": 2,
}
MAX_SEQ_LENGTH = 64


def _commit() -> str:
    """The commit of the code writing the fixtures (``-dirty`` when the tree has changes)."""
    return subprocess.run(
        ["git", "describe", "--always", "--dirty", "--abbrev=40"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def _vocabulary(corpus: dict[str, Any]) -> list[str]:
    """Special tokens, every lowercase word of the corpus, and single letters (whole and
    ``##`` pieces) so that any other ASCII word still tokenizes."""
    texts = [f"{d['title']} {d['text']}" for d in corpus["documents"]] + corpus["queries"]
    texts += [d["text"] for d in corpus["live"]["upserted"]]
    words = sorted({w.strip(".,;:!?()'\"").lower() for t in texts for w in t.split()} - {""})
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [str(d) for d in range(10)]
    pieces = [f"##{c}" for c in letters]
    punctuation = list(".,;:!?()'\"-")
    vocab = SPECIAL_TOKENS + sorted(set(words) | set(letters) | set(punctuation)) + pieces
    return list(dict.fromkeys(vocab))


def make_source(folder: Path, corpus: dict[str, Any]) -> None:
    """The sentence-transformers folder of a random-weight BERT (mean pooling, normalised)."""
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    vocab = _vocabulary(corpus)
    ids = {token: i for i, token in enumerate(vocab)}
    tokenizer = Tokenizer(models.WordPiece(ids, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])],
    )
    tokenizer.decoder = decoders.WordPiece()
    fast = transformers.BertTokenizerFast(
        tokenizer_object=tokenizer, model_max_length=MAX_SEQ_LENGTH, do_lower_case=True
    )
    config = transformers.BertConfig(vocab_size=len(vocab), **BERT)
    model = transformers.BertModel(config)
    rng = np.random.default_rng(0)
    state = {}
    for name, tensor in sorted(model.state_dict().items()):
        if name.endswith("LayerNorm.weight"):
            values = 1.0 + 0.1 * rng.standard_normal(tuple(tensor.shape))
        elif name.endswith("position_ids") or name.endswith("token_type_ids"):
            state[name] = tensor
            continue
        else:
            values = 0.2 * rng.standard_normal(tuple(tensor.shape))
        state[name] = torch.from_numpy(values.astype(np.float32))
    model.load_state_dict(state)
    folder.mkdir(parents=True)
    model.save_pretrained(folder, safe_serialization=True)
    fast.save_pretrained(folder)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {
            "idx": 1,
            "name": "1",
            "path": "1_Pooling",
            "type": "sentence_transformers.models.Pooling",
        },
        {
            "idx": 2,
            "name": "2",
            "path": "2_Normalize",
            "type": "sentence_transformers.models.Normalize",
        },
    ]
    pooling = {
        "word_embedding_dimension": BERT["hidden_size"],
        "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True,
        "pooling_mode_max_tokens": False,
    }
    _write_json(folder / "modules.json", modules)
    _write_json(folder / "sentence_bert_config.json", {"max_seq_length": MAX_SEQ_LENGTH})
    (folder / "1_Pooling").mkdir()
    _write_json(folder / "1_Pooling" / "config.json", pooling)
    (folder / "2_Normalize").mkdir()


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n", encoding="utf-8")


LEGS = ("bm25", "dense", "splade")
ONLY = (*LEGS, "segment")
"""What ``--only`` rewrites: the leg fixtures, and the segment fixture."""


def make_legs(corpus: dict[str, Any], legs: Sequence[str]) -> None:
    """The fixtures of the leg formats ``legs`` (of ``LEGS``) over the corpus."""
    from sparse_oracle import HashingSparseEncoder

    from hybrid_engine import BM25Index, DenseIndex, Encoder, SpladeIndex

    documents = corpus["documents"]
    if "bm25" in legs:
        # With positions: format 3's every array.
        BM25Index.build(documents, positions=True).save(FIXTURES / "bm25")
    if "dense" in legs:
        encoder = Encoder.load(FIXTURES / "models" / MODEL_NAME, variant="fp32")
        # A graph over the few documents, walked on int8 codes: format 2's every array.
        options = {"exact_threshold": 0, "quantization": "int8", "num_threads": 1}
        DenseIndex.build(documents, encoder=encoder, **options).save(FIXTURES / "dense")
    if "splade" in legs:
        SpladeIndex.build(documents, encoder=HashingSparseEncoder()).save(FIXTURES / "splade")


def make_segment(corpus: dict[str, Any]) -> None:
    """The fixture of the current segment format: a BM25-only engine over the corpus."""
    from hybrid_engine import HybridIndex

    engine = HybridIndex.build(corpus["documents"], retrievers=("bm25",), num_threads=1)
    with engine:
        engine.save(FIXTURES / "segment")
    (FIXTURES / "segment" / "write.lock").unlink(missing_ok=True)


def make_indexes(corpus: dict[str, Any]) -> None:
    """The leg, engine and live-index fixtures over the corpus, dense by the tiny model."""
    from hybrid_engine import Encoder, HybridIndex

    documents = corpus["documents"]
    encoder = Encoder.load(FIXTURES / "models" / MODEL_NAME, variant="fp32")
    make_legs(corpus, LEGS)
    make_segment(corpus)
    build = {"retrievers": ("bm25", "dense"), "encoder": encoder, "num_threads": 1}
    HybridIndex.build(documents, **build).save(FIXTURES / "hybrid")
    live = corpus["live"]
    first = [d for d in documents if d["_id"] in set(live["initial"])]
    with HybridIndex.build(first, **build) as engine:
        engine.save(FIXTURES / "live")
        engine.add([d for d in documents if d["_id"] in set(live["added"])])
        engine.commit()
        engine.delete(live["deleted"])
        engine.commit()
        engine.upsert(live["upserted"])
        engine.commit()
    (FIXTURES / "live" / "write.lock").unlink(missing_ok=True)


def _entries(commit: str) -> dict[str, dict[str, Any]]:
    """fixtures.json's entries of the fixtures this script writes."""
    from hybrid_engine.dense.format import FORMAT_VERSION as DENSE
    from hybrid_engine.lexical.format import FORMAT_VERSION as BM25
    from hybrid_engine.live.commits import FORMAT_VERSION as LIVE
    from hybrid_engine.live.segment import FORMAT_VERSION as SEGMENT
    from hybrid_engine.models.store import FORMAT_VERSION as MODEL
    from hybrid_engine.sparse.format import FORMAT_VERSION as SPLADE

    made = "scripts/make_format_fixtures.py"
    return {
        "tiny-bert-source": {
            "format": "sentence-transformers folder (safetensors weights)",
            "format_version": None,
            "commit": commit,
            "made_by": made,
        },
        f"models/{MODEL_NAME}": {
            "format": "hybrid_engine.model",
            "format_version": MODEL,
            "commit": commit,
            "made_by": f"{made}: prepare_encoder(tiny-bert-source)",
        },
        "bm25": {"format": "hybrid_engine.bm25", "format_version": BM25, "commit": commit},
        "dense": {"format": "hybrid_engine.dense", "format_version": DENSE, "commit": commit},
        "splade": {"format": "hybrid_engine.splade", "format_version": SPLADE, "commit": commit},
        "hybrid": {
            "format": "hybrid_engine.live",
            "format_version": LIVE,
            "segment_format_version": SEGMENT,
            "commit": commit,
            "made_by": f"{made}: HybridIndex.build(...).save",
        },
        "live": {
            "format": "hybrid_engine.live",
            "format_version": LIVE,
            "segment_format_version": SEGMENT,
            "commit": commit,
            "made_by": f"{made}: build, save, then add, delete, upsert (a commit each)",
        },
        "segment": {
            "format": "hybrid_engine.live",
            "format_version": LIVE,
            "segment_format_version": SEGMENT,
            "commit": commit,
            "made_by": f"{made}: HybridIndex.build(..., retrievers=('bm25',)).save",
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only", nargs="+", choices=ONLY, help="rewrite only these fixtures (see above)"
    )
    args = parser.parse_args(argv)
    os.environ["HYBRID_ENGINE_MODELS"] = str(FIXTURES / "models")  # the model recorded by name
    corpus = json.loads((FIXTURES / "corpus.json").read_text(encoding="utf-8"))
    entries = _entries(_commit())
    if args.only:
        entries = {name: entries[name] for name in args.only}
    for name in entries:
        shutil.rmtree(FIXTURES / name, ignore_errors=True)
    if args.only:
        make_legs(corpus, [name for name in args.only if name in LEGS])
        if "segment" in args.only:
            make_segment(corpus)
    else:
        from hybrid_engine.models.export.bi_encoder import prepare_encoder

        make_source(FIXTURES / "tiny-bert-source", corpus)
        prepare_encoder(
            FIXTURES / "tiny-bert-source",
            FIXTURES / "models" / MODEL_NAME,
            name=MODEL_NAME,
            log=print,
        )
        make_indexes(corpus)
    record = FIXTURES / "fixtures.json"
    known = json.loads(record.read_text(encoding="utf-8")) if record.is_file() else {}
    _write_json(record, {**known, **entries})
    print(f"wrote {', '.join(entries)} under {FIXTURES}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
