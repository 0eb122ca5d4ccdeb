"""The server's Prometheus metrics, in a registry of its own (one per app, so two apps in a
process never share counts): requests and their latency per endpoint, the engine's stage
timings, the searches served without a stage or a shard, each shard's time, and the live
documents."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Histogram bounds in seconds, from a cached BM25 query to a large commit."""
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)
"""Histogram bounds of the queries per engine search."""


class ServerMetrics:
    """The instruments of one app.

    Attributes
    ----------
    registry : CollectorRegistry
        What ``GET /metrics`` exposes.
    """

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "hybrid_engine_requests",
            "HTTP requests by endpoint and status code.",
            ("endpoint", "status"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "hybrid_engine_request_seconds",
            "Wall-clock seconds of a request, by endpoint.",
            ("endpoint",),
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.stages = Histogram(
            "hybrid_engine_stage_seconds",
            "Seconds of each search stage (HybridResult.timings), one observation per search.",
            ("stage",),
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.batch_sizes = Histogram(
            "hybrid_engine_search_batch_queries",
            "Queries per engine search (concurrent requests batched together).",
            buckets=BATCH_BUCKETS,
            registry=self.registry,
        )
        self.degraded = Counter(
            "hybrid_engine_search_degraded",
            "Engine searches served without a stage that failed or was not loaded "
            "(HybridResult.degraded), by stage.",
            ("stage",),
            registry=self.registry,
        )
        self.skipped = Counter(
            "hybrid_engine_search_skipped",
            "Engine searches that skipped a stage to keep their budget_ms (HybridResult.skipped), "
            "by stage.",
            ("stage",),
            registry=self.registry,
        )
        self.missing_shards = Counter(
            "hybrid_engine_search_missing_shards",
            "Searches of a sharded index answered without a shard (ShardedResult."
            "missing_shards), by shard.",
            ("shard",),
            registry=self.registry,
        )
        self.shard_seconds = Histogram(
            "hybrid_engine_shard_seconds",
            "Seconds of each shard's own search (ShardedResult.shard_timings), by shard.",
            ("shard",),
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.documents = Gauge(
            "hybrid_engine_documents",
            "Live documents of the last commit.",
            registry=self.registry,
        )

    def observe_request(self, endpoint: str, status: int, seconds: float) -> None:
        """Count one request and its latency."""
        self.requests.labels(endpoint=endpoint, status=str(status)).inc()
        self.latency.labels(endpoint=endpoint).observe(seconds)

    def observe_stages(
        self,
        timings_ms: Mapping[str, float],
        queries: int,
        degraded: Sequence[str] = (),
        skipped: Sequence[str] = (),
    ) -> None:
        """One engine search: its stage timings, given in milliseconds, its queries, and the
        stages it served without (failed or skipped)."""
        for stage, ms in timings_ms.items():
            self.stages.labels(stage=stage).observe(ms / 1000.0)
        self.batch_sizes.observe(queries)
        for stage in degraded:
            self.degraded.labels(stage=stage).inc()
        for stage in skipped:
            self.skipped.labels(stage=stage).inc()

    def observe_shards(self, missing: Sequence[int], timings_ms: Mapping[int, float]) -> None:
        """One search of a sharded index: the shards that did not answer, and each answering
        shard's milliseconds."""
        for shard in missing:
            self.missing_shards.labels(shard=str(shard)).inc()
        for shard, ms in timings_ms.items():
            self.shard_seconds.labels(shard=str(shard)).observe(ms / 1000.0)

    def exposition(self) -> bytes:
        """The Prometheus text format of every instrument."""
        return generate_latest(self.registry)
