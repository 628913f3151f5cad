"""Turning sources into documents and documents into passages."""

from ._files import FRONT_MATTER_KEYS, LoadResult, Rejected, iter_files, load_paths
from ._scan import FLAGS, scan
from ._split import DEFAULT_MAX_SECTION_CHARS, SPLITS, SplitMode, slugify, split_text

__all__ = [
    "DEFAULT_MAX_SECTION_CHARS",
    "FLAGS",
    "FRONT_MATTER_KEYS",
    "SPLITS",
    "LoadResult",
    "Rejected",
    "SplitMode",
    "iter_files",
    "load_paths",
    "scan",
    "slugify",
    "split_text",
]
