"""Reading documents from files: Markdown and text (with YAML front matter), HTML, PDF, Word
and JSONL records.

Loading never writes: it yields documents and per-file rejections, so a caller can report bad
files and still ingest the good ones as one atomic batch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any

import yaml

from ..extras import require
from ..model import Document, DocumentError, EvidexError, sha256_text
from ..yamlfile import YamlRefused, compose_yaml
from ._limits import check_text, reading
from ._split import first_heading
from ._structure import Extracted

__all__ = ["DEFAULT_MAX_FILE_BYTES", "FORMATS", "FRONT_MATTER_KEYS", "LoadResult", "Rejected", "iter_files",
           "load_document", "load_paths", "read_file"]

#: Largest local file read by default (``evidex ingest --max-file-mb``, a source's ``max_bytes``).
#: A file is read whole and split into passages held in memory until they are written; past
#: this size a file is far more likely an export or a log than a document someone cites.
DEFAULT_MAX_FILE_BYTES = 20 * 1024 * 1024


RECORD_SUFFIXES = {".jsonl"}
#: File suffix -> format. Formats are read by their libraries (markdown-it-py, selectolax,
#: pypdf, python-docx); nothing here parses a format by hand.
FORMATS = {".md": "markdown", ".markdown": "markdown", ".txt": "text", ".html": "html",
           ".htm": "html", ".pdf": "pdf", ".docx": "docx", ".jsonl": "records"}
#: Structured format -> (its reader module, the package the reader needs, what it reads). A
#: reader is imported when a file of its format is first read: the packages belong to the
#: ``formats`` extra, and a missing one rejects just those files, naming the install command.
_READERS = {"html": ("_html", "selectolax", "HTML files"), "pdf": ("_pdf", "pypdf", "PDF files"),
            "docx": ("_docx", "docx", "Word files")}
FRONT_MATTER_KEYS = frozenset(
    {"id", "version", "groups", "visibility", "language", "title", "source_url", "tags",
     "published_at"}
)
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


@dataclass(frozen=True)
class Rejected:
    source: str
    reason: str


@dataclass
class LoadResult:
    documents: list[Document]
    rejected: list[Rejected]
    sources: dict[str, str]  # document id -> file (for error messages and duplicate reports)


def iter_files(paths: list[Path]) -> Iterator[tuple[Path, Path]]:
    """(file, root) pairs: folders recursively in sorted order, files as given."""
    for p in paths:
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if f.is_file() and f.suffix.lower() in FORMATS:
                    yield f, p
        else:
            yield p, p.parent


def _front_matter(raw: str) -> tuple[dict[str, Any], str]:
    m = _FRONT.match(raw)
    if not m:
        return {}, raw
    try:
        meta = compose_yaml(m.group(1))[1] or {}
    except YamlRefused as exc:
        raise EvidexError(f"front matter line {exc.line}: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise EvidexError(f"invalid YAML front matter: {exc}".splitlines()[0]) from None
    if not isinstance(meta, dict):
        raise EvidexError("front matter must be a mapping")
    unknown = set(meta) - FRONT_MATTER_KEYS
    if unknown:
        raise EvidexError(
            f"unknown front matter keys {sorted(unknown)}; allowed: "
            f"{sorted(FRONT_MATTER_KEYS)}"
        )
    return meta, raw[m.end():]


def _limit(n: int) -> str:
    mib = 1024 * 1024
    return f"{n // mib} MiB" if n % mib == 0 else f"{n:,} bytes"


def read_file(path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> bytes:
    """A local file's bytes; a file larger than ``max_bytes`` is refused (``DocumentError``)
    before it is read, and one that grows past it while being read is refused too."""
    size = path.stat().st_size
    if size > max_bytes:
        raise DocumentError(f"the file is {size:,} bytes, larger than the limit of {_limit(max_bytes)} "
                            "per file")
    with path.open("rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise DocumentError(f"the file grew past the limit of {_limit(max_bytes)} per file while it "
                            "was read")
    return data


def _decode(data: bytes) -> str:
    try:
        # utf-8-sig: a byte-order mark must not hide the front matter (and with it the groups
        # and visibility). Line ends are normalised to "\n"; the fingerprint is of that text.
        raw = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise EvidexError("not UTF-8 text") from None
    return raw.replace("\r\n", "\n").replace("\r", "\n")


def load_document(data: bytes, fmt: str, defaults: dict[str, Any], *, doc_id: str,
                  source_url: str | None = None, name: str | None = None,
                  charset: str | None = None) -> Document:
    """One document from a file's bytes. ``defaults`` (tenant, groups, ...) fill what the file
    does not state itself; ``doc_id`` and ``source_url`` are used unless Markdown front matter
    sets them; ``name`` (the file name) is the title of a PDF or Word file that states none.
    ``charset`` is a transport's declaration (HTTP) for HTML. Raises an ``EvidexError`` naming
    what is wrong, e.g. "no text layer (needs OCR)", or the resource bound a file passes
    (``_limits``: elements, words, reading time)."""
    with reading():
        return _load(data, fmt, defaults, doc_id=doc_id, source_url=source_url, name=name,
                     charset=charset)


def _load(data: bytes, fmt: str, defaults: dict[str, Any], *, doc_id: str, source_url: str | None,
          name: str | None, charset: str | None) -> Document:
    base: dict[str, Any] = {k: v for k, v in defaults.items() if v is not None}
    if fmt in ("markdown", "text"):
        meta, body = _front_matter(_decode(data))
        check_text(body)  # before the Markdown parse looks for a title
        for key in ("version", "id"):
            if key in meta and not isinstance(meta[key], str):
                meta[key] = str(meta[key])
        if "published_at" in meta and meta["published_at"] is not None:
            meta["published_at"] = str(meta["published_at"])
        fields: dict[str, Any] = {**base, **meta}
        fields.setdefault("id", doc_id)
        if source_url is not None:
            fields.setdefault("source_url", source_url)
        if "title" not in fields and fmt == "markdown":
            title = first_heading(body)
            if title:
                fields["title"] = title
        if not body.strip():
            # Indexed, it would be a document that no search can ever find.
            raise DocumentError("no text to index (the file is empty or holds only front matter)")
        fields["text"] = body
        if "version" not in fields:
            # Without an explicit version the content decides: an edited file is a new version.
            fields["version"] = sha256_text(body)[:12]
        return Document.from_mapping(fields)
    if fmt not in _READERS:
        raise DocumentError(f"unsupported format {fmt!r}")
    extract = _reader(fmt)
    found: Extracted = extract(data, charset) if fmt == "html" else extract(data)
    check_text(found.text)
    fields = {**base, "id": doc_id, "text": found.text}
    if found.language:
        fields["language"] = found.language  # what the file declares beats the default
    title = found.title or base.get("title") or name
    if title:
        fields["title"] = title
    if source_url is not None:
        fields["source_url"] = source_url
    fields.setdefault("version", sha256_text(found.text)[:12])
    doc = Document.from_mapping(fields)
    return Document(**{**{f: getattr(doc, f) for f in Document.__dataclass_fields__},
                       "sections": found.sections})


def _reader(fmt: str) -> Callable[..., Extracted]:
    module, package, what = _READERS[fmt]
    require("formats", f"reading {what}", package)
    return getattr(import_module(f"{__package__}.{module}"), f"extract_{fmt}")  # type: ignore[no-any-return]


def load_paths(paths: list[Path], defaults: dict[str, Any], *,
               max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> LoadResult:
    """Load every supported file below ``paths``; ``defaults`` (tenant, groups, ...) fill what a
    file does not set itself. Files with unknown suffixes given explicitly are rejected, and so
    are files larger than ``max_bytes``."""
    result = LoadResult([], [], {})
    for path, root in iter_files(paths):
        suffix = path.suffix.lower()
        if not path.exists():
            result.rejected.append(Rejected(str(path), "no such file or folder"))
            continue
        if suffix in RECORD_SUFFIXES:
            _load_jsonl(path, defaults, result, max_bytes)
        elif suffix in FORMATS:
            try:
                doc = load_document(read_file(path, max_bytes), FORMATS[suffix], defaults,
                                    doc_id=path.relative_to(root).as_posix(), name=path.name)
            except (EvidexError, OSError) as exc:
                result.rejected.append(_rejected(path, exc))
                continue
            result.documents.append(doc)
            result.sources.setdefault(doc.id, str(path))
        else:
            result.rejected.append(
                Rejected(str(path), f"unsupported file type {suffix or '(none)'}; "
                         f"supported: {sorted(FORMATS)}")
            )
    return result


def _rejected(path: Path, exc: EvidexError | OSError) -> Rejected:
    """A file that could not be loaded: evidex's own one-line reason, or why it was unreadable."""
    if isinstance(exc, EvidexError):
        return Rejected(str(path), str(exc))
    return Rejected(str(path), f"cannot read the file: {exc.strerror or exc}")


