"""``ShardedIndex`` on a local Ray cluster this module starts: for 1, 2 and 4 shards its
results equal one ``HybridIndex`` over the same documents (BM25 ids and scores exactly; the
hybrid top 10 with its scores, the dense legs being exact), after mutations too, under
filters, reranking and MMR; and a killed shard actor never yields a wrong result.

Both sides read document vectors from one embedding cache: the int8 bi-encoder quantizes a
batch's activations together, so a document's vector depends on the batch it was encoded in,
and shards batch their documents differently from one index (docs/scaling.md).
"""

from __future__ import annotations

import resource
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import ray

from hybrid_engine import Analyzer, EmbeddingCache, HybridIndex, Stack
from hybrid_engine.distributed import ShardedIndex, ShardUnavailableError
from hybrid_engine.distributed.cluster import ShardCalls
from hybrid_engine.distributed.partition import SEQ_FIELD, shard_of
from hybrid_engine.distributed.search import ShardedSearch
from hybrid_engine.distributed.worker import ShardWorker
from hybrid_engine.engine.search import SEARCH_DEFAULTS
from hybrid_engine.errors import DuplicateIdError, UnknownIdError
from hybrid_engine.evaluation import load_beir
from hybrid_engine.pipeline.plan import SearchPlan

pytestmark = pytest.mark.slow

N_DOCS = 300
QUERIES = 40
CACHED = {"embedding_cache": True}


class OverlapScorer:
    """A cross-encoder stand-in whose order differs from the fused one."""

    name = "overlap"
    training = None

    def score(self, queries: Any, passages: Any) -> np.ndarray:
        return np.array(
            [
                len(set(q.split()) & set(p.split())) - 0.01 * len(p)
                for q, p in zip(queries, passages)
            ],
            np.float32,
        )


@pytest.fixture(scope="module")
def data(shared_data: Path) -> dict[str, Any]:
    dataset = load_beir(shared_data / "beir" / "scifact", split="test")
    rng = np.random.default_rng(7)
    corpus = [
        {
            **doc,
            "metadata": {"year": int(rng.integers(2000, 2024)), "tag": str(rng.choice(["a", "b"]))},
        }
        for doc in dataset.corpus[:N_DOCS]
    ]
    extra = [
        {**doc, "metadata": {"year": 2030, "tag": "c"}}
        for doc in dataset.corpus[N_DOCS : N_DOCS + 60]
    ]
    return {"corpus": corpus, "extra": extra, "queries": list(dataset.queries.values())[:QUERIES]}


@pytest.fixture(scope="module")
def single(data: dict[str, Any], model_path: Path) -> HybridIndex:
    """One index over the same documents (exact dense: fewer than its exact threshold)."""
    return HybridIndex.build(data["corpus"], embedding_cache=EmbeddingCache())


def _build(data: dict[str, Any], tmp_path: Path, n_shards: int, **options: Any) -> ShardedIndex:
    return ShardedIndex.build(
        data["corpus"],
        tmp_path / f"sharded-{n_shards}",
        n_shards=n_shards,
        build_options=CACHED,
        **options,
    )


def _legs(index: ShardedIndex, queries: list[str], width: int, where: Any = None) -> dict:
    """The merged top ``width`` of every leg, as (doc ids, scores) per query."""
    plan = SearchPlan.checked(
        queries,
        10,
        retrievers=index.retrievers,
        verdict=None,
        dim=None,
        **{**SEARCH_DEFAULTS, "fusion": "dbsf", "depth": width, "filter": where},
    )
    search = ShardedSearch(index._shards, index.generation, plan, {})
    found = search.legs(queries, None, None)
    documents = search.fetch("documents", np.concatenate([r.ids for r in found.values()]))
    return _named(found, lambda seq: documents[seq]["id"])


def _single_legs(engine: HybridIndex, queries: list[str], width: int, where: Any = None) -> dict:
    from hybrid_engine.metadata import Filter

    snapshot = engine.pinned()._snapshot
    allowed = snapshot.allowed(None if where is None else Filter.compile(where))
    vectors = engine.encoder.encode(queries)
    found = {
        "bm25": snapshot.search_bm25(queries, width, None, allowed),
        "dense": snapshot.search_dense(vectors, width, None, allowed),
    }
    return _named(found, snapshot.doc_id)


def _named(found: dict[str, Any], doc_id: Any) -> dict:
    """Each leg's rows as (the doc ids of its hits, by ``doc_id`` of a result id; their
    scores), padding left out."""
    return {
        leg: [
            ([doc_id(int(i)) for i in ids if i != -1], scores[np.isfinite(scores)])
            for ids, scores in zip(result.ids, result.scores, strict=True)
        ]
        for leg, result in found.items()
    }


