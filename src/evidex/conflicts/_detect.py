"""Conflicts at ingestion: passages of two documents about one subject stating different values.

For each passage a write added that states a value (``values``: a duration, period, time
of day, date, price or percentage), the documents most likely to talk about the same thing are
found the way a search would (the passage's nearest passages by embedding, else the documents
sharing its rarest terms); then each sentence that states a value is compared with the
sentences of those documents that state one of the same kind. A pair is a conflict when

* the values differ (``disagree``), each sentence states one value of that kind (a
  sentence with several is a list: per day, per item), and neither passage also states the
  other's value (a page listing "10:00-20:00" and "13:00-18:00" does not contradict one that
  says "10:00-20:00" for another day);
* the documents are about one entity: the rare words of one's title (a store's city, a
  product's name) occur in the other's text, so two stores' or two products' pages, built from
  one template, never conflict over their own hours or prices;
* the two sentences (with their headings) share enough rare words, weighted by inverse
  document frequency over the tenant's passages (``SUBJECT_MIN``), so "store manager: 1,500 €"
  and "escalate above 5,000 €" on similar pages are not one subject.

Only passages written by this write are checked, so a re-ingest that changes nothing checks
nothing. Candidates come from the whole tenant, across visibilities: the result is for the
owners and admins of both documents, never for an answer's reader.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import json
import math
import re
import sys
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..embed import EmbeddingCache
from ..ingest import sentence_spans
from ..model import Conflict, ConflictSide, sha256_text
from ..query import SUBJECT_STOPWORDS, singular
from ..store import ReadView, StoredDocument, StoredPassage
from ._values import Value, close, values

__all__ = ["SUBJECT_MIN", "clear_value_cache", "conflict_status", "find_conflicts"]

#: Share of the smaller sentence's rare-word weight the two sentences must have in common, and
#: how many words at least (the values' sentences, with their headings).
SUBJECT_MIN = 0.7
MIN_SHARED = 3
#: Cosine of two passages' embeddings at which they are about one subject even when their
#: sentences are worded differently (then PASSAGE_SHARED words in common suffice). Chosen on the
#: shop collection (benchmarks/RESULTS.md): a development set, not a held-out estimate.
PASSAGE_MIN = 0.9
PASSAGE_SHARED = 2
#: When only the embeddings say one subject (the passage rule), the two amounts must also be
#: within one order of magnitude: a fact restated wrongly or left stale differs by a revision
#: (14 or 30 days, 4.95 or 5.95 €), while amounts ten times apart on similar pages are nearly
#: always two facts (a return window and a warranty, a fee and a spending threshold). A round
#: factor chosen before looking, checked on a set built for it (benchmarks/data/conflict-set).
PASSAGE_RATIO = 10.0
#: Nearest passages looked at per new passage, and the documents taken from them.
NEIGHBOURS = 24
CANDIDATE_DOCUMENTS = 5
Terms = Callable[[str], Iterable[str]]


@functools.lru_cache(maxsize=8192)
def _words(terms_of: Terms, text: str) -> frozenset[str]:
    """The words of a sentence (or heading path) that can name its subject. Kept for the
    process: a candidate passage is compared again after each write of a collection."""
    return frozenset(t for t in set(terms_of(text)) - SUBJECT_STOPWORDS if len(t) > 2 and not t[0].isdigit())


@functools.lru_cache(maxsize=8192)
def _title_words(terms_of: Terms, title: str) -> frozenset[str]:
    # Numbers count here: a product number or a year names one thing. Every title of the
    # tenant is read on each write.
    return frozenset(singular(t) for t in terms_of(title) if len(t) > 1 and t not in SUBJECT_STOPWORDS)


Spans = list[tuple[int, int, tuple[Value, ...]]]
#: The amounts a text states of one kind, in order.
Amounts = tuple[float | tuple[float, ...], ...]


@dataclass
class _Unit:
    """One passage's claims: its sentences stating one value of a kind, with the words of each
    (sentence plus headings) and that value per kind; ``claims``: its text's (every value it
    states, per kind)."""

    doc: StoredDocument
    passage: StoredPassage
    sentences: list[tuple[str, frozenset[str], dict[str, Value]]]
    claims: _Claims
    #: Per kind claimed, the indices of the sentences claiming it (in order).
    by_kind: dict[str, list[int]]
    #: The words of all its sentences.
    words: set[str]


def _joined(text: str) -> str:
    # Wrapped lines (PDF text) go on in lower case: joined, so a sentence is not cut in two
    # (one character for one, so offsets stay those of the passage).
    return re.sub(r"\n(?=[a-zäöüß0-9(])", " ", text)


def _scan(text: str) -> Spans:
    """(start, end) of each sentence of ``text`` that states values, with those values
    (offsets within the sentence)."""
    found = values(text)
    if not found:
        return []
    out = []
    for a, b in sentence_spans(_joined(text)):
        mine = tuple(Value(v.kind, v.amount, v.start - a, v.end - a) for v in found if a <= v.start < b)
        if mine:
            out.append((a, b, mine))
    return out


@dataclass(frozen=True, slots=True)
class _Claims:
    """What one text claims: its sentences stating one value of a kind, with that value per
    kind, and every value the text states, per kind."""

    sentences: tuple[tuple[str, dict[str, Value]], ...]
    kinds: dict[str, Amounts]
    claimed: frozenset[str]
    #: Per kind claimed, the amounts its sentences claim (one each).
    ones: dict[str, Amounts]

    def may_disagree(self, other: _Claims) -> bool:
        """Whether a sentence of this text and one of ``other`` can state different values of a
        kind both claim: each must claim an amount the other text states nowhere (``compare``
        skips every other pair). Amounts only: no words are needed to rule a pair out."""
        for k in self.claimed & other.claimed:
            if (not all(_states(other.kinds[k], x) for x in self.ones[k])
                    and not all(_states(self.kinds[k], y) for y in other.ones[k])):
                return True
        return False


def _claims(text: str, spans: Spans) -> _Claims | None:
    """``text``'s claims from its value sentences (``_scan``); None when it has none."""
    if not spans:
        return None
    kinds: dict[str, list[float | tuple[float, ...]]] = {}
    sentences = []
    for a, b, vs in spans:
        counts: dict[str, int] = {}
        for v in vs:
            kinds.setdefault(v.kind, []).append(v.amount)
            counts[v.kind] = counts.get(v.kind, 0) + 1
        # One claim against one claim: a sentence with several values of a kind is a list (per
        # day, per item) and never one side of a conflict over that kind.
        one = {v.kind: v for v in vs if counts[v.kind] == 1}
        if one:
            # ``_joined`` looks one character ahead: the sentence as cut from the joined text.
            sentences.append((_joined(text[a:b + 1])[:b - a], one))
    if not sentences:
        return None
    ones: dict[str, list[float | tuple[float, ...]]] = {}
    for _, one in sentences:
        for k, v in one.items():
            ones.setdefault(k, []).append(v.amount)
    return _Claims(tuple(sentences), {k: tuple(a) for k, a in kinds.items()}, frozenset(ones),
                   {k: tuple(a) for k, a in ones.items()})


