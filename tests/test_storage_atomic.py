"""Replacing an index directory is atomic: loads that race saves see one whole version, a save
killed at any step leaves a whole index at the path, load puts back what an interrupted save
moved aside, and a save never replaces another format's directory."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from hybrid_engine import BM25Index, IndexFormatError, SearchResult, storage

_rng = np.random.default_rng(9)
QUERIES = [" ".join(f"w{t}" for t in _rng.zipf(1.2, n) % 1500) for n in (1, 2, 3, 4) * 5]


def corpus(n_docs: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [
        " ".join(f"w{t}" for t in rng.zipf(1.2, rng.integers(5, 40)) % 1500) for _ in range(n_docs)
    ]


class Versions:
    """Three indexes of different corpora (told apart by their sizes) and the results a fresh
    build of each gives."""

    def __init__(self) -> None:
        self.indexes = [
            BM25Index.build(corpus(n, seed)) for seed, n in enumerate((2000, 2300, 2600))
        ]
        self.expected = [index.search(QUERIES, 10) for index in self.indexes]

    def which(self, loaded: BM25Index) -> int:
        """The version ``loaded`` is, after checking that it searches exactly like it."""
        version = [len(index) for index in self.indexes].index(len(loaded))
        assert_equal(loaded.search(QUERIES, 10), self.expected[version])
        return version


def assert_equal(got: SearchResult, expected: SearchResult) -> None:
    np.testing.assert_array_equal(got.ids, expected.ids)
    np.testing.assert_array_equal(got.scores, expected.scores)


@pytest.fixture(scope="module")
def versions() -> Versions:
    return Versions()


@pytest.fixture(params=["renameat2", "no renameat2"])
def swap(request, monkeypatch) -> str:
    """Replace by renameat2's exchange, or as where it is missing (macOS, NFS, old libc): in
    two renames, with a checked ``os.rename`` for a first save."""
    if request.param == "no renameat2":
        monkeypatch.setattr("hybrid_engine.storage._rename._RENAMEAT2", None)
    return request.param


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# --- readers racing a writer -------------------------------------------------------------------


def test_loads_during_saves_each_see_one_whole_version(versions, tmp_path, swap) -> None:
    path = tmp_path / "index"
    versions.indexes[0].save(path)
    saved = threading.Event()
    errors: list[BaseException] = []

    def save_repeatedly() -> None:
        try:
            for i in range(40):
                versions.indexes[i % 3].save(path)
        except BaseException as exc:
            errors.append(exc)
        finally:
            saved.set()

    writer = threading.Thread(target=save_repeatedly)
    writer.start()
    seen = set()
    for loads in range(2000):
        if saved.is_set():
            break
        try:
            seen.add(versions.which(BM25Index.load(path, mmap=loads % 2 == 1)))
        except Exception as exc:
            errors.append(exc)
    writer.join()
    assert errors == []
    assert seen  # loads ran while the writer saved
    versions.indexes[0].save(path)  # no reader holds a previous version now: all removed
    assert names(tmp_path) == ["index"]


def test_a_pinned_directory_keeps_its_version_through_saves(versions, tmp_path) -> None:
    path = tmp_path / "index"
    versions.indexes[0].save(path)
    with storage.open_index_dir(path) as root:
        versions.indexes[1].save(path)
        versions.indexes[2].save(path)
        assert versions.which(BM25Index.load(root)) == 0
        assert versions.which(BM25Index.load(path)) == 2
        assert versions.which(BM25Index.load(root, mmap=True)) == 0
    versions.indexes[1].save(path)
    assert names(tmp_path) == ["index"]


def test_without_proc_a_pinned_directory_keeps_its_files(versions, tmp_path, monkeypatch) -> None:
    """Elsewhere than Linux the path itself is yielded: a save makes it name the new version,
    but the pinned version's files stay until the block ends."""
    monkeypatch.setattr(storage.replace, "_PROC_FD", tmp_path / "no-proc")
    path = tmp_path / "index"
    versions.indexes[0].save(path)
    with storage.open_index_dir(path) as root:
        assert root == path
        versions.indexes[1].save(path)
        (kept,) = (p for p in tmp_path.iterdir() if p.name.startswith(".index.old-"))
        assert versions.which(BM25Index.load(kept / "new")) == 0
    versions.indexes[2].save(path)
    assert names(tmp_path) == ["index"]