def _assert_same_legs(sharded: dict, single: dict) -> None:
    assert sharded.keys() == single.keys()
    for leg in single:
        for (ids_a, scores_a), (ids_b, scores_b) in zip(sharded[leg], single[leg], strict=True):
            assert ids_a == ids_b, leg
            np.testing.assert_array_equal(scores_a, scores_b)


def _assert_same_hits(a: Any, b: Any) -> None:
    assert a.doc_ids == b.doc_ids
    np.testing.assert_array_equal(a.scores, b.scores)
    for hits_a, hits_b in zip(a.hits(), b.hits(), strict=True):
        for x, y in zip(hits_a, hits_b, strict=True):
            assert (x.id, x.title, x.text, x.metadata) == (y.id, y.title, y.text, y.metadata)


@pytest.mark.parametrize("n_shards", [1, 2, 4])
def test_results_equal_one_index(
    cluster: None, data: dict[str, Any], single: HybridIndex, tmp_path: Path, n_shards: int
) -> None:
    queries = data["queries"]
    index = _build(data, tmp_path, n_shards)
    try:
        assert len(index) == N_DOCS
        # BM25 with the collection's statistics: ids and scores exactly; dense exact.
        _assert_same_legs(_legs(index, queries, 100), _single_legs(single, queries, 100))
        _assert_same_hits(index.search(queries, 10), single.search(queries, 10))
        for fusion in ("rrf", "combsum"):
            _assert_same_hits(
                index.search(queries, 10, fusion=fusion, weights={"dense": 2.0}),
                single.search(queries, 10, fusion=fusion, weights={"dense": 2.0}),
            )
        where = {"$or": [{"year": {"$gte": 2015}}, {"tag": "b"}]}
        _assert_same_legs(
            _legs(index, queries, 100, where), _single_legs(single, queries, 100, where)
        )
        _assert_same_hits(
            index.search(queries, 10, filter=where), single.search(queries, 10, filter=where)
        )
        _assert_same_hits(index.search(queries, 10, mmr=0.5), single.search(queries, 10, mmr=0.5))
        # The same options as one index (one SearchPlan): a stack, the dense leg's queries as
        # vectors (other queries' vectors, so that the texts could not give the same hits).
        stack = Stack(retrievers=("bm25", "dense"), fusion="rrf", weights={"bm25": 2.0}, depth=50)
        _assert_same_hits(
            index.search(queries, 10, stack=stack), single.search(queries, 10, stack=stack)
        )
        vectors = single.encoder.encode(queries[::-1])
        _assert_same_hits(
            index.search(queries, 10, query_vectors=vectors),
            single.search(queries, 10, query_vectors=vectors),
        )
        with pytest.raises(ValueError, match=r"give either stack= or fusion"):
            index.search(queries, 10, stack=stack, depth=20)
        # Facets and rescoring read every fused candidate's metadata from its shard.
        decay = {"field": "year", "origin": 2023, "scale": 5, "decay": 0.5}
        for options in (
            {"facets": ["year", "tag"]},
            {"decay": decay, "filter": where},
            {"expression": "score * decay + 0.01 * year", "decay": decay, "offset": 3},
        ):
            got, expected = (
                index.search(queries, 10, **options),
                single.search(queries, 10, **options),
            )
            _assert_same_hits(got, expected)
            assert got.facets == expected.facets
        # A filter passing fewer than k documents: every one of them, on every shard.
        few = {"year": {"$lte": 2000}}
        _assert_same_hits(
            index.search(queries, 10, filter=few), single.search(queries, 10, filter=few)
        )
        # A huge k holds no more than the documents (issue 24): the same hits as one index.
        huge = index.search(queries[:2], 10**9)
        assert huge.scores.shape == (2, N_DOCS)
        _assert_same_hits(huge, single.search(queries[:2], 10**9))
        # Blank queries have no hits, as in one index.
        _assert_same_hits(index.search(["", queries[0]], 5), single.search(["", queries[0]], 5))
        for blanks in (["", queries[0]], [" "]):
            got = index.search(blanks, 5, facets=["tag"])
            expected = single.search(blanks, 5, facets=["tag"])
            assert got.facets == expected.facets
            assert got.highlights() == expected.highlights()
            assert got.explain() == expected.explain()
        assert all(SEQ_FIELD not in hit.metadata for hit in index.search(queries, 10).hits()[0])
    finally:
        index.close()


