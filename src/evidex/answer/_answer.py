"""The answer's stages, each a function of what the one before it returned, with no callbacks
back into the facade; ``_pipeline.respond`` calls them in order:

search (``StoreReader.search``: the ranker, the decision computed) -> ``gate`` (number the
sources, the on-topic decision, flagged passages, the context budget) -> ``generate`` (the
extractive generator writes what ``decide.answer_bearing`` chose; a model writes its own) ->
``verify`` (the output contract, sentence by sentence support) -> the cited passages resolved
again (``StoreReader.resolve``, one snapshot) -> ``release``. A stage that refuses returns the
declined ``Answer`` with its reason; the pipeline stops there.

The trace records what was searched, which passages were available, each passage the decision
read with its scores, the threshold each was compared with and the verdict (``on_topic``;
``answer_bearing`` for extractive answers), which entered the context and which were dropped
and why, with ids, versions and fingerprints only (no copies of passage text).

A declined answer still helps: ``related`` lists up to ``RELATED`` passages the search found
that the caller may read and that are not flagged, re-resolved like citations and marked as
not an answer (never in ``citations``), besides the offer of a person.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..decide import AnswerBearing, PassageSupport
from ..model import EvidexError, Resolution, SearchResults
from ._budget import fit_sources, token_counter
from ._contract import check_output, markers, sentences
from ._extractive import DISAGREE_TEXT, extractive_answer
from ._grounding import supporting_span
from ._openai import SYSTEM_TEXT, GeneratorError, OpenAIGenerator
from ._types import DECLINE_TEXT, Answer, AnswerSettings, Source

__all__ = ["GENERATORS", "RELATED", "Checked", "Gated", "gate", "generate", "number_sources",
           "related", "release", "verify", "with_related"]

GENERATORS = ("extractive", "openai")
#: Passages a declined answer offers as related reading, at most.
RELATED = 3
#: Why the answer-bearing decision declined -> (reason, detail).
_NOT_ANSWER_BEARING = {
    "not_stated": ("not_stated", "the passages are about the question, but none states what it asks for"),
    "weak_evidence": ("weak_evidence", "no sentence of the passages answers the question closely enough"),
    "no_quotable": ("no_answer_in_sources", "the passages hold no sentence that could be quoted"),
    "timeout": ("timeout", "the check of which sentence answers did not finish in time; the related "
                           "reading is what was found"),
}
#: Declines after which no passage is offered: none was found, or the question asked for a
#: live lookup that failed (passages about the same thing never stand in for live data).
_NOTHING_RELATED = frozenset({"no_evidence", "tool_unavailable", "tool_needs_sign_in"})

Terms = Callable[[str], list[str]]


def number_sources(results: SearchResults, start: int = 1) -> list[Source]:
    """Sources ``start``.. in rank order. Each passage appears once: a duplicate is an error."""
    seen: set[tuple[str, int]] = set()
    out = []
    for i, h in enumerate(results, start=start):
        key = (h.document_id, h.passage)
        if key in seen:
            raise EvidexError(f"duplicate source {key} supplied to the answer context")
        seen.add(key)
        out.append(Source(i, h.citation(), h.flags))
    return out


def _ref(s: Source) -> dict[str, Any]:
    c = s.citation
    return {"n": s.n, "document_id": c["document_id"], "version": c["version"],
            "content_sha256": c["content_sha256"], "passage": c["passage"]}


@dataclass
class Gated:
    """What passed the gate: the sources in the model context and their support, with the
    trace so far."""

    question: str
    generator: str
    settings: AnswerSettings
    kept: list[Source]
    kept_support: list[PassageSupport | None]
    trace: dict[str, Any]

    def decline(self, reason: str, detail: str = "") -> Answer:
        return _decline(self.settings, self.trace, reason, detail)


@dataclass
class Checked:
    """Generator output that met the contract, with each cited source's supporting spans."""

    output: dict[str, Any]
    spans: dict[int, list[tuple[int, int]]]
    #: The cited sources, in citation order: the pipeline resolves them again before release.
    cited: list[Source]


def _decline(settings: AnswerSettings, trace: dict[str, Any], reason: str, detail: str = "") -> Answer:
    return Answer("declined", DECLINE_TEXT, [], reason, settings.handoff or None,
                  trace if settings.trace != "off" else None, detail)