def test_a_pinned_composite_is_read_from_one_save(versions, tmp_path) -> None:
    """Sub-directories (``directories=``, as the hybrid index saves its legs) read under one
    ``open_index_dir`` come from the save its manifest does."""
    path = tmp_path / "outer"

    def save(version: int) -> None:
        index = versions.indexes[version]
        storage.write_index_dir(
            path, "test.outer", 1, {"version": version}, {}, directories={"bm25": index.save}
        )

    save(0)
    with storage.open_index_dir(path) as root:
        save(1)
        manifest, _ = storage.read_index_dir(root, "test.outer", 1)
        assert manifest["version"] == 0
        assert versions.which(BM25Index.load(root / "bm25")) == 0
    save(2)
    assert names(tmp_path) == ["outer"]
    assert names(path) == ["bm25", "manifest.json"]
    assert versions.which(BM25Index.load(path / "bm25")) == 2


# --- a save killed at any step -----------------------------------------------------------------


class Killed(BaseException):
    """The simulated death of the saving process."""


class _Doom:
    """From the ``step``-th change of a name on disk on (a directory made, a rename or exchange,
    a removal), each raises ``Killed`` before it happens: the disk is left as the process's
    death would leave it, cleanup handlers included."""

    EVENTS = frozenset({"os.mkdir", "os.rename", "os.remove", "os.rmdir", "ctypes.call_function"})

    def __init__(self) -> None:
        self.step: int | None = None
        self.count = 0
        sys.addaudithook(self.audit)

    def audit(self, event: str, args: tuple) -> None:
        if self.step is not None and event in self.EVENTS:
            self.count += 1
            if self.count >= self.step:
                raise Killed(event)

    @contextmanager
    def at(self, step: int) -> Iterator[None]:
        self.step, self.count = step, 0
        try:
            yield
        finally:
            self.step = None


_doom = _Doom()  # audit hooks stay for the process: one, disarmed outside ``at``


def kill_a_save(versions, path: Path, version: int, step: int) -> bool:
    """Save ``version`` at ``path``, killed at ``step``; whether the save finished first."""
    try:
        with _doom.at(step):
            versions.indexes[version].save(path)
    except Killed:
        return False
    return True


def load_or_error(versions, path: Path) -> int | str:
    try:
        return versions.which(BM25Index.load(path))
    except Exception as exc:
        return repr(exc)


def test_a_save_killed_at_any_step_leaves_a_whole_index(versions, tmp_path, swap) -> None:
    found, litter = {}, {}
    for step in range(1, 100):
        folder = tmp_path / str(step)
        versions.indexes[0].save(folder / "index")
        finished = kill_a_save(versions, folder / "index", 1, step)
        found[step] = load_or_error(versions, folder / "index")
        versions.indexes[2].save(folder / "index")  # removes what the killed save left
        if names(folder) != ["index"]:
            litter[step] = names(folder)
        if finished:
            break
    assert finished, "a save takes fewer than 100 steps"
    assert {step: got for step, got in found.items() if got not in (0, 1)} == {}
    assert found[step] == 1
    assert litter == {}


def test_a_first_save_killed_at_any_step_leaves_nothing_or_the_index(
    versions, tmp_path, swap
) -> None:
    found, litter = {}, {}
    for step in range(1, 100):
        path = tmp_path / str(step) / "index"
        path.parent.mkdir()
        finished = kill_a_save(versions, path, 0, step)
        found[step] = load_or_error(versions, path) if path.exists() else "nothing"
        versions.indexes[1].save(path)
        if names(path.parent) != ["index"]:
            litter[step] = names(path.parent)
        if finished:
            break
    assert finished, "a save takes fewer than 100 steps"
    assert {step: got for step, got in found.items() if got not in (0, "nothing")} == {}
    assert litter == {}


# --- interrupted saves that load puts back or explains -----------------------------------------


def interrupted(versions, folder: Path, *slots: str) -> Path:
    """The state the two-rename save of earlier versions left when killed between its renames:
    nothing at ``folder / "index"``, the previous index in ``folder / slot / "index"``."""
    for slot in slots:
        versions.indexes[0].save(folder / slot / "index")
    return folder / "index"


def test_load_puts_back_the_index_an_interrupted_save_moved_aside(versions, tmp_path) -> None:
    path = interrupted(versions, tmp_path, ".index.old-k2j4x9_a")
    assert versions.which(BM25Index.load(path)) == 0
    assert names(tmp_path) == ["index"]
    assert versions.which(BM25Index.load(path, mmap=True)) == 0