def test_built_from_a_ray_dataset(
    cluster: None, data: dict[str, Any], single: HybridIndex, tmp_path: Path
) -> None:
    queries = data["queries"]
    rows = ray.data.from_items(data["corpus"])
    index = ShardedIndex.build(rows, tmp_path / "from-rows", n_shards=2, build_options=CACHED)
    try:
        _assert_same_hits(index.search(queries, 10), single.search(queries, 10))
    finally:
        index.close()


def test_reranking_runs_once_on_the_merged_candidates(
    cluster: None, data: dict[str, Any], single: HybridIndex, tmp_path: Path
) -> None:
    queries = data["queries"]
    index = _build(data, tmp_path, 2, reranker=OverlapScorer())
    try:
        expected = single.with_reranker(OverlapScorer()).search(queries, 10, rerank=30)  # type: ignore[arg-type]
        _assert_same_hits(index.search(queries, 10, rerank=30), expected)
        # Measured twice (the first run is a warm-up), the reranker then fits a generous
        # budget and not one already spent: skipped, the fused ranking served, as one index.
        roomy = index.search(queries, 10, rerank=30, budget_ms=60_000.0)
        _assert_same_hits(roomy, expected)
        assert roomy.skipped == []
        tight = index.search(queries, 10, rerank=30, budget_ms=0.001)
        assert tight.skipped == ["rerank"] and "rerank" not in tight.timings
        _assert_same_hits(tight, single.search(queries, 10))
    finally:
        index.close()


def test_mutations_equal_one_live_index(
    cluster: None, data: dict[str, Any], tmp_path: Path, model_path: Path
) -> None:
    corpus, extra, queries = data["corpus"], data["extra"], data["queries"]
    one = HybridIndex.build(corpus, embedding_cache=EmbeddingCache())
    index = _build(data, tmp_path, 4)
    try:
        changed = [{**doc, "text": doc["text"] + " revised"} for doc in corpus[10:30]]
        gone = [doc["_id"] for doc in corpus[50:90]]
        for engine in (one, index):
            assert engine.add(extra) == [doc["_id"] for doc in extra]
            engine.upsert(changed)
            engine.delete(gone)
        one.commit(embedding_cache=EmbeddingCache())
        index.commit()
        assert len(index) == len(one)
        _assert_same_legs(_legs(index, queries, 100), _single_legs(one, queries, 100))
        _assert_same_hits(index.search(queries, 10), one.search(queries, 10))
        index.merge()
        _assert_same_hits(index.search(queries, 10), one.search(queries, 10))
        # Refusals name the id and stage nothing on any shard.
        with pytest.raises(DuplicateIdError, match=extra[0]["_id"]):
            index.add([{"_id": "new-1", "text": "x"}, extra[0]])
        with pytest.raises(UnknownIdError, match="no-such-id"):
            index.delete([corpus[0]["_id"], "no-such-id"])
        with pytest.raises(TypeError, match=r"ids\[1\] is bool"):
            index.delete([corpus[0]["_id"], True])
        with pytest.raises(ValueError, match="is empty"):
            index.add([{"_id": "", "text": "x"}])
        assert index.add([{"_id": 4242, "text": "an int id"}]) == ["4242"]  # its decimal string
        assert index.delete([4242]) == 1
        with pytest.raises(ValueError, match=SEQ_FIELD):
            index.add([{"_id": "new-2", "text": "x", "metadata": {SEQ_FIELD: 1}}])
        index.commit()
        assert len(index) == len(one)
        assert index.search(queries[:1], 1).doc_ids == one.search(queries[:1], 1).doc_ids
    finally:
        index.close()
        one.close()


def test_reopened_index_answers_as_before(
    cluster: None, data: dict[str, Any], tmp_path: Path
) -> None:
    queries = data["queries"]
    index = _build(data, tmp_path, 2)
    before = index.search(queries, 10)
    index.close()
    again = ShardedIndex.open(tmp_path / "sharded-2")
    try:
        _assert_same_hits(again.search(queries, 10), before)
        again.add(data["extra"][:3])  # the collection's order continues after the last place
        again.commit()
        assert len(again) == N_DOCS + 3
    finally:
        again.close()


