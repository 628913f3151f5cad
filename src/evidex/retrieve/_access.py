"""From an actor and filters to the set of access signatures it may read, and their statistics.

This is where "filter before ranking" happens: the result is a boolean lookup table indexed by
signature id (offset by one so that -1, a dead passage, is always False) and the exact passage
count and total length over exactly those signatures. Nothing about other signatures leaks into
either.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from ..model import Actor, Filters, can_access
from ..query import language_key
from ..store import ReadView, Signature

__all__ = ["Access", "Allowed", "access", "allowed_signatures"]


@dataclass(frozen=True, slots=True)
class Allowed:
    table: np.ndarray  # bool, index = signature id + 1
    passages: int
    total_length: int
    #: Identifies the visible collection: the allowed signatures and their versions (a version
    #: changes with every write that adds or removes one of the signature's passages). Equal
    #: keys mean equal visible passages and statistics, whatever was written elsewhere in the
    #: store meanwhile, so exact ranking caches are keyed by it.
    key: bytes

    @property
    def avgdl(self) -> float:
        return self.total_length / self.passages if self.passages else 0.0

    def mask(self, sig_of_pid: np.ndarray, pids: np.ndarray) -> np.ndarray:
        """True for the passages in ``pids`` that are live and allowed."""
        sigs = sig_of_pid.take(pids)
        return self.table.take(np.minimum(sigs + 1, len(self.table) - 1))


@dataclass(frozen=True, slots=True)
class Access:
    """What one search may read, worked out once per search from one snapshot's signatures: the
    allowed signatures as a whole, and under the ``auto`` analyzer per language of the passages
    (each part of the keyword query is ranked with its own language's statistics)."""

    allowed: Allowed
    #: Language key ("" for none) -> the allowed signatures of passages in that language, for
    #: every language the actor can read passages in (empty unless asked for).
    by_language: Mapping[str, Allowed]
    #: Signature id -> its language tag, for the allowed signatures (adaptive fusion reads the
    #: language of the vector leg's best passages; nothing about other passages reaches it).
    language_of_sig: Mapping[int, str | None]
    #: Language keys of the passages the actor may read ("" for none).
    languages: frozenset[str]

    def of(self, language: str | None) -> Allowed:
        """The allowed signatures of passages in ``language`` (None: all of them)."""
        return self.allowed if language is None else self.by_language[language]


def access(view: ReadView, actor: Actor, filters: Filters, by_language: bool = False) -> Access:
    """The actor's allowed signatures under ``filters`` in ``view`` (``by_language``: also per
    language of the readable passages, what the ``auto`` analyzer ranks each language with).
    Each signature is checked once; the per-language tables are cut from the readable ones.

    Kept for the snapshot's signature list (``_MEMO``): the same signatures, access fields and
    filters give the same value, and every search of an unchanged store asks again."""
    sigs = view.signatures(actor.tenant)
    key = (id(sigs), actor.tenant, actor.active, actor.groups, actor.visibilities, filters, by_language)
    with _MEMO_LOCK:
        kept = _MEMO.get(key)
    if kept is not None and kept[0] is sigs:
        return kept[1]
    got = _access(sigs, actor, filters, by_language)
    with _MEMO_LOCK:
        _MEMO[key] = (sigs, got)
        while len(_MEMO) > _MEMO_SIZE:
            del _MEMO[next(iter(_MEMO))]
    return got


#: ``access`` values by (signature list, what ``can_access`` reads of the actor, filters, per
#: language or not). A reader's signature lists are made anew by each refresh of its cache
#: (``SegmentCache.refresh``) and never changed after, so one list is one snapshot's
#: signatures; each entry holds its list, so the list's id cannot name another while it is here.
_MEMO: dict[tuple[Any, ...], tuple[Sequence[Signature], Access]] = {}
_MEMO_SIZE = 256
_MEMO_LOCK = threading.Lock()


def _access(sigs: Sequence[Signature], actor: Actor, filters: Filters, by_language: bool) -> Access:
    readable = _readable(sigs, actor, filters)
    languages = frozenset(language_key(s.language) for s in readable if s.passages)
    parts: dict[str, Allowed] = {}
    if by_language:
        by_key: dict[str, list[Signature]] = {}
        for s in readable:
            by_key.setdefault(language_key(s.language), []).append(s)
        # "" (passages without a language) stands in when nothing is readable: the keyword
        # query then has that one part, matching nothing.
        parts = {k: _table(by_key.get(k, [])) for k in sorted(languages) or [""]}
    # Read-only mappings: the value is shared by every search of the snapshot (``_MEMO``).
    return Access(_table(readable), MappingProxyType(parts),
                  MappingProxyType({s.id: s.language for s in readable}), languages)


def allowed_signatures(view: ReadView, actor: Actor, filters: Filters,
                       language: str | None = None) -> Allowed:
    """The actor's allowed signatures under ``filters`` in ``view``; with ``language`` (a
    language key, "" for none) only those of passages in that language, whose statistics are
    then that language's. (A search works them out once, in its ``Access``; this is for a
    caller that needs one table.)"""
    readable = _readable(view.signatures(actor.tenant), actor, filters)
    return _table([s for s in readable if language is None or language_key(s.language) == language])


def _readable(sigs: Sequence[Signature], actor: Actor, filters: Filters) -> list[Signature]:
    return [s for s in sigs
            if can_access(actor, s.tenant, s.groups, s.visibility) and filters.admits(s.language, s.tags)]


def _table(ok: Sequence[Signature]) -> Allowed:
    """The lookup table and statistics of exactly the signatures ``ok``. (Rebuilt per search: a
    tenant's signatures are one per combination of groups, visibility, language and tags, a
    short loop; the ranking caches are keyed by ``key``'s bytes, not by this object.)"""
    # One spare slot at the end stands for every signature id beyond the table: never allowed.
    size = max((s.id for s in ok), default=0) + 3
    table = np.zeros(size, dtype=bool)
    for s in ok:
        table[s.id + 1] = True
    table.flags.writeable = False  # shared by every step of the search that holds this Allowed
    state = np.array(sorted((s.id, s.version) for s in ok), dtype=np.int64)
    return Allowed(table, sum(s.passages for s in ok), sum(s.total_length for s in ok),
                   table.tobytes() + state.tobytes())
