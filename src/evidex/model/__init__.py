"""Domain types and errors shared by every layer.

Everything here is plain data with validation at construction time, so a bad value is rejected
where it enters the system (with a message that names the field) instead of deep inside a store
transaction. Nothing in this module touches storage, ranking or I/O.

Every error evidex raises on purpose is a subclass of ``EvidexError`` (``_errors``), so callers
catch one family and each layer raises the same class for the same kind of problem. A
citation's fields are defined once (``_citation.Citation``).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from ._citation import CITATION_FIELDS, CITATION_REQUIRED, Citation
from ._errors import (
    CitationError,
    ConfigError,
    DocumentError,
    EvidexError,
    FetchError,
    GeneratorError,
    MissingExtraError,
    NotifyError,
    QueryError,
    ReadFailed,
    ServerUnavailable,
    SourceError,
    StoreError,
    TenantMoved,
)

__all__ = [
    "CITATION_FIELDS",
    "CITATION_REQUIRED",
    "VISIBILITIES",
    "Actor",
    "Citation",
    "CitationError",
    "ConfigError",
    "Conflict",
    "ConflictSide",
    "Document",
    "DocumentError",
    "DocumentView",
    "EvidexError",
    "FetchError",
    "Filters",
    "GeneratorError",
    "Hit",
    "IngestReport",
    "MissingExtraError",
    "NotifyError",
    "Passage",
    "QueryError",
    "ReadFailed",
    "Resolution",
    "SearchResults",
    "Section",
    "ServerUnavailable",
    "SourceError",
    "StoreError",
    "TenantMoved",
    "can_access",
    "check_unicode",
    "is_language_tag",
    "nfc_lower",
    "sha256_text",
]

#: Visibility levels a document may carry. An actor sees a document only when the document's
#: level is in ``actor.visibilities``; the set is closed so a typo ("pubic") is an error instead
#: of a document nobody can ever see.
VISIBILITIES = frozenset({"public", "internal", "confidential", "restricted"})

_NAME = re.compile(r"^[^\x00-\x1f\x7f]{1,256}$")
_LANG = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")
#: Half of a UTF-16 surrogate pair on its own: a Python str may hold one (from JSON "\ud800",
#: surrogateescape decoding), but it is not Unicode text and cannot be encoded as UTF-8, so no
#: fingerprint, store or client could take it.
_SURROGATE = re.compile("[\ud800-\udfff]")


def is_language_tag(value: object) -> bool:
    """A BCP 47-like tag as evidex accepts it: ``en``, ``de-CH``, ``zh-Hant-TW``."""
    return isinstance(value, str) and _LANG.match(value) is not None


def sha256_text(text: str) -> str:
    """SHA-256 hex digest of the UTF-8 bytes: the fingerprint every citation is checked against."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_unicode(value: str, what: str, err: type[EvidexError] = EvidexError) -> str:
    """``value`` when it is valid Unicode text (no lone surrogate), else ``err`` naming where."""
    bad = _SURROGATE.search(value)
    if bad is not None:
        raise err(f"{what} is not valid Unicode text: a lone surrogate U+{ord(bad.group()):04X} at "
                  f"offset {bad.start()}")
    return value


def _name(value: Any, what: str, err: type[EvidexError]) -> str:
    if not isinstance(value, str) or not _NAME.match(value) or value.strip() != value:
        raise err(
            f"{what} must be a non-empty string of at most 256 characters without control "
            f"characters or surrounding spaces, got {value!r}"
        )
    return check_unicode(value, what, err)


def _names(values: Any, what: str, err: type[EvidexError], *, allow_empty: bool) -> frozenset[str]:
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise err(f"{what} must be a list of strings, got {values!r}")
    out = frozenset(_name(v, f"each of {what}", err) for v in values)
    if not out and not allow_empty:
        raise err(f"{what} must not be empty")
    return out


