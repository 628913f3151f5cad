"""Small hand-made stores that tests in more than one file search."""

from __future__ import annotations

from pathlib import Path

from evidex import Document, KnowledgeBase


def two_language_store(tmp_path: Path) -> KnowledgeBase:
    """Error codes and a returns policy in English, a receipts rule in German: the store the
    adaptive-fusion and weighted-RRF tests search."""
    kb = KnowledgeBase.open(tmp_path / "kb.db")
    kb.ingest([
        Document("errors", "acme", {"staff"}, "1", "ERR-401 appears when your session has expired. "
                 "Sign in again.\n\nERR-403 means your plan does not include this feature.", language="en"),
        Document("returns", "acme", {"staff"}, "1", "You can return most items within 30 days.\n\n"
                 "Worn jackets can be returned only when they are faulty.", language="en"),
        Document("reisen", "acme", {"staff"}, "1", "Belege sind innerhalb von 30 Tagen einzureichen.",
                 language="de"),
    ])
    return kb
