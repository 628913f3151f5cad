"""Adaptive fusion: how much each leg counts for one query, from what the query itself shows.

A fixed split (convex, alpha 0.5) trusts the keyword leg as much as the vector leg even when the
keyword leg cannot work: a German question over English passages shares only names and numbers
with them, and BM25 then ranks whatever passage repeats a name. The rule below reads signals
that are known once both legs have run (``QuerySignals``) and returns the keyword and vector
weights of a convex combination, with the reason for each change:

* known: the share of the query's content terms that occur in any passage the actor may read.
  Another language's words mostly do not, so the keyword leg can only have matched the few
  shared ones (names, numbers): its weight falls towards ``floor``. An empty keyword leg adds
  nothing, so that query gets the vector ranking.
* coverage: the IDF-weighted share of the query's content terms that the best of the keyword
  leg's top passages contains. Low coverage means the keyword leg matched fragments, so its
  weight falls towards ``floor`` too.
* foreign: the share of the vector leg's best passages whose language is known and is not the
  query's. Those passages can only be matched by words the languages share, so the keyword
  weight falls with it.
* peak: how far the keyword leg's best score stands above the rest of its window (0: flat,
  1: one passage far ahead). A query that names an exact code or title has a peaked keyword leg
  that covers the whole query: its weight rises, so the exact hit stays first.

The constants are fitted on development data only (benchmarks/multilingual.py; the figures and
the fitting command are in benchmarks/RESULTS.md). The function is pure: the same
signals always give the same weights.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AdaptiveRule", "LegWeights", "QuerySignals", "leg_weights"]


@dataclass(frozen=True, slots=True)
class QuerySignals:
    #: IDF-weighted share (0..1) of the query's content terms in the best of the keyword
    #: leg's top passages; 0 when the keyword leg found nothing.
    coverage: float
    #: Share (0..1) of the vector leg's best passages in a known language other than the query's.
    foreign: float
    #: (best - k-th best) / best of the keyword leg's scores (0..1); 0 for an empty leg.
    peak: float
    #: The query's language, when it was identified (shown in explanations only).
    language: str | None = None
    #: Share (0..1) of the query's content terms that occur in any passage the actor may read.
    known: float = 1.0


@dataclass(frozen=True, slots=True)
class AdaptiveRule:
    #: Keyword weight of a query the keyword leg knows, covers and reads in its own language.
    base: float = 0.5
    #: Keyword weight of a query the keyword leg has nothing useful for (about the vector ranking).
    floor: float = 0.15
    #: Share of the query's words the visible passages contain at all: at or below ``known_low``
    #: the keyword leg gets ``floor``, from ``known_full`` on it is not lowered for this.
    known_low: float = 0.2
    known_full: float = 0.7
    #: The same for the coverage of the keyword leg's best passages.
    cover_low: float = 0.0
    cover_full: float = 0.4
    #: How far a wholly foreign vector top moves the keyword weight towards ``floor`` (0..1;
    #: 1: all the way).
    foreign_cut: float = 1.0
    #: Extra keyword weight of a known, covered query whose keyword leg is fully peaked.
    peak_boost: float = 0.1
    #: Never more keyword weight than this.
    ceiling: float = 0.8


@dataclass(frozen=True, slots=True)
class LegWeights:
    keyword: float
    vector: float
    why: tuple[str, ...]
    #: The query's identified language (None: too short to tell, or not identified).
    language: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {"keyword": round(self.keyword, 4), "vector": round(self.vector, 4),
                "language": self.language, "why": list(self.why)}


_RULE = AdaptiveRule()


def _clip(x: float, lo: float, hi: float) -> float:
    return lo if x < lo else hi if x > hi else x


def _ramp(x: float, low: float, full: float) -> float:
    """0 at or below ``low``, 1 from ``full`` on, linear between."""
    return _clip((x - low) / (full - low), 0.0, 1.0) if full > low else float(x >= full)


def leg_weights(s: QuerySignals, rule: AdaptiveRule = _RULE) -> LegWeights:
    """The keyword and vector weights (summing to 1) for a query with signals ``s``."""
    why = []
    known = _ramp(s.known, rule.known_low, rule.known_full)
    covered = _ramp(s.coverage, rule.cover_low, rule.cover_full)
    trust = known * covered
    kw = rule.floor + (rule.base - rule.floor) * trust
    if known < 1.0:
        why.append(f"{s.known:.0%} of the query's words occur in the passages you may read")
    if covered < 1.0:
        why.append(f"the keyword leg's best passages cover {s.coverage:.0%} of the query")
    if trust < 1.0:
        why.append(f"keyword weight {rule.base:.2f} -> {kw:.2f}")
    if s.foreign > 0 and rule.foreign_cut > 0 and kw > rule.floor:
        before = kw
        kw = rule.floor + (kw - rule.floor) * (1.0 - rule.foreign_cut * s.foreign)
        why.append(f"{s.foreign:.0%} of the vector leg's best passages are not in the query's"
                   f" language ({s.language}): keyword weight {before:.2f} -> {kw:.2f}")
    boost = rule.peak_boost * trust * s.peak * (1.0 - s.foreign)
    if boost >= 0.005:
        before = kw
        kw = min(rule.ceiling, kw + boost)
        why.append(f"the keyword leg's best passage stands out (peak {s.peak:.2f}) and covers the"
                   f" query: keyword weight {before:.2f} -> {kw:.2f}")
    kw = _clip(kw, 0.0, rule.ceiling)
    if not why:
        why.append(f"the keyword leg knows and covers the query: keyword weight {kw:.2f}")
    return LegWeights(kw, 1.0 - kw, tuple(why), s.language)
