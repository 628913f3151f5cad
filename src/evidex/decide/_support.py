"""How well a passage, and each sentence inside it, covers a question: the lexical evidence
behind ranking candidates, deciding to answer and choosing the sentences that answer.

* Question words are weighted by how informative they are: the BM25 idf of the word in the
  collection the actor may read (``weights``). A word no visible passage contains gets the
  highest weight: a question about "siblings" is not answered by a passage that lacks the word,
  however many other words it shares. Function words of English and German weigh nothing.
* Words are compared by a light, language-independent stem (``query.stem``: the analyzer's term
  without a plural or inflection ending, cut to five letters; numbers whole), so "returns" is covered by
  "returned", "bands" by "band" and "Rückgabe" by "Rückgaben" whatever analyzer the store uses.
* Coverage is the weighted share of the question's words that a text contains (0..1), for the
  whole passage, for its best sentence, and for the title and heading path. A sentence is read
  with its passage's title and heading path: "Band E1 ranges from 52,000 to 61,000 euros"
  under "Salary bands 2026 > Engineering" answers a question about engineering salary bands.

What a question asks for, and whether a sentence states it, is ``_types`` (the answer-bearing
decision reads it); coverage only counts words.

Heading lines ("# Returns", "## ERR-401: Please sign in again") and title lines (a short first
line without final punctuation, such as "Error ERR-401" above the text that explains it) are
not sentences that can answer: they are scored as part of the title, never quoted. Nor is a
sentence that asks a question ("I received a gift. Can I return it?" in an FAQ): it shares the
reader's words and meaning, since it is the reader's question, and answers nothing; nor one
that only repeats the document's title ("Basecamp 4 Family Tent." opening the record titled
"Basecamp 4 Family Tent (TN-9004)": read with its title it is as close to any question about
the tent as the title is; a heading may state the answer, so repeating a heading is allowed),
nor a pointer to another page ('See "Club points: collecting, redeeming and expiry".').
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from ..ingest import sentence_spans
from ..query import FUNCTION_WORDS, stem
from ..retrieve import idf as bm25_idf

__all__ = ["PassageSupport", "SentenceMatch", "coverage", "is_title_line", "passage_support",
           "term_weights"]

Analyze = Callable[[str], list[str]]
_WORDS = re.compile(r"[^\W_]+")
#: A sentence that ends in a question mark (before closing quotes or emphasis marks).
_QUESTION_END = re.compile(r"\?[\s*_\"'»«“”)]*$")
#: A sentence that only points to another page: "See "Refunds" for ...", "Siehe „Versand“".
_POINTER = re.compile(r"(?:see|siehe)\s+[\"'„“‘«»]", re.IGNORECASE)
#: A title line has at most this many words.
_TITLE_WORDS = 8


@lru_cache(maxsize=16)
def _function_stems(analyze: Analyze) -> frozenset[str]:
    return frozenset(stem(t) for w in sorted(FUNCTION_WORDS) for t in analyze(w))


def term_weights(terms: Iterable[str], df: Mapping[str, int], passages: int,
                 analyze: Analyze) -> dict[str, float]:
    """Weight per stem of the question's analysed ``terms``: the idf of its rarest term among
    ``passages`` visible passages (``df``: visible passages per term; missing means none).
    Function words are left out unless nothing else remains."""
    terms = list(terms)
    skip = _function_stems(analyze)
    kept = [t for t in terms if stem(t) not in skip] or terms
    out: dict[str, float] = {}
    for t in kept:
        w = bm25_idf(max(passages, 1), min(df.get(t, 0), max(passages, 1)))
        s = stem(t)
        out[s] = max(out.get(s, 0.0), w)
    return out


def coverage(stems: Iterable[str] | set[str], weights: Mapping[str, float]) -> float:
    """Weighted share of the question's stems in ``stems`` (0 when the question has none)."""
    total = sum(weights.values())
    have = stems if isinstance(stems, set | frozenset) else set(stems)
    return sum(w for s, w in weights.items() if s in have) / total if total else 0.0


