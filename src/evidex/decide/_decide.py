"""The decision over one search: the question's facts, each passage's support, the second-stage
ranker, the comparison by meaning and the on-topic verdict, computed from a ranking only when
the caller asks (``evidence=True``, ``explain``, the ranker, or an answer).

``evidence`` runs, in order, over the ``Ranking`` that ``retrieve.search`` returned for a
``Query``, inside the same read view:

1. the question's facts (``Question``), once: its language, what it asks for (``_types``), and
   the idf weight of each of its words among the passages the actor may read (from the keyword
   leg's readable postings when it ran);
2. support (``_support``) for the passages the decision or the ranker reads: the ``depth``
   ranked with the ranker, else the ``TOPIC_DEPTH`` best;
3. the ranker (``_rerank``, when the query asks) re-orders them; the list is cut to ``limit``;
4. the on-topic decision (``_topic``) over the best passages, with their hubness (``_probes``,
   when the caller has the probes' vectors), and the level ("none", "weak", "strong").

Which sentence states what is asked is the answer-bearing decision (``_bearing``), made by an
extractive answer over the passages that passed this one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..model import Hit
from ..query import content_terms
from ..retrieve import Query, Ranking
from ..store import ReadView
from ._calibration import Calibration
from ._language import guess_language
from ._probes import Probes
from ._rerank import RERANK_DEPTH, rank_score, rerank_order
from ._support import PassageSupport, passage_support, term_weights
from ._topic import TOPIC_DEPTH, OnTopic, on_topic
from ._types import Asked, asked

__all__ = ["Evidence", "Question", "depth", "evidence", "question", "terms_in_hits"]

Analyze = Callable[[str], list[str]]


@dataclass(frozen=True, slots=True)
class Question:
    """What the decision knows about the question, computed once per question."""

    text: str
    #: "en", "de" or None (``guess_language``): which passages are in another language.
    language: str | None
    #: What it asks for (its answer type, ``_types``).
    asked: Asked
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
    return Question(text, guess_language(text), asked(text), terms, weights, analyze)


def evidence(view: ReadView, query: Query, ranking: Ranking, cal: Calibration,
             analyze: Analyze, probes: Probes | None = None) -> Evidence:
    """The decision over ``ranking`` (see the module docstring). ``probes``: the probe
    questions' vectors of the store's model (None: the on-topic decision reads no hubness)."""
    hits = ranking.hits
    # A keyword fallback has no similarity, whatever vector the query had.
    qvec = query.query_vector if ranking.fallback is None else None
    facts = (question(view, query, ranking, analyze) if hits
             else _facts(query, tuple(query.keyword.terms), {}, analyze))
    # Without the ranker only the passages the decision reads are measured: a search for 10 or
    # 100 hits need not read every passage again sentence by sentence.
    measured = hits if query.rerank else hits[:min(query.limit, TOPIC_DEPTH)]
    support = _support(view, measured, ranking, facts, qvec)
    if query.rerank and hits:
        support = [dataclasses.replace(p, score=rank_score(p, cal)) for p in support]
        order = rerank_order(support)[: query.limit]
        hits = [dataclasses.replace(hits[i], rank=r) for r, i in enumerate(order, start=1)]
        support = [support[i] for i in order]
    else:
        hits = hits[: query.limit]
    hubness = None
    if qvec is not None and probes is not None and support:
        top = [h.pid for h in hits[:TOPIC_DEPTH]]
        got = view.passage_vectors(top)
        if all(p in got for p in top):
            hubness = probes.hubness(np.stack([got[p] for p in top]))
    topic = on_topic(support, hubness, cal)
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
            lang = {h.pid: h.language for h in hits}
            for pid, vec in view.passage_vectors(missing).items():
                cos[pid] = float(np.dot(vec, qvec)) + ranking.shift.of(lang[pid])
    out = []
    for h in hits:
        lang = (h.language or "").split("-")[0].lower() or None
        out.append(passage_support(
            h.quote, (h.title or "", *h.heading_path), facts.analyze, facts.weights,
            similarity=cos.get(h.pid) if qvec is not None else None,
            cross_language=bool(facts.language and lang and lang != facts.language),
            keyword=kw.get(h.pid, 0.0) / best_kw if best_kw > 0 else 0.0))
    return out


def terms_in_hits(view: ReadView, hits: Sequence[Hit], terms: Sequence[str],
                  term_pids: Mapping[str, np.ndarray] | None) -> list[set[str]]:
    """The content terms of the query each hit contains. ``term_pids`` (the keyword leg's
    readable passages per term, when it ran) answers for every hit, since hits are readable;
    without it, every segment's postings are searched."""
    pids = np.array([h.pid for h in hits], dtype=np.int64)
    contained: list[set[str]] = [set() for _ in hits]
    for t in content_terms(terms) if hits else ():
        known = term_pids.get(t) if term_pids is not None else None
        runs = [known] if known is not None else [p for p, _ in view.postings(t)]
        for p in runs:  # sorted ids: binary search; "clip" keeps ids past the end in range
            if len(p):
                # Needles in the haystack's dtype: int64 needles would make numpy convert the
                # whole postings array on every call.
                n = pids.astype(p.dtype, copy=False)
                for i, hit in enumerate((p.take(p.searchsorted(n), mode="clip") == n).tolist()):
                    if hit:
                        contained[i].add(t)
    return contained
