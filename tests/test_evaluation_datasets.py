"""Loader tests: the real collections' sizes, and every error case on small files in tmp_path."""

import gzip
import json
from pathlib import Path

import pytest

from hybrid_engine.evaluation import (
    DatasetError,
    available_splits,
    load_beir,
    load_corpus,
    load_qrels,
    load_queries,
    read_corpus,
)

# name -> (documents, judged test queries, test qrels pairs), from shared/data/README.md
BEIR_SIZES = {
    "scifact": (5183, 300, 339),
    "cranfield": (1400, 225, 1612),
    "cisi": (1460, 76, 3114),
    "med": (1033, 30, 696),
    "nfcorpus-partial": (3395, 323, 12334),
}
SCALE_SIZES = {"gcide": 126236, "wordnet": 117659, "wikipedia_summaries_en": 10033}
QUERY_LOG_SIZES = {
    "msmarco-passage-dev-small": 6980,
    "beir-quora": 10000,
    "beir-fiqa": 648,
    "beir-arguana": 1406,
    "beir-scidocs": 1000,
    "beir-trec-covid": 50,
}

CORPUS = [
    {"_id": "d1", "title": "First", "text": "alpha beta"},
    {"_id": "d2", "text": "gamma"},
    {"_id": "d3", "title": None, "text": "delta", "extra": 1},
]
QUERIES = [{"_id": "q1", "text": "alpha"}, {"_id": "q2", "text": "b"}, {"_id": "q3", "text": "g"}]
QRELS_ROWS = ["query-id\tcorpus-id\tscore", "q3\td2\t2", "q1\td1\t1", "q1\tmissing\t0"]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as file:
            file.write(text)
    else:
        path.write_text(text, encoding="utf-8")


def _jsonl(records: list[dict[str, object]]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def _make_dataset(folder: Path, *, gz: str = "", qrels_rows: list[str] = QRELS_ROWS) -> Path:
    _write(folder / f"corpus.jsonl{gz}", _jsonl(CORPUS))
    _write(folder / f"queries.jsonl{gz}", _jsonl(QUERIES))
    _write(folder / "qrels" / f"test.tsv{gz}", "\n".join(qrels_rows) + "\n")
    return folder


@pytest.mark.parametrize("name", sorted(BEIR_SIZES))
def test_real_collection_sizes(shared_data: Path, name: str) -> None:
    n_docs, n_queries, n_pairs = BEIR_SIZES[name]
    dataset = load_beir(shared_data / "beir" / name)
    assert dataset.name == name
    assert len(dataset.corpus) == n_docs
    assert len(dataset.queries) == n_queries
    assert sum(len(judged) for judged in dataset.qrels.values()) == n_pairs
    assert list(dataset.queries) == [
        q for q in load_queries(shared_data / "beir" / name) if q in dataset.qrels
    ]
    assert set(dataset.queries) == set(dataset.qrels)


def test_scifact_train_split(shared_data: Path) -> None:
    folder = shared_data / "beir" / "scifact"
    assert available_splits(folder) == ["test", "train"]
    train = load_beir(folder, split="train")
    assert len(train.queries) == 809
    assert sum(len(judged) for judged in train.qrels.values()) == 919


def test_cranfield_grades(shared_data: Path) -> None:
    qrels = load_beir(shared_data / "beir" / "cranfield").qrels
    assert {grade for judged in qrels.values() for grade in judged.values()} == {1, 2, 3, 4}


@pytest.mark.parametrize("name", sorted(SCALE_SIZES))
def test_scale_corpora(shared_data: Path, name: str) -> None:
    corpus = load_corpus(shared_data / "scale" / name / "corpus.jsonl.gz")
    assert len(corpus) == SCALE_SIZES[name]
    assert set(corpus[0]) == {"_id", "title", "text"}


@pytest.mark.parametrize("name", sorted(QUERY_LOG_SIZES))
def test_query_logs(shared_data: Path, name: str) -> None:
    queries = load_queries(shared_data / "queries" / f"{name}.jsonl")
    assert len(queries) == QUERY_LOG_SIZES[name]


def test_small_dataset_contents(tmp_path: Path) -> None:
    dataset = load_beir(_make_dataset(tmp_path / "tiny"))
    assert dataset.name == "tiny"
    assert dataset.corpus == [
        {"_id": "d1", "title": "First", "text": "alpha beta"},
        {"_id": "d2", "title": "", "text": "gamma"},
        {"_id": "d3", "title": "", "text": "delta", "metadata": {"extra": 1}},  # kept
    ]
    assert list(dataset.queries.items()) == [
        ("q1", "alpha"),
        ("q3", "g"),
    ]  # file order, judged only
    assert dataset.qrels == {"q3": {"d2": 2}, "q1": {"d1": 1, "missing": 0}}


def test_gzip_files_load_the_same(tmp_path: Path) -> None:
    plain = load_beir(_make_dataset(tmp_path / "plain"))
    zipped = load_beir(_make_dataset(tmp_path / "zipped", gz=".gz"))
    assert (zipped.corpus, zipped.queries, zipped.qrels) == (
        plain.corpus,
        plain.queries,
        plain.qrels,
    )
    assert available_splits(tmp_path / "zipped") == ["test"]


def test_read_corpus_reads_lines_as_load_corpus_reads_the_file(tmp_path: Path) -> None:
    file = tmp_path / "corpus.jsonl"
    _write(file, _jsonl(CORPUS))
    lines = _jsonl(CORPUS).splitlines(keepends=True)
    assert read_corpus(iter(lines), "<stdin>") == load_corpus(file)
    with pytest.raises(DatasetError, match=r"^<stdin>:3: duplicate _id 'd1'"):
        read_corpus(["\n", *lines[:1], *lines[:1]], "<stdin>")  # a blank line still counts


def test_qrels_header_is_optional(tmp_path: Path) -> None:
    with_header = load_beir(_make_dataset(tmp_path / "a")).qrels
    without = load_beir(_make_dataset(tmp_path / "b", qrels_rows=QRELS_ROWS[1:])).qrels
    assert with_header == without


def test_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="does not exist"):
        load_beir(tmp_path / "nowhere")


