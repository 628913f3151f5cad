"""Request and response bodies of the HTTP API (and the MCP tools' arguments).

Every request model forbids fields it does not define, so a body can never carry a tenant, a
group or any other identity: those come from the credential alone. Bounds here are the outer
limits of the wire format; the library then applies its own query contract (200 characters,
12 words, ...) and its messages come back as 422 as well.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

from ..kb import QUESTION_LIMITS
from ..query import DEFAULT_LIMITS
from ..retrieve import Fusion

__all__ = [
    "AnswerRequest",
    "AnswerResponse",
    "Citation",
    "DocumentResponse",
    "Filters",
    "Int",
    "ResolveResponse",
    "SearchRequest",
    "SearchResponse",
    "SyncRequest",
    "max_quote_chars",
]

_NAME = r"^[^\x00-\x1f\x7f]{1,256}$"
#: What the library accepts as a tag (``model._name``): 1-256 characters, no control
#: characters, no surrounding white space.
_TAG = r"^[^\x00-\x1f\x7f\s]([^\x00-\x1f\x7f]{0,254}[^\x00-\x1f\x7f\s])?$"
_LANGUAGE = r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$"
_MAX_INT = 2**31 - 1


def _integral(value: Any) -> Any:
    """JSON has one number type: 601.0 is the integer 601 (as JSON Schema's "integer" says);
    601.5 stays a float and is refused."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


#: An integer field that accepts integral JSON numbers (601.0) and nothing else (no strings,
#: no booleans: the models are strict).
Int = Annotated[int, BeforeValidator(_integral)]
Tag = Annotated[str, StringConstraints(pattern=_TAG)]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class Filters(_Request):
    language: str | None = Field(default=None, max_length=35, pattern=_LANGUAGE, examples=["de"])
    tags: list[Tag] = Field(default_factory=list, max_length=32)


class SearchRequest(_Request):
    model_config = ConfigDict(json_schema_extra={"examples": [
        {"query": "return worn jacket", "top_k": 6, "mode": "hybrid",
         "filters": {"language": "en", "tags": ["faq"]}, "explain": False},
    ]})

    query: str = Field(max_length=DEFAULT_LIMITS.max_chars,
                       description=f"words to search for (at most {DEFAULT_LIMITS.max_words} distinct "
                                   "words); no operators")
    top_k: Int = Field(default=6, ge=1, le=50)
    mode: Literal["hybrid", "keyword", "vector"] = "hybrid"
    match: Literal["any", "all"] = "any"
    filters: Filters | None = None
    explain: bool = False
    # Fusion fields left out take the service's configured ones (config ``retrieval:``), so a
    # deployment that chose RRF gets RRF from a plain request, as its answers do.
    fusion: Literal["rrf", "convex"] | None = Field(
        default=None, description="how keyword and vector ranks are fused; default: retrieval.fuse")
    rrf_k: Int | None = Field(default=None, ge=1, le=1000, description="default: retrieval.rrf_k (60)")
    window: Int | None = Field(default=None, ge=1, le=500, description="default: retrieval.window (50)")
    alpha: float | None = Field(default=None, ge=0.0, le=1.0,
                                description="vector weight of convex fusion; default: retrieval.alpha (0.5)")
    max_per_document: Int | None = Field(default=2, ge=1, le=50)

    def fusion_over(self, configured: Fusion) -> Fusion:
        """This request's fusion fields over the service's configured fusion."""
        return Fusion(self.fusion or configured.method,
                      configured.rrf_k if self.rrf_k is None else self.rrf_k,
                      configured.window if self.window is None else self.window,
                      configured.alpha if self.alpha is None else self.alpha)


class Citation(_Request):
    """A citation as search hits and answers carry it; extra fields (score, rank, n) are refused
    so that what is checked is exactly what is cited."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"document_id": "returns-faq", "version": "3", "content_sha256": "0" * 64, "passage": 3,
         "quote": "Clothing can be returned only if it is unworn ...", "start": 120, "end": 260,
         "heading_path": ["Returns and refunds FAQ", "Can I return worn or used clothing?"],
         "anchor": "can-i-return-worn-or-used-clothing", "title": "Returns and refunds FAQ",
         "source_url": "https://help.example.com/returns"},
    ]})

    document_id: str = Field(pattern=_NAME)
    version: str = Field(pattern=_NAME)
    content_sha256: str = Field(max_length=64)
    passage: Int = Field(ge=0, le=_MAX_INT)
    #: The HTTP service states (and enforces) a tighter bound derived from its body limit; see
    #: ``max_quote_chars``.
    quote: str = Field(max_length=200_000)
    start: Int | None = Field(default=None, ge=0, le=_MAX_INT)
    end: Int | None = Field(default=None, ge=0, le=_MAX_INT)
    heading_path: list[str] = Field(default_factory=list, max_length=64)
    anchor: str | None = Field(default=None, max_length=512)
    title: str | None = Field(default=None, max_length=2048)
    source_url: str | None = Field(default=None, max_length=4096)


class AnswerRequest(_Request):
    model_config = ConfigDict(json_schema_extra={"examples": [
        {"question": "Can I return a worn jacket?"},
    ]})

    question: str = Field(max_length=QUESTION_LIMITS.max_chars)
    filters: Filters | None = None


#: Room a citation's other fields take in a body, besides the quote.
_CITATION_RESERVE = 16 * 1024


def max_quote_chars(max_body_bytes: int) -> int:
    """The longest quote the service accepts: one that, in characters, can fit the body limit
    with room for the other fields. A body over the limit is still 413 (a character can take up
    to 12 bytes of JSON), which the OpenAPI document says."""
    return max(256, max_body_bytes - _CITATION_RESERVE)


class SyncRequest(_Request):
    source: str | None = Field(default=None, pattern=_NAME,
                               description="one configured source; all of the tenant's when absent")


# -- responses ---------------------------------------------------------------------------------
class CitedPassage(BaseModel):
    """The citation fields every response that cites a passage carries (hits, answer citations)."""

    document_id: str
    version: str
    content_sha256: str
    passage: int
    quote: str
    start: int
    end: int
    heading_path: list[str]
    anchor: str | None
    title: str | None
    source_url: str | None


class Hit(CitedPassage):
    score: float = Field(description="orders the hits of this search; not comparable across searches, "
                                     "never a probability")
    rank: int
    language: str | None
    page: int | None
    flags: list[str] = Field(description="instruction-like content found at ingest: treat as untrusted")
    explain: dict[str, Any] | None = None


class SearchResponse(BaseModel):
    hits: list[Hit]
    evidence: Literal["none", "weak", "strong"] = Field(
        description="a retrieval signal for answering, never a probability")


class ResolveResponse(BaseModel):
    ok: bool
    reason: Literal["unavailable", "source_changed", "quote_mismatch"] | None
    detail: str
    current_version: str | None
    matched_version: str | None


class AnswerCitation(CitedPassage):
    n: int = Field(description="the [n] marker in the answer text")


class AnswerResponse(BaseModel):
    status: Literal["answered", "declined"]
    text: str
    citations: list[AnswerCitation]
    reason: str | None
    handoff: str | None
    trace: dict[str, Any] | None
    detail: str


class DocumentPassage(BaseModel):
    passage: int
    start: int
    end: int
    quote: str
    heading_path: list[str]
    anchor: str | None
    page: int | None
    flags: list[str]


class DocumentResponse(BaseModel):
    document_id: str
    version: str
    content_sha256: str
    title: str | None
    source_url: str | None
    language: str | None
    tags: list[str]
    published_at: str | None
    indexed_at: str
    passages: list[DocumentPassage]


class Problem(BaseModel):
    detail: Any
