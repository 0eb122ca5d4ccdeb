"""``hybrid-engine search`` reaches what the API has (issue 24): ``--fusion``, ``--weights``,
``--depth``, ``--mmr``, ``--budget-ms``, ``--queries FILE|-``, each checked against
``HybridIndex.search`` with the same options; bad values are one-line errors naming the flag;
a reader that stops early (``| head -1``) ends it quietly (defect 7). Run as separate
processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cli_process import cli_env, error_line, json_lines, ok, write_jsonl

from hybrid_engine import Encoder, HybridIndex

DOCS = [
    {"_id": "d1", "title": "Cats", "text": "The cat sat on the mat.", "year": 2019},
    {"_id": "d2", "title": "Dogs", "text": "A dog chased the cat over the mat.", "year": 2021},
    {"_id": "d3", "title": "Birds", "text": "Birds fly over the sea.", "year": 2023},
    {"_id": "d4", "title": "Tides", "text": "Tides follow the moon over the sea.", "year": 2024},
    {"_id": "d5", "title": "Cats again", "text": "A cat and a dog by the sea.", "year": 2024},
]
QUERIES = ["cat mat", "sea", "dog over the sea"]


@pytest.fixture(scope="module")
def bm25_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bm25")
    ok("index", write_jsonl(folder / "c.jsonl", DOCS), folder / "idx", "--retrievers", "bm25")
    return folder / "idx"


def cli_hits(*argv: str | Path, stdin: str | None = None) -> list[list[tuple[str, float]]]:
    """Each query's (id, score) pairs from ``search ... --json``."""
    listing = json_lines(ok("search", *argv, "--json", stdin=stdin))
    return [[(hit["id"], hit["score"]) for hit in entry["hits"]] for entry in listing]


def api_hits(engine: HybridIndex, queries: list[str], **options: object) -> list[list]:
    """Each query searched on its own, as the command does (an int8 encoder's query vector
    depends on the batch it is encoded in)."""
    rows = [engine.search([query], **options).hits()[0] for query in queries]  # type: ignore[arg-type]
    return [[(hit.id, hit.score) for hit in row] for row in rows]


def test_queries_from_arguments_a_file_and_stdin(bm25_index: Path, tmp_path: Path) -> None:
    engine = HybridIndex.load(bm25_index)
    expected = api_hits(engine, QUERIES, k=3)
    file = tmp_path / "queries.txt"
    file.write_text(f"{QUERIES[1]}\n\n  {QUERIES[2]}  \n", encoding="utf-8")
    assert cli_hits(bm25_index, QUERIES[0], "--queries", file, "-k", "3") == expected
    stdin = "\n".join(QUERIES) + "\n"
    assert cli_hits(bm25_index, "--queries", "-", "-k", "3", stdin=stdin) == expected
    listing = json_lines(ok("search", bm25_index, "--queries", file, "--json"))
    assert [entry["query"] for entry in listing] == QUERIES[1:]


def test_fusion_weights_and_depth_reach_the_engine(bm25_index: Path) -> None:
    engine = HybridIndex.load(bm25_index)
    for flags, options in (
        (["--fusion", "rrf"], {"fusion": "rrf"}),
        (["--weights", "bm25=2"], {"weights": {"bm25": 2.0}}),
        (["--fusion", "minmax", "--depth", "2"], {"fusion": "minmax", "depth": 2}),
        (["--budget-ms", "10000"], {"budget_ms": 10000.0}),
    ):
        expected = api_hits(engine, QUERIES, k=4, **options)
        assert cli_hits(bm25_index, *QUERIES, "-k", "4", *flags) == expected, flags
    rrf = cli_hits(bm25_index, QUERIES[0], "--fusion", "rrf")
    assert rrf != cli_hits(bm25_index, QUERIES[0])  # the flag changes the scores


