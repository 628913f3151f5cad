"""Texts compared by meaning: how a quote is read, and where its vector comes from.

A sentence is embedded on the passage side of the store's model read with its passage's title
and heading path, as coverage reads it ("Returns policy > Worn items" above "We cannot accept
items that have been worn outdoors"): alone, "This works once per customer" or "Sizes: S, M, L"
says little. Vectors come from the caller's ``SentenceVectors`` (the knowledge base passes its
embedding cache, keyed by model and text, so a text is embedded once ever).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["SentenceVectors", "in_context"]

#: Texts -> their vectors (one row each, unit length) on the passage side of the store's model.
SentenceVectors = Callable[[list[str]], np.ndarray]


def in_context(sentence: str, context: Sequence[str]) -> str:
    """The text embedded for a sentence: its passage's title and heading path (each once), then
    the sentence."""
    path = " > ".join(c for c in dict.fromkeys(c.strip() for c in context) if c)
    return f"{path}\n{sentence}" if path else sentence
