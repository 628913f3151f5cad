"""What a configured source consists of: items (files, URLs) and how each is read.

An item is the unit that can be skipped cheaply: a file whose size, modification time and
status-change time are those recorded at the last sync, or a page the server answers "304 Not
Modified" for. Everything else is read and parsed, and the documents it yields are compared
with the store by fingerprint.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import FilesSource, PdfSource, RecordsSource, SourceDefaults, WebSource, WikiSource
from ..ingest import FORMATS, check_text, load_document, markdown_sections, read_file
from ..model import (
    Document,
    DocumentError,
    EvidexError,
    FetchError,
    SourceError,
    sha256_text,
)

__all__ = [
    "RACY_SECONDS",
    "Content",
    "FetchError",
    "Gone",
    "Item",
    "NotModified",
    "SourceError",
    "document_defaults",
    "glob_match",
    "list_files",
    "record_documents",
]

#: A file modified less than this long before it was read may be modified again within the
#: file system's timestamp granularity without its stamp changing; its stamp is not trusted
#: (it is re-read next time), so a changed file is always noticed.
RACY_SECONDS = 2.0


@dataclass(frozen=True)
class NotModified:
    pass


@dataclass(frozen=True)
class Gone:
    """The item no longer exists (HTTP 404/410): its documents are removed."""


@dataclass
class Content:
    documents: list[Document]
    #: Change marker of what was read ("" = do not trust it next time).
    stamp: str
    #: (where, reason) of parts that could not be made into documents (e.g. a JSONL line).
    rejected: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Item:
    key: str  # relative path (files, records) or URL (web): what entries record as ``item``
    #: Read the item; ``previous`` is the stamp recorded when every document of the item was
    #: written with it (None when it must be read regardless).
    read: Callable[[str | None], Content | NotModified | Gone]
    #: How reports name the item, when not by its key.
    label: str | None = None

    @property
    def name(self) -> str:
        return self.label or self.key


def document_defaults(source: FilesSource | WebSource | RecordsSource) -> dict[str, Any]:
    return {
        "tenant": source.tenant,
        "groups": list(source.groups) if source.groups is not None else None,
        "visibility": source.visibility,
        "language": source.language,
        "tags": list(source.tags) if source.tags is not None else None,
    }


def check_access_defaults(source: FilesSource | WebSource | RecordsSource) -> None:
    """A document must have a tenant and groups; say so once per source instead of once per
    file (a source without them, e.g. ``returns-policy`` in the README, is not synced)."""
    missing = [k for k in ("tenant", "groups") if getattr(source, k) is None]
    if missing:
        raise SourceError(f"source {source.id!r} sets no {' and no '.join(missing)} (set them on the "
                          f"source or in the defaults: section)")


# -- globbing -------------------------------------------------------------------------------

def _glob_regex(pattern: str) -> re.Pattern[str]:
    """``**`` spans folders, ``*`` and ``?`` stay within one name, ``[...]`` is a class. A
    pattern without "/" matches the file name in any folder (as in .gitignore)."""
    if "/" not in pattern:
        pattern = "**/" + pattern
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[" and "]" in pattern[i + 1:]:
            j = pattern.index("]", i + 2 if pattern[i + 1:i + 2] in ("!", "]") else i + 1)
            body = pattern[i + 1:j]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = j + 1
        else:
            out.append(re.escape(ch))
            i += 1
    return re.compile("".join(out) + r"\Z")


def glob_match(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    regexes = [_glob_regex(p) for p in patterns]
    return lambda rel: any(r.match(rel) for r in regexes)


def _walk(root: Path) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """(relative posix path, entry) of every regular file below ``root``, sorted; symbolic
    links to folders are not followed (they can loop)."""
    stack = [("", root)]
    while stack:
        prefix, folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
        except OSError as exc:
            raise SourceError(f"cannot list {folder}: {exc.strerror or exc}") from None
        for e in entries:
            rel = prefix + e.name
            if e.is_dir(follow_symlinks=False):
                stack.append((rel + "/", Path(e.path)))
            elif e.is_file():
                yield rel, e


def _stamp(st: os.stat_result, now: float) -> str:
    """size:mtime:ctime. ctime changes with every write and cannot be set back by tools that
    restore modification times, so an edit that keeps size and mtime is still seen."""
    if max(st.st_mtime, st.st_ctime) > now - RACY_SECONDS:
        return ""
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _file_reader(path: Path, parse: Callable[[bytes], Content],
                 max_bytes: int) -> Callable[[str | None], Content | NotModified]:
    def read(previous: str | None) -> Content | NotModified:
        now = time.time()
        try:
            st = path.stat()  # before reading: a write during the read changes the stamp
            stamp = _stamp(st, now)
            if previous and stamp == previous:
                return NotModified()
            data = read_file(path, max_bytes)
        except OSError as exc:
            raise FetchError(f"cannot read {path}: {exc.strerror or exc}") from None
        content = parse(data)
        content.stamp = stamp if not content.rejected else ""
        return content
    return read


def list_files(source: FilesSource | RecordsSource) -> list[tuple[str, Path]]:
    """(relative key, path) of the files a folder source consists of; a file source is its
    one file, keyed "." so that pointing the source at a new file supersedes the document."""
    root = Path(source.path)
    if not root.exists():
        raise SourceError(f"source {source.id!r}: {root} does not exist (nothing is removed while a "
                          "source cannot be read)")
    if root.is_file():
        return [(".", root)]
    inc, exc = glob_match(source.include), glob_match(source.exclude)
    return [(rel, Path(e.path)) for rel, e in _walk(root) if inc(rel) and not exc(rel)]


def files_items(source: FilesSource, on_skip: Callable[[str, str], None]) -> list[Item]:
    check_access_defaults(source)
    root = Path(source.path)
    single = root.is_file()
    defaults = document_defaults(source)
    items = []
    for rel, path in list_files(source):
        fmt = FORMATS.get(path.suffix.lower())
        if fmt is None:
            on_skip(rel, f"unsupported file type {path.suffix or '(none)'}; supported: "
                         f"{', '.join(s for s, f in FORMATS.items() if f != 'records')}")
            continue
        if fmt == "records":
            on_skip(rel, "JSON Lines records belong in a source of type records")
            continue
        if isinstance(source, PdfSource) and fmt != "pdf":
            on_skip(rel, f"not a PDF ({path.suffix or 'no suffix'}); a source of type pdf holds PDFs")
            continue
        doc_id = source.id if single else f"{source.id}/{rel}"

        def parse(data: bytes, fmt: str = fmt, doc_id: str = doc_id, rel: str = rel,
                  path: Path = path) -> Content:
            # The link is computed only for files actually read: resolving every path would
            # cost more than an unchanged re-sync.
            if source.base_url:
                url = source.base_url if single else source.base_url.rstrip("/") + "/" + rel
            else:
                url = path.resolve().as_uri()
            doc = load_document(data, fmt, defaults, doc_id=doc_id, source_url=url, name=path.name)
            return Content([wiki_page(doc, rel) if isinstance(source, WikiSource) else doc], "")

        items.append(Item(rel, _file_reader(path, parse, source.max_bytes), path.name if single else None))
    return items


def wiki_page(doc: Document, rel: str) -> Document:
    """A wiki export's page with its place in the page hierarchy (the folders above it, as
    Outline, MediaWiki and Confluence Markdown exports nest child pages) leading every heading
    path. Markdown headings become sections here, since the splitter's own heading parse knows
    nothing of folders."""
    hierarchy = tuple(part for part in rel.split("/")[:-1] if part)
    if not hierarchy:
        return doc
    if doc.sections:
        secs = tuple(dataclasses.replace(s, heading_path=hierarchy + s.heading_path)
                     for s in doc.sections)
    else:
        secs = tuple(dataclasses.replace(s, heading_path=hierarchy + s.heading_path)
                     for s in markdown_sections(doc.text))
    return dataclasses.replace(doc, sections=secs)


# -- records --------------------------------------------------------------------------------

def _value(record: dict[str, Any], key: str | None) -> Any:
    return None if key is None else record.get(key)


def record_documents(data: bytes, source: RecordsSource, where: str) -> Content:
    """Documents of a JSON Lines file. A bad line is rejected with its line number and does not
    stop the others; the record's own keys never choose its tenant, groups or visibility."""
    f = source.fields
    defaults = {k: v for k, v in document_defaults(source).items() if v is not None}
    try:
        lines = data.decode("utf-8-sig").split("\n")  # not splitlines(): U+2028 may be in JSON
    except UnicodeDecodeError:
        raise DocumentError("not UTF-8 text") from None
    docs: list[Document] = []
    rejected: list[tuple[str, str]] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict):
                raise DocumentError("a JSONL line must be a JSON object")
            rid = _value(rec, f.id)
            if not isinstance(rid, str | int) or isinstance(rid, bool) or str(rid) == "":
                raise DocumentError(f"record has no {f.id!r} (its id)")
            keys = (f.text,) if isinstance(f.text, str) else f.text
            parts = [rec.get(k) for k in keys]
            bad = [k for k, v in zip(keys, parts, strict=True) if v is not None and not isinstance(v, str)]
            if bad:
                raise DocumentError(f"text field {bad[0]!r} is not a string")
            text = "\n\n".join(p.strip() for p in parts if isinstance(p, str) and p.strip())
            if not text:
                raise DocumentError(f"record {rid!r} has no text in {', '.join(map(repr, keys))}")
            fields: dict[str, Any] = {**defaults, "id": f"{source.id}/{rid}", "text": text}
            for name in ("title", "source_url", "language", "tags", "published_at"):
                v = _value(rec, getattr(f, name))
                if v is not None:
                    fields[name] = v
            v = _value(rec, f.version)
            fields["version"] = str(v) if v is not None else sha256_text(text)[:12]
            check_text(text)
            docs.append(Document.from_mapping(fields))
        except (json.JSONDecodeError, EvidexError, TypeError) as exc:
            rejected.append((f"{where}:{n}", str(exc).splitlines()[0]))
    return Content(docs, "", rejected)


def records_items(source: RecordsSource, on_skip: Callable[[str, str], None]) -> list[Item]:
    check_access_defaults(source)
    items = []
    for rel, path in list_files(source):
        label = path.name if rel == "." else rel

        def parse(data: bytes, label: str = label) -> Content:
            return record_documents(data, source, label)
        items.append(Item(rel, _file_reader(path, parse, source.max_bytes), label))
    return items


def effective(source: FilesSource | WebSource | RecordsSource,
              defaults: SourceDefaults) -> FilesSource | WebSource | RecordsSource:
    """The source with ``defaults:`` filled in (``load_config`` already merges them; this is
    for sources built in code)."""
    fill = {k: v for k, v in defaults.model_dump().items()
            if v is not None and getattr(source, k) is None}
    return source.model_copy(update=fill) if fill else source