@dataclass(frozen=True, slots=True)
class SentenceMatch:
    """One sentence of a passage that may be quoted: its span in the passage text and its
    weighted coverage of the question."""

    start: int
    end: int
    coverage: float
    stems: frozenset[str]


@dataclass(frozen=True, slots=True)
class PassageSupport:
    """The evidence one passage gives for a question (what ranking and deciding read)."""

    similarity: float | None  # cosine with the question (None: keyword-only)
    cross_language: bool  # the question is in another language than the passage
    coverage: float  # weighted coverage by the whole passage
    sentence_coverage: float  # by its best sentence
    title_coverage: float  # by its title and heading path
    keyword: float  # BM25 score relative to the query's best (0..1)
    sentences: tuple[SentenceMatch, ...]
    #: The question's stem weights these coverages were computed with (shared, not copied).
    weights: Mapping[str, float] = field(default_factory=dict)
    #: Stems of the title and heading path: the context every sentence is read with.
    context: frozenset[str] = frozenset()
    score: float = 0.0  # the second-stage ranker's score (see _rerank)
    supported: bool = False  # the on-topic decision for this passage (see _topic)


def is_title_line(text: str, start: int, end: int, first: bool, titles: Iterable[str]) -> bool:
    """A heading line, or a line that only names its subject: the passage's title or a heading
    of its path, or a short first line without final punctuation followed by more text."""
    s = text[start:end]
    if s.startswith("#"):
        return True
    if s[-1:] in ".!?;:)\"'»“”":
        return False
    on_own_line = text[end:end + 1] in ("\n", "")
    if not on_own_line:
        return False
    norm = " ".join(_WORDS.findall(s.lower()))
    if any(norm == " ".join(_WORDS.findall(t.lower())) for t in titles if t):
        return True
    return first and end < len(text.rstrip()) and len(_WORDS.findall(s)) <= _TITLE_WORDS


@dataclass(frozen=True, slots=True)
class _Analysed:
    """What a passage says independently of any question: the stems of its title and heading
    path, of its whole text, and of each sentence that may be quoted (start, end, stems)."""

    title_stems: frozenset[str]
    everything: frozenset[str]
    sentences: tuple[tuple[int, int, frozenset[str]], ...]


@lru_cache(maxsize=4096)
def _analysed(text: str, titles: tuple[str, ...], analyze: Analyze) -> _Analysed:
    """Cached: the best passages of one query are often the best of the next, and reading a
    passage's sentences is most of what measuring its support costs."""
    title_stems = frozenset(stem(t) for title in titles for t in analyze(title))
    # Only the document's title: a heading often states the answer ("ERR-401: Please sign in
    # again" above "Sign in again."), a title names the subject.
    function = _function_stems(analyze)
    repeats = frozenset(stem(t) for t in analyze(titles[0])) - function if titles else frozenset()
    sentences = []
    everything: set[str] = set()
    for i, (s, e) in enumerate(sentence_spans(text)):
        stems = frozenset(stem(t) for t in analyze(text[s:e]))
        everything |= stems
        if (len(_WORDS.findall(text[s:e])) < 3 or is_title_line(text, s, e, i == 0, titles)
                or _QUESTION_END.search(text, s, e) or _POINTER.match(text, s, e)
                or (repeats and stems - function <= repeats)):
            continue
        sentences.append((s, e, stems))
    return _Analysed(title_stems, frozenset(everything), tuple(sentences))


def passage_support(text: str, titles: Iterable[str], analyze: Analyze,
                    weights: Mapping[str, float], *, similarity: float | None,
                    cross_language: bool, keyword: float) -> PassageSupport:
    """The lexical evidence of one passage for a question with the given ``weights``."""
    a = _analysed(text, tuple(titles), analyze)
    sentences = [SentenceMatch(s, e, coverage(stems | a.title_stems, weights), stems)
                 for s, e, stems in a.sentences]
    best = max((m.coverage for m in sentences), default=0.0)
    return PassageSupport(
        similarity=similarity, cross_language=cross_language,
        coverage=coverage(a.everything, weights), sentence_coverage=best,
        title_coverage=coverage(a.title_stems, weights), keyword=keyword,
        sentences=tuple(sentences), weights=weights, context=a.title_stems,
    )
