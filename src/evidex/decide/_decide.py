"""The decision over one search: the question's facts, each passage's support, the second-stage
ranker, the comparison by meaning and the on-topic verdict, computed from a ranking only when
the caller asks (``evidence=True``, ``explain``, the ranker, or an answer).

``evidence`` runs, in order, over the ``Ranking`` that ``retrieve.search`` returned for a
``Query``, inside the same read view:

1. the question's facts (``Question``), once: its language, whether it asks for a number, and
   the idf weight of each of its words among the passages the actor may read (from the keyword
   leg's readable postings when it ran);
2. support (``_support``) for the passages the decision or the ranker reads: the ``depth``
   ranked with the ranker, else the ``DECIDE_DEPTH`` best;
3. the ranker (``_rerank``, when the query asks) re-orders them; the list is cut to ``limit``;
4. the passages decided on get their candidate sentences compared with the question by meaning
   (``_meaning``, when the store can embed sentences and the search has a query vector); in
   hybrid mode within the vector leg's deadline, else the caller gets the ``Fallback`` and
   returns the keyword ranking, decided on again without similarity;
5. the on-topic decision (``_evidence.on_topic``) and the level ("none", "weak", "strong").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..model import Hit
from ..query import content_terms
from ..retrieve import Deadline, Fallback, Query, Ranking, within
from ..store import ReadView
from ._evidence import DECIDE_DEPTH, EvidenceThresholds, OnTopic, on_topic, terms_in_hits
from ._language import guess_language
from ._meaning import SentenceVectors, with_meaning
from ._rerank import RERANK_DEPTH, rank_score, rerank_order
from ._support import PassageSupport, asks_number, passage_support, term_weights, wants_number

__all__ = ["Evidence", "Question", "depth", "evidence", "question"]

Analyze = Callable[[str], list[str]]


@dataclass(frozen=True, slots=True)
class Question:
    """What the decision knows about the question, computed once per question."""

    text: str
    #: "en", "de" or None (``guess_language``): which passages are in another language.
    language: str | None
    #: The question opens by asking for a quantity or a time (``wants_number``): a passage whose
    #: best sentences hold no number does not state what is asked.
    wants_number: bool
    #: Some sentence of it asks for one (``asks_number``): the sentence choice prefers a
    #: sentence holding a number.
    asks_number: bool
    #: The analysed query terms the weights are over.
    terms: tuple[str, ...]
    #: Light stem -> idf weight among the passages the actor may read (``term_weights``).
    weights: dict[str, float]
    #: The store's analyzer (text -> terms) the passages are measured with.
    analyze: Analyze


@dataclass(frozen=True, slots=True)
class Evidence:
    """The decision over one search: the hits (re-ordered by the ranker when asked, cut to the
    limit), each one's support (the first ones; ``supported`` is the on-topic verdict per
    passage), the on-topic decision, the level and what it came from."""

    hits: list[Hit]
    support: list[PassageSupport]
    topic: OnTopic
    level: str
    signals: dict[str, float | None]
    question: Question


def depth(limit: int, rerank: bool) -> int:
    """How many passages a search ranks for ``limit`` hits: the ranker reads ``RERANK_DEPTH``."""
    return max(limit, RERANK_DEPTH) if rerank else limit


def question(view: ReadView, query: Query, ranking: Ranking, analyze: Analyze) -> Question:
    """The question's facts for ``query``; the weights count the readable passages holding each
    term (the keyword leg's, when it ran; else every segment's postings, masked)."""
    terms = query.keyword.terms
    allowed = query.access.allowed
    term_pids = ranking.term_pids
    df = {t: len(term_pids[t]) for t in terms} if term_pids is not None else {
        t: sum(int(allowed.mask(view.sig, p).sum()) for p, _ in view.postings(t)) for t in terms}
    return _facts(query, tuple(terms), term_weights(terms, df, allowed.passages, analyze), analyze)


def _facts(query: Query, terms: tuple[str, ...], weights: dict[str, float],
           analyze: Analyze) -> Question:
    text = query.text
    return Question(text, guess_language(text), wants_number(text), asks_number(text), terms,
                    weights, analyze)


def evidence(view: ReadView, query: Query, ranking: Ranking, thresholds: EvidenceThresholds,
             analyze: Analyze, sentence_vectors: SentenceVectors | None = None
             ) -> Evidence | Fallback:
    """The decision over ``ranking`` (see the module docstring); or, when the sentence vectors
    are not ready by the query's deadline, the fallback saying so."""
    hits = ranking.hits
    # A keyword fallback has no similarity, whatever vector the query had.
    qvec = query.query_vector if ranking.fallback is None else None
    facts = (question(view, query, ranking, analyze) if hits
             else _facts(query, tuple(query.keyword.terms), {}, analyze))
    # Without the ranker only the passages the decision reads are measured (DECIDE_DEPTH): a
    # search for 10 or 100 hits need not read every passage again sentence by sentence.
    measured = hits if query.rerank else hits[:min(query.limit, DECIDE_DEPTH)]
    support = _support(view, measured, ranking, facts, qvec)
    if query.rerank and hits:
        support = [dataclasses.replace(p, score=rank_score(p, thresholds)) for p in support]
        order = rerank_order(support)[: query.limit]
        hits = [dataclasses.replace(hits[i], rank=r) for r, i in enumerate(order, start=1)]
        support = [support[i] for i in order]
    else:
        hits = hits[: query.limit]
    if qvec is not None and sentence_vectors is not None and support:
        top = min(DECIDE_DEPTH, len(support))
        vectors = sentence_vectors
        deadline = query.deadline if query.mode == "hybrid" else None
        if deadline is not None:
            vectors = _bounded(vectors, deadline)
        try:
            support = [*with_meaning([h.quote for h in hits[:top]],
                                     [(h.title or "", *h.heading_path) for h in hits[:top]],
                                     support[:top], qvec, vectors),
                       *support[top:]]
        except _Late as late:
            return late.fallback
    topic = on_topic(support, thresholds)
    decided = [d.on_topic for d in topic.passages]
    support = [dataclasses.replace(p, supported=i < len(decided) and decided[i])
               for i, p in enumerate(support)]
    level = "none" if not support else "strong" if topic.verdict else "weak"
    return Evidence(hits, support, topic, level, _signals(view, hits, facts, ranking, support),
                    facts)


