"""Answer-bearing (extractive answers only): does a sentence of the passages state what is
asked? Today's rule: the decision is the sentence choice itself; the passages are answer-bearing
when it finds a sentence to quote (``answer_bearing``), and the quotes it chose are what the
extractive generator writes.

It reads the evidence the decision measured (``PassageSupport``: per passage, its sentences and
how much of the question each covers, idf-weighted) and chooses, verbatim:

1. the sentence that best answers: in each passage that is on topic, the sentence whose
   question words are most informative, weighting each word by its idf in the collection and
   by how few of the passage's sentences contain it (the topic, named in the title or in every
   sentence, cannot tell them apart; sentences words cannot tell apart go to the one closest in
   meaning, when compared, else the first); across passages, a passage in the question's
   language before one in another language whenever one supports answering, and among them the
   one whose best sentence is closest in meaning to the question (``_meaning``), else the
   highest coverage, a better-ranked passage winning near-ties. When the question is in another
   language than the passage, or shares no informative word with any of its sentences, words
   cannot choose, and the sentence most similar in meaning to the question is taken
   (``similar``, the embedding model), else the passage's first sentence;
2. a second or third sentence only when it adds something: the sentence right after a quoted
   one when it states a condition or exception ("unless", "except", "only if", "es sei denn",
   ...); the rule a quoted exception qualifies ("There is one exception, ...": the nearest
   sentence before it holding a question word, with those between); or a sentence about the
   same subject (it shares a question word with the quote) that answers well on its own and
   covers question words the quoted ones do not (from the same passage only when adjacent, so
   each passage's quote is one contiguous span). Another source is not quoted merely because it
   answers about as well: on short questions that is most sources of the topic;
3. when another on-topic passage's best sentence is about the same thing (its own words hold
   the most informative question word that the first quote's own words hold) and states a
   different value of the same kind (a duration, period, time, price, percentage, date or
   measured quantity: ``ingest.values``), the sources disagree and both are quoted.

Heading lines and title lines are never quoted (``_support``), nor a table's header row, nor
sentences with markup, links or bracketed numbers, which the output contract would reject.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..conflicts import disagreement, values
from ._decide import Question
from ._support import PassageSupport, SentenceMatch, coverage, has_number

__all__ = ["AnswerBearing", "Quote", "answer_bearing", "choose_sentences"]

#: Markup and links would break the output contract, and so would a bracketed number quoted
#: from the source (reference lists such as "... since 1979 [14]."): the contract reads it as
#: a citation marker of a source that was never provided.
_SKIP = re.compile(r"<\s*/?\s*[a-zA-Z]|&[a-zA-Z]+;|https?://|www\.|\[\d{1,3}\]", re.IGNORECASE)
_CONDITION = re.compile(
    r"^(?:unless|except|only|but|however|provided|if|as long as|this does not|this doesn't|"
    r"note|es sei denn|außer|ausgenommen|nur|aber|jedoch|allerdings|sofern|wenn|falls)\b"
    r"|\b(?:unless|except|only if|provided that|as long as|es sei denn|außer wenn|nur wenn|sofern)\b",
    re.IGNORECASE)
#: A sentence that qualifies the one before it: it opens with a contrast or restriction, or
#: names an exception ("There is one exception, ...").
_QUALIFIES = re.compile(
    r"^(?:unless|except|only|but|however|this does not|this doesn't|es sei denn|außer|ausgenommen|"
    r"nur|aber|jedoch|allerdings)\b|\b(?:exceptions?|ausnahmen?)\b", re.IGNORECASE)
#: A sentence from another passage counts as the better answer only when its coverage exceeds
#: the better-ranked one's by this much.
_RANK_MARGIN = 0.1
#: A further sentence must add this much weighted coverage to be quoted for support.
_MIN_GAIN = 0.2
#: More values of one kind than this in a sentence are a list (see ``_states_other``).
_LIST = 2
#: Below this coverage a sentence shares no informative word with the question.
_NO_OVERLAP = 0.15


@dataclass(frozen=True, slots=True)
class Quote:
    """One quoted sentence: its passage (index into the passages decided on) and span in it."""

    source: int
    start: int
    end: int


#: A Markdown table's header row: the line right after it is the row of dashes under it.
_UNDER_HEADER = re.compile(r"[ \t]*\n[ \t]*\|?[ \t]*:?-{3,}")


def _quotable(text: str, m: SentenceMatch) -> bool:
    """Not markup, and not a table's header row: it names the columns, like a heading, and
    answers nothing on its own (the row below it that holds the question's words does).
    (Questions, headings and title lines are no ``SentenceMatch`` at all: ``_support``.)"""
    if text.startswith("|", m.start) and _UNDER_HEADER.match(text, m.end):
        return False
    return not _SKIP.search(text[m.start:m.end])


def _best(text: str, p: PassageSupport, similar: Callable[[list[str]], Sequence[float]] | None,
          number: bool = False) -> tuple[float, SentenceMatch] | None:
    """(coverage of the chosen sentence, the sentence) of one supporting passage; a question
    asking for a quantity or a time (``number``) is answered by a sentence holding a number
    when the passage has one."""
    cands = [m for m in p.sentences if _quotable(text, m)]
    if not cands:
        return None
    if number:
        cands = [m for m in cands if has_number(text[m.start:m.end])] or cands
    best = max(cands, key=lambda m: (m.coverage, -m.start))
    if (p.cross_language or best.coverage < _NO_OVERLAP) and similar is not None:
        sims = similar([text[m.start:m.end] for m in cands])
        k = max(range(len(cands)), key=lambda j: (sims[j], -j))
        return best.coverage, cands[k]
    # Inside the passage, a question word in the title every sentence is read with (the topic:
    # "Lisbon", "earthquake") cannot tell its sentences apart at all, and one found in most
    # sentences hardly; one found in a single sentence ("shaking") can.
    n = len(cands)
    local = {s: 0.0 if s in p.context else math.log(1 + (n - sf + 0.5) / (sf + 0.5))
             for s in p.weights for sf in [sum(s in m.stems for m in cands)]}
    scored = [(sum(w * local[s] for s, w in p.weights.items() if s in m.stems), m) for m in cands]
    top_score = max(x[0] for x in scored)
    if top_score <= 0:
        # Words cannot choose: the sentence with the best coverage (all tie when the title
        # holds every question word they share).
        tied = [m for m in cands if m.coverage >= best.coverage]
    else:
        tied = [m for sc, m in scored if sc >= top_score]
    return (chosen := _by_meaning(tied, p)).coverage, chosen


def _by_meaning(tied: list[SentenceMatch], p: PassageSupport) -> SentenceMatch:
    """Of sentences that words cannot tell apart, the one closest in meaning to the question
    when the decision compared them by meaning (``PassageSupport.meaning``), else the first:
    the earlier sentence of a passage usually states what the later ones qualify."""
    cos = dict(p.meaning)
    known = [m for m in tied if m.start in cos]
    if len(known) >= 2:
        return max(known, key=lambda m: (cos[m.start], -m.start))
    return min(tied, key=lambda m: m.start)


def choose_sentences(texts: Sequence[str], support: Sequence[PassageSupport],
                     similar: Callable[[list[str]], Sequence[float]] | None = None,
                     max_sentences: int = 3, number: bool = False) -> tuple[list[Quote], bool]:
    """(quotes in answer order, whether the sources disagree) from the passages (``texts``)
    that support answering (on topic); ``support`` is aligned with ``texts``."""
    found = []
    for i, (passage, p) in enumerate(zip(texts, support, strict=False)):
        if p.supported:
            got = _best(passage, p, similar, number)
            if got is not None:
                found.append((got[0], i, got[1]))
    if not found:
        return [], False
    # A reader is answered in their own language when a passage in it supports answering.
    pool = [f for f in found if not support[f[1]].cross_language] or found
    top_cov = pool[0][0]
    first = pool[0]
    for cov, i, m in pool[1:]:
        if cov > top_cov + _RANK_MARGIN and cov > first[0]:
            first = (cov, i, m)
    # When the decision compared each of these passages' best sentences with the question by
    # meaning, the closest one answers: coverage counts the words a sentence shares with the
    # question, and a passage on a neighbouring topic shares as many. Cosines across languages
    # are not on one scale, so a pool in another language keeps the order above.
    near = [support[i].sentence_similarity for _, i, _m in pool]
    if len(pool) > 1 and not support[pool[0][1]].cross_language and None not in near:
        first = pool[max(range(len(pool)), key=lambda k: (near[k] or 0.0, -k))]
    _, fi, fm = first
    quotes = [Quote(fi, fm.start, fm.end)]
    weights = support[fi].weights
    have: set[str] = set(fm.stems)
    text = texts[fi]
    pos = support[fi].sentences
    # An exception is read with the rule it qualifies: the nearest sentence before it that is
    # about the question too, with what lies between, so the quote stays one contiguous span
    # ("We cannot accept worn items. Marks on soles count as use. There is one exception: ...").
    if _QUALIFIES.search(text[fm.start:fm.end]):
        before: list[SentenceMatch] = []
        end = fm.start
        for m in reversed([m for m in pos if m.end <= fm.start]):
            if (len(quotes) + len(before) >= max_sentences or text[m.end:end].strip()
                    or not _quotable(text, m)):
                break
            before.insert(0, m)
            end = m.start
            if m.stems & weights.keys():
                quotes[:0] = [Quote(fi, b.start, b.end) for b in before]
                have.update(*(b.stems for b in before))
                break
    # A condition right after the quoted sentence belongs to the answer.
    nxt = next((m for m in pos if m.start > fm.end), None)
    if (nxt is not None and len(quotes) < max_sentences and _quotable(text, nxt)
            and _CONDITION.search(text[nxt.start:nxt.end])
            and not text[fm.end:nxt.start].strip()):
        quotes.append(Quote(fi, nxt.start, nxt.end))
        have |= nxt.stems
    # Sources that state a different value for the same thing: quote both.
    conflict = False
    asked_first = fm.stems & weights.keys()
    subject = max(asked_first, key=lambda s: (weights[s], s)) if asked_first else None
    for cov, i, m in found:
        if i == fi or cov < max(0.3, 0.6 * first[0]) or (subject is not None and subject not in m.stems):
            continue
        other = texts[i][m.start:m.end]
        if _states_other(text[fm.start:fm.end], other) and len(quotes) < max_sentences:
            quotes.append(Quote(i, m.start, m.end))
            conflict = True
            break
    # Sentences about the same subject (sharing a question word with what is quoted) that
    # answer well on their own and cover question words the quoted ones do not.
    while len(quotes) < max_sentences and not conflict:
        base = coverage(have, weights)
        asked = have & weights.keys()
        best_gain, pick = 0.0, None
        for _, i, _m in found:
            span = _span(quotes, i)
            for m in support[i].sentences:
                if (m.coverage < 0.5 * first[0] or not (m.stems & asked) or not _quotable(texts[i], m)
                        or any(q.source == i and q.start == m.start for q in quotes)):
                    continue
                if span is not None and not _adjacent(texts[i], span, m):
                    continue
                gain = coverage(have | m.stems, weights) - base
                if gain > best_gain + 1e-9:
                    best_gain, pick = gain, (i, m)
        if pick is None or best_gain < _MIN_GAIN:
            break
        quotes.append(Quote(pick[0], pick[1].start, pick[1].end))
        have |= pick[1].stems
    return quotes, conflict


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


def _span(quotes: list[Quote], i: int) -> tuple[int, int] | None:
    mine = [q for q in quotes if q.source == i]
    return (min(q.start for q in mine), max(q.end for q in mine)) if mine else None


def _adjacent(text: str, span: tuple[int, int], m: SentenceMatch) -> bool:
    """``m`` directly before or after ``span``, with only whitespace between."""
    return ((m.start >= span[1] and not text[span[1]:m.start].strip())
            or (m.end <= span[0] and not text[m.end:span[0]].strip()))


@dataclass(frozen=True, slots=True)
class AnswerBearing:
    """The answer-bearing decision: the quotes chosen (in answer order), whether the sources
    disagree, and the verdict (a sentence states what is asked). Today's rule compares no score
    with a threshold: a quotable sentence of an on-topic passage is the verdict."""

    verdict: bool
    quotes: tuple[Quote, ...]
    disagree: bool

    def as_dict(self) -> dict[str, object]:
        return {"verdict": self.verdict, "disagree": self.disagree,
                "quotes": [{"source": q.source, "start": q.start, "end": q.end} for q in self.quotes]}


def answer_bearing(texts: Sequence[str], support: Sequence[PassageSupport], question: Question,
                   similar: Callable[[list[str]], Sequence[float]] | None = None,
                   max_sentences: int = 3) -> AnswerBearing:
    """Does a sentence of the on-topic passages (``texts``, ``support`` aligned with them)
    state what ``question`` asks, and which sentences answer it (``choose_sentences``)?"""
    quotes, disagree = choose_sentences(texts, support, similar, max_sentences,
                                        number=question.asks_number)
    return AnswerBearing(bool(quotes), tuple(quotes), disagree)
