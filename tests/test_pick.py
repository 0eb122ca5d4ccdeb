"""``pick``: the Stack value and its use by HybridIndex, the choice rule under a budget, the
corpus statistics and rules, and an end-to-end pick whose eval command reproduces its figure."""

from __future__ import annotations

import itertools
import json
import shlex
from pathlib import Path

import numpy as np
import pytest

from hybrid_engine import HybridIndex, Stack
from hybrid_engine.cli import main
from hybrid_engine.evaluation.corpus_stats import corpus_statistics, is_identifier
from hybrid_engine.evaluation.pick_report import StackFigures, choose, simplest_supported
from hybrid_engine.evaluation.picker import pick
from hybrid_engine.evaluation.plot import plot_quality_latency
from hybrid_engine.evaluation.significance import max_t_p_values

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DOCS = [
    {"_id": "d0", "title": "Lunar tides", "text": "The moon pulls the oceans into tides."},
    {"_id": "d1", "title": "Solar wind", "text": "Charged particles stream from the sun."},
    {"_id": "d2", "title": "Tide pools", "text": "Pools left by the ebbing tide hold crabs."},
    {"_id": "d3", "title": "Eclipses", "text": "The moon hides the sun during an eclipse."},
    {"_id": "d4", "title": "Comets", "text": "Icy bodies grow tails near the sun."},
    {"_id": "d5", "title": "Auroras", "text": "Solar particles light the polar sky."},
]
QUERIES = ["why does the ocean have tides", "what happens when the moon covers the sun"]


# --- Stack --------------------------------------------------------------------------------


def test_stack_round_trips_through_json() -> None:
    stack = Stack(("dense", "bm25"), "rrf", {"bm25": 2.0}, depth=50, rerank=20)
    again = Stack.from_dict(json.loads(json.dumps(stack.to_dict())))
    assert again == stack
    assert again.retrievers == ("bm25", "dense")  # legs in the engine's order
    assert dict(again.weights or {}) == {"bm25": 2.0}
    assert Stack.from_dict({}) == Stack()  # a missing key takes its default


