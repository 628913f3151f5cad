"""Turning sources into documents and documents into passages.

Markdown, text and JSON Lines need nothing beyond the core install; the HTML, PDF and Word
readers need the ``formats`` extra and are imported on first use (see ``_files``).
"""

from ._files import (
    DEFAULT_MAX_FILE_BYTES,
    FORMATS,
    FRONT_MATTER_KEYS,
    LoadResult,
    Rejected,
    iter_files,
    load_document,
    load_paths,
    read_file,
)
from ._limits import check_text, check_words
from ._scan import DOCUMENT_FLAG, FLAGS, scan, scan_document
from ._sentences import sentence_spans
from ._split import DEFAULT_MAX_SECTION_CHARS, SPLITS, markdown_sections, slugify, split_key, split_text
from ._structure import NO_TEXT_LAYER, Extracted

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_SECTION_CHARS",
    "DOCUMENT_FLAG",
    "FLAGS",
    "FORMATS",
    "FRONT_MATTER_KEYS",
    "NO_TEXT_LAYER",
    "SPLITS",
    "Extracted",
    "LoadResult",
    "Rejected",
    "check_text",
    "check_words",
    "iter_files",
    "load_document",
    "load_paths",
    "markdown_sections",
    "read_file",
    "scan",
    "scan_document",
    "sentence_spans",
    "slugify",
    "split_key",
    "split_text",
]