def test_a_killed_shard_never_gives_a_wrong_result(
    cluster: None, data: dict[str, Any], tmp_path: Path
) -> None:
    """A query loop while shard 1's actor is killed: every answer is the full one, or says
    shard 1 is missing and holds only shard 0's documents; Ray restarts the actor from its
    last commit and the answers are whole again. An actor killed for good leaves its shard
    missing from every answer, and ``strict`` searches raise."""
    queries = data["queries"][:10]
    index = _build(data, tmp_path, 2, timeout_s=1.0)
    try:
        index.search(queries, 10)  # the actors' first search compiles and loads (can pass 1 s)
        expected = index.search(queries, 10, strict=True)  # the reference is a whole answer
        answers: list[tuple[float, Any]] = []
        stop = threading.Event()

        def loop() -> None:
            while not stop.is_set():
                answers.append((time.monotonic(), index.search(queries, 10)))

        thread = threading.Thread(target=loop)
        thread.start()
        time.sleep(1.0)
        killed = time.monotonic()
        ray.kill(index.actors[1][0], no_restart=False)
        while time.monotonic() < killed + 120:
            time.sleep(0.5)
            after = [r for t, r in answers if t > killed + 0.5]
            if len(after) >= 3 and all(r.complete for r in after[-3:]):
                break
        stop.set()
        thread.join(timeout=60)
        assert all(r.complete for r in after[-3:]), "the shard did not come back"
        for result in (r for _, r in answers):
            _assert_right(result, expected)
        ray.kill(index.actors[1][0], no_restart=True)
        result = index.search(queries, 10)
        assert 1 in result.missing_shards
        _assert_right(result, expected)
        with pytest.raises(ShardUnavailableError, match="shard 1"):
            index.search(queries, 10, strict=True)
    finally:
        index.close()


def _assert_right(result: Any, expected: Any) -> None:
    """``result`` is ``expected``, or it names the shards that did not answer (shard 1, or on
    a loaded machine one slower than the timeout) and holds none of their documents."""
    if result.complete:
        assert result.doc_ids == expected.doc_ids
    else:
        for row in result.doc_ids:
            assert all(shard_of(doc_id, 2) not in result.missing_shards for doc_id in row)


def test_a_replica_answers_for_its_killed_writer(
    cluster: None, data: dict[str, Any], tmp_path: Path
) -> None:
    """Two actors per shard: with shard 1's writer killed, searches go on through its read
    replica, whole and right; the writer comes back, and what it commits next reaches the
    replica too."""
    queries = data["queries"][:10]
    index = _build(data, tmp_path, 2, replicas=2, timeout_s=5.0)
    try:
        expected = index.search(queries, 10)
        for _ in range(4):  # every replica takes its turn
            assert index.search(queries, 10).doc_ids == expected.doc_ids
        ray.kill(index.actors[1][0], no_restart=False)
        for _ in range(4):
            result = index.search(queries, 10)
            assert result.complete
            assert result.doc_ids == expected.doc_ids
        new = {**data["extra"][0], "text": "zyxwvut quasar " + data["extra"][0]["text"]}
        index.wait_ready()  # the writer's restart
        index.add([new])
        index.commit()
        for _ in range(4):
            assert index.search(["zyxwvut quasar"], 1).doc_ids == [[new["_id"]]]
        # A writer killed for good: writes are refused, searches go on through the replica.
        ray.kill(index.actors[1][0], no_restart=True)
        routed_to_1 = next(d for d in data["extra"][1:] if shard_of(d["_id"], 2) == 1)
        with pytest.raises(ShardUnavailableError, match="wait_ready"):
            index.add([routed_to_1])
        for _ in range(4):
            assert index.search(["zyxwvut quasar"], 1).complete
    finally:
        index.close()