def gate(question: str, results: SearchResults, settings: AnswerSettings, generator: str,
         openai: OpenAIGenerator | None = None, first_n: int = 1) -> Gated | Answer:
    """The sources of ``results`` (the answer's search, decided on: ``results.support`` and
    ``results.topic``), numbered from ``first_n``; declined unless they are on topic, and
    unless an on-topic passage that is not flagged fits the context budget."""
    if generator not in GENERATORS:
        raise EvidexError(f"generator must be one of {', '.join(GENERATORS)}, got {generator!r}")
    trace: dict[str, Any] = {
        "searched": {"mode": settings.mode, "terms": list(results.terms), "top_k": settings.top_k,
                     "fusion": settings.fusion.method, "reranked": True},
        # The keyword fallback (and why) when the vector leg missed its deadline or the store
        # has no vectors; None when the legs were fused.
        "fallback": results.fallback,
        "evidence": results.evidence,
        "signals": results.signals,
        "available": [],
        "supporting": [],
        "decision": {},
        "context": [],
        "dropped": [],
        "generator": generator,
    }
    sources = number_sources(results, first_n)
    trace["available"] = [_ref(s) for s in sources]
    if not sources:
        return _decline(settings, trace, "no_evidence", "no passage you may read matches the question")
    support: list[PassageSupport | None] = [*results.support,
                                            *[None] * (len(sources) - len(results.support))]
    if results.topic is not None:
        trace["decision"]["on_topic"] = {
            "verdict": results.topic.verdict,
            "passages": [{**_ref(s), **d.as_dict()}
                         for s, d in zip(sources, results.topic.passages, strict=False)]}
    trace["supporting"] = [s.n for s, p in zip(sources, support, strict=True) if p and p.supported]
    if not trace["supporting"]:
        return _decline(settings, trace, "weak_evidence",
                        "no passage found covers the question well enough")
    usable: list[Source] = []
    usable_support: list[PassageSupport | None] = []
    for s, p in zip(sources, support, strict=True):
        if s.flags and not settings.include_flagged:
            trace["dropped"].append({**_ref(s), "why": "flagged_untrusted", "flags": list(s.flags)})
        else:
            usable.append(s)
            usable_support.append(p)
    if not any(p and p.supported for p in usable_support):
        return _decline(settings, trace, "weak_evidence" if usable else "no_evidence",
                        "only passages flagged as untrusted support an answer")
    if generator == "openai":
        if openai is None:
            raise EvidexError("the openai generator is not configured")
        count = token_counter(openai.config.model, openai.config.tokenizer_file)
    else:
        count = token_counter("cl100k_base")
    kept, dropped = fit_sources(usable, SYSTEM_TEXT, question, count, settings.context_tokens,
                                settings.answer_tokens)
    trace["context"] = [_ref(s) for s in kept]
    trace["dropped"] += [{**_ref(s), "why": "context_budget"} for s in dropped]
    kept_support = usable_support[:len(kept)]
    if not any(p and p.supported for p in kept_support):
        return _decline(settings, trace, "context_budget",
                        "no supporting passage fits the context budget")
    return Gated(question, generator, settings, kept, kept_support, trace)


def generate(gated: Gated, bearing: AnswerBearing | None = None,
             openai: OpenAIGenerator | None = None) -> dict[str, Any] | Any | Answer:
    """The generator's output for the context: the extractive generator writes the quotes of
    the answer-bearing decision ``bearing`` (made over ``gated.kept``), a model its own answer.
    Declined when the generator fails, or finds (or, extractive, the decision finds) no
    answer in the passages."""
    if gated.generator == "extractive":
        if bearing is None:
            raise EvidexError("the extractive generator writes what answer_bearing chose: pass it")
        gated.trace["decision"]["answer_bearing"] = {
            **bearing.as_dict(),
            "quotes": [{"n": gated.kept[q.source].n, "start": q.start, "end": q.end}
                       for q in bearing.quotes]}
        if not bearing.verdict:
            return gated.decline(*_NOT_ANSWER_BEARING[bearing.why or "no_quotable"])
        output: Any = extractive_answer(gated.kept, bearing)
    else:
        if openai is None:
            raise EvidexError("the openai generator is not configured")
        try:
            output = openai.generate(gated.question, [s.as_context() for s in gated.kept])
        except GeneratorError as exc:
            return gated.decline("generator_error", str(exc))
    if isinstance(output, dict) and output.get("answer") == "" and output.get("citations") == []:
        return gated.decline("no_answer_in_sources", "the generator found no answer in the passages")
    return output


