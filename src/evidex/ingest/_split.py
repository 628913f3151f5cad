"""Splitting a document's full text into passages along its own structure.

Every passage is a span of the full text (``quote == text[start:end]``) so a citation can be
re-checked against the source later. A heading with no text of its own ("# Returns and refunds
FAQ" directly followed by its first subsection) is not a passage: it would rank for its words
and answer nothing. It stays in the heading path of the passages below it; in a divided
section, the heading line goes with the first paragraph after it. Numbering rules are chosen
for stable citations: in paragraph mode every blank-line-separated part has a number, even an
empty one, so editing one paragraph never renumbers the others' citations.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import json
import re
import unicodedata
from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token

from ..model import DocumentError, Passage, Section
from ._limits import WORDS_PER_DOCUMENT, check_words

__all__ = ["SPLITS", "markdown_sections", "slugify", "split_key", "split_text"]

SPLITS: tuple[str, ...] = ("paragraph", "heading", "document")

#: Default maximum section length (characters) in heading mode before a section is divided at
#: paragraph boundaries. Around 300 words: long enough to keep a rule with its exceptions, short
#: enough to be read beside an answer and to fit several into a model context.
DEFAULT_MAX_SECTION_CHARS = 2000

#: Headings are found by the block parser alone: inline parsing of every paragraph (links,
#: emphasis) is not needed to find them, and markdown-it's inline parser is slow on hostile
#: text (a paragraph of brackets: seconds per 100 KB). Only heading titles are parsed inline,
#: and only titles of a sane length.
_md = MarkdownIt("commonmark").disable("inline")
_MAX_INLINE_TITLE = 1000


def split_text(
    text: str, mode: str, *, max_section_chars: int = DEFAULT_MAX_SECTION_CHARS,
    sections: Sequence[Section] = (),
) -> list[Passage]:
    """Passages of ``text``. ``sections`` (from HTML, Word or PDF loaders) replace the Markdown
    heading parse in heading mode and give every passage of the other modes the heading path,
    anchor and page of the section it starts in. A text of more words than a document may
    hold, or a passage of more words than a passage may (``_limits``), is refused
    (``DocumentError``): the loaders refuse such files first, one by one; this holds for
    documents built in code too, and for passages only a split mode makes (a whole document)."""
    if mode not in SPLITS:
        raise DocumentError(f"split must be one of {', '.join(SPLITS)}, got {mode!r}")
    if mode == "heading" and (
        not isinstance(max_section_chars, int) or isinstance(max_section_chars, bool)
        or max_section_chars < 1
    ):
        raise DocumentError(f"max_section_chars must be a positive int, got {max_section_chars!r}")
    most = WORDS_PER_DOCUMENT.value()
    if len(text) >= 2 * most:
        try:
            check_words(text, most)
        except DocumentError:
            raise WORDS_PER_DOCUMENT.refuse(f"the document holds more than {most:,} words") from None
    if sections:
        parts = _split_sections(text, mode, max_section_chars, _cover(text, sections))
    elif mode == "paragraph":
        parts = split_paragraphs(text)
    elif mode == "heading":
        parts = split_headings(text, max_section_chars)
    else:
        parts = _whole(text)
    for p in parts:
        check_words(p.text)
    return parts


def markdown_sections(text: str) -> tuple[Section, ...]:
    """The sections of a Markdown text: one per heading (the text before the first heading,
    if any, too), whole, with heading paths and anchors as heading mode gives them."""
    return tuple(Section(p.start, p.end, p.heading_path, p.anchor)
                 for p in split_headings(text, len(text) + 1))


def split_key(mode: str, max_section_chars: int = DEFAULT_MAX_SECTION_CHARS,
              sections: Sequence[Section] = ()) -> str:
    """The split configuration stored with a document: what must be equal, besides the text
    and metadata, for a re-ingest to be a no-op. Given sections are part of it through a digest,
    so a changed HTML id or page break re-indexes even when the text is the same."""
    key = f"heading:{max_section_chars}" if mode == "heading" else mode
    if sections:
        blob = json.dumps([s.as_list() for s in sections], ensure_ascii=False)
        key += ";sections=" + hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]
    return key


def _cover(text: str, sections: Sequence[Section]) -> list[Section]:
    """The sections plus structure-less sections for any text between them, so no text is
    lost when a loader leaves a gap."""
    out: list[Section] = []
    pos = 0
    for s in sections:
        if s.start > pos:
            out.append(Section(pos, s.start))
        out.append(s)
        pos = s.end
    if pos < len(text):
        out.append(Section(pos, len(text)))
    return out


def _split_sections(text: str, mode: str, max_chars: int, sections: list[Section]) -> list[Passage]:
    if mode == "heading":
        out: list[Passage] = []
        for sec in sections:
            title = sec.heading_path[-1] if sec.heading_path else None
            for s, e in _with_heading(text, _pieces(text, sec.start, sec.end, max_chars), title):
                out.append(Passage(len(out) + 1, s, e, text[s:e], sec.heading_path, sec.anchor,
                                   sec.page))
        return out
    parts = split_paragraphs(text) if mode == "paragraph" else _whole(text)
    starts = [s.start for s in sections]
    out = []
    for p in parts:
        i = max(bisect.bisect_right(starts, p.start) - 1, 0)
        while i + 1 < len(sections) and sections[i].end <= p.start:
            i += 1  # an empty section shares its start with the next one
        sec = sections[i]
        out.append(dataclasses.replace(p, heading_path=sec.heading_path, anchor=sec.anchor,
                                       page=sec.page))
    return out


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
            raw = tokens[i + 1].content
            children: list[Token] = []
            if len(raw) <= _MAX_INLINE_TITLE:
                _md.inline.parse(raw, _md, {}, children)
            title = "".join(
                c.content for c in children if c.type in ("text", "text_special", "code_inline")
            ).strip() or raw.strip()
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
            anchor: str | None = unique_anchor(slugify(title), used)
        else:
            anchor = None
        path = tuple(t for _, t in stack)
        pieces = _pieces(text, start, end, max_chars)
        for s, e in _with_heading(text, pieces, None) if level else pieces:
            out.append(Passage(len(out) + 1, s, e, text[s:e], path, anchor))
    return out


_SETEXT_UNDERLINE = re.compile(r"[ \t]*(?:=+|-+)[ \t]*")


def _bare_heading(piece: str, title: str | None) -> bool:
    """Whether ``piece`` is only a heading: one ATX line, a setext title and its underline, or
    (for loaders' sections) exactly the section's title."""
    lines = piece.strip().splitlines()
    if title is not None:
        return " ".join(piece.split()) == " ".join(title.split())
    return (len(lines) == 1 and lines[0].lstrip().startswith("#")) or (
        len(lines) == 2 and bool(_SETEXT_UNDERLINE.fullmatch(lines[1])))


def _with_heading(text: str, pieces: list[tuple[int, int]], title: str | None) -> list[tuple[int, int]]:
    """``pieces`` of one section without a heading-only first piece: it joins the next piece,
    or, when the section has no other text, the section has no passage."""
    if pieces and _bare_heading(text[pieces[0][0]:pieces[0][1]], title):
        if len(pieces) == 1:
            return []
        return [(pieces[0][0], pieces[1][1]), *pieces[2:]]
    return pieces


def unique_anchor(base: str, used: set[str]) -> str:
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