def test_stack_describe_is_one_line() -> None:
    line = Stack(fusion="rrf", weights={"bm25": 2}, rerank=30).describe()
    assert "\n" not in line
    assert "bm25+dense" in line and "rrf" in line and "bm25=2" in line and "30" in line
    assert Stack(("bm25",)).describe().startswith("bm25 alone")


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"fusoin": "rrf"}, r"unknown stack key\(s\) \['fusoin'\].*'fusion'"),
        ({"fusion": "borda"}, "unknown fusion method 'borda'"),
        ({"retrievers": ["bm25", "colbert"]}, "colbert"),
        ({"weights": {"splade": 1.0}}, "splade"),
        ({"weights": {"bm25": -1.0}}, "finite and >= 0"),
        ({"weights": {"bm25": 0, "dense": 0}}, "all 0"),
        ({"depth": 0}, "depth must be an int >= 1"),
        ({"rerank": 0}, "rerank must be an int >= 1"),
    ],
)
def test_stack_refuses_bad_values(values: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Stack.from_dict(values)


def test_stack_is_immutable() -> None:
    stack = Stack(weights={"bm25": 2.0})
    with pytest.raises(AttributeError):
        stack.fusion = "rrf"  # type: ignore[misc]
    with pytest.raises(TypeError):
        stack.weights["bm25"] = 3.0  # type: ignore[index]


def test_bm25_only_stack_builds_a_bm25_engine() -> None:
    engine = HybridIndex.build(DOCS, stack=Stack(("bm25",)))
    assert engine.retrievers == ("bm25",)
    with pytest.raises(ValueError, match="not both"):
        HybridIndex.build(DOCS, stack=Stack(("bm25",)), retrievers=("bm25", "splade"))
    with pytest.raises(ValueError, match=r"the stack combines \['bm25', 'dense'\]"):
        engine.search(QUERIES, 3, stack=Stack())


@pytest.mark.slow
def test_search_with_a_stack_equals_search_with_its_parameters(encoder) -> None:
    stack = Stack(("bm25", "dense"), "rrf", {"bm25": 2.0}, depth=4)
    engine = HybridIndex.build(DOCS, stack=stack, encoder=encoder)
    assert engine.retrievers == ("bm25", "dense")
    by_stack = engine.search(QUERIES, 3, stack=stack)
    explicit = engine.search(QUERIES, 3, fusion="rrf", weights={"bm25": 2.0}, depth=4)
    np.testing.assert_array_equal(by_stack.ids, explicit.ids)
    np.testing.assert_array_equal(by_stack.scores, explicit.scores)
    default = engine.search(QUERIES, 3)
    assert not np.array_equal(default.scores, by_stack.scores)  # the stack did change the plan
    with pytest.raises(ValueError, match="not both"):
        engine.search(QUERIES, 3, stack=stack, fusion="zscore")


# --- the choice rule ----------------------------------------------------------------------


def figures(name: str, ndcg: float, p95: float) -> StackFigures:
    return StackFigures(name, Stack(), ndcg, 0.9, p95 / 2, p95)


CANDIDATES = [
    figures("fast", 0.70, 1.0),
    figures("mid", 0.75, 40.0),
    figures("slow", 0.80, 150.0),
    figures("slowest", 0.78, 400.0),
]


def test_choose_takes_the_best_quality_within_the_budget() -> None:
    assert choose(CANDIDATES, 100.0) == (CANDIDATES[1], True)
    assert choose(CANDIDATES, 150.0) == (CANDIDATES[2], True)  # p95 == budget is within
    assert choose(CANDIDATES, 1000.0) == (CANDIDATES[2], True)  # the slowest is worse


def test_a_tie_in_quality_goes_to_the_faster() -> None:
    tie = figures("mid-faster", 0.750004, 20.0)  # 0.7500 at the table's 4 decimals
    assert choose([*CANDIDATES, tie], 100.0) == (tie, True)
    assert choose([tie, *CANDIDATES], 100.0) == (tie, True)  # whatever the order


def scored(name: str, legs: tuple[str, ...], per_query: list[float], p95: float) -> StackFigures:
    ndcg = float(np.mean(per_query))
    return StackFigures(name, Stack(legs), ndcg, 0.9, p95 / 2, p95, per_query=tuple(per_query))


def exact_sign_flip_p(differences: list[float]) -> float:
    """The one-sided sign-flip p-value by enumerating every flip (the oracle)."""
    d = np.asarray(differences)
    observed = d.sum()
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=len(d))))
    return float(np.mean(signs @ d >= observed - 1e-12))


def test_a_costlier_stack_must_beat_a_simpler_one_by_more_than_chance() -> None:
    simple = [0.5, 0.6, 0.4, 0.7, 0.5, 0.6, 0.3, 0.8, 0.5, 0.6]
    noisy_gain = [0.2, -0.2, 0.1, -0.1, 0.2, -0.15, 0.1, -0.1, 0.05, 0.0]  # mean +0.01
    hybrid = scored("hybrid", ("bm25", "dense"), simple, 10.0)
    three = scored("hybrid3", ("bm25", "dense", "splade"), list(np.add(simple, noisy_gain)), 20.0)
    chosen, p_value = simplest_supported(three, [hybrid, three], 100.0)
    assert chosen is hybrid
    assert p_value is not None and p_value >= 0.05
    assert p_value == pytest.approx(exact_sign_flip_p(noisy_gain), abs=0.02)
    # A gain on every query is supported: 2**-10 < 0.05 by enumeration.
    steady = scored("hybrid3", ("bm25", "dense", "splade"), list(np.add(simple, 0.05)), 20.0)
    assert exact_sign_flip_p([0.05] * 10) < 0.05
    assert simplest_supported(steady, [hybrid, steady], 100.0) == (steady, None)
    # A simpler stack over the budget, or of as many model stages, is no alternative.
    assert simplest_supported(three, [hybrid, three], 5.0) == (three, None)
    twin = scored("hybrid3-rrf", ("bm25", "dense", "splade"), simple, 10.0)
    assert simplest_supported(three, [twin, three], 100.0) == (three, None)


