"""Splitting a document's full text into passages along its own structure.

Every passage is a span of the full text (``quote == text[start:end]``) so a citation can be
re-checked against the source later. Numbering rules are chosen for stable citations: in
paragraph mode every blank-line-separated part has a number, even an empty one, so editing one
paragraph never renumbers the others' citations.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

from markdown_it import MarkdownIt

from ..model import DocumentError, Passage

__all__ = ["SPLITS", "SplitMode", "slugify", "split_text"]

SplitMode = Literal["paragraph", "heading", "document"]
SPLITS: tuple[str, ...] = ("paragraph", "heading", "document")

#: Default maximum section length (characters) in heading mode before a section is divided at
#: paragraph boundaries. Around 300 words: long enough to keep a rule with its exceptions, short
#: enough to be read beside an answer and to fit several into a model context.
DEFAULT_MAX_SECTION_CHARS = 2000

_md = MarkdownIt("commonmark")


def split_text(
    text: str, mode: str, *, max_section_chars: int = DEFAULT_MAX_SECTION_CHARS
) -> list[Passage]:
    if mode == "paragraph":
        return split_paragraphs(text)
    if mode == "heading":
        if not isinstance(max_section_chars, int) or isinstance(max_section_chars, bool) or (
            max_section_chars < 1
        ):
            raise DocumentError(f"max_section_chars must be a positive int, got {max_section_chars!r}")
        return split_headings(text, max_section_chars)
    if mode == "document":
        return _whole(text)
    raise DocumentError(f"split must be one of {', '.join(SPLITS)}, got {mode!r}")


def _whole(text: str) -> list[Passage]:
    start, end = _trim(text, 0, len(text))
    return [Passage(1, start, end, text[start:end])] if start < end else []


def split_paragraphs(text: str) -> list[Passage]:
    """Parts between ``"\\n\\n"`` separators, numbered 1..n over all parts, verbatim."""
    out: list[Passage] = []
    pos = 0
    for number, part in enumerate(text.split("\n\n"), start=1):
        if part.strip():
            out.append(Passage(number, pos, pos + len(part), part))
        pos += len(part) + 2
    return out


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def slugify(title: str) -> str:
    """GitHub-style anchor: lower case, letters/digits/spaces/hyphens kept, spaces -> hyphens."""
    s = unicodedata.normalize("NFC", title).strip().lower()
    s = "".join(ch for ch in s if ch.isalnum() or ch in " -_")
    return re.sub(r"\s", "-", s) or "section"


def _line_offsets(text: str) -> list[int]:
    """Start offset of every line, with line ends counted as markdown-it counts them (it
    normalises "\r\n" and a lone "\r" to "\n" before parsing)."""
    offsets = [0]
    for m in re.finditer(r"\r\n?|\n", text):
        offsets.append(m.end())
    return offsets


def first_heading(text: str, level: int = 1) -> str | None:
    """Plain text of the first heading of ``level`` as CommonMark sees it (used as a title)."""
    return next((t for _, lv, t in _headings(text) if lv == level and t), None)


def _headings(text: str) -> list[tuple[int, int, str]]:
    """(offset of the heading's first line, level, plain title) for every Markdown heading.

    markdown-it's parser decides what is a heading, so ``#`` inside code blocks and setext
    underlines are handled as CommonMark says rather than by a hand-written regex.
    """
    lines = _line_offsets(text)
    tokens = _md.parse(text)
    out = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map is not None:
            inline = tokens[i + 1]
            title = "".join(
                c.content for c in (inline.children or []) if c.type in ("text", "code_inline")
            ).strip() or inline.content.strip()
            out.append((lines[tok.map[0]], int(tok.tag[1]), title))
    return out


def split_headings(text: str, max_chars: int) -> list[Passage]:
    """One passage per section (heading line + body up to the next heading), with its heading
    path and a unique anchor; an over-long section is divided at blank lines, and each piece
    keeps the section's heading path and anchor."""
    heads = _headings(text)
    bounds = [(0, 0, "")] if not heads or heads[0][0] > 0 else []
    bounds += heads
    stack: list[tuple[int, str]] = []
    used: set[str] = set()
    out: list[Passage] = []
    for idx, (start, level, title) in enumerate(bounds):
        end = bounds[idx + 1][0] if idx + 1 < len(bounds) else len(text)
        if level:
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            anchor: str | None = _unique(slugify(title), used)
        else:
            anchor = None
        path = tuple(t for _, t in stack)
        for s, e in _pieces(text, start, end, max_chars):
            out.append(Passage(len(out) + 1, s, e, text[s:e], path, anchor))
    return out


def _unique(base: str, used: set[str]) -> str:
    """``base``, or ``base-1``, ``base-2``... whichever is not taken yet (GitHub's scheme, made
    robust against a heading that is literally called "A-1")."""
    anchor, n = base, 0
    while anchor in used:
        n += 1
        anchor = f"{base}-{n}"
    used.add(anchor)
    return anchor


def _pieces(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    s, e = _trim(text, start, end)
    if s >= e:
        return []
    if e - s <= max_chars:
        return [(s, e)]
    # Paragraph spans inside the section, then greedily packed up to max_chars; a single
    # paragraph longer than the limit stays whole rather than being cut mid-thought.
    paras: list[tuple[int, int]] = []
    pos = s
    for m in re.finditer(r"\n[ \t]*\n", text[s:e]):
        ps, pe = _trim(text, pos, s + m.start())
        if ps < pe:
            paras.append((ps, pe))
        pos = s + m.end()
    ps, pe = _trim(text, pos, e)
    if ps < pe:
        paras.append((ps, pe))
    pieces: list[tuple[int, int]] = []
    cur_s, cur_e = paras[0]
    for ps, pe in paras[1:]:
        if pe - cur_s <= max_chars:
            cur_e = pe
        else:
            pieces.append((cur_s, cur_e))
            cur_s, cur_e = ps, pe
    pieces.append((cur_s, cur_e))
    return pieces