def test_rss_mib_is_the_resident_memory_of_its_process(tmp_path: Path) -> None:
    """In-process: within the peak resident memory ``getrusage`` reports, and grown by a
    256 MiB array once it is written (by at least 200 MiB: in a long session the process's
    other threads may free memory meanwhile)."""
    worker = ShardWorker(str(tmp_path / "no-shard"), {}, {})
    before = worker.rss_mib()
    block = np.ones(256 * 2**20 // 8)
    after = worker.rss_mib()
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert 0 < before and after <= peak_mib + 1
    assert after - before >= 200, (before, after)
    del block


def test_a_language_analyzer_reaches_every_shard(cluster: None, tmp_path: Path) -> None:
    """``bm25_options={"analyzer": AnalyzerConfig(...)}`` (saved as its dict): two Spanish
    shards score as one Spanish index, and the reopened index keeps the analyzer."""
    from hybrid_engine import AnalyzerConfig

    spanish = AnalyzerConfig.for_language("es")
    docs = [
        {"_id": f"d{i}", "text": text}
        for i, text in enumerate(
            [
                "Los niños cantaban canciones en el patio de la escuela.",
                "El niño buscó su canción favorita en internet.",
                "El perro corre por el parque de la ciudad.",
                "Las búsquedas de canciones infantiles crecen cada año.",
            ]
            * 5
        )
    ]
    options = {"retrievers": ["bm25"], "bm25_options": {"analyzer": spanish}}
    single = HybridIndex.build(docs, retrievers=["bm25"], bm25_options={"analyzer": spanish})
    queries = ["buscar canciones", "los niños cantan"]
    index = ShardedIndex.build(docs, tmp_path / "es", n_shards=2, build_options=options)
    try:
        _assert_same_hits(index.search(queries, 5), single.search(queries, 5))
    finally:
        index.close()
    reopened = ShardedIndex.open(tmp_path / "es")
    try:
        _assert_same_hits(reopened.search(queries, 5), single.search(queries, 5))
    finally:
        reopened.close()


def test_quoted_phrases_narrow_every_shard(cluster: None, tmp_path: Path) -> None:
    """``bm25_options={"positions": True}``: two shards answer a batch of queries quoting
    different phrases as one index over the same documents does."""
    texts = [
        "heart attack risk in winter",
        "the attack on the heart of the city",
        "risk of a heart attack after surgery",
        "blood pressure and heart risk",
    ]
    docs = [{"_id": f"d{i}", "text": text} for i, text in enumerate(texts * 5)]
    options = {"retrievers": ["bm25"], "bm25_options": {"positions": True}}
    single = HybridIndex.build(docs, retrievers=["bm25"], bm25_options={"positions": True})
    queries = ['"heart attack" risk', "heart risk", '"heart risk"']
    index = ShardedIndex.build(docs, tmp_path / "p", n_shards=2, build_options=options)
    try:
        sharded = index.search(queries, 20)
        _assert_same_hits(sharded, single.search(queries, 20))
        assert {hit.id for hit in sharded.hit_lists[0]} == {
            f"d{i}" for i in range(20) if i % 4 in (0, 2)
        }
    finally:
        index.close()


def test_a_commit_sends_only_the_terms_it_changed(cluster: None, tmp_path: Path) -> None:
    """After the whole exchange of the build, a commit gathers each shard's changes
    (``bm25_delta``) and sends the new counts of exactly the terms of the documents it added
    and deleted (the analyzer's terms, the oracle here); the scores stay those of one index."""
    texts = ["alpha beta gamma", "beta delta", "gamma epsilon zeta", "eta theta"] * 5
    docs = [{"_id": f"d{i}", "text": text} for i, text in enumerate(texts)]
    single = HybridIndex.build(docs, retrievers=["bm25"])
    index = ShardedIndex.build(
        docs, tmp_path / "s", n_shards=2, build_options={"retrievers": ["bm25"]}
    )
    sent: dict[str, list[Any]] = {}
    gather = ShardCalls.gather

    def recorded(self: ShardCalls, method: str, args: Any, **kwargs: Any) -> Any:
        sent.setdefault(method, []).extend(a for a in args if a is not None)
        return gather(self, method, args, **kwargs)

    try:
        added = [{"_id": "new", "text": "kappa lambda beta"}]
        for engine in (single, index):
            engine.add(added)
            engine.delete(["d3"])
        ShardCalls.gather = recorded  # type: ignore[method-assign]
        index.commit()
        ShardCalls.gather = gather  # type: ignore[method-assign]
        single.commit()
        assert "bm25_counts" not in sent and "prepare" not in sent
        analyzer = Analyzer()
        changed = set(analyzer.analyze(added[0]["text"])) | set(analyzer.analyze(texts[3]))
        live = [analyzer.analyze(t) for i, t in enumerate(texts) if i != 3]
        live.append(analyzer.analyze(added[0]["text"]))
        assert len(sent["prepare_delta"]) == 2  # one call per shard
        for _, _, stats, terms, doc_freqs in sent["prepare_delta"]:
            assert set(terms) == changed
            assert stats == (len(live), sum(len(terms) for terms in live))
            expected = {term: sum(term in doc for doc in live) for term in terms}
            assert dict(zip(terms, doc_freqs.tolist(), strict=True)) == expected
        queries = ["beta kappa", "eta theta", "gamma"]
        _assert_same_hits(index.search(queries, 10), single.search(queries, 10))
    finally:
        ShardCalls.gather = gather  # type: ignore[method-assign]
        index.close()