def _encode(spans: Spans) -> str:
    return json.dumps([[a, b, [[v.kind, v.amount, v.start, v.end] for v in vs]] for a, b, vs in spans],
                      separators=(",", ":"))


def _decode(data: str) -> Spans:
    if data == "[]":  # most passages state no value
        return []
    return [(a, b, tuple(Value(k, tuple(m) if isinstance(m, list) else m, x, y) for k, m, x, y in vs))
            for a, b, vs in json.loads(data)]


@functools.cache
def _scanner() -> str:
    """The kind the spans are kept under in the cache file: a digest of the code that finds
    them (the value scanner, the sentence splitter, ``_scan`` and the encoding) and the Python
    version (its regular expression engine), so no result of other code is ever read back."""
    parts = [inspect.getsource(sys.modules[f.__module__]) for f in (values, sentence_spans)]
    parts += [inspect.getsource(f) for f in (_joined, _scan, _encode, _decode)] + [sys.version.split()[0]]
    return "conflict-values:" + hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:16]


#: Claims per passage text, kept across detections in this process (most recent last); ingests
#: in several threads share it, under the lock.
_SEEN: OrderedDict[str, _Claims | None] = OrderedDict()
_SEEN_MAX = 8192
_SEEN_LOCK = threading.Lock()


def clear_value_cache() -> None:
    """Forget the claims and words kept in this process (the cache file keeps its own)."""
    with _SEEN_LOCK:
        _SEEN.clear()
    _words.cache_clear()
    _title_words.cache_clear()


