"""The live collection: immutable segments of every leg, deletion masks, snapshots that
score as one fresh index, crash-safe commits to an index directory, and the merge policy."""

from hybrid_engine.live.merge_policy import MergePolicy
from hybrid_engine.live.pending import StagedChanges
from hybrid_engine.result import Hit

__all__ = ["Hit", "MergePolicy", "StagedChanges"]
