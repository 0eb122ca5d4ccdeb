"""Every ```python block of README.md and docs/*.md runs as written.

The blocks of one file run in order in one namespace (a later block may use the names of an
earlier one), in a fresh temporary working directory, with one change only: the data paths
``../shared/data/`` point at the shared data folder (``shared_data``). One test per file, so a
failure names the file, the block and its first line. Files whose blocks load a heavy model
(the generator, Ray, a cross-encoder export, a SciFact encode) are ``slow``, never skipped.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DATA_PATH = "../shared/data/"
"""How the docs name the shared data folder (the layout of a clone next to ``shared/``)."""
SLOW = {"chunking.md", "generation.md", "reranking.md", "scaling.md", "strategies.md"}
"""Files whose blocks load a heavy model or framework (seconds to a minute each)."""
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


@pytest.mark.parametrize("path", _cases())
def test_doc_snippets_run(
    path: Path,
    shared_data: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Execute the file's ```python blocks in order, in one namespace, in an empty folder."""
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__doc_snippet__"}
    name = path.relative_to(ROOT).as_posix()
    for number, block in enumerate(python_blocks(path), start=1):
        source = block.replace(DATA_PATH, f"{shared_data}/")
        try:
            exec(compile(source, f"{name} block {number}", "exec"), namespace)
        except Exception as exc:
            first = block.strip().splitlines()[0]
            raise AssertionError(
                f"{name}, ```python block {number} (starting {first!r}) raised "
                f"{type(exc).__name__}: {exc}"
            ) from exc