def _load_jsonl(path: Path, defaults: dict[str, Any], result: LoadResult, max_bytes: int) -> None:
    try:
        # split("\n"), not splitlines(): U+2028 may appear raw inside a JSON string.
        lines = read_file(path, max_bytes).decode("utf-8-sig").split("\n")
    except UnicodeDecodeError:
        result.rejected.append(Rejected(str(path), "not UTF-8 text"))
        return
    except (EvidexError, OSError) as exc:
        result.rejected.append(_rejected(path, exc))
        return
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise EvidexError("a JSONL line must be a JSON object")
            text = record.get("text")
            if isinstance(text, str) and not text.strip():
                raise DocumentError(f"record {record.get('id')!r} has no text to index")
            if "version" not in record and defaults.get("version") is None and isinstance(text, str):
                record = {**record, "version": sha256_text(text)[:12]}
            doc = Document.from_mapping(record, **defaults)
            check_text(doc.text)
        except RecursionError:
            result.rejected.append(Rejected(where, "the JSON is nested too deeply"))
            continue
        except UnicodeError:
            result.rejected.append(Rejected(where, "a string holds a lone surrogate (not valid Unicode)"))
            continue
        # ValueError: bad JSON, and numbers past Python's digit limit for int conversion.
        except (ValueError, EvidexError, TypeError) as exc:
            result.rejected.append(Rejected(where, str(exc).splitlines()[0]))
            continue
        result.documents.append(doc)
        result.sources.setdefault(doc.id, where)
