"""Conflicts between sources: the values a sentence states and when two disagree (``values``,
``disagree``: pure functions over text), and detection at ingestion of passages of two documents
stating different values for one subject (``find_conflicts``, run by ``KnowledgeBase.ingest``;
``conflict_status``: whether a recorded conflict still holds).

The answers' "Sources disagree" reads the same values, so a conflict an owner is told about and
one an answer shows are found by one scanner.
"""

from ._detect import conflict_status, find_conflicts
from ._values import Value, close, disagree, disagreement, values

__all__ = ["Value", "close", "conflict_status", "disagree", "disagreement", "find_conflicts", "values"]
