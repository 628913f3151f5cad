"""Answering: retrieve, decide per passage, build context, generate, validate, re-resolve, release.

Every step that can refuse does so with a reason; the trace records what was searched, which
passages were available, which supported answering, which entered the context and which were
dropped and why, with ids, versions and fingerprints only (no copies of passage text).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..model import Actor, EvidexError, Resolution, SearchResults
from ..tools import LiveSource
from ._budget import fit_sources, token_counter
from ._contract import check_output, markers, sentences
from ._extractive import DISAGREE_TEXT, asks_number, extractive_answer
from ._grounding import supporting_span
from ._live import answer_with_live
from ._openai import SYSTEM_TEXT, GeneratorError, OpenAIGenerator
from ._types import DECLINE_TEXT, Answer, AnswerSettings, Source

__all__ = ["GENERATORS", "answer_question", "number_sources"]

GENERATORS = ("extractive", "openai")


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


def answer_question(
    actor: Actor,
    question: str,
    *,
    search: Callable[[str], SearchResults],
    resolve: Callable[[dict[str, Any]], Resolution],
    terms_of: Callable[[str], list[str]],
    generator: str,
    settings: AnswerSettings,
    openai: OpenAIGenerator | None = None,
    similar: Callable[[list[str]], Sequence[float]] | None = None,
    live: Callable[[], list[LiveSource]] | None = None,
    first_n: int = 1,
) -> Answer:
    """``search`` runs the answer's search (with the second-stage ranker); ``similar`` scores
    sentences by meaning against the question (for questions in another language than the
    passage), when the store has an embedding model. ``live`` waits for the lookups the question
    asked for (started before, so they overlap the search); their sources come first, quoted
    verbatim, and the passages are numbered from ``first_n``."""
    if generator not in GENERATORS:
        raise EvidexError(f"generator must be one of {', '.join(GENERATORS)}, got {generator!r}")
    results = search(question)
    if live is not None:
        return answer_with_live(live(), lambda first: answer_question(
            actor, question, search=lambda _: results, resolve=resolve, terms_of=terms_of,
            generator=generator, settings=settings, openai=openai, similar=similar, first_n=first),
            settings)
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
        "context": [],
        "dropped": [],
        "generator": generator,
    }

    def decline(reason: str, detail: str = "") -> Answer:
        return Answer("declined", DECLINE_TEXT, [], reason, settings.handoff or None,
                      trace if settings.trace != "off" else None, detail)

    sources = number_sources(results, first_n)
    trace["available"] = [_ref(s) for s in sources]
    if not sources:
        return decline("no_evidence", "no passage you may read matches the question")
    support = list(results.support) + [None] * (len(sources) - len(results.support))
    trace["supporting"] = [s.n for s, p in zip(sources, support, strict=True) if p and p.supported]
    if not trace["supporting"]:
        return decline("weak_evidence", "no passage found covers the question well enough")
    usable, usable_support = [], []
    for s, p in zip(sources, support, strict=True):
        if s.flags and not settings.include_flagged:
            trace["dropped"].append({**_ref(s), "why": "flagged_untrusted", "flags": list(s.flags)})
        else:
            usable.append(s)
            usable_support.append(p)
    if not any(p and p.supported for p in usable_support):
        return decline("weak_evidence" if usable else "no_evidence",
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
        return decline("context_budget", "no supporting passage fits the context budget")
    if generator == "extractive":
        output: Any = extractive_answer(kept, kept_support, similar, settings.max_sentences,
                                        number=asks_number(question))
    else:
        try:
            output = openai.generate(question, [s.as_context() for s in kept])  # type: ignore[union-attr]
        except GeneratorError as exc:
            return decline("generator_error", str(exc))
    if isinstance(output, dict) and output.get("answer") == "" and output.get("citations") == []:
        return decline("no_answer_in_sources", "the generator found no answer in the passages")
    by_n = {s.n: s for s in kept}
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

    problems = check_output(output, [s.n for s in kept], settings.link_allowlist, supported)
    if problems:
        trace["violations"] = problems
        return decline("invalid_model_output", "; ".join(problems))
    if output["answer"].startswith(DISAGREE_TEXT):
        trace["disagreement"] = sorted(set(output["citations"]))
    citations = []
    for n in sorted(set(output["citations"])):
        res = resolve(by_n[n].citation)
        if not res.ok:
            trace["violations"] = [f"source {n} no longer resolves: {res.reason}"]
            return decline("invalid_model_output", f"source {n} no longer resolves ({res.reason})")
        own = spans.get(n) or _marked_spans(output["answer"], n, by_n[n].citation["quote"], terms_of)
        start, end = (min(s for s, _ in own), max(e for _, e in own)) if own else (None, None)
        citations.append({"n": n, **by_n[n].citation, "sentence_start": start, "sentence_end": end})
    return Answer("answered", output["answer"], citations, None, None,
                  trace if settings.trace != "off" else None)


def _marked_spans(answer: str, n: int, passage: str,
                  terms_of: Callable[[str], list[str]]) -> list[tuple[int, int]]:
    """Spans backing the answer sentences marked [n] (for sentences the contract does not check
    for support, such as short ones)."""
    out = []
    for s in sentences(answer):
        if n in markers(s):
            span = supporting_span(s, passage, terms_of)
            if span is not None:
                out.append(span)
    return out
