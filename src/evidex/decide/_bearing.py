"""Answer-bearing (extractive answers only): does a sentence of the passages state what is asked,
and which one?

The candidates are the quotable spans (``_spans``) of the first ``CHOOSE_DEPTH`` passages: each
sentence, or a sentence with the one it refers to, or for a "how do I" question its run of
steps. What the question asks for (``_types``) rules some out: a question for a duration, an
amount, a count, a phone number ... is answered only by a span that states one (a span lacking
it does not answer, however close in meaning), and a line that only names an identifier ("SKU
JK-1310.") answers only a question for an identifier.

Among the rest, a linear scorer over a few features of each span (``FEATURES``: its cosine with
the question, how much closer it is than the best, its hubness, its passage's rank and score,
its idf-weighted word coverage, whether it states the asked kind and how near that value sits
to the question's words, whether it is a record line whose label the question names, ...)
picks the span to quote. The weights are per embedding model, fitted on development data
(``_calibration``); a keyword-only store picks by coverage.

The picked span answers when its own score

    cosine(question, span) - hub_weight * hubness(span) + coverage_weight * coverage

reaches the model's ``answer_bearing`` value (``_calibration``: the lowest at which 97 % of
development off-topic questions are declined). A near miss (on topic, not stated) is declined
by the kind it asks for and by the span read as a whole, not by a higher bar.

A second span is quoted only when it adds to the first: the sentence right after it that states
a condition or exception ("unless ...", "es sei denn ..."), or another passage's span about the
same thing that states a different value of the asked kind ("Sources disagree.", both quoted).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..conflicts import disagreement, values
from ..embed import span_text
from ..query import stem
from ._calibration import Calibration
from ._decide import Question
from ._meaning import in_context
from ._probes import Probes, cosines
from ._spans import Span, identifier_only, record_label, spans
from ._support import PassageSupport, coverage
from ._types import Mention, stated_as

__all__ = ["CHOOSE_DEPTH", "FEATURES", "PREFERRED", "READ_DEPTH", "AnswerBearing", "Candidate", "Quote",
           "answer_bearing", "bearing_score", "candidates"]

#: Passages (by rank) whose spans may be quoted.
CHOOSE_DEPTH = 6
#: Spans (the scorer's first) the reader reads: as many as it was trained on (training/reader.py).
READ_DEPTH = 8
#: Kinds that cannot be required (``_types``: not reliably read from text) but, when the chosen
#: passage has a sentence stating one, are answered by that sentence: the steps of a "how do
#: I", the "because" of a "why".
PREFERRED = frozenset({"procedure", "reason"})
#: The scorer's features, in the order of ``Calibration.scorer``.
FEATURES = ("similarity", "similarity_rel", "hubness", "passage_rel", "rank", "coverage",
            "coverage_rel", "typed", "antecedent", "identifier", "list_item", "log_words",
            "proximity", "first", "label_match", "label_other")
#: A sentence that states a condition or exception of the one before it.
_CONDITION = re.compile(
    r"^(?:unless|except|only|but|however|provided|if|as long as|this does not|this doesn't|"
    r"note|es sei denn|außer|ausgenommen|nur|aber|jedoch|allerdings|sofern|wenn|falls)\b"
    r"|\b(?:unless|except|only if|provided that|as long as|es sei denn|außer wenn|nur wenn|sofern)\b",
    re.IGNORECASE)
#: Markup and links would break the output contract, and so would a bracketed number quoted
#: from the source (the contract reads it as a citation marker of a source never provided).
_SKIP = re.compile(r"<\s*/?\s*[a-zA-Z]|&[a-zA-Z]+;|https?://|www\.|\[\d{1,3}\]", re.IGNORECASE)
#: A Markdown table's header row: the line right after it is the row of dashes under it.
_UNDER_HEADER = re.compile(r"[ \t]*\n[ \t]*\|?[ \t]*:?-{3,}")
_WORD = re.compile(r"[^\W_]+")
#: More values of one kind than this in a sentence are a list, not a value of one thing.
_LIST = 2
#: Words between a stated value and the question's nearest word that count as "far".
_FAR = 20

#: Embeds texts on the passage side; None when it could not in time.
Vectors = Callable[[list[str]], np.ndarray | None]


#: Runs the reader on (question, spans) within the decision's deadline; None when it did not
#: finish in time.
ReadWithin = Callable[[str, list[str]], np.ndarray | None]


@dataclass(frozen=True, slots=True)
class Quote:
    """One quoted span: its passage (index into the passages decided on) and span in it."""

    source: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Candidate:
    """A span that may be quoted, with what the decision read of it."""

    source: int
    span: Span
    features: tuple[float, ...]
    #: Cosine of the span (read with its passage's title and heading path) with the question,
    #: on the passage language's footing; None in a keyword-only store.
    similarity: float | None
    hubness: float | None
    coverage: float
    #: States what the question asks for (its answer type).
    typed: bool
    identifier: bool


@dataclass(frozen=True, slots=True)
class AnswerBearing:
    """The answer-bearing decision: the quotes chosen (in answer order, empty when declined),
    whether the sources disagree, the chosen span's score and the threshold it was compared
    with, the verdict, and why not."""

    verdict: bool
    quotes: tuple[Quote, ...]
    disagree: bool
    score: float | None = None
    threshold: float | None = None
    #: "not_stated" (no span states what is asked: the reader's verdict, or the asked kind is
    #: missing), "weak_evidence" (below the threshold, without a reader), "timeout" (the
    #: decision's deadline passed), or "no_quotable" (no span may be quoted); None when answered.
    why: str | None = None
    asked: str = "other"

    def as_dict(self) -> dict[str, object]:
        return {"verdict": self.verdict, "disagree": self.disagree, "asked": self.asked,
                "score": None if self.score is None else round(self.score, 6),
                "threshold": self.threshold, "why": self.why,
                "quotes": [{"source": q.source, "start": q.start, "end": q.end} for q in self.quotes]}


def _quotable(text: str, s: int, e: int) -> bool:
    if text.startswith("|", s) and _UNDER_HEADER.match(text, e):
        return False
    return not _SKIP.search(text[s:e])


def _word_stems(text: str, analyze: Callable[[str], list[str]]) -> list[tuple[int, frozenset[str]]]:
    """(offset, stems) of each word of ``text``."""
    return [(m.start(), frozenset(stem(t) for t in analyze(m.group(0)))) for m in _WORD.finditer(text)]


def _proximity(text: str, mentions: Sequence[Mention], question: Question) -> float:
    """Words between a value of the asked kind and the nearest question word, over ``_FAR``
    (1 when none is near or none is stated)."""
    if not mentions:
        return 1.0
    words = _word_stems(text, question.analyze)
    asked = [i for i, (_, st) in enumerate(words) if st & question.weights.keys()]
    if not asked:
        return 1.0
    best = _FAR
    for m in mentions:
        at = [i for i, (o, _) in enumerate(words) if m.start <= o < m.end] or [
            min(range(len(words)), key=lambda i: abs(words[i][0] - m.start))]
        best = min(best, *(abs(i - j) for i in at for j in asked))
    return best / _FAR


def _label(text: str, question: Question) -> tuple[bool, bool]:
    """(a record line whose label the question names, a record line with another label)."""
    label = record_label(text)
    if label is None:
        return False, False
    named = bool({stem(t) for t in question.analyze(label)} & question.weights.keys())
    return named, not named


def candidates(texts: Sequence[str], contexts: Sequence[Sequence[str]],
               support: Sequence[PassageSupport], question: Question,
               vectors: Vectors | None = None, query: np.ndarray | None = None,
               probes: Probes | None = None, shifts: Sequence[float] = ()) -> list[Candidate]:
    """Every span of the first ``CHOOSE_DEPTH`` passages (``texts``, each with its title and
    heading path in ``contexts`` and its ``support``) that may be quoted, with its features.
    ``vectors`` embeds texts on the passage side of the store's model (through its cache),
    ``query`` is the question's vector, ``shifts`` each passage's language re-basing."""
    asked = question.asked
    procedure = asked.kind == "procedure"
    found: list[tuple[int, Span, str, frozenset[str]]] = []
    for i, (text, p) in enumerate(zip(texts[:CHOOSE_DEPTH], support[:CHOOSE_DEPTH], strict=False)):
        sentences = [(m.start, m.end) for m in p.sentences]
        stems = {m.start: m.stems for m in p.sentences}
        ok = [_quotable(text, s, e) for s, e in sentences]
        seen: set[tuple[int, int]] = set()
        for sp in spans(text, sentences, ok, procedure):
            if (sp.start, sp.end) in seen:
                continue
            seen.add((sp.start, sp.end))
            st = frozenset().union(*(stems[s] for s, _ in sentences if sp.start <= s < sp.end))
            found.append((i, sp, text[sp.start:sp.end], st))
    if not found:
        return []
    sims: list[float | None] = [None] * len(found)
    hubs: list[float | None] = [None] * len(found)
    rows = None if vectors is None or query is None else vectors(
        [in_context(t, contexts[i]) for i, _, t, _ in found])
    if rows is not None and query is not None:
        shift = [shifts[i] if i < len(shifts) else 0.0 for i, *_ in found]
        sims = [float(x) + s for x, s in zip(cosines(rows, query[None])[:, 0].tolist(), shift, strict=True)]
        if probes is not None:
            hubs = probes.hubness(rows).tolist()
    covs = [coverage(st | support[i].context, support[i].weights) for i, _, _, st in found]
    top_sim = max((s for s in sims if s is not None), default=0.0)
    top_cov = max(covs)
    passage = [support[i].similarity for i, *_ in found]
    top_passage = max((s for s in passage if s is not None), default=0.0)
    out = []
    for k, (i, sp, text, _) in enumerate(found):
        mentions = stated_as(asked, text)
        named, other = _label(text[sp.focus[0] - sp.start:], question)
        s, h = sims[k], hubs[k]
        f = (s or 0.0, (s or 0.0) - top_sim, h or 0.0, (passage[k] or 0.0) - top_passage, i / 5,
             covs[k], covs[k] - top_cov, float(bool(mentions)), float(sp.kind == "antecedent"),
             float(identifier_only(text)), float(text.lstrip().startswith(("-", "*", "|", "•"))),
             math.log1p(len(_WORD.findall(text))), _proximity(text, mentions, question),
             float(sp.start == (support[i].sentences[0].start if support[i].sentences else 0)),
             float(named), float(other))
        out.append(Candidate(i, sp, f, s, h, covs[k], bool(mentions), identifier_only(text)))
    return out


def bearing_score(c: Candidate, cal: Calibration) -> float:
    """The score the answer-bearing decision compares with ``cal.answer_bearing`` (coverage
    alone in a keyword-only store, compared with ``cal.keyword_coverage``)."""
    if c.similarity is None:
        return c.coverage
    return c.similarity - cal.hub_weight * (c.hubness or 0.0) + cal.coverage_weight * c.coverage


def _rank(c: Candidate, cal: Calibration) -> float:
    """How the scorer ranks ``c`` among the question's candidates."""
    if c.similarity is None:
        return c.coverage - 0.01 * c.source
    if len(cal.scorer) == len(FEATURES) + 1:
        return float(np.dot(c.features, cal.scorer[:-1]) + cal.scorer[-1])
    return bearing_score(c, cal)