@dataclass(frozen=True, slots=True)
class Actor:
    """Who is asking. Built by trusted server code (configuration, verified credentials), never
    from request data: every access decision in evidex is taken from this object alone.

    ``visibilities`` defaults to public documents only (least privilege): an actor that may read
    internal pages has to be given them explicitly, so a forgotten argument on a customer-facing
    call never widens what it sees."""

    tenant: str
    groups: frozenset[str]
    active: bool = True
    visibilities: frozenset[str] = frozenset({"public"})

    #: Verified attributes of the caller (``customer_id``: whose orders a live tool may look
    #: up), set by the same trusted code as the rest; read-only once built.
    claims: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), hash=False)

    def __post_init__(self) -> None:
        _name(self.tenant, "Actor.tenant", EvidexError)
        object.__setattr__(
            self, "groups", _names(self.groups, "Actor.groups", EvidexError, allow_empty=True)
        )
        if not isinstance(self.active, bool):
            raise EvidexError(f"Actor.active must be a bool, got {self.active!r}")
        vis = _names(self.visibilities, "Actor.visibilities", EvidexError, allow_empty=True)
        unknown = vis - VISIBILITIES
        if unknown:
            raise EvidexError(
                f"Actor.visibilities has unknown levels {sorted(unknown)}; known: {sorted(VISIBILITIES)}"
            )
        object.__setattr__(self, "visibilities", vis)
        object.__setattr__(self, "claims", _claims(self.claims))


def _claims(claims: Any) -> Mapping[str, str]:
    if not isinstance(claims, Mapping):
        raise EvidexError(f"Actor.claims must be a mapping of names to strings, got {claims!r}")
    for k, v in claims.items():
        _name(k, "each Actor.claims name", EvidexError)
        _name(v, f"Actor.claims[{k!r}]", EvidexError)
    return MappingProxyType(dict(sorted(claims.items())))


@dataclass(frozen=True, slots=True)
class Section:
    """A span of a document's text that its source format marks as a unit: an HTML or Word
    heading with its body, or a PDF page. Loaders that know the structure better than the text
    does (ids in HTML, page breaks in PDF) hand it over this way, so passages can carry the
    anchor and page that make a citation open the right place."""

    start: int
    end: int
    heading_path: tuple[str, ...] = ()
    anchor: str | None = None
    page: int | None = None

    def as_list(self) -> list[Any]:
        return [self.start, self.end, list(self.heading_path), self.anchor, self.page]


