"""The resource bounds of every loader and of the split, each a setting with a default.

A file is read whole and becomes text, passages, terms and vectors, all held in memory until
they are written; what a file costs grows with what it unpacks to and how many pieces and words
it holds, not with its size on disk (a 321 KB Word file held 2 million paragraphs). Each bound
is checked before the work it bounds, cheaply (counting, never building), and a file past one
is refused with one line naming the bound and the environment variable that raises it:

- ``EVIDEX_MAX_UNPACKED_MB`` (128): what a Word package's parts unpack to;
- ``EVIDEX_MAX_ELEMENTS`` (100,000): paragraphs, runs and table cells of a Word file,
  elements of an HTML page, pages of a PDF, paragraphs of a text; a Word file's XML may hold
  ten times as many elements in all;
- ``EVIDEX_MAX_WORDS_PER_DOCUMENT`` (1,000,000): longer than any book; passages are embedded
  in 512-token windows, so a document's words are what its ingest costs;
- ``EVIDEX_MAX_WORDS_PER_PASSAGE`` (10,000): a passage is quoted and embedded whole; no split
  mode divides a paragraph, so a paragraph longer than this is refused too;
- ``EVIDEX_MAX_SECONDS_PER_FILE`` (60): reading one file (parsing it into text).

Settings are read when a file is read, so a service picks up a changed environment at its next
start. A word is a run of letters, digits or ``_`` (``\\w+``).
"""

from __future__ import annotations

import contextvars
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..model import ConfigError, DocumentError

__all__ = ["ELEMENTS", "LIMITS", "SECONDS_PER_FILE", "UNPACKED_MB", "WORDS_PER_DOCUMENT", "WORDS_PER_PASSAGE",
           "Limit", "check_text", "check_words", "reading", "tick"]


@dataclass(frozen=True)
class Limit:
    env: str
    default: int

    def value(self) -> int:
        """The setting now: the environment variable, else the default."""
        raw = os.environ.get(self.env, "").strip()
        if not raw:
            return self.default
        if not raw.isascii() or not raw.isdigit() or int(raw) < 1:
            raise ConfigError(f"{self.env} must be a positive whole number, got {raw!r}")
        return int(raw)

    def refuse(self, what: str) -> DocumentError:
        """The one-line refusal: ``what`` passed the bound ("the document holds more than
        1,000,000 words"), and the setting that raises it."""
        return DocumentError(f"{what} ({self.env} raises the limit); not read")


UNPACKED_MB = Limit("EVIDEX_MAX_UNPACKED_MB", 128)
ELEMENTS = Limit("EVIDEX_MAX_ELEMENTS", 100_000)
WORDS_PER_DOCUMENT = Limit("EVIDEX_MAX_WORDS_PER_DOCUMENT", 1_000_000)
WORDS_PER_PASSAGE = Limit("EVIDEX_MAX_WORDS_PER_PASSAGE", 10_000)
SECONDS_PER_FILE = Limit("EVIDEX_MAX_SECONDS_PER_FILE", 60)
LIMITS = (UNPACKED_MB, ELEMENTS, WORDS_PER_DOCUMENT, WORDS_PER_PASSAGE, SECONDS_PER_FILE)


_WORD_OR_BREAK = re.compile(r"\w+|\n[ \t]*\n")
_WORD = re.compile(r"\w+")


def check_words(text: str, per_passage: int | None = None) -> None:
    """``DocumentError`` when ``text``, one passage, holds more words than a passage may."""
    most = WORDS_PER_PASSAGE.value() if per_passage is None else per_passage
    if len(text) < 2 * most:  # every word but the last takes a separator
        return
    for n, _ in enumerate(_WORD.finditer(text), start=1):
        if n > most:
            raise WORDS_PER_PASSAGE.refuse(f"a passage holds more than {most:,} words")


def check_text(text: str) -> None:
    """``DocumentError`` when a document's text holds more words than a document may, a
    paragraph (blank-line separated) more than a passage may, or more paragraphs than the
    element limit. One pass that stops at the first bound passed; a text too short to pass any
    is not scanned."""
    per_doc, per_passage, elements = (WORDS_PER_DOCUMENT.value(), WORDS_PER_PASSAGE.value(),
                                      ELEMENTS.value())
    if len(text) < 2 * min(per_passage, elements):
        return
    words = in_paragraph = paragraphs = 0
    for m in _WORD_OR_BREAK.finditer(text):
        if m.group()[0] == "\n":
            paragraphs += 1
            in_paragraph = 0
            if paragraphs >= elements:
                raise ELEMENTS.refuse(f"the text holds more than {elements:,} paragraphs")
            continue
        words += 1
        in_paragraph += 1
        if in_paragraph > per_passage:
            raise WORDS_PER_PASSAGE.refuse(f"a paragraph holds more than {per_passage:,} words, "
                                           "more than a passage may")
        if words > per_doc:
            raise WORDS_PER_DOCUMENT.refuse(f"the document holds more than {per_doc:,} words")


#: When reading the current file must end (``time.monotonic()``); None outside ``reading``.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("evidex_file_deadline",
                                                                         default=None)


@contextmanager
def reading() -> Iterator[None]:
    """Reading one file: ``tick`` refuses the file once ``EVIDEX_MAX_SECONDS_PER_FILE`` passed."""
    seconds = SECONDS_PER_FILE.value()
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def tick() -> None:
    """Called by the loaders' loops: ``DocumentError`` once the file's reading time is over."""
    deadline = _DEADLINE.get()
    if deadline is not None and time.monotonic() > deadline:
        raise SECONDS_PER_FILE.refuse(f"reading the file took more than {SECONDS_PER_FILE.value():,} s")