@dataclass(frozen=True, slots=True)
class Reading:
    """The trained reader, as the caller runs it: ``read`` within the decision's deadline; the
    decision score of a span is ``stack`` over (its logit, the scorer's ``FEATURES``, 1), or the
    logit itself without a stack; a span answers when its score reaches ``threshold``."""

    read: ReadWithin
    threshold: float
    stack: tuple[float, ...] = ()

    def decision(self, logit: float, c: Candidate) -> float:
        if len(self.stack) != len(FEATURES) + 2:
            return logit
        return float(self.stack[0] * logit + np.dot(self.stack[1:-1], c.features) + self.stack[-1])


def answer_bearing(texts: Sequence[str], contexts: Sequence[Sequence[str]],
                   support: Sequence[PassageSupport], question: Question, cal: Calibration,
                   vectors: Vectors | None = None, query: np.ndarray | None = None,
                   probes: Probes | None = None, shifts: Sequence[float] = (),
                   max_sentences: int = 3, reading: Reading | None = None) -> AnswerBearing:
    """Does a span of the passages (``texts``, in context ``contexts``, ``support`` aligned)
    state what ``question`` asks, and which spans answer it? (The rule: the module docstring.)

    With ``reading`` (the trained reader) the scorer only orders the spans: the reader reads
    its first ``READ_DEPTH`` and the best of them answers when its decision score reaches the
    reader's threshold. A deadline missed on the way (the spans' vectors, or the reader)
    declines with ``timeout``: an answer never depends on how busy the machine is."""
    asked = question.asked
    missed = False
    if vectors is not None:
        embed = vectors

        def vectors(texts: list[str]) -> np.ndarray | None:
            nonlocal missed
            got = embed(texts)
            missed = got is None
            return got

    cands = candidates(texts, contexts, support, question, vectors, query, probes, shifts)
    if missed:
        return AnswerBearing(False, (), False, why="timeout", asked=asked.kind)
    cands = [c for c in cands if not c.identifier or asked.kind == "code"]
    if not cands:
        return AnswerBearing(False, (), False, why="no_quotable", asked=asked.kind)
    if reading is not None:
        return _read(texts, contexts, support, question, cal, cands, reading, max_sentences)
    if asked.strict:
        cands = [c for c in cands if c.typed]
        if not cands:
            return AnswerBearing(False, (), False, why="not_stated", asked=asked.kind)
    best = max(cands, key=lambda c: (_rank(c, cal), -c.source, -c.span.start))
    if asked.kind in PREFERRED and not best.typed:
        # The passage the scorer chose states it in another sentence: that one answers (the
        # scorer, fitted mostly on wh-questions, weighs a step or a "because" lightly).
        typed = [c for c in cands if c.typed and c.source == best.source]
        if typed:
            best = max(typed, key=lambda c: (_rank(c, cal), -c.span.start))
    score = bearing_score(best, cal)
    limit = cal.answer_bearing if best.similarity is not None else cal.keyword_coverage
    if score < limit:
        return AnswerBearing(False, (), False, score, limit, "weak_evidence", asked.kind)
    quotes, disagree = _quotes(texts, support, best, cands, cal, max_sentences)
    return AnswerBearing(True, tuple(quotes), disagree, score, limit, None, asked.kind)


