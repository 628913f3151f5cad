"""From an actor and filters to the set of access signatures it may read, and their statistics.

This is where "filter before ranking" happens: the result is a boolean lookup table indexed by
signature id (offset by one so that -1, a dead passage, is always False) and the exact passage
count and total length over exactly those signatures. Nothing about other signatures leaks into
either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..model import Actor, Filters, can_access
from ..query import language_key
from ..store import ReadView, Signature

__all__ = ["Allowed", "allowed_signatures"]


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


def allowed_signatures(view: ReadView, actor: Actor, filters: Filters,
                       language: str | None = None) -> Allowed:
    """The actor's allowed signatures under ``filters`` in ``view``; with ``language`` (a
    language key, "" for none) only those of passages in that language, whose statistics are
    then that language's (what the ``auto`` analyzer ranks each language with).

    Remembered per signature list, so a query does not rebuild the table its predecessor
    built: a store builds a new list for a tenant whenever any of its signatures changes (a
    write that adds or removes passages gives the signature a new version), so the same list
    object means the same answer. The entry holds the list, so its id is not reused while the
    entry lives, and the entry is used only for that very object."""
    sigs = view.signatures(actor.tenant)
    key = (id(sigs), actor, filters, language)
    hit = _memo.get(key)
    if hit is not None and hit[0] is sigs:
        return hit[1]
    allowed = _allowed(sigs, actor, filters, language)
    if len(_memo) >= _MEMO_LIMIT:
        _memo.clear()
        _latest.clear()
    # A caller's entry for an older signature list (before a write, or of a closed store) is
    # never hit again: it goes now, so stale lists are not kept alive until the memo is full.
    _memo.pop(_latest.get((actor, filters, language), key), None)
    _latest[(actor, filters, language)] = key
    _memo[key] = (sigs, allowed)
    return allowed


#: (id of a signature list, actor, filters, language) -> (that list, its Allowed); cleared when
#: full.
_memo: dict[tuple[int, Actor, Filters, str | None], tuple[Sequence[Signature], Allowed]] = {}
#: (actor, filters, language) -> its latest key in ``_memo``.
_latest: dict[tuple[Actor, Filters, str | None], tuple[int, Actor, Filters, str | None]] = {}
_MEMO_LIMIT = 1024


def _allowed(sigs: Sequence[Signature], actor: Actor, filters: Filters, language: str | None) -> Allowed:
    ok = [
        s
        for s in sigs
        if can_access(actor, s.tenant, s.groups, s.visibility) and filters.admits(s.language, s.tags)
        and (language is None or language_key(s.language) == language)
    ]
    # One spare slot at the end stands for every signature id beyond the table: never allowed.
    size = max((s.id for s in ok), default=0) + 3
    table = np.zeros(size, dtype=bool)
    for s in ok:
        table[s.id + 1] = True
    table.flags.writeable = False  # shared by every query that reuses this Allowed
    state = np.array(sorted((s.id, s.version) for s in ok), dtype=np.int64)
    return Allowed(table, sum(s.passages for s in ok), sum(s.total_length for s in ok),
                   table.tobytes() + state.tobytes())
