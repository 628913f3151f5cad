"""Every threshold of the ranking core, in one frozen value, each with the reason it exists.

None of them changes a result. Each one chooses between exact paths that give bit-identical
scores (exhaustive or pruned, binary search or dense gather, masked afresh or kept), or bounds
memory. Tests force a path on tiny collections with ``dataclasses.replace(TUNING, ...)``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TUNING", "Tuning"]


@dataclass(frozen=True, slots=True)
class Tuning:
    #: Bytes of derived arrays one BM25 keeps (weights, visible-id arrays, impact orders, kept
    #: parts, frequency arrays): a million-passage store's common words take megabytes each.
    cache_bytes: int = 1 << 30

    #: Accumulate by ``bincount`` over the whole id space when ids <= this x postings; for
    #: sparser queries a full-size pass costs more than touching each posting twice.
    dense_accumulate_factor: int = 16
    #: Mask a term through the cached visible-id array (one gather per posting) when its
    #: postings are at least 1/this of the id space; below, building that array costs more.
    visible_factor: int = 16
    #: Keep a segment's allowed postings of a term across writes (dropping only the dead) when
    #: the segment holds at least 1/this of the id space in them: masking again costs most.
    part_factor: int = 64
    #: Weigh such a kept part through its table of (tf, length) pairs, one gather per posting,
    #: when the table has at most 1/this of the part's postings (computing weights costs more).
    grid_factor: int = 8

    #: Below this many postings in all, exhaustive scoring is cheaper than any pruning attempt.
    prune_min_postings: int = 50_000
    #: MaxScore gives up (handing over to the threshold algorithm) beyond this many candidates,
    #: where probing them all costs more than the alternatives.
    maxscore_max_candidates: int = 20_000
    #: Impact-head depths the threshold algorithm tries in turn; steps of 2 past 1,024 keep a
    #: query that needs a few thousand entries per term from jumping to a much deeper head.
    ta_depths: tuple[int, ...] = (256, 1024, 2048, 4096, 8192, 16_384)
    #: The threshold algorithm gives up when its heads would hold more than 1/this of the
    #: terms' postings: scoring them all is then cheaper than probing most of them.
    ta_head_share: int = 2
    #: ... or when the union of its heads grows beyond this many candidates.
    ta_max_candidates: int = 80_000
    #: Impact heads are selected from a strided sample's threshold: expected sampled weights
    #: above it (fewer made the sample miss often and fall back to the full selection).
    sample_above: int = 32
    #: ... and the most candidates per selected position before the full selection runs.
    sample_max_factor: int = 16

    #: Probe a term through a dense frequency array (one gather, not a binary search per
    #: candidate) when its allowed postings cover at least 1/this of the id space,
    dense_probe_factor: int = 8
    #: ... for probes of at least this many candidates (a handful is cheaper to search),
    dense_min_candidates: int = 1024
    #: ... from the term's this-many-th such probe (a term probed once never pays for one),
    dense_after_probes: int = 2
    #: ... and while one array (2 bytes per id) takes at most 1/this of ``cache_bytes``.
    dense_max_share: int = 32


TUNING = Tuning()