@dataclass(frozen=True, slots=True)
class Document:
    """One source document as the caller hands it in; ``(tenant, id)`` identifies it."""

    id: str
    tenant: str
    groups: frozenset[str]
    version: str
    text: str
    title: str | None = None
    source_url: str | None = None
    language: str | None = None
    visibility: str = "internal"
    published_at: str | None = None
    tags: tuple[str, ...] = ()
    #: Structure from the source format (see ``Section``); empty when the text itself carries it
    #: (Markdown headings) or has none. Not a document field of JSON records.
    sections: tuple[Section, ...] = ()

    def __post_init__(self) -> None:
        err = DocumentError
        _name(self.id, "Document.id", err)
        _name(self.tenant, "Document.tenant", err)
        object.__setattr__(
            self,
            "groups",
            _names(self.groups, f"Document.groups of {self.id!r}", err, allow_empty=False),
        )
        _name(self.version, f"Document.version of {self.id!r}", err)
        if not isinstance(self.text, str):
            raise err(f"Document.text of {self.id!r} must be a string")
        if "\x00" in self.text:
            raise err(f"Document.text of {self.id!r} contains a NUL character")
        check_unicode(self.text, f"Document.text of {self.id!r}", err)
        for opt in ("title", "source_url"):
            val = getattr(self, opt)
            if val is not None and (not isinstance(val, str) or not val.strip()):
                raise err(f"Document.{opt} of {self.id!r} must be a non-empty string or None")
            if val is not None:
                check_unicode(val, f"Document.{opt} of {self.id!r}", err)
        if self.language is not None and not is_language_tag(self.language):
            raise err(
                f"Document.language of {self.id!r} must be a language tag like 'en' or 'de-CH', "
                f"got {self.language!r}"
            )
        if self.visibility not in VISIBILITIES:
            raise err(
                f"Document.visibility of {self.id!r} must be one of {sorted(VISIBILITIES)}, "
                f"got {self.visibility!r}"
            )
        pub = self.published_at
        if isinstance(pub, _dt.datetime | _dt.date):
            object.__setattr__(self, "published_at", pub.isoformat())
        elif pub is not None:
            try:
                _dt.datetime.fromisoformat(str(pub))
            except ValueError:
                raise err(
                    f"Document.published_at of {self.id!r} must be an ISO 8601 date, got {pub!r}"
                ) from None
        tags = self.tags
        if isinstance(tags, str) or not isinstance(tags, Iterable):
            raise err(f"Document.tags of {self.id!r} must be a list of strings")
        object.__setattr__(
            self, "tags", tuple(sorted(_names(tags, f"Document.tags of {self.id!r}", err,
                                              allow_empty=True)))
        )
        secs = tuple(self.sections)
        pos = 0
        for s in secs:
            if not isinstance(s, Section) or not (pos <= s.start <= s.end <= len(self.text)):
                raise err(f"Document.sections of {self.id!r} must be Sections in text order "
                          "that do not overlap and lie inside the text")
            pos = s.end
        object.__setattr__(self, "sections", secs)

    @property
    def content_sha256(self) -> str:
        return sha256_text(self.text)

    def metadata(self) -> dict[str, Any]:
        """Everything but the text, JSON-ready; a change here re-indexes even at equal version,
        because groups and visibility decide who may see the passages."""
        return {
            "title": self.title,
            "source_url": self.source_url,
            "language": self.language,
            "visibility": self.visibility,
            "groups": sorted(self.groups),
            "tags": list(self.tags),
            "published_at": self.published_at,
        }

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], **defaults: Any) -> Document:
        """Build from a JSON-like record; ``defaults`` fill absent keys (CLI options)."""
        allowed = set(cls.__dataclass_fields__) - {"sections"}
        unknown = set(data) - allowed
        if unknown:
            raise DocumentError(f"unknown document fields {sorted(unknown)}; allowed: {sorted(allowed)}")
        merged = {**{k: v for k, v in defaults.items() if v is not None}, **data}
        missing = {"id", "tenant", "groups", "version", "text"} - set(merged)
        if missing:
            raise DocumentError(f"document is missing required fields {sorted(missing)}")
        return cls(**merged)


@dataclass(frozen=True, slots=True)
class Passage:
    """A span of a document's full text that is indexed and cited as a unit.

    ``quote == document.text[start:end]`` always holds; ``number`` is the passage number within
    the document's split (paragraph numbers keep gaps for empty parts so citations stay stable).
    """

    number: int
    start: int
    end: int
    text: str
    heading_path: tuple[str, ...] = ()
    anchor: str | None = None
    page: int | None = None
    #: What the injection scan (``ingest.scan``) found in the text; filled in on passages read
    #: back from a store, empty on passages fresh from the splitter.
    flags: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"passage": self.number, "start": self.start, "end": self.end, "quote": self.text,
                "heading_path": list(self.heading_path), "anchor": self.anchor, "page": self.page,
                "flags": list(self.flags)}


@dataclass(frozen=True, slots=True)
class DocumentView:
    """A document as an actor may read it now: its metadata and its current passages, what a
    reader needs to open the whole source of a citation (``KnowledgeBase.document``)."""

    document_id: str
    version: str
    content_sha256: str
    title: str | None
    source_url: str | None
    language: str | None
    tags: tuple[str, ...]
    published_at: str | None
    indexed_at: str
    passages: tuple[Passage, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "document_id": self.document_id, "version": self.version,
            "content_sha256": self.content_sha256, "title": self.title,
            "source_url": self.source_url, "language": self.language, "tags": list(self.tags),
            "published_at": self.published_at, "indexed_at": self.indexed_at,
            "passages": [p.as_dict() for p in self.passages],
        }