def test_mmr_reaches_the_engine(tmp_path: Path, model_path: Path) -> None:
    ok("index", write_jsonl(tmp_path / "c.jsonl", DOCS), tmp_path / "idx", "--quiet")
    engine = HybridIndex.load(tmp_path / "idx", encoder=Encoder.load(model_path, variant="int8"))
    expected = api_hits(engine, QUERIES, k=3, mmr=0.3)
    got = cli_hits(tmp_path / "idx", *QUERIES, "-k", "3", "--mmr", "0.3")
    assert [[i for i, _ in row] for row in got] == [[i for i, _ in row] for row in expected]
    for row, want in zip(got, expected, strict=True):
        assert [s for _, s in row] == pytest.approx([s for _, s in want], rel=1e-5)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["-k", "0"], "argument -k: expected an integer >= 1, got 0"),
        (["--depth", "x"], "argument --depth: expected an integer >= 1, got 'x'"),
        (["--mmr", "1.5"], "argument --mmr: expected a number in [0, 1], got 1.5"),
        (["--budget-ms", "-1"], "argument --budget-ms: expected a number > 0, got -1"),
        (["--budget-ms", "inf"], "argument --budget-ms: expected a number > 0, got inf"),
        (["--weights", "bm25"], "argument --weights: expected LEG=WEIGHT pairs separated"),
        (["--weights", "bm25=-1"], "argument --weights: bm25's weight must be finite and >= 0"),
        (["--weights", "bm25=0"], "argument --weights: the weights are all 0"),
        (["--fusion", "sum"], "argument --fusion: invalid choice: 'sum'"),
        (["--weights", "dense=1"], "--weights names dense, which this index does not combine"),
        (["--mmr", "0.5"], "--mmr needs the dense leg"),
    ],
)
def test_bad_values_are_one_line_errors_naming_the_flag(
    bm25_index: Path, flags: list[str], message: str
) -> None:
    assert error_line("search", bm25_index, "cat", *flags).startswith(message)


def test_no_query_at_all(bm25_index: Path, tmp_path: Path) -> None:
    empty = tmp_path / "none.txt"
    empty.write_text("\n\n")
    assert error_line("search", bm25_index, "--queries", empty).startswith("no query: give them")


def test_the_empty_line_of_a_filtered_search_speaks_of_the_filter(bm25_index: Path) -> None:
    out = ok("search", bm25_index, "cat", "--filter", '{"year": 1900}')
    assert "no document matches the filter, or none that does holds a query term" in out
    assert "no document holds any query term" not in out
    assert "(no hits: no document holds any query term)" in ok("search", bm25_index, "xylophone")


def test_a_filter_value_of_another_type_is_a_one_line_error_naming_the_field(
    bm25_index: Path,
) -> None:
    """The rule of docs/filters.md at the command line: the API's TypeError, one line."""
    message = error_line("search", bm25_index, "cat", "--filter", '{"year": "2021"}')
    assert "field 'year' holds int values" in message and "str '2021'" in message


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_a_reader_that_stops_early_ends_the_search_quietly(
    tmp_path: Path, json_flag: list[str]
) -> None:
    """``search ... | head -1``: the output (a few MB) overflows the pipe, so writes fail once
    the reader is gone; the command stops with status 141 (128 + SIGPIPE), no traceback."""
    long = [{"_id": f"d{i}", "text": "the sea and the moon " * 40} for i in range(20)]
    ok("index", write_jsonl(tmp_path / "c.jsonl", long), tmp_path / "idx", "--retrievers", "bm25")
    queries = tmp_path / "q.txt"
    queries.write_text("sea moon\n" * 300, encoding="utf-8")
    argv = [sys.executable, "-m", "hybrid_engine", "search", str(tmp_path / "idx")]
    process = subprocess.Popen(
        [*argv, "--queries", str(queries), "-k", "20", *json_flag],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline()
    process.stdout.close()
    assert process.wait(timeout=120) == 141
    assert process.stderr.read() == b""


def test_quantization_and_mapping_reach_the_engine(tmp_path: Path, model_path: Path) -> None:
    """``index --quantization/--oversample`` build the dense leg so (its manifest records
    them); ``search --mmap``, ``--mmap all`` and ``--mmap cold`` load it so and find what the
    API finds; bad values are one-line errors."""
    corpus = write_jsonl(tmp_path / "c.jsonl", DOCS)
    ok("index", corpus, tmp_path / "idx", "--quiet", "--quantization", "int8", "--oversample", "4")
    engine = HybridIndex.load(tmp_path / "idx", encoder=Encoder.load(model_path, variant="int8"))
    dense = engine._state.snapshot.segments[0].dense
    assert (dense.quantization, dense.oversample) == ("int8", 4.0)
    expected = [[i for i, _ in row] for row in api_hits(engine, QUERIES, k=3)]
    for flags in (["--mmap"], ["--mmap", "all"], ["--mmap", "cold"], []):
        got = cli_hits(tmp_path / "idx", *QUERIES, "-k", "3", *flags)
        assert [[i for i, _ in row] for row in got] == expected, flags
    assert "argument --mmap: invalid choice: 'warm'" in error_line(
        "search", tmp_path / "idx", "cat", "--mmap", "warm"
    )
    assert "argument --oversample: expected a number >= 1, got 0.5" in error_line(
        "index", corpus, tmp_path / "other", "--oversample", "0.5"
    )
    assert "argument --quantization: invalid choice: 'int4'" in error_line(
        "index", corpus, tmp_path / "other", "--quantization", "int4"
    )