def _read(texts: Sequence[str], contexts: Sequence[Sequence[str]], support: Sequence[PassageSupport],
          question: Question, cal: Calibration, cands: list[Candidate], reading: Reading,
          max_sentences: int) -> AnswerBearing:
    """The reader's decision over the scorer's first ``READ_DEPTH`` spans (as it was trained:
    training/reader.py ranks and cuts them the same way). A strict answer type stays a check:
    only a span stating the asked kind may answer."""
    asked = question.asked
    ranked = sorted(cands, key=lambda c: (-_rank(c, cal), c.source, c.span.start))[:READ_DEPTH]
    logits = reading.read(" ".join(question.text.split()),
                          [span_text(texts[c.source][c.span.start:c.span.end], contexts[c.source])
                           for c in ranked])
    if logits is None:
        return AnswerBearing(False, (), False, threshold=reading.threshold, why="timeout", asked=asked.kind)
    scores = [reading.decision(float(x), c) for x, c in zip(logits, ranked, strict=True)]
    allowed = [i for i, c in enumerate(ranked) if c.typed or not asked.strict]
    if not allowed:
        return AnswerBearing(False, (), False, threshold=reading.threshold, why="not_stated",
                             asked=asked.kind)
    at = max(allowed, key=lambda i: (float(scores[i]), -i))
    score = float(scores[at])
    if score < reading.threshold:
        return AnswerBearing(False, (), False, score, reading.threshold, "not_stated", asked.kind)
    quotes, disagree = _quotes(texts, support, ranked[at], cands, cal, max_sentences)
    return AnswerBearing(True, tuple(quotes), disagree, score, reading.threshold, None, asked.kind)