@dataclass(frozen=True, slots=True)
class ConflictSide:
    """One passage of a conflict: where it is (a citation) and the value it states there."""

    document_id: str
    version: str
    passage: int
    passage_sha256: str
    value: str
    sentence: str

    def citation(self) -> dict[str, Any]:
        return {"document_id": self.document_id, "version": self.version, "passage": self.passage,
                "passage_sha256": self.passage_sha256}


@dataclass(frozen=True, slots=True)
class Conflict:
    """Two current passages of different documents about one subject stating different values
    of one kind (``kind``: duration, period, time, date, percent, ``price:<currency>`` or
    ``quantity:<dimension>``). ``status`` is "open" while both passages are current, "closed"
    once either changed or its document was removed (``reason`` says which), "dismissed" when an
    admin dismissed it."""

    id: int
    tenant: str
    kind: str
    subject: tuple[str, ...]
    a: ConflictSide
    b: ConflictSide
    detected_at: str
    status: Literal["open", "closed", "dismissed"] = "open"
    reason: str | None = None

    def summary(self) -> str:
        """One line: which passages say what."""
        return (f"conflict {self.id} ({self.kind}, {self.status}): {self.a.document_id}#{self.a.passage} "
                f"says {self.a.value!r}, {self.b.document_id}#{self.b.passage} says {self.b.value!r}"
                + (f" [{self.reason}]" if self.reason else ""))

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "tenant": self.tenant, "kind": self.kind, "status": self.status,
                "reason": self.reason, "subject": list(self.subject), "detected_at": self.detected_at,
                "sides": [{**s.citation(), "value": s.value, "sentence": s.sentence}
                          for s in (self.a, self.b)]}


@dataclass(frozen=True, slots=True)
class IngestReport:
    added: int = 0
    superseded: int = 0
    unchanged: int = 0
    passages_written: int = 0
    #: Conflicts this write found (see ``Conflict``); earlier ones are ``kb.conflicts()``.
    conflicts: tuple[Conflict, ...] = ()
    #: The store generation the write committed (None when it changed nothing): a read with
    #: ``at_least=generation`` sees it, on whichever server answers (see ``KnowledgeBase.search``).
    #: Where in the store's history the write landed, not what it did: two reports of the same
    #: changes are equal whatever their generations.
    generation: int | None = field(default=None, compare=False)

    def __add__(self, other: IngestReport) -> IngestReport:
        """The report of two batches written one after the other."""
        gens = [g for g in (self.generation, other.generation) if g is not None]
        return IngestReport(self.added + other.added, self.superseded + other.superseded,
                            self.unchanged + other.unchanged,
                            self.passages_written + other.passages_written,
                            self.conflicts + other.conflicts, max(gens) if gens else None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "superseded": self.superseded,
            "unchanged": self.unchanged,
            "passages_written": self.passages_written,
            "conflicts": [c.as_dict() for c in self.conflicts],
        }


ResolveReason = Literal["unavailable", "source_changed", "quote_mismatch"]


@dataclass(frozen=True, slots=True)
class Resolution:
    """Outcome of re-checking a citation now. ``reason`` is None exactly when ``ok``."""

    ok: bool
    reason: ResolveReason | None = None
    detail: str = ""
    current_version: str | None = None
    matched_version: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "reason": self.reason,
            "detail": self.detail,
            "current_version": self.current_version,
            "matched_version": self.matched_version,
        }


def nfc_lower(text: str) -> str:
    """The one normalisation used for both indexing and querying."""
    return unicodedata.normalize("NFC", text).lower()


def can_access(actor: Actor, tenant: str, groups: Iterable[str], visibility: str) -> bool:
    """The one access rule: active, same tenant, a shared group, an allowed visibility.

    Every read path (search statistics, hits, resolution, document views) goes through this.
    """
    return (
        actor.active
        and tenant == actor.tenant
        and not actor.groups.isdisjoint(groups)
        and visibility in actor.visibilities
    )


