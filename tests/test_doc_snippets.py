"""Every ```python block of README.md and docs/*.md runs as written.

The blocks of one file run in order in one namespace (a later block may use the names of an
earlier one), in a fresh temporary working directory, with one change only: the data paths
``../shared/data/`` point at the shared data folder (``shared_data``). One test per file, so a
failure names the file, the block and its first line. A ``print(...)`` line whose comment
starts with a Python literal (``print(result.doc_ids)  # [['d1', 'd2']]: ids per query``) must
print that value. Files whose blocks load a heavy model
(the generator, Ray, a cross-encoder export, a dense leg over a SciFact slice) are ``slow``,
never skipped.
"""

import ast
import re
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DATA_PATH = "../shared/data/"
"""How the docs name the shared data folder (the layout of a clone next to ``shared/``)."""
SLOW = {
    "README.md",  # the local generator
    "degradation.md",  # a dense leg over 300 SciFact documents, here and below
    "feedback.md",
    "fusion.md",
    "generation.md",  # the local generator
    "models.md",  # a bi-encoder export (PyTorch)
    "pick.md",
    "reranking.md",  # a cross-encoder export (PyTorch)
    "scaling.md",  # Ray
    "strategies.md",  # the local generator
}
"""Files whose blocks take more than a few seconds (5 to 20 s each on 2 cores)."""
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def python_blocks(path: Path) -> list[str]:
    """The ```python blocks of the Markdown file ``path``, in order."""
    return _BLOCK.findall(path.read_text(encoding="utf-8"))


def _cases() -> list[object]:
    """One case per file with at least one ```python block; the heavy ones marked slow."""
    cases: list[object] = []
    for path in DOCS:
        if python_blocks(path):
            marks = [pytest.mark.slow] if path.name in SLOW else []
            cases.append(pytest.param(path, id=path.relative_to(ROOT).as_posix(), marks=marks))
    return cases


def test_every_doc_block_is_collected() -> None:
    """The block pattern finds every ```python fence (none is missed by a stray space)."""
    for path in DOCS:
        fences = re.findall(r"^```python", path.read_text(encoding="utf-8"), re.MULTILINE)
        assert len(fences) == len(python_blocks(path)), path.name


def commented_value(line: str) -> tuple[Any] | None:
    """The Python literal that the comment of the code ``line`` starts with, as a 1-tuple (the
    longest prefix ending at a ``:`` or at the end that parses), or None when it starts with none.

    >>> commented_value("print(ids)  # [['d1', 'd2']]: ids per query")
    ([['d1', 'd2']],)
    """
    if "  # " not in line:
        return None
    comment = line.split("  # ", 1)[1].strip()
    ends = [len(comment)] + [i for i in range(len(comment) - 1, 0, -1) if comment[i] == ":"]
    for end in ends:
        try:
            return (ast.literal_eval(comment[:end]),)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return None


class Prints:
    """The blocks' ``print``: prints, and records what each line of each block printed."""

    def __init__(self) -> None:
        self.by_line: dict[tuple[str, int], list[str]] = {}

    def __call__(self, *values: object, sep: str = " ", **options: Any) -> None:
        caller = sys._getframe(1)
        where = (caller.f_code.co_filename, caller.f_lineno)
        self.by_line.setdefault(where, []).append(sep.join(str(v) for v in values))
        print(*values, sep=sep, **options)


def check_printed(block: str, filename: str, prints: Prints) -> None:
    """Each ``print(...)`` line of ``block`` whose comment starts with a literal printed it."""
    for number, line in enumerate(block.splitlines(), start=1):
        expected = commented_value(line) if line.lstrip().startswith("print(") else None
        if expected is None:
            continue
        printed = prints.by_line.get((filename, number))
        assert printed, f"{filename}, line {number}: {line.strip()!r} printed nothing"
        for text in printed:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                value = text
            assert value == expected[0], (
                f"{filename}, line {number} printed {text!r}; its comment says {expected[0]!r}"
            )


@pytest.mark.parametrize("path", _cases())
def test_doc_snippets_run(
    path: Path,
    shared_data: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Execute the file's ```python blocks in order, in one namespace, in an empty folder;
    every ``print`` whose comment shows a literal printed it."""
    monkeypatch.chdir(tmp_path)
    prints = Prints()
    namespace: dict[str, object] = {"__name__": "__doc_snippet__", "print": prints}
    name = path.relative_to(ROOT).as_posix()
    for number, block in enumerate(python_blocks(path), start=1):
        source = block.replace(DATA_PATH, f"{shared_data}/")
        filename = f"{name} block {number}"
        try:
            exec(compile(source, filename, "exec"), namespace)
        except Exception as exc:
            first = block.strip().splitlines()[0]
            raise AssertionError(
                f"{name}, ```python block {number} (starting {first!r}) raised "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        check_printed(block, filename, prints)


def test_commented_value() -> None:
    """The literal at the start of a comment, up to a colon; None for prose or no comment."""
    assert commented_value("print(x)  # [['d1', 'd2'], ['d2', 'd1']]: ids per query") == (
        [["d1", "d2"], ["d2", "d1"]],
    )
    assert commented_value("print(x)  # {'$and': [{'y': {'$gte': 1}}]}") == (
        {"$and": [{"y": {"$gte": 1}}]},
    )
    assert commented_value("print(x)  # None") == (None,)
    assert commented_value("print(x)  # d1 Cats The cat sat on the mat.") is None
    assert commented_value("print(x)  # {'score': 0.55..., 'title': 'Cats'}") is None
    assert commented_value("print(x)") is None


def test_check_printed_refuses_a_wrong_comment() -> None:
    """A print whose output differs from its comment's literal fails, naming the line."""
    block = "print([['d1', 'd2'], ['d2', 'd1']])  # [['d1', 'd2'], ['d2', 'd3']]: ids\n"
    prints = Prints()
    exec(compile(block, "doc block 1", "exec"), {"print": prints})
    with pytest.raises(AssertionError, match="line 1 printed"):
        check_printed(block, "doc block 1", prints)
    right = block.replace("'d3'", "'d1'")
    exec(compile(right, "doc block 2", "exec"), {"print": prints})
    check_printed(right, "doc block 2", prints)
