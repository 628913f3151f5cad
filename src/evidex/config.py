"""``knowledge.config.yaml``: sources, retrieval and answer defaults, freshness, server.

Configuration is validated whole before anything runs: unknown keys, duplicate keys and bad
values are errors naming the file, the line and the key (``ConfigError``), because a typo in a
source's ``groups`` or ``visibility`` otherwise becomes documents the wrong people can read.
Relative paths are relative to the configuration file, so the file means the same thing from
any working directory.

The ``server:`` section is who may call the service, as what. Identity is trusted
configuration: each API key (stored only as its SHA-256) maps to one actor. Nothing in a
request body can name a tenant or a group, so these models are the only place an identity is
ever defined. They live here, not in ``evidex.server``, so reading a configuration never needs
the server's optional packages.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from . import tools as _tools
from .answer import AnswerSettings
from .cadence import check_cadence
from .ingest import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_SECTION_CHARS
from .model import VISIBILITIES, ConfigError, is_language_tag
from .notify import HandoffRoute, Owner, SmtpSettings, check_url, handoff_text, resolve_path
from .retrieve import DEFAULT_FUSION, Fusion
from .tools import ToolConfig
from .yamlfile import StrictModel, read_yaml

__all__ = [
    "AnswerConfig",
    "ApiKey",
    "Config",
    "FilesSource",
    "Freshness",
    "JwtSettings",
    "KeywordLeg",
    "Notify",
    "PdfSource",
    "RecordFields",
    "RecordsSource",
    "RetrievalConfig",
    "ServerSettings",
    "SourceConfig",
    "SourceDefaults",
    "StoreConfig",
    "StoreLocation",
    "ToolConfig",
    "VectorLeg",
    "WebSource",
    "WikiSource",
    "load_config",
]

_SOURCE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
Visibility = Literal["public", "internal", "confidential", "restricted"]
assert set(Visibility.__args__) == VISIBILITIES  # type: ignore[attr-defined]


_Strict = StrictModel


def _language(value: str | None) -> str | None:
    if value is not None and not is_language_tag(value):
        raise ValueError(f"must be a language tag like 'en' or 'de-CH', got {value!r}")
    return value


# -- knowledge operations (issue 24: reference file, vector timeout, schedules) ---------------
# Spellings of the reference knowledge.config.yaml map onto the canonical values here, so the
# rest of evidex sees one name per setting.

def _alias(aliases: dict[str, str]) -> BeforeValidator:
    return BeforeValidator(lambda v: aliases.get(v, v) if isinstance(v, str) else v)


#: ``by_heading`` is the reference file's name for ``heading``.
Split = Annotated[Literal["heading", "paragraph", "document"],
                  _alias({"by_heading": "heading", "by_paragraph": "paragraph"})]
#: ``reciprocal_rank`` is the reference file's name for ``rrf`` (reciprocal rank fusion), and
#: ``weighted_reciprocal_rank`` for ``weighted_rrf`` (RRF with the adaptive leg weights per query).
FuseMethod = Annotated[Literal["adaptive", "weighted_rrf", "rrf", "convex"],
                       _alias({"reciprocal_rank": "rrf", "weighted_reciprocal_rank": "weighted_rrf"})]
#: ``say_so_and_offer_a_person`` / ``say_so`` are the reference file's names for the declines.
WhenNoEvidence = Annotated[Literal["decline_and_offer_person", "decline"],
                           _alias({"say_so_and_offer_a_person": "decline_and_offer_person",
                                   "say_so": "decline"})]


def _cadence(value: str | None) -> str | None:
    return None if value is None else check_cadence(value)


#: How often something runs: off, hourly, daily, weekly, or a five-field cron expression
#: (minute hour day-of-month month day-of-week, UTC), e.g. "30 2 * * 1-5" (see ``cadence``).
Cadence = str


class KeywordLeg(_Strict):
    """``retrieval.keyword``: the BM25 full-text index (the only keyword index evidex has)."""

    index: Literal["full_text"] = "full_text"


class VectorLeg(_Strict):
    """``retrieval.vector``: the embedding index and the vector leg's deadline."""

    index: Literal["embeddings"] = "embeddings"
    #: Query embedding plus vector search must finish within this; past it (or when the store
    #: has no vectors) hybrid search returns the keyword ranking and says so.
    timeout_ms: int = Field(default=4000, ge=1, le=600_000)


# -- end of the knowledge-operations block ----------------------------------------------------