def test_load_explains_two_interrupted_saves(versions, tmp_path) -> None:
    path = interrupted(versions, tmp_path, ".index.old-aaaaaaaa", ".index.old-bbbbbbbb")
    with pytest.raises(
        IndexFormatError, match=r"(?s)interrupted saves.*old-aaaaaaaa.*old-bbbbbbbb.*mv"
    ):
        BM25Index.load(path)
    assert names(tmp_path) == [".index.old-aaaaaaaa", ".index.old-bbbbbbbb"]


def test_load_explains_an_index_it_cannot_put_back(versions, tmp_path, monkeypatch) -> None:
    path = interrupted(versions, tmp_path, ".index.old-aaaaaaaa")

    def refuse(src, dst) -> None:
        raise PermissionError(13, "Permission denied", str(src))

    monkeypatch.setattr("hybrid_engine.storage._rename.rename_noreplace", refuse)
    with pytest.raises(IndexFormatError, match=r"interrupted.*could not be moved back.*mv .*"):
        BM25Index.load(path)
    assert names(tmp_path) == [".index.old-aaaaaaaa"]


def test_leftovers_of_other_names_are_not_taken(versions, tmp_path) -> None:
    """``.index.old-x.old-…`` belongs to an index named ``index.old-x``, not to ``index``."""
    interrupted(versions, tmp_path, ".index.old-x.old-aaaaaaaa")
    with pytest.raises(IndexFormatError, match="is not a directory"):
        BM25Index.load(tmp_path / "index")
    versions.indexes[1].save(tmp_path / "index")
    assert names(tmp_path) == [".index.old-x.old-aaaaaaaa", "index"]


# --- the renames ---------------------------------------------------------------------------------


def test_renames_without_replacing_and_exchanges(tmp_path, swap) -> None:
    from hybrid_engine.storage import _rename

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "file").write_text("b")
    with pytest.raises(FileExistsError):
        _rename.rename_noreplace(tmp_path / "a", tmp_path / "b")
    assert names(tmp_path) == ["a", "b"] and names(tmp_path / "b") == ["file"]
    _rename.rename_noreplace(tmp_path / "a", tmp_path / "c")
    assert names(tmp_path) == ["b", "c"]
    assert _rename.exchange(tmp_path / "b", tmp_path / "c") == (swap == "renameat2")
    assert names(tmp_path / ("c" if swap == "renameat2" else "b")) == ["file"]
    with pytest.raises(FileNotFoundError):
        _rename.rename_noreplace(tmp_path / "missing", tmp_path / "d")


# --- what a save refuses to replace ------------------------------------------------------------


def test_refuses_to_replace_another_formats_directory(versions, tmp_path) -> None:
    model = tmp_path / "model"
    storage.write_index_dir(
        model, "hybrid_engine.model", 1, {}, {}, {"model.onnx": lambda f: f.write_bytes(b"w")}
    )
    before = {p.name: p.read_bytes() for p in model.iterdir()}
    with pytest.raises(
        FileExistsError,
        match=r"of format 'hybrid_engine\.model', not 'hybrid_engine\.bm25'.*choose another path",
    ):
        versions.indexes[0].save(model)
    assert {p.name: p.read_bytes() for p in model.iterdir()} == before
    assert names(tmp_path) == ["model"]


def test_refuses_a_directory_whose_manifest_is_unreadable(versions, tmp_path) -> None:
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "manifest.json").write_text("{not json")
    with pytest.raises(FileExistsError, match=r"unreadable manifest\.json.*remove it"):
        versions.indexes[0].save(tmp_path / "odd")
    assert names(tmp_path / "odd") == ["manifest.json"]


def test_refuses_a_directory_that_is_no_index(versions, tmp_path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("keep")
    with pytest.raises(FileExistsError, match="is not a hybrid_engine index; remove it"):
        versions.indexes[0].save(tmp_path / "notes")
    assert names(tmp_path) == ["notes"] and names(tmp_path / "notes") == ["todo.txt"]


def test_replaces_its_own_format_of_another_version(versions, tmp_path) -> None:
    path = tmp_path / "index"
    storage.write_index_dir(path, "hybrid_engine.bm25", 0, {}, {})
    versions.indexes[1].save(path)
    assert versions.which(BM25Index.load(path)) == 1
    assert names(tmp_path) == ["index"]