def test_missing_corpus_names_the_file(tmp_path: Path) -> None:
    folder = _make_dataset(tmp_path / "tiny")
    (folder / "corpus.jsonl").unlink()
    with pytest.raises(DatasetError, match=r"corpus\.jsonl"):
        load_beir(folder)


def test_missing_split_lists_available_ones(tmp_path: Path) -> None:
    folder = _make_dataset(tmp_path / "tiny")
    with pytest.raises(DatasetError, match=r"'dev'.*available splits: \['test'\]"):
        load_beir(folder, split="dev")


def test_malformed_json_line_is_located(tmp_path: Path) -> None:
    folder = _make_dataset(tmp_path / "tiny")
    lines = _jsonl(CORPUS).splitlines()
    lines[1] = lines[1][:-1]
    _write(folder / "corpus.jsonl", "\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=r"corpus\.jsonl:2: malformed JSON"):
        load_beir(folder)


@pytest.mark.parametrize(
    ("record", "message"),
    [({"title": "t", "text": "x"}, '"_id"'), ({"_id": "d9", "title": "t"}, '"text"')],
)
def test_missing_fields(tmp_path: Path, record: dict[str, str], message: str) -> None:
    file = tmp_path / "corpus.jsonl"
    _write(file, _jsonl([*CORPUS, record]))
    with pytest.raises(DatasetError, match=rf"corpus\.jsonl:4: missing {message}"):
        load_corpus(file)


def test_duplicate_doc_id(tmp_path: Path) -> None:
    file = tmp_path / "corpus.jsonl"
    _write(file, _jsonl([*CORPUS, CORPUS[0]]))
    with pytest.raises(DatasetError, match=r":4: duplicate _id 'd1'"):
        load_corpus(file)


@pytest.mark.parametrize(
    ("row", "message"),
    [("q1\td2", "expected 3 tab-separated columns"), ("q1\td2\t1.5", "score must be an integer")],
)
def test_bad_qrels_row_is_located(tmp_path: Path, row: str, message: str) -> None:
    file = tmp_path / "test.tsv"
    _write(file, "\n".join([*QRELS_ROWS, row]) + "\n")
    with pytest.raises(DatasetError, match=rf"test\.tsv:5: {message}"):
        load_qrels(file)


def test_judged_query_without_text(tmp_path: Path) -> None:
    folder = _make_dataset(tmp_path / "tiny", qrels_rows=[*QRELS_ROWS, "q7\td1\t1", "q8\td2\t1"])
    with pytest.raises(DatasetError, match=r"2 judged queries have no text.*'q7', 'q8'"):
        load_beir(folder)