def _file_globs(patterns: tuple[str, ...]) -> tuple[str, ...]:
    """Globs over paths relative to a source's folder: one with a leading "/" can never match,
    and an exclude that silently excludes nothing indexes what it was meant to keep out."""
    for p in patterns:
        if p.startswith("/"):
            raise ValueError(f"{p!r} never matches: patterns are relative to path (write {p.lstrip('/')!r})")
    return patterns


def _url_path_globs(patterns: tuple[str, ...]) -> tuple[str, ...]:
    """Globs over URL paths, which start with "/": a pattern with a "/" that starts otherwise
    (not "/", "*" or a class) can never match, and an include matching nothing empties the source."""
    for p in patterns:
        if "/" in p and p[0] not in "/*[":
            raise ValueError(f"{p!r} never matches: URL paths start with '/' (write {'/' + p!r})")
    return patterns


class SourceDefaults(_Strict):
    """Access and ownership every source inherits unless it sets its own."""

    tenant: str | None = Field(default=None, min_length=1)
    groups: tuple[str, ...] | None = None
    visibility: Visibility | None = None
    language: str | None = None
    owner: str | Owner | None = None
    tags: tuple[str, ...] | None = None

    _lang = field_validator("language")(_language)


class _Source(_Strict):
    id: str
    tenant: str | None = Field(default=None, min_length=1)
    groups: tuple[str, ...] | None = None
    visibility: Visibility | None = None
    language: str | None = None
    owner: str | Owner | None = Field(default=None, description="who is told when the source drifts "
                                      "or conflicts (see Owner)")
    tags: tuple[str, ...] | None = None
    max_section_chars: int = Field(default=DEFAULT_MAX_SECTION_CHARS, ge=100, le=100_000)
    #: A changed document supersedes its previous version, which stays in the history so that
    #: older citations still resolve to the version they quoted; false replaces it outright.
    supersede: bool = True
    #: How often ``evidex serve``/``evidex schedule`` syncs this source (None: only on demand).
    schedule: Cadence | None = None

    _lang = field_validator("language")(_language)
    _sched = field_validator("schedule")(_cadence)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not _SOURCE_ID.match(value):
            raise ValueError("must be 1-64 letters, digits, '.', '_' or '-', starting with a letter "
                             f"or digit, got {value!r}")
        return value


class FilesSource(_Source):
    """A folder (or one file) of Markdown, text, HTML, PDF and Word files."""

    type: Literal["files"]
    path: str
    #: Glob patterns relative to ``path``; ``**`` spans folders, a pattern without "/" matches
    #: the file name in any folder.
    include: tuple[str, ...] = ("**/*",)
    exclude: tuple[str, ...] = ()
    split: Split = "heading"
    #: Largest file read; a larger one is skipped with a one-line reason.
    max_bytes: int = Field(default=DEFAULT_MAX_FILE_BYTES, ge=1024)
    #: Where the folder is published (e.g. https://help.example.com/): a file's citation link
    #: is this URL plus its relative path; without it, the file's own file:// URL.
    base_url: str | None = None

    _p = field_validator("path")(resolve_path)
    _g = field_validator("include", "exclude")(_file_globs)

    @field_validator("base_url")
    @classmethod
    def _base(cls, value: str | None) -> str | None:
        return None if value is None else check_url(value)