def test_the_simplest_tier_is_tried_first() -> None:
    base = [0.5, 0.6, 0.4, 0.7, 0.5, 0.6, 0.3, 0.8, 0.5, 0.6]
    bm25 = scored("bm25", ("bm25",), base, 1.0)
    mixed = [0.02, -0.01] * 5  # three's mean gain of 0.005 over hybrid, p ~ 0.4
    hybrid = scored("hybrid", ("bm25", "dense"), list(np.add(base, 0.1)), 10.0)
    gained = list(np.add(hybrid.per_query, mixed))
    three = scored("hybrid3", ("bm25", "dense", "splade"), gained, 20.0)
    # bm25 (no model) loses on every query: the next tier, hybrid, is tried and kept.
    assert simplest_supported(three, [bm25, hybrid, three], 100.0)[0] is hybrid
    level = scored("hybrid3", ("bm25", "dense", "splade"), list(np.add(base, mixed)), 20.0)
    assert simplest_supported(level, [bm25, hybrid, level], 100.0)[0] is bm25


def test_none_within_the_budget_gives_the_fastest_and_says_so() -> None:
    assert choose(CANDIDATES, 0.5) == (CANDIDATES[0], False)
    twin = figures("fast-better", 0.72, 1.0)
    assert choose([*CANDIDATES, twin], 0.5) == (twin, False)
    with pytest.raises(ValueError, match="no candidate"):
        choose([], 10.0)


# --- corpus statistics and rules ----------------------------------------------------------


def test_identifier_tokens() -> None:
    identifiers = ["E1234", "SKU-4411-B", "ORA-00942", "0x1F", "3f2a9c1b", "v2.1", "x86_64",
                   "555-0199", "(E1234),", "BRCA1", "12/07"]  # fmt: skip
    words = ["protein", "x-ray", "1984", "3.5", "well-known", "-", "(1999).", "e-mail"]
    assert [t for t in identifiers if not is_identifier(t)] == []
    assert [t for t in words if is_identifier(t)] == []


def test_corpus_statistics_against_a_hand_count() -> None:
    corpus = [
        "Error E1234 in module SKU-4411-B",  # 5 tokens, 2 identifiers
        {"title": "Plain", "text": "words only here"},  # 4 tokens, none
        "call 555-0199 or see v2.1 (0x1F).",  # 6 tokens, 3 identifiers
    ]
    stats = corpus_statistics(corpus)
    assert stats.n_documents == 3
    assert stats.n_tokens == 15
    assert stats.mean_tokens == 5.0
    assert stats.median_tokens == 5.0
    assert stats.identifier_share == pytest.approx(5 / 15)
    with pytest.raises(ValueError, match="empty"):
        corpus_statistics([])


def write_corpus(folder: Path, docs: list[dict]) -> Path:
    folder.mkdir()
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as f:
        for doc in docs:
            f.write(json.dumps(doc) + "\n")
    return folder


ERROR_CATALOGUE = [
    {"_id": f"e{i}", "title": f"ERR-{4000 + i}", "text": f"Code 0x{i:04X} raised by part PN-{i}B "
     "when the pump stops; replace seal KIT-22A."}
    for i in range(40)
]  # fmt: skip


