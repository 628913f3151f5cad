"""Turning sources into documents and documents into passages."""

from ._files import FORMATS, FRONT_MATTER_KEYS, LoadResult, Rejected, iter_files, load_document, load_paths
from ._pdf import NO_TEXT_LAYER
from ._scan import FLAGS, scan
from ._split import DEFAULT_MAX_SECTION_CHARS, SPLITS, SplitMode, slugify, split_key, split_text
from ._structure import Extracted

__all__ = [
    "DEFAULT_MAX_SECTION_CHARS",
    "FLAGS",
    "FORMATS",
    "FRONT_MATTER_KEYS",
    "NO_TEXT_LAYER",
    "SPLITS",
    "Extracted",
    "LoadResult",
    "Rejected",
    "SplitMode",
    "iter_files",
    "load_document",
    "load_paths",
    "scan",
    "slugify",
    "split_key",
    "split_text",
]