def _signals(view: ReadView, hits: Sequence[Hit], facts: Question, ranking: Ranking,
             support: Sequence[PassageSupport]) -> dict[str, float | None]:
    """What the level came from: ``coverage`` is the share of the query's content terms found
    in some hit (read from the postings), a diagnostic."""
    contained = terms_in_hits(view, hits, facts.terms, ranking.term_pids)
    wanted = set(content_terms(list(facts.terms)))
    covered = set().union(*contained) & wanted if contained else set()
    return {
        "coverage": round(len(covered) / len(wanted), 4) if wanted else 0.0,
        "similarity": ranking.best_similarity,
        "sentence_coverage": round(max((p.sentence_coverage for p in support), default=0.0), 4),
    }


def _support(view: ReadView, hits: list[Hit], ranking: Ranking, facts: Question,
             qvec: np.ndarray | None) -> list[PassageSupport]:
    """Each hit's lexical evidence, with its cosine to the question when the search has a query
    vector (the vector leg's, else read from the store)."""
    if not hits:
        return []
    kc, vc = ranking.keyword, ranking.vector
    kw: dict[int, float] = {}
    best_kw = 0.0
    if kc is not None and len(kc.pids):
        # The leg's candidates can be tens of thousands (a common word of a large store):
        # read the scores of these hits only, not a mapping of every candidate.
        at = np.isin(kc.pids, np.array([h.pid for h in hits], dtype=kc.pids.dtype))
        kw = dict(zip(kc.pids[at].tolist(), kc.scores[at].tolist(), strict=True))
        best_kw = float(kc.scores.max())
    cos: dict[int, float] = {}
    if qvec is not None:
        if vc is not None:
            cos = dict(zip(vc.pids.tolist(), vc.scores.tolist(), strict=True))
        missing = [h.pid for h in hits if h.pid not in cos]
        if missing:
            for pid, vec in view.passage_vectors(missing).items():
                cos[pid] = float(np.dot(vec, qvec))
    out = []
    for h in hits:
        lang = (h.language or "").split("-")[0].lower() or None
        out.append(passage_support(
            h.quote, (h.title or "", *h.heading_path), facts.analyze, facts.weights,
            similarity=cos.get(h.pid) if qvec is not None else None,
            cross_language=bool(facts.language and lang and lang != facts.language),
            keyword=kw.get(h.pid, 0.0) / best_kw if best_kw > 0 else 0.0,
            number=facts.wants_number))
    return out


class _Late(Exception):
    """The sentence vectors missed the vector leg's deadline."""

    def __init__(self, fallback: Fallback) -> None:
        super().__init__(fallback.detail)
        self.fallback = fallback


def _bounded(vectors: SentenceVectors, deadline: Deadline) -> SentenceVectors:
    """``vectors`` raising ``_Late`` when its result is not ready by ``deadline``."""
    def call(texts: list[str]) -> np.ndarray:
        got = within(deadline, "the sentence embedding", lambda: vectors(texts))
        if isinstance(got, Fallback):
            raise _Late(got)
        return got
    return call