def verify(gated: Gated, output: Any, terms_of: Terms,
           bearing: AnswerBearing | None = None) -> Checked | Answer:
    """The output contract (``check_output``), with each sentence supported by a passage it
    cites (``supporting_span``); a violation declines, never repaired. An extractive answer's
    citations point at the spans ``bearing`` quoted (its text shows them without Markdown)."""
    by_n = {s.n: s for s in gated.kept}
    spans: dict[int, list[tuple[int, int]]] = {}

    def supported(sentence: str, refs: list[int]) -> bool:
        """Per sentence: some cited passage holds it (one or two adjacent sentences of it)."""
        ok = False
        for n in refs:
            span = supporting_span(sentence, by_n[n].citation["quote"], terms_of)
            if span is not None:
                spans.setdefault(n, []).append(span)
                ok = True
        return ok

    problems = check_output(output, [s.n for s in gated.kept], gated.settings.link_allowlist,
                            supported)
    if problems:
        gated.trace["violations"] = problems
        return gated.decline("invalid_model_output", "; ".join(problems))
    if output["answer"].startswith(DISAGREE_TEXT):
        gated.trace["disagreement"] = sorted(set(output["citations"]))
    if bearing is not None:
        spans = {}
        for q in bearing.quotes:
            spans.setdefault(gated.kept[q.source].n, []).append((q.start, q.end))
    return Checked(output, spans, [by_n[n] for n in sorted(set(output["citations"]))])


def release(gated: Gated, checked: Checked, resolutions: Sequence[Resolution],
            terms_of: Terms) -> Answer:
    """The answer, once every cited passage resolved again (``resolutions``, aligned with
    ``checked.cited``); declined when one no longer does."""
    citations = []
    for src, res in zip(checked.cited, resolutions, strict=True):
        n = src.n
        if not res.ok:
            gated.trace["violations"] = [f"source {n} no longer resolves: {res.reason}"]
            return gated.decline("invalid_model_output", f"source {n} no longer resolves ({res.reason})")
        own = checked.spans.get(n) or _marked_spans(checked.output["answer"], n,
                                                     src.citation["quote"], terms_of)
        start, end = (min(s for s, _ in own), max(e for _, e in own)) if own else (None, None)
        citations.append({"n": n, **src.citation, "sentence_start": start, "sentence_end": end})
    return Answer("answered", checked.output["answer"], citations, None, None,
                  gated.trace if gated.settings.trace != "off" else None)


def related(answer: Answer, results: SearchResults) -> list[dict[str, Any]]:
    """The citations a declined ``answer`` may offer as related reading (to be resolved again
    by the caller): the best ``RELATED`` passages of its search that are not flagged; none for
    an answered question, a decline that found nothing on the question's topic, or one that
    failed a live lookup."""
    if answer.status != "declined" or answer.reason in _NOTHING_RELATED:
        return []
    if results.topic is not None and not results.topic.verdict:
        return []  # nothing found is about the question: what ranked best is not related to it
    return [h.citation() for h in results if not h.flags][:RELATED]


def with_related(answer: Answer, offered: Sequence[dict[str, Any]],
                 resolutions: Sequence[Resolution]) -> Answer:
    """``answer`` listing the ``offered`` passages that still resolve (``resolutions``, aligned)."""
    kept = [c for c, r in zip(offered, resolutions, strict=True) if r.ok]
    return dataclasses.replace(answer, related=kept) if kept else answer


def _marked_spans(answer: str, n: int, passage: str, terms_of: Terms) -> list[tuple[int, int]]:
    """Spans backing the answer sentences marked [n] (for sentences the contract does not check
    for support, such as short ones)."""
    out = []
    for s in sentences(answer):
        if n in markers(s):
            span = supporting_span(s, passage, terms_of)
            if span is not None:
                out.append(span)
    return out
