"""docs/figures.md, the index of the figures quoted in the README and docs/: every command of its
table exists with the flags it uses (a report's or tool's ``argparse`` options read from its
source, a pytest node, a ``hybrid-engine`` command), every report of ``benchmarks/reports/`` is
listed, and every ``benchmarks/reports/`` or ``scripts/`` path the pages name exists."""

from __future__ import annotations

import argparse
import ast
import re
import shlex
from functools import cache
from pathlib import Path

import pytest

from hybrid_engine.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "docs" / "figures.md"
REPORTS = ROOT / "benchmarks" / "reports"
PAGES = (ROOT / "README.md", ROOT / "benchmarks" / "README.md", *sorted(ROOT.glob("docs/*.md")))
ENVIRONMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")
CODE = re.compile(r"`([^`]+)`")
PATH = re.compile(r"\b(?:benchmarks/reports|scripts)/[\w./-]*\w\.py\b")
K_WORDS = {"and", "or", "not"}


def placeholder(stem: str) -> bool:
    """A name standing for any script (``NAME.py``, ``x.py``), not a file."""
    return stem.isupper() or len(stem) == 1


def table_rows() -> list[list[str]]:
    """The table's rows (header and rule left out), as cells."""
    return [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in FIGURES.read_text().splitlines()
        if line.startswith("| ") and not line.startswith(("| page ", "|---"))
    ]


def commands() -> list[str]:
    """The commands of the table's last column, each row's in order."""
    return [command for row in table_rows() for command in CODE.findall(row[-1])]


def words(command: str) -> list[str]:
    """``command``'s words, environment assignments in front left out."""
    argv = shlex.split(command)
    while argv and ENVIRONMENT.match(argv[0]):
        argv.pop(0)
    return argv


@cache
def script_options(path: Path) -> tuple[frozenset[str], frozenset[str]]:
    """The option strings of every ``add_argument`` call in ``path`` and the names of its
    subcommands (``add_parser``), read from its source: nothing of it is imported."""
    options, subcommands = set(), set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        strings = [
            arg.value
            for arg in node.args
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
        ]
        if node.func.attr == "add_argument":
            options.update(s for s in strings if s.startswith("-"))
        elif node.func.attr == "add_parser" and strings:
            subcommands.add(strings[0])
    return frozenset(options | {"-h", "--help"}), frozenset(subcommands)


def option_name(word: str) -> str | None:
    """The option a word gives (``--x=1`` gives ``--x``), or None for a value."""
    if not word.startswith("-") or re.fullmatch(r"-\d[\d.e,-]*", word):
        return None
    return word.split("=", 1)[0]


def check_script(path: Path, argv: list[str]) -> None:
    assert path.is_file(), f"{path.relative_to(ROOT)} does not exist"
    options, subcommands = script_options(path)
    unknown = [o for o in map(option_name, argv) if o is not None and o not in options]
    assert not unknown, f"{path.relative_to(ROOT)} takes no {unknown}"
    if subcommands:
        assert argv and argv[0] in subcommands, (
            f"{path.relative_to(ROOT)} needs a subcommand of {sorted(subcommands)}: {argv}"
        )


def check_pytest(argv: list[str]) -> None:
    targets, keywords, markers = [], [], []
    it = iter(argv)
    for word in it:
        if word == "-k":
            keywords.append(next(it))
        elif word == "-m":
            markers.append(next(it))
        elif word.startswith(("tests/", "benchmarks/")):
            targets.append(word)  # option values (--benchmark-json FILE) are neither
    assert targets, f"pytest with no file: {argv}"
    sources = []
    for target in targets:
        file, *functions = target.split("::")
        path = ROOT / file
        assert path.exists(), f"{file} does not exist"
        files = sorted(path.glob("test_*.py")) if path.is_dir() else [path]
        sources += [f.read_text() for f in files]
        if functions:
            names = {
                node.name
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.FunctionDef | ast.ClassDef)
            }
            assert functions[0] in names, f"{file} has no {functions[0]}"
    text = "\n".join(sources)
    for expression in keywords:
        for word in re.findall(r"\w+", expression):
            assert word in K_WORDS or word in text, f"-k {word} matches nothing in {targets}"
    registered = (ROOT / "pyproject.toml").read_text() + (
        ROOT / "benchmarks" / "conftest.py"
    ).read_text()
    for expression in markers:
        for word in re.findall(r"\w+", expression):
            assert word in K_WORDS or f'"{word}:' in registered or f"{word}:" in registered, (
                f"-m {word} is not a registered marker"
            )


def check_cli(argv: list[str]) -> None:
    parser = build_parser()
    while True:
        subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subparsers:
            break
        assert argv and argv[0] in subparsers[0].choices, (
            f"hybrid-engine has no command {argv[:1]}: {sorted(subparsers[0].choices)}"
        )
        parser, argv = subparsers[0].choices[argv[0]], argv[1:]
    options = {o for action in parser._actions for o in action.option_strings}
    unknown = [o for o in map(option_name, argv) if o is not None and o not in options]
    assert not unknown, f"{parser.prog} takes no {unknown}"


def check(command: str) -> None:
    """Fail unless ``command`` names an existing script, test or CLI command, with its flags."""
    argv = words(command)
    assert argv, f"empty command: {command!r}"
    if argv[0] == "python" and argv[1:3] == ["-m", "pytest"]:
        argv = ["pytest", *argv[3:]]
    if argv[0] == "pytest":
        check_pytest(argv[1:])
    elif argv[0] == "hybrid-engine":
        check_cli(argv[1:])
    elif argv[0] == "python":
        check_script(ROOT / argv[1], argv[2:])
    elif argv[0] == "bash":
        assert (ROOT / argv[1]).is_file(), f"{argv[1]} does not exist"
    else:
        pytest.fail(f"not a python, pytest, bash or hybrid-engine command: {command!r}")


def test_every_row_has_a_command() -> None:
    rows = table_rows()
    assert len(rows) > 40
    assert all(CODE.findall(row[-1]) for row in rows), [r for r in rows if not CODE.findall(r[-1])]


@pytest.mark.parametrize("command", commands())
def test_command_exists(command: str) -> None:
    check(command)


def test_a_made_up_command_fails() -> None:
    for made_up in (
        "PYTHONPATH=. python benchmarks/reports/quant_report.py --no-such-flag",
        "PYTHONPATH=. python benchmarks/reports/no_such_report.py",
        "PYTHONPATH=. python benchmarks/reports/memory_report.py weigh --index x",
        "pytest benchmarks/test_dense_search.py::test_no_such_benchmark",
        "pytest benchmarks/test_dense_search.py -k no_such_keyword",
        "hybrid-engine eval DATA --no-such-flag",
        "hybrid-engine models unprepare",
    ):
        with pytest.raises(AssertionError):
            check(made_up)


def test_every_report_is_listed() -> None:
    listed = {
        Path(word).name
        for command in commands()
        for word in words(command)
        if word.startswith("benchmarks/reports/")
    }
    orphans = sorted(p.name for p in REPORTS.glob("*.py") if p.name not in listed)
    assert not orphans, f"reports reproducing no listed figure: {orphans}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_named_paths_exist(page: Path) -> None:
    named = {p for p in PATH.findall(page.read_text()) if not placeholder(Path(p).stem)}
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"{page.relative_to(ROOT)} names {missing}"
