"""Policy memory: versioned, reviewable, route-local natural-language corrections for frozen agents.

See ``nlgrad/policy/README.md`` for the file format, the update bounds and their trim rule, and the commands.
"""

from nlgrad.policy.blocks import apply_block, find_block, remove_block
from nlgrad.policy.bounds import DEFAULT_BOUNDS, PolicyBounds
from nlgrad.policy.diff import (CounterChange, EntryEdit, PolicyDiff, RouteDiff, diff_files, diff_markup,
                                diff_memories, diff_versions)
from nlgrad.policy.dspy_inject import inject_into_dspy
from nlgrad.policy.errors import PolicyFileError, PolicyUpdateError
from nlgrad.policy.io import load_policy_file, parse_policy_text
from nlgrad.policy.memory import dump_policy_json
from nlgrad.policy.memory import PolicyMemory
from nlgrad.policy.ops import (AddOp, DeleteOp, DownvoteOp, EditOp, MergeOp, Operation, UpvoteOp,
                               operations_json_schema, parse_operation, parse_operations)
from nlgrad.policy.render import render_line
from nlgrad.policy.schema import SCHEMA_VERSION, EntryKind, EntryStatus, PolicyEntry, Provenance, Selection
from nlgrad.policy.similarity import EmbeddingSimilarity, LexicalSimilarity, Similarity
from nlgrad.policy.store import Manifest, ManifestEntry, PolicyStore, RejectedUpdate, default_policy_dir, load_policy
from nlgrad.policy.tokens import count_tokens, policy_tokens, token_edit_distance
from nlgrad.policy.update import apply_update
from nlgrad.policy.update_report import AppliedOp, MergedDuplicate, TrimmedOp, UpdateProvenance, UpdateReport

__all__ = [
    "SCHEMA_VERSION", "PolicyMemory", "PolicyEntry", "Provenance", "Selection", "EntryKind", "EntryStatus",
    "PolicyStore", "Manifest", "ManifestEntry", "RejectedUpdate", "default_policy_dir",
    "PolicyBounds", "DEFAULT_BOUNDS",
    "Operation", "AddOp", "EditOp", "DeleteOp", "UpvoteOp", "DownvoteOp", "MergeOp",
    "parse_operation", "parse_operations", "operations_json_schema",
    "apply_update", "UpdateReport", "UpdateProvenance", "AppliedOp", "TrimmedOp", "MergedDuplicate",
    "Similarity", "LexicalSimilarity", "EmbeddingSimilarity",
    "PolicyDiff", "RouteDiff", "EntryEdit", "CounterChange", "diff_memories", "diff_files", "diff_versions",
    "diff_markup",
    "apply_block", "find_block", "remove_block", "render_line", "inject_into_dspy",
    "load_policy", "load_policy_file", "parse_policy_text", "dump_policy_json",
    "policy_tokens", "count_tokens", "token_edit_distance",
    "PolicyFileError", "PolicyUpdateError",
]
