"""A passage citation's fields, defined once (``Citation``)."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from typing import Any

__all__ = ["CITATION_FIELDS", "CITATION_REQUIRED", "Citation"]


@dataclass(frozen=True, slots=True)
class Citation:
    """A passage citation: the one definition of its fields. First what identifies the cited
    passage (required: a citation without one of them cites nothing), then where in it the quote
    is and how to show it (optional). Search hits and answers carry it as ``as_dict()``; the
    service's schema, the re-check (``cite``) and the copies' verification read these fields."""

    document_id: str
    version: str
    content_sha256: str
    passage: int
    quote: str
    start: int | None = None
    end: int | None = None
    heading_path: tuple[str, ...] = ()
    anchor: str | None = None
    title: str | None = None
    source_url: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, ``kind`` first: enough to re-resolve the exact quote later."""
        out: dict[str, Any] = {"kind": "passage"}
        for name in CITATION_FIELDS:
            value = getattr(self, name)
            out[name] = list(value) if isinstance(value, tuple) else value
        return out


#: Every field of a citation, in order.
CITATION_FIELDS = tuple(f.name for f in fields(Citation))
#: The fields a citation cannot do without (those of ``Citation`` without a default).
CITATION_REQUIRED = tuple(f.name for f in fields(Citation) if f.default is MISSING
                          and f.default_factory is MISSING)
