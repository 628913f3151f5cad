"""The ``sources:`` and ``defaults:`` sections, and ``freshness:`` (how often sources are
checked for drift, and who hears of it)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from ..ingest import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_SECTION_CHARS
from ..notify import Owner, check_url, resolve_path
from ._common import (
    SOURCE_ID,
    Cadence,
    Split,
    Strict,
    Visibility,
    cadence_value,
    language_tag,
)


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


class SourceDefaults(Strict):
    """Access and ownership every source inherits unless it sets its own."""

    tenant: str | None = Field(default=None, min_length=1)
    groups: tuple[str, ...] | None = None
    visibility: Visibility | None = None
    language: str | None = None
    owner: str | Owner | None = None
    tags: tuple[str, ...] | None = None

    _lang = field_validator("language")(language_tag)


class _Source(Strict):
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

    _lang = field_validator("language")(language_tag)
    _sched = field_validator("schedule")(cadence_value)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not SOURCE_ID.match(value):
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


class RecordFields(Strict):
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



#: The keys a source inherits from ``defaults:`` (``load_config`` merges them in).
SOURCE_KEYS = frozenset(_Source.model_fields)


class Notify(Strict):
    webhook: str | None = None
    timeout_seconds: float = Field(default=10.0, gt=0, le=120)

    @field_validator("webhook")
    @classmethod
    def _hook(cls, value: str | None) -> str | None:
        return None if value is None else check_url(value)


class Freshness(Strict):
    #: How often ``evidex serve``/``evidex schedule`` checks every source for drift (``evidex
    #: drift`` runs it on demand).
    drift_check: Cadence = "daily"
    #: "content_owner": findings go to each source's owner; a mapping names one webhook.
    notify: Annotated[Annotated[Literal["content_owner"], Tag("name")] | Annotated[Notify, Tag("mapping")],
                      Discriminator(lambda v: "name" if isinstance(v, str) else "mapping")] = Notify()

    _sched = field_validator("drift_check")(cadence_value)

