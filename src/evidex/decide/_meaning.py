"""The question compared by meaning with the sentences an answer would quote.

A passage on the question's topic shares its words and is close to it as a whole, whether or
not it says what was asked; the sentence that would be quoted is what must answer. So for each
passage the decision reads (the ``DECIDE_DEPTH`` best), its ``SENTENCES_PER_PASSAGE`` best
sentences by weighted coverage (position breaking ties) are embedded on the passage side of the
store's model, each read with its passage's title and heading path as coverage reads it ("Worn
items: We cannot accept items that have been worn outdoors" under "Returns policy"), and
compared with the question's vector: ``PassageSupport.sentence_similarity`` is
the highest cosine, ``PassageSupport.meaning`` each candidate's (by sentence start).

Sentence vectors come from the caller's ``SentenceVectors`` (the knowledge base passes its
embedding cache, keyed by model and text, so a sentence is embedded once ever): only the few
candidate sentences of the passages decided on are embedded, when first asked about.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from ._support import PassageSupport, SentenceMatch

__all__ = ["SENTENCES_PER_PASSAGE", "SentenceVectors", "candidate_sentences", "in_context", "with_meaning"]

#: Sentences per passage compared by meaning: the answer quotes one of a passage's best
#: covering sentences, or the one after it for a condition.
SENTENCES_PER_PASSAGE = 2

#: Texts -> their vectors (one row each, unit length) on the passage side of the store's model.
SentenceVectors = Callable[[list[str]], np.ndarray]


def candidate_sentences(p: PassageSupport) -> list[SentenceMatch]:
    """The passage's sentences compared by meaning: the best covering, earlier first on ties."""
    ranked = sorted(p.sentences, key=lambda m: (-m.coverage, m.start))
    return sorted(ranked[:SENTENCES_PER_PASSAGE], key=lambda m: m.start)


def in_context(sentence: str, context: Sequence[str]) -> str:
    """The text embedded for a sentence: its passage's title and heading path (each once), then
    the sentence."""
    path = " > ".join(c for c in dict.fromkeys(c.strip() for c in context) if c)
    return f"{path}\n{sentence}" if path else sentence


def with_meaning(texts: Sequence[str], contexts: Sequence[Sequence[str]],
                 support: Sequence[PassageSupport], query_vector: np.ndarray,
                 vectors: SentenceVectors) -> list[PassageSupport]:
    """``support`` (aligned with the passages' ``texts`` and ``contexts``: title and heading
    path) with each passage's sentence similarity; one call of ``vectors`` for all of them. A
    passage without a sentence that may be quoted keeps ``sentence_similarity`` None."""
    picks = [candidate_sentences(p) for p in support]
    flat = [in_context(t[m.start:m.end], c)
            for t, c, ms in zip(texts, contexts, picks, strict=True) for m in ms]
    if not flat:
        return list(support)
    cos = (np.asarray(vectors(flat), dtype=np.float32) @ query_vector.astype(np.float32)).tolist()
    out, k = [], 0
    for p, ms in zip(support, picks, strict=True):
        sims = tuple((m.start, round(float(c), 6)) for m, c in zip(ms, cos[k:k + len(ms)], strict=True))
        k += len(ms)
        out.append(dataclasses.replace(
            p, sentence_similarity=max((c for _, c in sims), default=None), meaning=sims))
    return out
