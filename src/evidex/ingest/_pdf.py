"""PDF files with a text layer (pypdf): one section per page, so every passage knows its page.

The anchor of a page section is ``page=N``, the PDF open parameter, so the file URL + ``#`` +
anchor opens the cited page. Bookmarks (the outline), when present, give pages a heading path.
A PDF whose pages yield no text at all is a scan; it is refused with "no text layer (needs
OCR)" rather than indexed empty, because an empty document would silently answer nothing.
"""

from __future__ import annotations

import io
import re
from typing import Any

from pypdf import PdfReader
from pypdf.errors import PdfReadError

from ..model import DocumentError, Section
from ._limits import ELEMENTS, tick
from ._structure import NO_TEXT_LAYER, Extracted, collapse

__all__ = ["NO_TEXT_LAYER", "extract_pdf"]

_BLANKS = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")


def _page_text(raw: str) -> str:
    lines = [ln.rstrip() for ln in raw.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()


def _outline(reader: PdfReader) -> list[tuple[int, int, str]]:
    """(page index, depth, title) of every bookmark, in outline order."""
    out: list[tuple[int, int, str]] = []

    def walk(items: list[Any], depth: int) -> None:
        for it in items:
            if isinstance(it, list):
                walk(it, depth + 1)
                continue
            try:
                page = reader.get_destination_page_number(it)
            except Exception:  # a dangling bookmark names no page; it is only navigation
                continue
            title = collapse(str(getattr(it, "title", "") or ""))
            if page is not None and page >= 0 and title:
                out.append((page, depth, title))

    try:
        walk(reader.outline, 0)
    except PdfReadError:
        return []
    return out


def extract_pdf(data: bytes) -> Extracted:
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise DocumentError("the PDF is encrypted")
        most = ELEMENTS.value()
        if len(reader.pages) > most:
            raise ELEMENTS.refuse(f"the PDF has {len(reader.pages):,} pages, more than {most:,}")
        pages = []
        for p in reader.pages:
            tick()
            pages.append(_page_text(p.extract_text() or ""))
    except DocumentError:
        raise
    except Exception as exc:  # pypdf raises many types for broken files; all mean unreadable
        raise DocumentError(f"not a readable PDF: {type(exc).__name__}: {exc}".splitlines()[0]) from None
    if not any(pages):
        raise DocumentError(NO_TEXT_LAYER)
    marks = sorted(_outline(reader), key=lambda m: m[0])
    parts: list[str] = []
    sections: list[Section] = []
    pos = 0
    stack: list[tuple[int, str]] = []
    mi = 0
    for i, text in enumerate(pages):
        while mi < len(marks) and marks[mi][0] <= i:
            _, depth, title = marks[mi]
            while stack and stack[-1][0] >= depth:
                stack.pop()
            stack.append((depth, title))
            mi += 1
        if not text:
            continue  # a blank or image-only page: nothing to cite on it
        if parts:
            parts.append("\n\n")
            pos += 2
        parts.append(text)
        sections.append(Section(pos, pos + len(text), tuple(t for _, t in stack), f"page={i + 1}", i + 1))
        pos += len(text)
    title = None
    try:
        meta = reader.metadata
        title = collapse(str(meta.title)) if meta is not None and meta.title else None
    except Exception:  # unreadable metadata is not a reason to lose the text
        title = None
    return Extracted("".join(parts), tuple(sections), title or None, None)