@dataclass(frozen=True, slots=True)
class Filters:
    """Optional narrowing applied before ranking, with the same guarantee as access: statistics
    come only from passages that pass. ``tags``: the document must carry every listed tag."""

    language: str | None = None
    tags: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.language is not None and not is_language_tag(self.language):
            raise QueryError(f"filter language must be a language tag like 'en', got {self.language!r}")
        object.__setattr__(self, "tags", _names(self.tags, "filter tags", QueryError,
                                                 allow_empty=True))

    @classmethod
    def of(cls, value: Filters | Mapping[str, Any] | None) -> Filters:
        if value is None:
            return cls()
        if isinstance(value, Filters):
            return value
        if not isinstance(value, Mapping):
            raise QueryError(f"filters must be a mapping, got {type(value).__name__}")
        unknown = set(value) - {"language", "tags"}
        if unknown:
            raise QueryError(f"unknown filters {sorted(unknown)}; allowed: language, tags")
        return cls(value.get("language"), value.get("tags") or frozenset())

    def admits(self, language: str | None, tags: Iterable[str]) -> bool:
        if self.language is not None and language != self.language:
            return False
        return self.tags.issubset(tags)


@dataclass(slots=True)
class Hit:
    """One retrieved passage with everything needed to cite it and check the citation later."""

    document_id: str
    version: str
    content_sha256: str
    passage: int
    quote: str
    start: int
    end: int
    heading_path: tuple[str, ...]
    anchor: str | None
    title: str | None
    source_url: str | None
    language: str | None
    #: An ordering value of this run (BM25 for keyword search); never a probability.
    score: float
    rank: int
    page: int | None = None
    flags: tuple[str, ...] = ()
    explain: dict[str, Any] | None = None
    #: Store-internal passage id of this run (not part of a citation; ids change on supersede).
    pid: int = field(default=-1, repr=False, compare=False)

    def citation(self) -> dict[str, Any]:
        """JSON-ready citation (``Citation.as_dict``): enough to re-resolve the exact quote later."""
        return Citation(self.document_id, self.version, self.content_sha256, self.passage, self.quote,
                        self.start, self.end, self.heading_path, self.anchor, self.title,
                        self.source_url).as_dict()

    def as_dict(self) -> dict[str, Any]:
        out = self.citation()
        out.update(score=self.score, rank=self.rank, language=self.language,
                   page=self.page, flags=list(self.flags))
        if self.explain is not None:
            out["explain"] = self.explain
        return out


class SearchResults(list[Hit]):
    """The hits of one search, best first, plus what the search was made of."""

    def __init__(self, hits: Iterable[Hit] = (), *, terms: Iterable[str] = (),
                 evidence: str | None = None) -> None:
        super().__init__(hits)
        self.terms: tuple[str, ...] = tuple(terms)
        #: "none", "weak" or "strong": the on-topic decision over the best passages, a retrieval
        #: signal for answering, never a probability. None when the search was not asked for
        #: it (``evidence=True``, ``explain``, the ranker, or an answer compute it; a plain
        #: search ranks only).
        self.evidence = evidence
        #: What the evidence level was computed from (query-term coverage, best similarity,
        #: best sentence coverage); empty when it was not computed.
        self.signals: dict[str, float | None] = {}
        #: Hybrid search with adaptive fusion: the weight each leg had for this query, and why
        #: (``retrieve._adaptive.LegWeights``); None otherwise.
        self.weights: Any = None
        #: Per hit (the first ones), how well the passage and its sentences cover the question
        #: and whether it is on topic (``decide.PassageSupport``); empty when not computed.
        self.support: list[Any] = []
        #: The on-topic decision with each passage's scores and thresholds
        #: (``decide.OnTopic``); None when not computed.
        self.topic: Any = None
        #: The question's facts the decision computed once (``decide.Question``: language,
        #: what it asks for, idf weights); None when not computed.
        self.question: Any = None
        #: How the vector leg re-based each readable language's cosines
        #: (``retrieve.LanguageShift``); None when not computed.
        self.shift: Any = None
        #: Set when a hybrid search returned the keyword ranking instead: {"fallback":
        #: "keyword", "reason": "no_vectors" | "vector_timeout", "detail": ...}.
        self.fallback: dict[str, Any] | None = None
