"""Answer types and settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..retrieve import Fusion

__all__ = ["DECLINE_TEXT", "Answer", "AnswerSettings", "Source"]

#: The one sentence evidex says when it will not answer from the sources.
DECLINE_TEXT = "I don't have that in the sources available to you."


@dataclass(frozen=True, slots=True)
class Source:
    """A numbered passage in the model context: data, never instructions."""

    n: int
    citation: dict[str, Any]
    flags: tuple[str, ...]

    def as_context(self) -> dict[str, Any]:
        c = self.citation
        return {"id": self.n, "title": c["title"], "heading_path": c["heading_path"],
                "version": c["version"], "quote": c["quote"]}


@dataclass(frozen=True, slots=True)
class AnswerSettings:
    handoff: str = "Please contact a person on the support team."
    #: Links an answer may contain (prefixes); everything else is a contract violation.
    link_allowlist: tuple[str, ...] = ()
    #: Context budget in tokens of the deployed model, and the part reserved for the answer.
    context_tokens: int = 3000
    answer_tokens: int = 500
    #: Passages flagged by the instruction scanner stay out of model context unless this is set.
    include_flagged: bool = False
    #: "minimal" (ids, versions, fingerprints), "off"; never copies of passage text.
    trace: str = "minimal"
    top_k: int = 6
    mode: str = "hybrid"
    #: How the hybrid legs are fused for the answer's search (the configured retrieval fusion).
    fusion: Fusion = field(default_factory=Fusion)
    max_sentences: int = 3
    #: Decide answer-bearing with the trained reader (``embed.E5Reader``; the embedding model
    #: must have one: multilingual-e5-small). Off by default: at the operating point its
    #: objective asks for (>= 95 % of released answers right on every development set) it
    #: declines nearly every question today (benchmarks/RESULTS.md, "Reader").
    reader: bool = False
    #: The reader's decision threshold; None: the one its manifest records (fitted for the
    #: objective above). The curve of what each value answers and declines is in
    #: benchmarks/RESULTS.md, so an operator can choose another point knowingly.
    reader_threshold: float | None = None


@dataclass
class Answer:
    status: str  # "answered" | "declined"
    text: str
    citations: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None
    handoff: str | None = None
    trace: dict[str, Any] | None = None
    detail: str = ""
    #: A declined answer's related reading: up to 3 passages its search found that the caller
    #: may read (unflagged, resolved again like citations), in citation form. Not an answer:
    #: never cited, never in ``citations``; empty for an answered question.
    related: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "text": self.text, "citations": self.citations,
                "reason": self.reason, "handoff": self.handoff, "trace": self.trace,
                "detail": self.detail, "related": self.related}