class WebSource(_Source):
    """Pages fetched over HTTP(S): listed URLs and/or every URL of a sitemap."""

    type: Literal["web"]
    urls: tuple[str, ...] = ()
    #: One page, the same as a one-element ``urls``.
    url: str | None = None
    sitemap: str | None = None
    #: Glob patterns over URL paths (e.g. "/help/**"), as for files: a listed or sitemap URL
    #: is synced when its path matches an include and no exclude.
    include: tuple[str, ...] = ("/**",)
    exclude: tuple[str, ...] = ()
    split: Split = "heading"
    timeout_seconds: float = Field(default=20.0, gt=0, le=600)
    max_bytes: int = Field(default=20 * 1024 * 1024, ge=1024)

    _g = field_validator("include", "exclude")(_url_path_globs)

    @field_validator("urls")
    @classmethod
    def _urls(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(check_url(u) for u in value)

    @field_validator("sitemap", "url")
    @classmethod
    def _sitemap(cls, value: str | None) -> str | None:
        return None if value is None else check_url(value)

    @model_validator(mode="after")
    def _something(self) -> WebSource:
        if not self.urls and self.sitemap is None and self.url is None:
            raise ValueError("a web source needs urls (or one url), a sitemap, or both")
        return self

    def pages(self) -> tuple[str, ...]:
        """The listed page URLs (``url`` first, then ``urls``)."""
        return tuple(dict.fromkeys(((self.url,) if self.url else ()) + self.urls))


class RecordFields(_Strict):
    """Which key of a JSON record fills which document field. ``text`` may list several keys;
    their values are joined as paragraphs. Other keys of the record are not indexed."""

    id: str = "id"
    text: str | tuple[str, ...] = "text"
    title: str | None = "title"
    source_url: str | None = "url"
    version: str | None = None
    language: str | None = None
    tags: str | None = None
    published_at: str | None = None


class RecordsSource(_Source):
    """JSON Lines files (one record a line), e.g. a product catalogue export."""

    type: Literal["records"]
    path: str
    include: tuple[str, ...] = ("**/*.jsonl",)
    exclude: tuple[str, ...] = ()
    fields: RecordFields = RecordFields()
    split: Split = "document"
    #: Largest file read; a larger one is skipped with a one-line reason.
    max_bytes: int = Field(default=DEFAULT_MAX_FILE_BYTES, ge=1024)

    _p = field_validator("path")(resolve_path)
    _g = field_validator("include", "exclude")(_file_globs)


# -- knowledge operations: the reference file's pdf and wiki source types ---------------------

class PdfSource(FilesSource):
    """A folder (or one file) of PDFs; other files in the folder are not part of it."""

    type: Literal["pdf"]  # type: ignore[assignment]
    include: tuple[str, ...] = ("**/*.pdf",)


class WikiSource(FilesSource):
    """A wiki export: a folder of Markdown/HTML pages (Outline, MediaWiki or Confluence
    exports). A page's folders are its place in the page hierarchy and lead every heading
    path of its passages, so a citation reads "Handbook > Returns > Refund limits"."""

    type: Literal["wiki"]  # type: ignore[assignment]
    include: tuple[str, ...] = ("**/*.md", "**/*.markdown", "**/*.html", "**/*.htm")


# -- end of the knowledge-operations block ----------------------------------------------------

SourceConfig = Annotated[FilesSource | WebSource | RecordsSource | PdfSource | WikiSource,
                         Field(discriminator="type")]


class RetrievalConfig(_Strict):
    """Defaults of every search (CLI and library callers that pass the config)."""

    analyzer: Literal["auto", "exact", "english", "german"] | None = None
    embedder: str | None = None
    mode: Literal["hybrid", "keyword", "vector"] = "hybrid"
    fuse: FuseMethod = DEFAULT_FUSION  # type: ignore[assignment]
    rrf_k: int = Field(default=60, ge=1, le=1000)
    window: int = Field(default=50, ge=1, le=1000)
    alpha: float = Field(default=0.5, ge=0.0, le=1.0)
    top_k: int = Field(default=6, ge=1, le=50)
    max_per_document: int | None = Field(default=2, ge=1)
    match: Literal["any", "all"] = "any"
    keyword: KeywordLeg = KeywordLeg()
    vector: VectorLeg = VectorLeg()


class AnswerConfig(_Strict):
    generator: Literal["extractive", "openai"] = "extractive"
    #: Every answer sentence cites its passage; "required" is the only value (stated, not a choice).
    cite: Literal["required"] = "required"
    #: What a decline offers: the handoff to a person, or nothing.
    when_no_evidence: WhenNoEvidence = "decline_and_offer_person"
    handoff: Annotated[str, Field(min_length=1)] | HandoffRoute | None = None
    include_flagged: bool = False
    link_allowlist: tuple[str, ...] = ()
    #: Decide which sentence answers with the trained reader (see AnswerSettings.reader).
    reader: bool = False
    #: Its decision threshold (None: the one the reader's manifest records).
    reader_threshold: float | None = None


class Notify(_Strict):
    webhook: str | None = None
    timeout_seconds: float = Field(default=10.0, gt=0, le=120)

    @field_validator("webhook")
    @classmethod
    def _hook(cls, value: str | None) -> str | None:
        return None if value is None else check_url(value)


class Freshness(_Strict):
    #: How often ``evidex serve``/``evidex schedule`` checks every source for drift (``evidex
    #: drift`` runs it on demand).
    drift_check: Cadence = "daily"
    #: "content_owner": findings go to each source's owner; a mapping names one webhook.
    notify: Annotated[Annotated[Literal["content_owner"], Tag("name")] | Annotated[Notify, Tag("mapping")],
                      Discriminator(lambda v: "name" if isinstance(v, str) else "mapping")] = Notify()

    _sched = field_validator("drift_check")(_cadence)


# -- the server: section ----------------------------------------------------------------------

def _visibilities(values: tuple[str, ...]) -> tuple[str, ...]:
    unknown = sorted(set(values) - VISIBILITIES)
    if unknown:
        raise ValueError(f"unknown visibilities {unknown}; known: {sorted(VISIBILITIES)}")
    return values


class ApiKey(_Strict):
    key_sha256: str = Field(description="SHA-256 hex digest of the key; the key itself is never stored")
    tenant: str = Field(min_length=1)
    groups: tuple[str, ...] = ()
    visibilities: tuple[str, ...] = ("public",)
    admin: bool = False
    name: str | None = Field(default=None, description="a label for logs; never the key")
    claims: dict[str, str] = Field(
        default_factory=dict, description="verified attributes of this key's caller (e.g. "
                                          "customer_id), which live tools take parameters from")

    _claims = field_validator("claims")(_tools.check_claim_names)

    @field_validator("key_sha256")
    @classmethod
    def _hex(cls, value: str) -> str:
        value = value.strip().lower()
        if not _HEX64.match(value):
            raise ValueError("must be 64 hexadecimal characters (the SHA-256 of the key)")
        return value

    @field_validator("visibilities")
    @classmethod
    def _known(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _visibilities(value)


class JwtSettings(_Strict):
    """Bearer JWTs verified against configured keys; claims map to tenant and groups."""

    issuer: str
    audience: str | None = None
    algorithms: tuple[str, ...] = ("RS256",)
    public_key: str | None = Field(default=None, description="PEM public key (RS*/ES* algorithms)")
    secret: str | None = Field(default=None, description="shared secret (HS* algorithms)")
    tenant_claim: str = "tenant"
    groups_claim: str = "groups"
    visibilities: tuple[str, ...] = ("public",)
    admin_group: str | None = Field(
        default=None, description="tokens whose groups claim holds this group may run admin operations")
    leeway_seconds: int = Field(default=30, ge=0, le=300)
    claims: dict[str, str] = Field(
        default_factory=dict, description="actor claim -> token claim: verified attributes "
                                          "taken from the token (e.g. customer_id: sub)")

    _claims = field_validator("claims")(_tools.check_claim_names)

    @field_validator("visibilities")
    @classmethod
    def _known(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _visibilities(value)

    @model_validator(mode="after")
    def _keys_match_algorithms(self) -> JwtSettings:
        # A token's own header must never pick how it is checked: "none" is refused, and the
        # key material must fit every listed algorithm, so an RS256 public key can never be
        # used as an HS256 secret (the classic algorithm-confusion forgery).
        if not self.algorithms:
            raise ValueError("algorithms must not be empty")
        hs = [a for a in self.algorithms if a.upper().startswith("HS")]
        if any(a.lower() == "none" for a in self.algorithms):
            raise ValueError("the 'none' algorithm is never accepted")
        if hs and len(hs) != len(self.algorithms):
            raise ValueError("do not mix HS* (shared secret) and public-key algorithms")
        if hs and not self.secret:
            raise ValueError("HS* algorithms need a secret")
        if not hs and not self.public_key:
            raise ValueError("public-key algorithms need public_key (PEM)")
        return self


class ServerSettings(_Strict):
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    api_keys: tuple[ApiKey, ...] = ()
    jwt: JwtSettings | None = None
    max_body_bytes: int = Field(default=64 * 1024, ge=1024)
    rate_limit_per_minute: int = Field(
        default=600, ge=1,
        description="requests per minute per key (a token bucket holding one minute's worth); "
                    "kept in process memory, so with N workers a key may make up to N times this")
    failed_auth_per_minute: int = Field(
        default=30, ge=1,
        description="failed credential checks per minute per client address; past it, every "
                    "/v1 request from that address gets 429 before its credentials are checked "
                    "(a guess must not be answered), until the bucket refills. Per worker process")
    allowed_link_hosts: tuple[str, ...] = Field(
        default=(), description="hosts whose http(s) source links the web page shows as links")
    store_handles: int = Field(
        default=2, ge=1, le=64,
        description="open store handles per worker process; requests beyond this wait for one")
    smtp: SmtpSettings | None = None
    tool_hosts: tuple[str, ...] = Field(
        default=(), description="origins (scheme://host[:port]) live tools may call; nothing else")
    _tool_hosts = field_validator("tool_hosts")(_tools.check_origins)
    metrics: bool = Field(
        default=True, description="serve GET /metrics (Prometheus text format) to admin keys, each "
                                  "its own tenant's series; false: 404 and nothing is counted")
    trusted_proxies: tuple[str, ...] = Field(
        default=(),
        description="addresses or networks (CIDR) of the reverse proxies in front of the service. "
                    "Only a connection from one of them may name the client with X-Forwarded-For "
                    "(and the scheme with X-Forwarded-Proto); empty (the default): those headers "
                    "are ignored and every per-address limit keys on the connecting address")

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for v in values:
            try:
                ipaddress.ip_network(v, strict=False)
            except ValueError:
                raise ValueError(f"{v!r} is not an IP address or network (e.g. 10.0.0.5, "
                                 "10.0.0.0/24); list each proxy, never '*'") from None
        return values

    @field_validator("api_keys")
    @classmethod
    def _unique(cls, keys: tuple[ApiKey, ...]) -> tuple[ApiKey, ...]:
        seen: set[str] = set()
        for i, k in enumerate(keys):
            if k.key_sha256 in seen:
                raise ValueError(f"api key {i} repeats the key_sha256 of an earlier key")
            seen.add(k.key_sha256)
        return keys

    @field_validator("allowed_link_hosts")
    @classmethod
    def _hosts(cls, hosts: tuple[str, ...]) -> tuple[str, ...]:
        for h in hosts:
            if not re.fullmatch(r"[a-z0-9.-]{1,253}(:[0-9]{1,5})?", h):
                raise ValueError(f"{h!r} is not a lower-case host name (no scheme, no path)")
        return hosts


def _location(value: object) -> object:
    """``acme: URL`` is short for ``acme: {url: URL}``."""
    return {"url": value} if isinstance(value, str) else value


def _is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


class StoreLocation(_Strict):
    """One store: a PostgreSQL URL (with its streaming read replicas) or a SQLite file."""

    url: str = Field(description="postgresql://... (or a SQLite file, relative to this file)")
    replicas: tuple[str, ...] = Field(
        default=(), description="postgresql:// URLs of streaming replicas of url's server: reads go "
                                "to them, writes to url")

    @field_validator("url")
    @classmethod
    def _url(cls, value: str, info: ValidationInfo) -> str:
        if not value.strip():
            raise ValueError("must name a store: a postgresql:// URL or a SQLite file")
        if _is_postgres(value) or value.startswith("sqlite:///"):
            return value
        return resolve_path(value, info)

    @model_validator(mode="after")
    def _replicas(self) -> StoreLocation:
        for r in self.replicas:
            if not _is_postgres(r):
                raise ValueError(f"replica {r!r} is not a postgresql:// URL (replicas are PostgreSQL "
                                 "standbys)")
        if self.replicas and not _is_postgres(self.url):
            raise ValueError("replicas need a PostgreSQL primary: url is not a postgresql:// URL")
        if len(set(self.replicas)) != len(self.replicas) or self.url in self.replicas:
            raise ValueError("url and each replica must be different servers")
        return self


Location = Annotated[StoreLocation, BeforeValidator(_location)]


class StoreConfig(_Strict):
    """Where the store lives: one location, or tenants placed on several (each with replicas)."""

    default: Location | None = Field(
        default=None, description="the store of every tenant not in tenants (the command line's --db "
                                  "when absent)")
    tenants: dict[str, Location] = Field(
        default_factory=dict, description="tenant -> its own store; a tenant's data, statistics, records "
                                          "and citations live there only (evidex move-tenant moves one)")
    max_lag_s: float = Field(default=10.0, gt=0, description="a replica further behind its primary is "
                                                               "skipped until it catches up")
    max_lag_generations: int | None = Field(
        default=None, ge=1, description="... or further behind than this many store generations")
    replica_wait_ms: int = Field(
        default=1000, ge=0, le=60_000,
        description="how long a read that must see a write waits for a replica that has replayed it "
                    "before the primary answers it")
    failover_timeout_s: float = Field(
        default=4.0, gt=0, le=60, description="a primary that does not answer within this fails a write "
                                              "with one error (reads go on from the replicas)")
    read_your_writes_s: float | None = Field(
        default=None, gt=0,
        description="for this long after a caller's write (an API key's, an evidex command's), its reads "
                    "wait for a server that has it; default max_lag_s + 2")

    @field_validator("tenants")
    @classmethod
    def _tenant_names(cls, value: dict[str, StoreLocation]) -> dict[str, StoreLocation]:
        for name in value:
            if not name.strip() or any(ord(ch) < 32 for ch in name):
                raise ValueError(f"tenant name {name!r} is empty or holds control characters")
        return value

    @property
    def remember_writes_s(self) -> float:
        """How long a caller's reads must include its last write: past ``max_lag_s`` (and two
        probes' worth of margin), every replica that serves at all has replayed it anyway."""
        return self.read_your_writes_s if self.read_your_writes_s is not None else self.max_lag_s + 2.0


class Config(_Strict):
    sources: tuple[SourceConfig, ...] = ()
    #: Where the store lives (the command line's --db when absent).
    store: StoreConfig | None = None
    defaults: SourceDefaults = SourceDefaults()
    retrieval: RetrievalConfig = RetrievalConfig()
    answer: AnswerConfig = AnswerConfig()
    freshness: Freshness = Freshness()
    server: ServerSettings | None = None
    #: Live tools (read-only lookups at question time); their hosts must be in server.tool_hosts.
    tools: tuple[ToolConfig, ...] = ()

    def answer_settings(self, handoff: str | None = None) -> AnswerSettings:
        """The library's answer settings from the ``answer:`` and ``retrieval:`` sections (one
        place, so the CLI and the service decline and cite alike)."""
        a, r = self.answer, self.retrieval
        offered = handoff or handoff_text(a.handoff) or AnswerSettings().handoff
        return AnswerSettings(handoff=offered if a.when_no_evidence == "decline_and_offer_person" else "",
                              link_allowlist=a.link_allowlist, include_flagged=a.include_flagged,
                              reader=a.reader, reader_threshold=a.reader_threshold,
                              top_k=self.retrieval.top_k, mode=self.retrieval.mode,
                              fusion=Fusion(r.fuse, r.rrf_k, r.window, r.alpha))

    def tenant_sources(self, tenant: str) -> list[str]:
        """Ids of the sources whose documents belong to ``tenant`` (what its admins may sync)."""
        return [s.id for s in self.sources if (s.tenant or self.defaults.tenant) == tenant]

    @field_validator("sources")
    @classmethod
    def _unique(cls, value: tuple[Any, ...]) -> tuple[Any, ...]:
        seen: set[str] = set()
        for s in value:
            if s.id in seen:
                raise ValueError(f"source id {s.id!r} is used twice")
            seen.add(s.id)
        return value

    _tool_ids = field_validator("tools")(_tools.unique_tool_ids)

    @model_validator(mode="after")
    def _tools_allowed(self) -> Config:
        # load_config checks each url at its own line (validation context); this catches a
        # Config built in code.
        _tools.check_tool_hosts(self.tools, self.server.tool_hosts if self.server is not None else ())
        return self

    def source(self, source_id: str) -> FilesSource | WebSource | RecordsSource:  # or a subclass
        for s in self.sources:
            if s.id == source_id:
                return s
        known = ", ".join(s.id for s in self.sources) or "none"
        raise ConfigError(f"no source {source_id!r} in the configuration; configured: {known}")


# -- loading with line numbers ---------------------------------------------------------------

#: Largest configuration file read (a configuration is a few kilobytes; URL lists this long
#: belong in a sitemap).
MAX_CONFIG_BYTES = 1024 * 1024


def load_config(path: str | Path) -> Config:
    """Read and validate a configuration file; raises ``ConfigError`` naming file, line, key."""
    doc = read_yaml(path, what="configuration", max_bytes=MAX_CONFIG_BYTES,
                    hint=" (sources share settings through defaults:)")
    data = doc.data
    if not isinstance(data, dict):
        raise doc.fail((), "the configuration must be a mapping of sections")
    defaults = data.get("defaults") if isinstance(data.get("defaults"), dict) else {}
    if isinstance(data.get("sources"), list):
        # Each source inherits from ``defaults:``; the merge happens before validation so an
        # inherited bad value is reported at the defaults' line by the defaults section itself.
        data = {**data, "sources": [
            {**{k: v for k, v in defaults.items() if k in _Source.model_fields}, **s}
            if isinstance(s, dict) else s for s in data["sources"]
        ]}
    return doc.validate(Config, data, context={"base": str(Path(path).resolve().parent),
                                               "tool_hosts": _tools.hosts_as_written(data)})
