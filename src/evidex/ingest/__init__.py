"""Turning sources into documents and documents into passages."""

from ._files import FRONT_MATTER_KEYS, LoadResult, Rejected, iter_files, load_paths
from ._split import DEFAULT_MAX_SECTION_CHARS, SPLITS, SplitMode, slugify, split_text

__all__ = [
    "DEFAULT_MAX_SECTION_CHARS",
    "FRONT_MATTER_KEYS",
    "SPLITS",
    "LoadResult",
    "Rejected",
    "SplitMode",
    "iter_files",
    "load_paths",
    "slugify",
    "split_text",
]
