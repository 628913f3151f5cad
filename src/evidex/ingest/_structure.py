"""Building a document's text and sections from the blocks a format parser finds.

HTML and Word files are trees, not text; evidex indexes and cites text. The loaders walk their
parser's tree and hand blocks (headings, paragraphs, lists, tables) to ``TextBuilder``, which
writes them one per paragraph (blocks are separated by a blank line, the paragraph splitter's
separator) and records where each heading's section starts, with its heading path and anchor.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..model import Section
from ._split import slugify, unique_anchor

__all__ = ["NO_TEXT_LAYER", "TABLE_CHUNK_CHARS", "Extracted", "TextBuilder", "collapse"]

#: Why a PDF whose pages yield no text at all (a scan) is refused rather than indexed empty.
NO_TEXT_LAYER = "no text layer (needs OCR)"

#: A long table is written as several blocks of rows, each starting with the header row again,
#: so that whichever passage a row lands in, the row is read with its column names.
TABLE_CHUNK_CHARS = 1000

_WS = re.compile(r"\s+")


def collapse(text: str) -> str:
    """Whitespace runs (including line breaks of the source markup) become one space."""
    return _WS.sub(" ", text).strip()


@dataclass(frozen=True)
class Extracted:
    """What a format loader found: the text to index and cite, its structure, and metadata
    the file itself states (title, language); configuration fills the rest."""

    text: str
    sections: tuple[Section, ...]
    title: str | None = None
    language: str | None = None


class TextBuilder:
    def __init__(self) -> None:
        self._parts: list[str] = []
        self._len = 0
        # (start offset, level, title, anchor) of each heading; level 0 for text before any.
        self._heads: list[tuple[int, int, str, str | None]] = []
        self._ids: set[str] = set()

    def _add(self, block: str) -> int:
        if self._parts:
            self._parts.append("\n\n")
            self._len += 2
        start = self._len
        self._parts.append(block)
        self._len += len(block)
        return start

    def block(self, text: str, *, preformatted: bool = False) -> None:
        """One paragraph. Preformatted text keeps its lines; blank lines inside are closed up
        so a code block is never divided between passages."""
        if preformatted:
            lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
            text = "\n".join(ln for ln in lines if ln.strip()).strip("\n")
        else:
            # Line breaks given here are meant (<br>, list items); leading spaces indent nested
            # list items. Everything else collapses.
            text = "\n".join(ln[: len(ln) - len(ln.lstrip(" "))] + collapse(ln)
                             for ln in text.split("\n") if ln.strip())
        if text.strip():
            self._add(text)

    def heading(self, level: int, title: str, anchor: str | None = None) -> None:
        title = collapse(title)
        if not title:
            return
        if anchor:
            self._ids.add(anchor)
        start = self._add(title)
        self._heads.append((start, level, title, anchor or None))

    def table(self, rows: list[list[str]]) -> None:
        """Rows of cell texts, the first being the header row."""
        lines = [" | ".join(collapse(c) for c in row) for row in rows if any(c.strip() for c in row)]
        if not lines:
            return
        header, body = lines[0], lines[1:]
        if not body:
            self._add(header)
            return
        chunk: list[str] = [header]
        size = len(header)
        for line in body:
            if len(chunk) > 1 and size + len(line) + 1 > TABLE_CHUNK_CHARS:
                self._add("\n".join(chunk))
                chunk, size = [header], len(header)
            chunk.append(line)
            size += len(line) + 1
        self._add("\n".join(chunk))

    def build(self, title: str | None = None, language: str | None = None) -> Extracted:
        text = "".join(self._parts)
        bounds = self._heads if self._heads and self._heads[0][0] == 0 else [
            (0, 0, "", None), *self._heads]
        stack: list[tuple[int, str]] = []
        used = set(self._ids)
        sections: list[Section] = []
        for i, (start, level, head, anchor) in enumerate(bounds):
            end = bounds[i + 1][0] if i + 1 < len(bounds) else len(text)
            if level:
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, head))
                if anchor is None:
                    anchor = unique_anchor(slugify(head), used)
            sections.append(Section(start, end, tuple(t for _, t in stack), anchor))
        return Extracted(text, tuple(sections) if text else (), title, language)