def test_rules_on_a_corpus_without_qrels(tmp_path: Path, capsys) -> None:
    folder = write_corpus(tmp_path / "catalogue", ERROR_CATALOGUE)
    report = pick(folder, budget_ms=50)
    assert report.basis == "rule"
    assert report.within_budget is None and report.candidates == () and report.eval_command is None
    # Per document 14 tokens, 4 of them identifiers: ERR-40xx, 0x00xx, PN-xB, KIT-22A.
    assert report.statistics is not None
    assert report.statistics.identifier_share == pytest.approx(4 / 14)
    assert report.stack == Stack(("bm25", "dense"), weights={"bm25": 2.0})
    assert any("dense alone refused" in note for note in report.notes)
    assert report.headline().startswith("RULE, not a measurement")
    assert report.notes[0] == "no judged train queries (qrels/train.tsv); qrels splits: none"
    from_file = pick(folder / "corpus.jsonl", budget_ms=50)
    assert from_file.dataset == "catalogue" and from_file.stack == report.stack
    assert main(["pick", str(folder), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "basis: rule" in out and "RULE, not a measurement" in out
    assert json.loads(out.split("stack: ", 1)[1].splitlines()[0]) == report.stack.to_dict()


def test_rules_for_prose_long_documents_and_a_tight_budget(tmp_path: Path) -> None:
    long_text = " ".join(["the tide rises and falls with the moon"] * 30)  # 270 tokens
    folder = write_corpus(
        tmp_path / "essays", [{"_id": str(i), "text": long_text} for i in range(5)]
    )
    report = pick(folder)
    assert report.stack == Stack()  # no identifiers: the default hybrid
    assert any("ParentDocumentIndex" in note for note in report.notes)
    assert any("searches exactly" in note for note in report.notes)
    tight = pick(folder, budget_ms=1)
    assert tight.stack == Stack(("bm25",))
    engine = HybridIndex.build([{"text": long_text}, {"text": "moon"}], stack=tight.stack)
    assert engine.search(["moon"], 2, stack=tight.stack).ids.shape == (1, 2)


# --- pick end to end ----------------------------------------------------------------------


def test_the_test_split_is_refused(shared_data: Path) -> None:
    with pytest.raises(ValueError, match=r"never measures on the test split.*--split train"):
        pick(shared_data / "beir" / "scifact", split="test")
    assert main(["pick", str(shared_data / "beir" / "scifact"), "--split", "test"]) == 2


def scifact_subset(source: Path, target: Path, n_queries: int, n_other: int) -> Path:
    """The first ``n_queries`` judged train queries of SciFact, their relevant documents, the
    first ``n_other`` documents of the corpus and one blank document, as a BEIR folder with
    qrels/train.tsv."""
    rows = [line.rstrip("\n").split("\t") for line in open(source / "qrels" / "train.tsv")][1:]
    query_ids = list(dict.fromkeys(row[0] for row in rows))[:n_queries]
    kept = [row for row in rows if row[0] in query_ids]
    relevant = {row[1] for row in kept}
    lines = open(source / "corpus.jsonl", encoding="utf-8").read().splitlines()
    docs = [d for i, d in enumerate(map(json.loads, lines)) if i < n_other or d["_id"] in relevant]
    docs.insert(1, {"_id": "blank", "title": "", "text": " "})  # as Cranfield has two
    write_corpus(target, docs)
    (target / "qrels").mkdir()
    table = "".join("\t".join(row) + "\n" for row in kept)
    (target / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n" + table)
    with open(target / "queries.jsonl", "w", encoding="utf-8") as out:
        for line in open(source / "queries.jsonl", encoding="utf-8"):
            if json.loads(line)["_id"] in query_ids:
                out.write(line)
    return target


def model_stages(candidate: dict) -> int:
    """A candidate's model calls per query, from its JSON stack."""
    stack = candidate["stack"]
    return sum(leg != "bm25" for leg in stack["retrievers"]) + (stack["rerank"] is not None)


@pytest.mark.slow
def test_pick_end_to_end_and_eval_reproduces_its_figures(
    shared_data: Path, tmp_path: Path, capsys
) -> None:
    dataset = scifact_subset(shared_data / "beir" / "scifact", tmp_path / "sub", 20, 120)
    out, plot = tmp_path / "pick.json", tmp_path / "pick.png"
    args = ["pick", str(dataset), "--budget-ms", "1000", "--quiet"]
    assert main([*args, "--json", str(out), "--plot", str(plot)]) == 0
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    assert plot.read_bytes().startswith(PNG_SIGNATURE)
    assert report["basis"] == "measured" and report["split"] == "train"
    assert report["n_queries"] == 20
    candidates = report["candidates"]
    assert {"bm25", "dense", "splade", "hybrid-dbsf", "hybrid-rrf"} <= set(candidates)
    assert any(name.startswith("hybrid3-") for name in candidates)
    # The choice, recomputed from the figures: within 1000 ms every candidate is; the best,
    # unless a stack of fewer model stages is not significantly worse (20 queries: likely).
    best = max(candidates.values(), key=lambda c: (round(c["ndcg@10"], 4), -c["p95_ms"]))
    assert np.mean(best["per_query_ndcg@10"]) == pytest.approx(best["ndcg@10"])
    expected = best
    for tier in sorted({model_stages(c) for c in candidates.values()}):
        if tier >= model_stages(best):
            break
        rival = max(
            (c for c in candidates.values() if model_stages(c) == tier),
            key=lambda c: (c["ndcg@10"], -c["p95_ms"]),
        )
        gain = np.subtract(best["per_query_ndcg@10"], rival["per_query_ndcg@10"])
        if max_t_p_values(gain[:, None])[0] >= 0.05:
            expected = rival
            break
    assert candidates[report["recommended"]]["ndcg@10"] == expected["ndcg@10"]
    assert report["within_budget"] is True
    assert Stack.from_dict(report["stack"]).to_dict() == candidates[report["recommended"]]["stack"]
    assert f"reproduce: {report['eval_command']}" in printed
    assert "basis: measured" in printed

    # The printed command scores the recommended configuration exactly as pick did.
    command = shlex.split(report["eval_command"])
    assert command[:2] == ["hybrid-engine", "eval"]
    again = tmp_path / "eval.json"
    assert main([*command[1:], "--quiet", "--json", str(again)]) == 0
    (row,) = json.loads(again.read_text()).values()
    chosen = candidates[report["recommended"]]
    assert (row["ndcg@10"], row["recall@100"]) == (chosen["ndcg@10"], chosen["recall@100"])

    # And so do the single legs and hybrid3, each from its own eval build.
    hybrid3 = next(name for name in candidates if name.startswith("hybrid3-"))
    fusion = candidates[hybrid3]["stack"]["fusion"]
    legs = ["eval", str(dataset), "--split", "train", "--quiet", "--fusion", fusion,
            "--retriever", "bm25,dense,splade,hybrid3", "--json", str(again)]  # fmt: skip
    assert main(legs) == 0
    rows = json.loads(again.read_text())
    for name, key in [("bm25",) * 2, ("dense",) * 2, ("splade",) * 2, ("hybrid3", hybrid3)]:
        assert rows[name]["ndcg@10"] == candidates[key]["ndcg@10"], name
        assert rows[name]["recall@100"] == candidates[key]["recall@100"], name


def test_forced_rules_and_bad_arguments(shared_data: Path) -> None:
    scifact = shared_data / "beir" / "scifact"
    with pytest.raises(ValueError, match="budget_ms must be > 0"):
        pick(scifact, budget_ms=0)
    with pytest.raises(ValueError, match="unknown candidate"):
        pick(scifact, candidates=["colbert"])
    with pytest.raises(ValueError, match="needs a cross-encoder"):
        pick(scifact, candidates=["rerank"])
    forced = pick(scifact, rules=True)  # judged queries exist, the rules were asked for
    assert forced.basis == "rule" and forced.dataset == "scifact"
    assert forced.statistics is not None and forced.statistics.n_documents == 5183


def test_the_plot_draws_a_budget_and_a_chosen_point(tmp_path: Path) -> None:
    rows = {"bm25": {"ndcg@10": 0.6, "p95_ms": 0.1}, "hybrid": {"ndcg@10": 0.7, "p95_ms": 9.0}}
    out = tmp_path / "plot.png"
    plot_quality_latency(rows, out, budget_ms=5.0, chosen="bm25")
    assert out.read_bytes().startswith(PNG_SIGNATURE)
    with pytest.raises(KeyError, match="splade"):
        plot_quality_latency(rows, out, chosen="splade")


@pytest.mark.slow
def test_the_rerank_candidate_and_its_eval_command(
    shared_data: Path, tmp_path: Path, cross_encoder_path: Path
) -> None:
    dataset = scifact_subset(shared_data / "beir" / "scifact", tmp_path / "sub", 8, 40)
    report = pick(
        dataset,
        budget_ms=10_000,
        candidates=["rerank"],
        reranker=cross_encoder_path,
        rerank_max_length=48,
        fusions=["dbsf", "rrf"],
    )
    (rerank,) = report.candidates  # hybrid is measured for its best method, not reported
    assert rerank.name == f"rerank-{rerank.stack.fusion}" and rerank.stack.rerank == 30
    assert report.name == rerank.name and report.eval_command is not None
    assert "--rerank-max-length 48" in report.eval_command
    out = tmp_path / "eval.json"
    command = shlex.split(report.eval_command)
    assert main([*command[1:], "--quiet", "--json", str(out)]) == 0
    row = json.loads(out.read_text())["rerank"]
    assert (row["ndcg@10"], row["recall@100"]) == (rerank.ndcg_at_10, rerank.recall_at_100)
