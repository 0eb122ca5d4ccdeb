"""Load test collections in the BEIR layout: a corpus, queries and graded relevance judgments.

A BEIR folder holds ``corpus.jsonl`` (one ``{"_id", "title", "text"}`` object per line),
``queries.jsonl`` (``{"_id", "text"}``) and ``qrels/<split>.tsv`` (``query-id<TAB>corpus-id<TAB>
score``, header optional). Each file may also be gzip-compressed with a ``.gz`` suffix.
Every problem in the files is reported as a :class:`DatasetError` naming the file, and the line
where there is one.
"""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine.errors import DatasetError
from hybrid_engine.ids import check_id
from hybrid_engine.live.documents import document_metadata

__all__ = [
    "Dataset",
    "DatasetError",
    "available_splits",
    "load_beir",
    "load_corpus",
    "load_numbered_corpus",
    "load_qrels",
    "load_queries",
    "read_corpus",
    "read_numbered_corpus",
    "sample_queries",
]

_QRELS_HEADER = ("query-id", "corpus-id", "score")
_MAX_IDS_IN_MESSAGE = 5


@dataclass(frozen=True)
class Dataset:
    """A test collection: documents, judged queries and their relevance grades.

    Attributes
    ----------
    name : str
        The folder name, e.g. ``"scifact"``.
    corpus : list of dict
        One ``{"_id": str, "title": str, "text": str}`` per document, in file order; ``title`` is
        ``""`` when the file has none. A document's position in this list is its id in search
        results.
    queries : dict of str to str
        Query id to text, only the queries judged in the split's qrels, in ``queries.jsonl`` order.
    qrels : dict of str to dict of str to int
        Query id to ``{doc id: grade}``. Doc ids missing from the corpus are kept (BEIR has some):
        they count as relevant documents that no system can retrieve.
    split : str
        The qrels split, e.g. ``"test"`` or ``"train"``.
    """

    name: str
    corpus: list[dict[str, Any]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    split: str = "test"


def sample_queries(dataset: Dataset, n: int | None, seed: int = 0) -> Dataset:
    """``dataset`` with ``n`` of its queries drawn without replacement by a seeded generator
    (kept in file order), and their qrels; the whole dataset when ``n`` is None or at least
    its number of queries. For configurations too slow for every query (a generator per
    query).

    Raises
    ------
    ValueError
        ``n`` below 1.
    """
    if n is None or n >= len(dataset.queries):
        return dataset
    if n < 1:
        raise ValueError(f"the number of sampled queries must be >= 1, got {n}")
    ids = list(dataset.queries)
    rng = np.random.default_rng(seed)
    picked = sorted(rng.choice(len(ids), size=n, replace=False).tolist())
    chosen = [ids[i] for i in picked]
    return replace(
        dataset,
        queries={q: dataset.queries[q] for q in chosen},
        qrels={q: dataset.qrels[q] for q in chosen},
    )


def load_beir(path: str | os.PathLike[str], split: str = "test") -> Dataset:
    """Load a BEIR-layout folder for one qrels split.

    Parameters
    ----------
    path : str or os.PathLike
        The dataset folder, holding ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``
        (each optionally ``.gz``).
    split : str, default "test"
        The qrels file to use; see :func:`available_splits`.

    Returns
    -------
    Dataset
        The corpus, the queries judged in ``split`` and their judgments.

    Raises
    ------
    DatasetError
        If the folder or a file is missing (the message lists the splits that exist), a line is
        malformed, or a judged query has no text in ``queries.jsonl``.
    """
    folder = _existing_folder(path)
    qrels_file = _find(folder / "qrels" / f"{split}.tsv")
    if qrels_file is None:
        raise DatasetError(
            f"{folder}: no qrels for split {split!r} (expected qrels/{split}.tsv or .tsv.gz); "
            f"available splits: {available_splits(folder) or 'none'}"
        )
    qrels = load_qrels(qrels_file)
    all_queries = load_queries(folder)
    missing = [query_id for query_id in qrels if query_id not in all_queries]
    if missing:
        raise DatasetError(
            f"{qrels_file}: {len(missing)} judged queries have no text in queries.jsonl, "
            f"e.g. {missing[:_MAX_IDS_IN_MESSAGE]}"
        )
    queries = {query_id: text for query_id, text in all_queries.items() if query_id in qrels}
    return Dataset(
        name=folder.name, corpus=load_corpus(folder), queries=queries, qrels=qrels, split=split
    )


def available_splits(path: str | os.PathLike[str]) -> list[str]:
    """List the qrels splits of a BEIR folder, sorted, e.g. ``["test", "train"]``.

    Parameters
    ----------
    path : str or os.PathLike
        The dataset folder.

    Returns
    -------
    list of str
        The names of ``qrels/*.tsv`` and ``qrels/*.tsv.gz`` without suffix; empty if there is no
        ``qrels`` folder.

    Raises
    ------
    DatasetError
        If the folder does not exist.
    """
    qrels_folder = _existing_folder(path) / "qrels"
    if not qrels_folder.is_dir():
        return []
    names = {entry.name for entry in qrels_folder.iterdir() if entry.is_file()}
    return sorted(
        {name.removesuffix(".gz").removesuffix(".tsv") for name in names if _is_tsv(name)}
    )


def load_corpus(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Load a corpus file, or the ``corpus.jsonl[.gz]`` of a folder.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.jsonl`` / ``.jsonl.gz`` file of ``{"_id", "title", "text"}`` objects, or a folder
        holding ``corpus.jsonl`` or ``corpus.jsonl.gz``.

    Returns
    -------
    list of dict
        ``{"_id": str, "title": str, "text": str}`` per document in file order, with
        ``"metadata"``: the line's ``"metadata"`` object and its other top-level fields
        (``live.documents.document_metadata``), when it has any; a missing or null title
        becomes ``""``; an integer ``_id`` becomes its decimal string (``ids.check_id``).

    Raises
    ------
    DatasetError
        If the file is missing, a line is not UTF-8 or not a JSON object, ``_id`` or ``text``
        is missing, an ``_id`` breaks the id rule (``ids.RULE``: ``true``, ``""``, ``1.5``...)
        or repeats.
    """
    return [doc for _, doc in load_numbered_corpus(path)[1]]


def load_numbered_corpus(
    path: str | os.PathLike[str],
) -> tuple[Path, list[tuple[int, dict[str, Any]]]]:
    """``load_corpus`` with the file it read (``path`` itself, or the folder's corpus file)
    and each document's 1-based line number, for messages that name a document's line.

    Raises
    ------
    DatasetError
        As ``load_corpus``.
    """
    file = _input_file(path, "corpus.jsonl")
    with _open_binary(file) as lines:
        return file, read_numbered_corpus(lines, file)


def read_corpus(
    lines: Iterable[str | bytes], source: str | os.PathLike[str]
) -> list[dict[str, Any]]:
    """The corpus in ``lines`` of JSON, as ``load_corpus`` reads a file (e.g. ``sys.stdin``).

    Parameters
    ----------
    lines : iterable of str or bytes
        One ``{"_id", "title", "text"}`` object per line (other keys as in ``load_corpus``);
        blank lines are skipped. Lines of ``bytes`` (``sys.stdin.buffer``) must be UTF-8.
    source : str or os.PathLike
        What errors name as the file, e.g. ``"<stdin>"``.

    Returns
    -------
    list of dict
        As ``load_corpus``.

    Raises
    ------
    DatasetError
        As ``load_corpus``, naming ``source`` and the line.
    """
    return [doc for _, doc in read_numbered_corpus(lines, source)]


def read_numbered_corpus(
    lines: Iterable[str | bytes], source: str | os.PathLike[str]
) -> list[tuple[int, dict[str, Any]]]:
    """``read_corpus``, each document with its 1-based line number in ``lines``.

    Raises
    ------
    DatasetError
        As ``read_corpus``.
    """
    corpus: list[tuple[int, dict[str, Any]]] = []
    seen: set[str] = set()
    for line_number, record in _parse_jsonl(lines, source):
        doc_id = _id_field(record, source, line_number, seen)
        title = record.get("title")
        doc: dict[str, Any] = {
            "_id": doc_id,
            "title": "" if title is None else str(title),
            "text": _text_field(record, source, line_number),
        }
        try:
            metadata = document_metadata(record, line_number)
        except (TypeError, ValueError) as exc:
            raise DatasetError(f"{source}, line {line_number}: {exc}") from None
        if metadata:
            doc["metadata"] = metadata
        corpus.append((line_number, doc))
    return corpus


def load_queries(path: str | os.PathLike[str]) -> dict[str, str]:
    """Load a queries file, or the ``queries.jsonl[.gz]`` of a folder.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.jsonl`` / ``.jsonl.gz`` file of ``{"_id", "text"}`` objects, or a folder holding
        ``queries.jsonl`` or ``queries.jsonl.gz``.

    Returns
    -------
    dict of str to str
        Query id to text, in file order.

    Raises
    ------
    DatasetError
        If the file is missing, a line is not a JSON object, ``_id`` or ``text`` is missing, or an
        ``_id`` repeats.
    """
    file = _input_file(path, "queries.jsonl")
    queries: dict[str, str] = {}
    seen: set[str] = set()
    for line_number, record in _read_jsonl(file):
        query_id = _id_field(record, file, line_number, seen)
        queries[query_id] = _text_field(record, file, line_number)
    return queries


def load_qrels(path: str | os.PathLike[str]) -> dict[str, dict[str, int]]:
    """Load a qrels TSV file (``query-id<TAB>corpus-id<TAB>score``, header line optional).

    Parameters
    ----------
    path : str or os.PathLike
        A ``.tsv`` or ``.tsv.gz`` file.

    Returns
    -------
    dict of str to dict of str to int
        Query id to ``{doc id: grade}``, queries in order of first appearance.

    Raises
    ------
    DatasetError
        If the file is missing, a row does not have 3 tab-separated columns, a score is not an
        integer, or a (query, doc) pair repeats.
    """
    file = _input_file(path, "qrels.tsv")
    qrels: dict[str, dict[str, int]] = {}
    with _open_binary(file) as lines:
        for line_number, line in _decoded(lines, file):
            row = line.rstrip("\r\n")
            if not row.strip():
                continue
            columns = row.split("\t")
            if line_number == 1 and tuple(columns) == _QRELS_HEADER:
                continue
            if len(columns) != 3:
                raise DatasetError(
                    f"{file}:{line_number}: expected 3 tab-separated columns "
                    f"(query-id, corpus-id, score), got {len(columns)}: {row!r}"
                )
            query_id, doc_id, score = columns
            try:
                grade = int(score)
            except ValueError:
                raise DatasetError(
                    f"{file}:{line_number}: score must be an integer grade, got {score!r}"
                ) from None
            judged = qrels.setdefault(query_id, {})
            if doc_id in judged:
                raise DatasetError(
                    f"{file}:{line_number}: pair ({query_id!r}, {doc_id!r}) is judged twice"
                )
            judged[doc_id] = grade
    return qrels


def _existing_folder(path: str | os.PathLike[str]) -> Path:
    folder = Path(path)
    if not folder.is_dir():
        raise DatasetError(f"dataset folder {folder} does not exist or is not a folder")
    return folder


def _find(file: Path) -> Path | None:
    """Return ``file`` or its ``.gz`` sibling, whichever exists (plain first), else None."""
    for candidate in (file, file.with_name(file.name + ".gz")):
        if candidate.is_file():
            return candidate
    return None


def _input_file(path: str | os.PathLike[str], default_name: str) -> Path:
    """Resolve a file argument: the file itself, or ``default_name[.gz]`` inside a folder."""
    given = Path(path)
    file = _find(given / default_name) if given.is_dir() else _find(given)
    if file is None:
        expected = given / default_name if given.is_dir() else given
        raise DatasetError(f"missing file {expected} (or {expected.name}.gz)")
    return file


def _is_tsv(name: str) -> bool:
    return name.endswith((".tsv", ".tsv.gz"))


def _open_binary(file: Path) -> io.BufferedIOBase:
    """``file``'s bytes, gunzipped for a ``.gz`` (decoded line by line: ``_decoded``)."""
    if file.suffix == ".gz":
        return gzip.open(file, "rb")
    return open(file, "rb")


def _decoded(
    lines: Iterable[str | bytes], file: str | os.PathLike[str]
) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each line, from 1; a line of ``bytes`` is decoded as UTF-8
    (a byte order mark ending line 1's too), line by line so that an error names its line
    (a text stream decodes ahead, by blocks)."""
    for line_number, line in enumerate(lines, start=1):
        if isinstance(line, str):
            yield line_number, line
            continue
        try:
            yield line_number, line.decode("utf-8-sig" if line_number == 1 else "utf-8")
        except UnicodeDecodeError as error:
            raise DatasetError(
                f"{file}:{line_number}: not UTF-8 (byte 0x{line[error.start]:02x} at byte "
                f"{error.start + 1} of the line); save the file as UTF-8"
            ) from None


def _read_jsonl(file: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``_parse_jsonl`` of a file's lines."""
    with _open_binary(file) as lines:
        yield from _parse_jsonl(lines, file)


def _parse_jsonl(
    lines: Iterable[str | bytes], file: str | os.PathLike[str]
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for each non-blank line; line numbers start at 1."""
    for line_number, line in _decoded(lines, file):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise DatasetError(
                f"{file}:{line_number}: malformed JSON ({error.msg} at column {error.colno})"
            ) from None
        if not isinstance(record, dict):
            raise DatasetError(
                f"{file}:{line_number}: expected a JSON object, got {type(record).__name__}"
            )
        yield line_number, record


def _id_field(
    record: dict[str, Any], file: str | os.PathLike[str], line_number: int, seen: set[str]
) -> str:
    if "_id" not in record:
        raise DatasetError(f'{file}:{line_number}: missing "_id" (a string or an integer)')
    try:
        identifier = check_id(record["_id"], '"_id"')
    except (TypeError, ValueError) as exc:
        raise DatasetError(f"{file}:{line_number}: {exc}") from None
    if identifier in seen:
        raise DatasetError(f"{file}:{line_number}: duplicate _id {identifier!r}")
    seen.add(identifier)
    return identifier


def _text_field(record: dict[str, Any], file: str | os.PathLike[str], line_number: int) -> str:
    text = record.get("text")
    if not isinstance(text, str):
        raise DatasetError(f'{file}:{line_number}: missing "text" (a string)')
    return text
