"""Request and response bodies of the HTTP API (and the MCP tools' arguments).

Every request model forbids fields it does not define, so a body can never carry a tenant, a
group or any other identity: those come from the credential alone. Bounds here are the outer
limits of the wire format; the library then applies its own query contract (200 characters,
12 words, ...) and its messages come back as 422 as well.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    RootModel,
    StringConstraints,
    Tag,
)

from ..kb import QUESTION_LIMITS
from ..model import CITATION_FIELDS
from ..query import DEFAULT_LIMITS
from ..retrieve import Fusion

__all__ = [
    "AnswerRequest",
    "AnswerResponse",
    "Citation",
    "DocumentResponse",
    "Filters",
    "Int",
    "LiveCitation",
    "ResolveBody",
    "ResolveResponse",
    "SearchRequest",
    "SearchResponse",
    "SyncRequest",
    "ToolCallRequest",
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
TagText = Annotated[str, StringConstraints(pattern=_TAG)]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class Filters(_Request):
    language: str | None = Field(default=None, max_length=35, pattern=_LANGUAGE, examples=["de"])
    tags: list[TagText] = Field(default_factory=list, max_length=32)


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
    evidence: bool = Field(
        default=False,
        description="also decide whether the passages found cover the question (evidence: none, "
                    "weak or strong); it reads the best passages sentence by sentence, so a plain "
                    "search leaves it out (evidence null). explain computes it too")
    # Fusion fields left out take the service's configured ones (config ``retrieval:``), so a
    # deployment that chose RRF gets RRF from a plain request, as its answers do.
    fusion: Literal["adaptive", "weighted_rrf", "rrf", "convex"] | None = Field(
        default=None,
        description="how keyword and vector ranks are fused (adaptive and weighted_rrf: leg "
                    "weights per query); "
                    "default: retrieval.fuse")
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

    kind: Literal["passage"] = "passage"
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


# The request schema states each field's bounds; which fields a citation has is model.Citation's.
if set(Citation.model_fields) != {"kind", *CITATION_FIELDS}:
    raise AssertionError("the Citation schema's fields differ from evidex.model.Citation's")


class LiveCitation(_Request):
    """A live lookup as an answer cites it; resolving it looks the value up again as the
    caller (``parameters`` are the question's; the caller's own identity fills the rest)."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"kind": "live", "tool": "order-status", "title": "Current status of one of your orders",
         "parameters": {"order_id": "12345"}, "actor_parameters": ["customer_id"],
         "fetched_at": "2026-12-01T17:54:10.123Z", "content_sha256": "0" * 64,
         "quote": "Order 12345: shipped, expected delivery 2026-12-03.",
         "source_url": "http://127.0.0.1:8081/customers/{customer_id}/orders/12345"},
    ]})

    kind: Literal["live"]
    tool: str = Field(pattern=_NAME)
    title: str | None = Field(default=None, max_length=2048)
    parameters: dict[str, str] = Field(default_factory=dict, max_length=32)
    actor_parameters: list[str] = Field(default_factory=list, max_length=32)
    fetched_at: str | None = Field(default=None, max_length=64)
    content_sha256: str | None = Field(default=None, max_length=64)
    quote: str = Field(max_length=20_000)
    source_url: str | None = Field(default=None, max_length=4096)


def _kind(value: Any) -> str:
    kind = value.get("kind", "passage") if isinstance(value, dict) else getattr(value, "kind", "passage")
    return kind if kind in ("passage", "live") else "passage"


_AnyCitation = Annotated[Annotated[Citation, Tag("passage")] | Annotated[LiveCitation, Tag("live")],
                        Discriminator(_kind)]


class ResolveBody(RootModel[_AnyCitation]):
    """A passage citation (``kind`` "passage" or absent) or a live one (``kind`` "live")."""

    model_config = ConfigDict(json_schema_extra={"type": "object"})


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


class ToolCallRequest(_Request):
    model_config = ConfigDict(json_schema_extra={"examples": [{"parameters": {"order_id": "12345"}}]})

    parameters: dict[str, str] = Field(
        default_factory=dict, max_length=32,
        description="the tool's question parameters; actor parameters come from the key's claims")


class SyncRequest(_Request):
    source: str | None = Field(default=None, pattern=_NAME,
                               description="one configured source; all of the tenant's when absent")


# -- responses ---------------------------------------------------------------------------------
class CitedPassage(BaseModel):
    """The citation fields every response that cites a passage carries (hits, answer citations)."""

    kind: Literal["passage"] = "passage"
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
    evidence: Literal["none", "weak", "strong"] | None = Field(
        description="whether the passages found cover the question: a retrieval signal for "
                    "answering, never a probability; null unless asked (evidence or explain)")
    fallback: dict[str, str] | None = Field(
        default=None, description="set when a hybrid search returned the keyword ranking: "
                                  "fallback, reason (no_vectors or vector_timeout), detail")


class ResolveResponse(BaseModel):
    ok: bool
    reason: Literal["unavailable", "source_changed", "quote_mismatch"] | None
    detail: str
    current_version: str | None
    matched_version: str | None


class AnswerCitation(CitedPassage):
    n: int = Field(description="the [n] marker in the answer text")
    sentence_start: int | None = Field(
        default=None, description="start, inside quote, of the sentence(s) of this passage that "
                                  "back the answer (quote[sentence_start:sentence_end])")
    sentence_end: int | None = Field(default=None, description="end of that span, inside quote")


class LiveAnswerCitation(BaseModel):
    """A live lookup cited by an answer: resolve it to look the value up again."""

    n: int = Field(description="the [n] marker in the answer text")
    kind: Literal["live"]
    tool: str
    title: str | None
    parameters: dict[str, str] = Field(description="the question's parameters (shown)")
    actor_parameters: list[str] = Field(description="parameters filled from the caller's verified "
                                                    "identity: named, never shown")
    fetched_at: str = Field(description="when the value was looked up (UTC)")
    content_sha256: str = Field(description="SHA-256 of the response body")
    quote: str
    source_url: str = Field(description="the request URL with the caller's own values left as {name}")


class AnswerResponse(BaseModel):
    status: Literal["answered", "declined"]
    text: str
    citations: list[AnswerCitation | LiveAnswerCitation]
    reason: str | None
    handoff: str | None
    trace: dict[str, Any] | None
    detail: str
    related: list[CitedPassage] = Field(
        default_factory=list,
        description="a declined answer's related reading, NOT an answer: up to 3 passages the "
                    "search found that the caller may read (never flagged ones), re-checked like "
                    "citations; empty when answered or when nothing related was found")
    trace_id: str | None = Field(default=None, description="names this answer in a handoff and the log")
    handoff_available: bool = Field(
        default=False, description="a declined answer may be sent to a person: POST /v1/handoff")


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
