"""Answering: retrieve, decide, build context, generate, validate, re-resolve, release.

Every step that can refuse does so with a reason; the trace records what was searched, which
passages were available, which entered the context and which were dropped and why, with ids,
versions and fingerprints only (no copies of passage text).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..model import Actor, EvidexError, Resolution, SearchResults
from ..query import content_terms
from ..tools import LiveSource
from ._budget import fit_sources, token_counter
from ._contract import check_output
from ._extractive import extractive_answer
from ._live import answer_with_live
from ._openai import SYSTEM_TEXT, GeneratorError, OpenAIGenerator
from ._types import DECLINE_TEXT, Answer, AnswerSettings, Source

__all__ = ["GENERATORS", "answer_question", "number_sources"]

GENERATORS = ("extractive", "openai")
#: Share of a sentence's content words that its cited sources must contain (compared by their
#: first five letters, so "returns" is backed by "returned" whatever the store's analyzer).
SUPPORT_SHARE = 0.5


def _stem(term: str) -> str:
    return term if term.isdigit() else term[:5]
_MARKERS = re.compile(r"\[\d{1,3}\]")
_URLS = re.compile(r"(?:https?|ftp)://\S+|www\.\S+", re.IGNORECASE)


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
    recheck: Callable[[list[str]], str],
    generator: str,
    settings: AnswerSettings,
    openai: OpenAIGenerator | None = None,
    live: Callable[[], list[LiveSource]] | None = None,
    first_n: int = 1,
) -> Answer:
    """``live``: waits for the lookups the question asked for (started before, so they overlap
    the search); their sources come first and the passages are numbered from ``first_n``."""
    if generator not in GENERATORS:
        raise EvidexError(f"generator must be one of {', '.join(GENERATORS)}, got {generator!r}")
    results = search(question)
    if live is not None:
        return answer_with_live(live(), lambda first: answer_question(
            actor, question, search=lambda _: results, resolve=resolve, terms_of=terms_of,
            recheck=recheck, generator=generator, settings=settings, openai=openai, first_n=first),
            settings)
    trace: dict[str, Any] = {
        "searched": {"mode": settings.mode, "terms": list(results.terms), "top_k": settings.top_k,
                     "fusion": settings.fusion.method},
        "evidence": results.evidence,
        "signals": results.signals,
        "available": [],
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
    if results.evidence != "strong":
        return decline("weak_evidence", "the passages found do not clearly cover the question")
    usable = []
    for s in sources:
        if s.flags and not settings.include_flagged:
            trace["dropped"].append({**_ref(s), "why": "flagged_untrusted", "flags": list(s.flags)})
        else:
            usable.append(s)
    if not usable:
        return decline("no_evidence", "only passages flagged as untrusted matched")
    if len(usable) < len(sources):
        # The evidence level counted the flagged passages; judge again without them.
        level = recheck([s.citation["quote"] for s in usable])
        trace["evidence_without_flagged"] = level
        if level != "strong":
            return decline("weak_evidence", "without the untrusted passages the evidence is weak")
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
    if not kept:
        return decline("context_budget", "not even the best passage fits the context budget")
    if generator == "extractive":
        output: Any = extractive_answer(list(results.terms), kept, terms_of, settings.max_sentences)
    else:
        try:
            output = openai.generate(question, [s.as_context() for s in kept])  # type: ignore[union-attr]
        except GeneratorError as exc:
            return decline("generator_error", str(exc))
    if isinstance(output, dict) and output.get("answer") == "" and output.get("citations") == []:
        return decline("no_answer_in_sources", "the generator found no answer in the passages")
    by_n = {s.n: s for s in kept}
    source_terms = {s.n: {_stem(t) for t in terms_of(s.citation["quote"])} for s in kept}

    def supported(sentence: str, refs: list[int]) -> bool:
        # Links are judged by the allowlist, not here; the words around them must be supported.
        text = _URLS.sub(" ", _MARKERS.sub(" ", sentence))
        wanted = {_stem(t) for t in content_terms(terms_of(text))}
        have = set().union(*(source_terms[n] for n in refs))
        return len(wanted & have) >= SUPPORT_SHARE * len(wanted)

    problems = check_output(output, [s.n for s in kept], settings.link_allowlist, supported)
    if problems:
        trace["violations"] = problems
        return decline("invalid_model_output", "; ".join(problems))
    citations = []
    for n in sorted(set(output["citations"])):
        res = resolve(by_n[n].citation)
        if not res.ok:
            trace["violations"] = [f"source {n} no longer resolves: {res.reason}"]
            return decline("invalid_model_output", f"source {n} no longer resolves ({res.reason})")
        citations.append({"n": n, **by_n[n].citation})
    return Answer("answered", output["answer"], citations, None, None,
                  trace if settings.trace != "off" else None)