def _read_claims(texts: Iterable[str], cache: EmbeddingCache | None, into: dict[str, _Claims | None]) -> None:
    """Add to ``into`` the claims of each text. A pure function of the text, so read once: from
    this process's memory, else from ``cache`` (the spans and values read before, from this
    text in any store), else by scanning the text, which is then kept in both."""
    missing = []
    with _SEEN_LOCK:
        for t in dict.fromkeys(texts):
            if t in into:
                continue
            if t in _SEEN:
                _SEEN.move_to_end(t)
                into[t] = _SEEN[t]
            else:
                missing.append(t)
    if not missing:
        return
    keys = {t: sha256_text(t) for t in missing}
    kept = cache.derived(_scanner(), list(keys.values())) if cache is not None else {}
    new: dict[str, str] = {}
    for t in missing:
        data = kept.get(keys[t])
        if data is None:
            spans = _scan(t)
            new[keys[t]] = _encode(spans)
        else:
            spans = _decode(data)
        into[t] = _claims(t, spans)
    with _SEEN_LOCK:
        for t in missing:
            _SEEN[t] = into[t]
        while len(_SEEN) > _SEEN_MAX:
            _SEEN.popitem(last=False)
    if new and cache is not None:
        cache.put_derived(_scanner(), new)


class _Detector:
    def __init__(self, view: ReadView, tenant: str, terms_of: Terms, titles: Sequence[str | None],
                 cache: EmbeddingCache | None) -> None:
        self.view, self.tenant, self.terms_of, self.cache = view, tenant, terms_of, cache
        self.claims: dict[str, _Claims | None] = {}
        self.n = max(1, sum(s.passages for s in view.signatures(tenant)))
        self.sigs = [s.id for s in view.signatures(tenant)]
        self.df: dict[str, int] = {}
        self._idf: dict[str, float] = {}
        title_df: Counter[str] = Counter()
        for t in titles:
            title_df.update(self.title_words(t))
        self.title_df, self.rare_title = title_df, max(3, len(titles) // 50)
        self.units: dict[int, _Unit | None] = {}
        self._matrix: tuple[np.ndarray, np.ndarray] | None = None
        self.doc_words: dict[int, set[str]] = {}
        self.names: dict[int, set[str]] = {}
        self.weights: dict[frozenset[str], float] = {}
        self._passages: dict[int, list[StoredPassage]] = {}
        self._stating: dict[int, list[_Unit]] = {}

    def idf(self, word: str) -> float:
        got = self._idf.get(word)
        if got is None:
            self.df[word] = self.view.frequency(word)
            got = self._idf[word] = math.log(1 + self.n / (1 + self.df[word]))
        return got

    def unit(self, doc: StoredDocument, p: StoredPassage) -> _Unit | None:
        if p.pid not in self.units:
            self.units[p.pid] = self._unit(doc, p)
        return self.units[p.pid]

    def read_claims(self, dkeys: Iterable[int]) -> None:
        """Read the claims of these documents' passages, all at once."""
        _read_claims((p.text for k in dkeys for p in self.passages(k)), self.cache, self.claims)

    def _unit(self, doc: StoredDocument, p: StoredPassage) -> _Unit | None:
        if p.text not in self.claims:
            _read_claims([p.text], self.cache, self.claims)
        claims = self.claims[p.text]
        if claims is None:
            return None
        heads = _words(self.terms_of, " ".join(p.heading_path))
        sents = [(t, _words(self.terms_of, t) | heads, c) for t, c in claims.sentences]
        by_kind: dict[str, list[int]] = {}
        for i, (_, _, c) in enumerate(sents):
            for k in c:
                by_kind.setdefault(k, []).append(i)
        words = set().union(*(w for _, w, _ in sents))
        return _Unit(doc, p, sents, claims, by_kind, words)

    def title_words(self, title: str | None) -> frozenset[str]:
        return _title_words(self.terms_of, title or "")

    def same_entity(self, a: StoredDocument, b: StoredDocument) -> bool:
        # Titles naming different codes (a rare title word with a digit: a product number, a
        # year), neither named in the other's title or text, are two things: sibling products
        # of one template share most other title words ("Fjell Down Jacket, men (JK-1310)",
        # "..., women (JK-1311)").
        ca, cb = self._codes(a), self._codes(b)
        if ca and cb and not ca & (cb | self._text_words(b)) and not cb & self._text_words(a):
            return False
        return self._names_in(a, b) or self._names_in(b, a)

    def _names(self, a: StoredDocument) -> set[str]:
        if a.dkey not in self.names:
            self.names[a.dkey] = {w for w in self.title_words(a.title) if self.title_df[w] <= self.rare_title}
        return self.names[a.dkey]

    def _codes(self, a: StoredDocument) -> set[str]:
        return {w for w in self._names(a) if any(c.isdigit() for c in w)}

    def _text_words(self, b: StoredDocument) -> set[str]:
        if b.dkey not in self.doc_words:
            self.doc_words[b.dkey] = {singular(t) for t in self.terms_of(self.view.document_text(b.dkey))}
        return self.doc_words[b.dkey]

    def _names_in(self, a: StoredDocument, b: StoredDocument) -> bool:
        names = self._names(a)
        return not names or 2 * len(names & self._text_words(b)) >= len(names)

    def weight(self, words: frozenset[str]) -> float:
        if words not in self.weights:
            self.weights[words] = sum(map(self.idf, words))
        return self.weights[words]

    def subject(self, x: frozenset[str], y: frozenset[str]) -> tuple[float, list[str]]:
        shared = x & y
        if not shared:
            return 0.0, []
        small = min(self.weight(x), self.weight(y))
        return (sum(map(self.idf, shared)) / small if small else 0.0), sorted(shared)

    def matrix(self) -> tuple[np.ndarray, np.ndarray]:
        """(pids, vectors) of the tenant's live passages, read once per detection."""
        if self._matrix is None:
            live = np.flatnonzero(np.isin(self.view.sig, np.asarray(self.sigs, dtype=np.int64)))
            self._matrix = self.view.passage_matrix(live)
        return self._matrix

    def nearest(self, units: list[_Unit]) -> list[tuple[list[int], int, float]]:
        """Per unit: the dkeys of the documents (other than its own) nearest to its passage, the
        nearest passage of another document and the cosine to it. The units with vectors are
        scored as blocks of one matrix product against the tenant's passages (the units' own
        passages among them: they are live passages of the tenant)."""
        out: list[tuple[list[int], int, float]] = [([], -1, 0.0)] * len(units)
        if not units:
            return out
        pids, matrix = self.matrix()
        mine = np.asarray([u.passage.pid for u in units], dtype=np.int64)
        at = np.minimum(np.searchsorted(pids, mine), max(len(pids) - 1, 0))
        has = (pids[at] == mine) if len(pids) else np.zeros(len(units), dtype=bool)
        rows = np.flatnonzero(has).tolist()
        dkeys = self.view.dkey[pids] if len(pids) else pids
        for start in range(0, len(rows), 256):
            block = rows[start:start + 256]
            scores = matrix[at[block]] @ matrix.T
            k = min(NEIGHBOURS, scores.shape[1] - 1)
            top = np.argpartition(-scores, k, axis=1)[:, :NEIGHBOURS]
            top = np.take_along_axis(top, np.argsort(-np.take_along_axis(scores, top, 1), 1,
                                                     kind="stable"), 1)
            # Per row, the neighbours in other documents than the unit's own, nearest first.
            near = dkeys[top]
            other = near != np.array([units[i].doc.dkey for i in block], dtype=near.dtype)[:, None]
            first = other.argmax(axis=1)
            best = top[np.arange(len(block)), first]
            cos = scores[np.arange(len(block)), best].tolist()
            for row, (i, ks, keep) in enumerate(zip(block, near.tolist(), other.tolist(), strict=True)):
                if keep[first[row]]:
                    out[i] = (_first(k for k, o in zip(ks, keep, strict=True) if o),
                              int(pids[best[row]]), cos[row])
        for i in np.flatnonzero(~has).tolist():
            out[i] = (self.by_terms(units[i]), -1, 0.0)
        return out

    def by_terms(self, u: _Unit) -> list[int]:
        """A keyword-only store: the documents sharing most of the passage's rarest words."""
        words = set().union(*(w for _, w, _ in u.sentences))
        votes: Counter[int] = Counter()
        # Rare words only: a key term names a subject, and a common one's postings would
        # make every passage cost a pass over the collection.
        rare = [w for w in words if self.idf(w) and self.df[w] <= max(50, self.n // 100)]
        # Ties between equally rare words go by the word: the set's order follows string
        # hashing, which differs from one process to the next.
        for w in sorted(rare, key=lambda w: (-self.idf(w), w))[:8]:
            for pids, _ in self.view.postings(w):
                live = pids[self.view.sig[pids] >= 0]
                votes.update(set(self.view.dkey[live].tolist()))
        return _first(k for k, _ in votes.most_common() if k != u.doc.dkey)

    def stating(self, doc: StoredDocument) -> list[_Unit]:
        """The units of a document's passages that state values (their claims read before)."""
        if doc.dkey not in self._stating:
            self._stating[doc.dkey] = [u for p in self.passages(doc.dkey)
                                       if (u := self.unit(doc, p)) is not None]
        return self._stating[doc.dkey]

    def passages(self, dkey: int) -> list[StoredPassage]:
        if dkey not in self._passages:
            self.prefetch([dkey])
        return self._passages[dkey]

    def prefetch(self, dkeys: Iterable[int]) -> None:
        """Read the live passages of these documents in one query, not one per document."""
        want = np.asarray(sorted(set(dkeys) - self._passages.keys()), dtype=np.int64)
        if not len(want):
            return
        pids = np.flatnonzero(np.isin(self.view.dkey, want) & (self.view.sig >= 0))
        for k in want.tolist():
            self._passages[k] = []
        for p in self.view.passages(pids.tolist()).values():
            self._passages[p.dkey].append(p)
        for k in want.tolist():
            self._passages[k].sort(key=lambda p: p.number)

    def compare(self, u: _Unit, v: _Unit, similarity: float) -> list[Conflict]:
        found = []
        least = PASSAGE_SHARED if similarity >= PASSAGE_MIN else MIN_SHARED
        # Only sentences claiming one kind meet, in the order of a loop over u's sentences,
        # then v's, then the kinds both claim.
        pairs = sorted((i, j, kind) for kind in u.claims.claimed & v.claims.claimed
                       for i in u.by_kind[kind] for j in v.by_kind[kind])
        for i, j, kind in pairs:
            s, ws, cs = u.sentences[i]
            t, wt, ct = v.sentences[j]
            x, y = cs[kind], ct[kind]
            # Neither passage may also state the other's value.
            if (len(ws & wt) < least or close(x.amount, y.amount)
                    or _states(u.claims.kinds[kind], y.amount) or _states(v.claims.kinds[kind], x.amount)):
                continue
            score, shared = self.subject(ws, wt)
            if (score >= SUBJECT_MIN and len(shared) >= MIN_SHARED) or (
                    similarity >= PASSAGE_MIN and len(shared) >= PASSAGE_SHARED
                    and _comparable(x.amount, y.amount)):
                found.append(Conflict(0, self.tenant, x.kind, tuple(shared),
                                      _side(u, s, s[x.start:x.end]),
                                      _side(v, t, t[y.start:y.end]), ""))
        return found


def _comparable(a: float | tuple[float, ...], b: float | tuple[float, ...]) -> bool:
    """Amounts within PASSAGE_RATIO of each other (times and dates have no ratio: always)."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return True
    low, high = sorted((abs(a), abs(b)))
    return high <= PASSAGE_RATIO * low


@functools.lru_cache(maxsize=4096)
def _states(amounts: Amounts, amount: float | tuple[float, ...]) -> bool:
    """Whether one of ``amounts`` is ``amount``; asked once per sentence pair, of the same few
    passages' amounts again and again."""
    return any(close(a, amount) for a in amounts)


def _side(u: _Unit, sentence: str, value: str) -> ConflictSide:
    return ConflictSide(u.doc.id, u.doc.version, u.passage.number, sha256_text(u.passage.text),
                        value, sentence)


def _first(dkeys: Iterable[int]) -> list[int]:
    """The first CANDIDATE_DOCUMENTS distinct dkeys, in order."""
    out: list[int] = []
    for k in dkeys:
        if k not in out:
            out.append(k)
            if len(out) == CANDIDATE_DOCUMENTS:
                break
    return out


def find_conflicts(view: ReadView, tenant: str, written: Sequence[StoredDocument], terms_of: Terms,
                   documents: Sequence[StoredDocument],
                   cache: EmbeddingCache | None = None) -> list[Conflict]:
    """Conflicts between the passages of ``written`` (documents of ``tenant`` this write added
    or changed, as now stored) and the tenant's other current documents. ``documents``: all
    the tenant's documents in ``view`` (the candidates, and which title words are rare);
    ``cache``: where the values read from a passage's text are kept for the next time that
    text is met."""
    det = _Detector(view, tenant, terms_of, [d.title for d in documents], cache)
    det.prefetch(d.dkey for d in written)
    det.read_claims(d.dkey for d in written)
    # Passages stating no value are dropped before any search.
    units = [u for d in written for p in det.passages(d.dkey) if (u := det.unit(d, p)) is not None]
    near = det.nearest(units)
    # Candidates are documents of the tenant: a neighbour elsewhere is never compared.
    every = {d.dkey: d for d in documents}
    docs = {k: every[k] for ks, _, _ in near for k in ks if k in every}
    det.prefetch(docs)
    det.read_claims(docs)
    found: dict[tuple[object, ...], Conflict] = {}
    for u, (ranked, nearest, cos) in zip(units, near, strict=True):
        for k in ranked:
            other = docs.get(k)
            if other is None:
                continue
            for v in det.stating(other):
                # Similar wording is one sign of one subject; being the nearest passage of all
                # the other documents with a very similar embedding is the other. No pair of
                # their sentences can share more words than the two passages' sentences do.
                # Words first: about one pair in ten shares enough, while half of them have
                # amounts that may disagree.
                similarity = cos if v.passage.pid == nearest else 0.0
                if (len(u.words & v.words) < (PASSAGE_SHARED if similarity >= PASSAGE_MIN else MIN_SHARED)
                        or not u.claims.may_disagree(v.claims)):
                    continue
                for c in det.compare(u, v, similarity):
                    if not det.same_entity(u.doc, other):
                        break
                    # Both documents written now: found from either side, kept once.
                    key = (c.kind, *sorted([(c.a.document_id, c.a.passage, c.a.value),
                                            (c.b.document_id, c.b.passage, c.b.value)]))
                    found.setdefault(key, c)
    return list(found.values())


def conflict_status(view: ReadView, c: Conflict) -> Conflict:
    """``c`` with its status now: an open conflict is closed once either passage changed or
    its document was removed (the stored row keeps saying open; see ``store._conflicts``)."""
    if c.status != "open":
        return c
    gone = _gone(view, c.tenant, c.a) or _gone(view, c.tenant, c.b)
    return dataclasses.replace(c, status="closed", reason=gone) if gone else c


def _gone(view: ReadView, tenant: str, side: ConflictSide) -> str | None:
    """Why one side of a conflict is no longer current, or None when it is."""
    doc = view.document(tenant, side.document_id)
    if doc is None:
        return f"{side.document_id} was removed"
    p = view.passage(doc.dkey, side.passage)
    if p is None or sha256_text(p.text) != side.passage_sha256:
        return f"passage {side.passage} of {side.document_id} changed"
    return None
