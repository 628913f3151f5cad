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
- ``EVIDEX_MAX_TOKENS_PER_PASSAGE`` (15,000): words and marks (each character that is neither
  a letter, digit or ``_`` nor a space) of one passage: a model embeds every mark as a token of
  its own, so text of punctuation alone ("". . . "") costs what words cost and is bounded alike;
- ``EVIDEX_MAX_CHARS_PER_PASSAGE`` (200,000): characters of one passage (a single word of a
  million letters is one word and one mark-free token run, yet costs by its length);
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

__all__ = ["CHARS_PER_PASSAGE", "ELEMENTS", "LIMITS", "SECONDS_PER_FILE", "TOKENS_PER_PASSAGE", "UNPACKED_MB",
           "WORDS_PER_DOCUMENT", "WORDS_PER_PASSAGE", "Limit", "check_text", "check_words", "reading", "tick"]


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
TOKENS_PER_PASSAGE = Limit("EVIDEX_MAX_TOKENS_PER_PASSAGE", 15_000)
CHARS_PER_PASSAGE = Limit("EVIDEX_MAX_CHARS_PER_PASSAGE", 200_000)
SECONDS_PER_FILE = Limit("EVIDEX_MAX_SECONDS_PER_FILE", 60)
LIMITS = (UNPACKED_MB, ELEMENTS, WORDS_PER_DOCUMENT, WORDS_PER_PASSAGE, TOKENS_PER_PASSAGE, CHARS_PER_PASSAGE,
          SECONDS_PER_FILE)


#: A word (group 1), a paragraph break, or a mark.
_WORD_OR_BREAK = re.compile(r"(\w+)|\n[ \t]*\n|[^\w\s]")
#: A word (group 1) or a mark.
_TOKEN = re.compile(r"(\w+)|[^\w\s]")


def check_words(text: str, per_passage: int | None = None) -> None:
    """``DocumentError`` when ``text``, one passage, holds more words, tokens (words and marks)
    or characters than a passage may. ``per_passage``: the word bound instead of the setting
    (the split checks a whole document's words with it; then only words count)."""
    most = WORDS_PER_PASSAGE.value() if per_passage is None else per_passage
    tokens = TOKENS_PER_PASSAGE.value() if per_passage is None else None
    if per_passage is None and len(text) > (chars := CHARS_PER_PASSAGE.value()):
        raise CHARS_PER_PASSAGE.refuse(f"a passage holds more than {chars:,} characters")
    if len(text) < min(2 * most, tokens or 2 * most):  # every word but the last takes a separator
        return
    words = n = 0
    for n, m in enumerate(_TOKEN.finditer(text), start=1):
        if m.group(1) is not None:
            words += 1
            if words > most:
                raise WORDS_PER_PASSAGE.refuse(f"a passage holds more than {most:,} words")
        if tokens is not None and n > tokens:
            raise TOKENS_PER_PASSAGE.refuse(f"a passage holds more than {tokens:,} words and marks")


def check_text(text: str) -> None:
    """``DocumentError`` when a document's text holds more words than a document may, a
    paragraph (blank-line separated) more than a passage may, or more paragraphs than the
    element limit. One pass that stops at the first bound passed; a text too short to pass any
    is not scanned."""
    per_doc, per_passage, elements = (WORDS_PER_DOCUMENT.value(), WORDS_PER_PASSAGE.value(),
                                      ELEMENTS.value())
    per_tokens, per_chars = TOKENS_PER_PASSAGE.value(), CHARS_PER_PASSAGE.value()
    if len(text) < min(2 * per_passage, 2 * elements, per_tokens, per_chars):
        return
    words = in_paragraph = tokens = paragraphs = started = 0
    for m in _WORD_OR_BREAK.finditer(text):
        first = m.group()[0]
        if first == "\n":
            paragraphs += 1
            in_paragraph = tokens = 0
            started = m.end()
            if paragraphs >= elements:
                raise ELEMENTS.refuse(f"the text holds more than {elements:,} paragraphs")
            continue
        tokens += 1
        if tokens > per_tokens:
            raise TOKENS_PER_PASSAGE.refuse(f"a paragraph holds more than {per_tokens:,} words and marks, "
                                            "more than a passage may")
        if m.end() - started > per_chars:
            raise CHARS_PER_PASSAGE.refuse(f"a paragraph holds more than {per_chars:,} characters, "
                                           "more than a passage may")
        if m.group(1) is None:
            continue  # a mark: a token, not a word
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