def _quotes(texts: Sequence[str], support: Sequence[PassageSupport], best: Candidate,
            cands: Sequence[Candidate], cal: Calibration, max_sentences: int
            ) -> tuple[list[Quote], bool]:
    """The chosen span, a condition right after it, or another passage's span stating a
    different value of the same thing (then the sources disagree)."""
    text = texts[best.source]
    first = Quote(best.source, best.span.start, best.span.end)
    used = sum(1 for m in support[best.source].sentences if best.span.start <= m.start < best.span.end)
    nxt = next((m for m in support[best.source].sentences if m.start >= best.span.end), None)
    if (nxt is not None and used < max_sentences and not text[best.span.end:nxt.start].strip()
            and _quotable(text, nxt.start, nxt.end) and _CONDITION.search(text[nxt.start:nxt.end])):
        first = Quote(best.source, best.span.start, nxt.end)
        used += 1
    if used >= max_sentences:
        return [first], False
    # The same thing stated otherwise elsewhere: another passage's best span that covers the
    # question about as well, shares the chosen span's most informative question word and
    # states a different value of one kind.
    weights = support[best.source].weights
    own = _stems(support[best.source], best.span) & weights.keys()
    if not own:  # the quote shares no word with the question: nothing to compare it about
        return [first], False
    subject = max(own, key=lambda s: (weights[s], s))
    seen: set[int] = set()
    for c in sorted((c for c in cands if c.source != best.source), key=lambda c: -_rank(c, cal)):
        if c.source in seen or c.coverage < max(0.3, 0.6 * best.coverage):
            continue
        seen.add(c.source)
        if subject not in _stems(support[c.source], c.span):
            continue
        # The values of the sentences scored, not of the antecedents read with them.
        if _states_other(text[best.span.focus[0]:best.span.focus[1]],
                         texts[c.source][c.span.focus[0]:c.span.focus[1]]):
            return [first, Quote(c.source, c.span.start, c.span.end)], True
    return [first], False


def _stems(p: PassageSupport, span: Span) -> set[str]:
    return {s for m in p.sentences if span.start <= m.start < span.end for s in m.stems}


def _states_other(a: str, b: str) -> bool:
    """``a`` and ``b`` state different values of one kind, each as the value of something: a
    sentence listing more than ``_LIST`` values of a kind (the public holidays of a year, a
    table row of prices per zone) enumerates them, and another date is not a contradiction
    of the list."""
    va, vb = values(a), values(b)
    listed = {k for vs in (va, vb) for k in {v.kind for v in vs}
              if sum(v.kind == k for v in vs) > _LIST}
    return bool(disagreement([v for v in va if v.kind not in listed],
                             [v for v in vb if v.kind not in listed]))
