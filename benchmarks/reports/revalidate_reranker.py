"""The validation gate's verdict on a prepared cross-encoder, as it would be served.

Rebuilds the trainer's held-out validation queries (the same seeded 20 % of the training
split) and scores the prepared ONNX model at the given variant and pair length with the current
gate (paired sign-flip test, adjusted for the choice of mode), without retraining::

    PYTHONPATH=. python benchmarks/reports/revalidate_reranker.py scifact-ce-64
        [--data ../shared/data/beir/scifact] [--variant int8] [--max-length 48]

For a model trained before the gate validated the served configuration: its recorded verdict
came from PyTorch and the best of ten modes at gain 0.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hybrid_engine.cli.demo import DEFAULT_DATASET
from hybrid_engine.models.store import read_model
from hybrid_engine.training.examples import gather_training_set
from hybrid_engine.training.validation import validate_prepared


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a prepared cross-encoder folder or its name")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--split", default="train")
    parser.add_argument("--variant", default="int8")
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--validation-fraction", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    examples = gather_training_set(
        args.data,
        args.split,
        supervision=("qrels",),
        validation_fraction=args.validation_fraction,
        max_self_pairs=None,
        seed=args.seed,
        num_threads=args.threads,
        show_progress=True,
        log=print,
    )
    verdict = validate_prepared(
        resolve_model_path(args.model),
        args.variant,
        examples,
        max_length=args.max_length,
        num_threads=args.threads,
    )
    print(verdict.summary())
    print(json.dumps(verdict.to_dict(), indent=2))


def resolve_model_path(model: str) -> Path:
    """The folder of a prepared cross-encoder given as a folder or a name."""
    return read_model(model, kind="cross-encoder").path


if __name__ == "__main__":
    main()
