"""One owner for answering: the whole pipeline, run over the narrow reader the facade hands in.

``respond`` runs the stages in order, each a function of what the one before returned:

live lookups start -> search (with the decision) -> lookups joined, ``live_gate`` -> ``gate``
-> the answer-bearing decision (extractive) -> ``generate`` -> ``verify`` -> the cited passages
resolved again -> ``release`` -> related reading for a decline -> ``join_live``.

Everything it reads comes through ``StoreReader`` (``_reader``), so an answer's reads are
few and countable: the question was parsed once (by the facade, which refuses a question
without words), its vector is the one the search ranked with (fetched separately only for a
keyword-mode answer that still compares meaning), and the cited or related passages are
resolved again in one snapshot. The deadlines of the quotes' embedding and of the trained
reader are this module's: past one, the decision declines (``timeout``) rather than decide by
a weaker rule, so an answer never depends on how busy the machine is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..decide import AnswerBearing, Reading, answer_bearing
from ..embed import get_reader
from ..model import Actor, Filters
from ..retrieve import Deadline, Fallback, within
from ..tools import LiveSource, Toolbox
from ._answer import Gated, gate, generate, related, release, verify, with_related
from ._live import join_live, live_gate
from ._openai import OpenAIGenerator
from ._reader import Searched, StoreReader
from ._types import Answer, AnswerSettings

__all__ = ["Request", "respond"]


@dataclass(frozen=True)
class Request:
    """One question to answer, checked by the facade: ``words`` is the question parsed once
    (never empty), ``settings`` the ones in force (mode ``keyword`` for a keyword-only store),
    ``limit`` the checked ``settings.top_k``. ``live``: lookups already made (a service starts
    them before it takes a store handle); None starts them here, overlapping the search."""

    actor: Actor
    question: str
    words: list[str]
    generator: str
    settings: AnswerSettings
    limit: int
    filters: Filters
    openai: OpenAIGenerator | None = None
    live: Sequence[LiveSource] | None = None


def respond(reader: StoreReader, toolbox: Toolbox, req: Request) -> Answer:
    """The answer to ``req``: cited from the passages ``reader`` finds and the live lookups
    ``toolbox`` makes, or declined with its reason (see the module docstring)."""
    st = req.settings
    # The lookups run on the toolbox's threads while the search below runs.
    lookups = None if req.live is not None else toolbox.start(toolbox.asked(req.actor, req.question))
    searched = reader.search(req.question, req.words, limit=req.limit, mode=st.mode,
                             filters=req.filters, fusion=st.fusion)
    found = list(req.live) if req.live is not None else lookups.wait() if lookups else []
    if found and (refused := live_gate(found, st)) is not None:
        return refused
    passages = _from_passages(reader, req, searched, len(found) + 1)
    offered = related(passages, searched.results)
    if offered:
        passages = with_related(passages, offered, reader.resolve(offered))
    return join_live(found, passages) if found else passages


def _from_passages(reader: StoreReader, req: Request, searched: Searched, first_n: int) -> Answer:
    """The answer from the passages of the search, numbered from ``first_n``: gate, decide,
    generate, verify, resolve again, release."""
    results = searched.results
    gated = gate(req.question, results, req.settings, req.generator, req.openai, first_n)
    if isinstance(gated, Answer):
        return gated
    bearing = None
    if req.generator == "extractive":
        bearing = _answer_bearing(reader, req.question, searched, gated)
    output = generate(gated, bearing, req.openai)
    if isinstance(output, Answer):
        return output
    checked = verify(gated, output, reader.terms, bearing)
    if isinstance(checked, Answer):
        return checked
    return release(gated, checked, reader.resolve([s.citation for s in checked.cited]), reader.terms)


def _answer_bearing(reader: StoreReader, question: str, searched: Searched,
                    gated: Gated) -> AnswerBearing:
    """The answer-bearing decision over the sources that passed the gate: their spans embedded
    through the embedding cache and compared with the question's vector (none in the keyword
    fallback)."""
    results = searched.results
    kept, support = gated.kept, gated.kept_support
    cal = reader.calibration()
    st = gated.settings
    reading = (_reading(reader, gated.trace, st.reader_threshold)
               if cal.reader and st.reader else None)
    late = results.fallback is not None and results.fallback.get("reason") == "vector_timeout"
    if reading is not None and late:
        # The search missed its deadline: deciding on the keyword ranking alone would make
        # the answer depend on how busy the machine is.
        return AnswerBearing(False, (), False, why="timeout",
                             asked=results.question.asked.kind if results.question else "other")
    vectors = qvec = probes = None
    if results.fallback is None and not reader.keyword_only:
        vectors = _quotes_within(reader, gated.trace)
        qvec = searched.vector if searched.vector is not None else reader.query_vector(question)
        probes = reader.probes()
    by_pid = {(h.document_id, h.passage): h for h in results}
    hits = [by_pid[(s.citation["document_id"], s.citation["passage"])] for s in kept]
    return answer_bearing(
        [s.citation["quote"] for s in kept], [(h.title or "", *h.heading_path) for h in hits],
        [p for p in support if p is not None], results.question, cal,
        vectors, qvec, probes, [results.shift.of(h.language) for h in hits], st.max_sentences,
        reading)


def _reading(reader: StoreReader, trace: dict[str, Any], threshold: float | None) -> Reading:
    """The trained reader, run within ``vector_timeout_ms`` of its own: past it, the decision
    declines (``timeout``) and ``trace["timeout"]`` says what missed it. ``threshold``: the
    caller's, else the reader's manifest's."""
    model = get_reader()
    timeout_ms = reader.vector_timeout_ms

    def read(question: str, spans: list[str]) -> np.ndarray | None:
        if timeout_ms is None:
            return model.score(question, spans)
        got = within(Deadline.start(timeout_ms), "the reader", lambda: model.score(question, spans))
        if isinstance(got, Fallback):
            trace["timeout"] = got.as_dict()
            return None
        return got
    return Reading(read, model.threshold if threshold is None else threshold, model.stack)


def _quotes_within(reader: StoreReader, trace: dict[str, Any]) -> Callable[[list[str]], np.ndarray | None]:
    """Embeds the candidate quotes (through the embedding cache) within a deadline of
    ``vector_timeout_ms`` of its own: past it, None (the decision reads the quotes by their
    words alone, as after a keyword fallback; with the reader, the decision declines) and
    ``trace["fallback"]`` says so. The late embedding still finishes into the cache, so the
    same quotes are fast next time."""
    timeout_ms = reader.vector_timeout_ms

    def embed(texts: list[str]) -> np.ndarray | None:
        if timeout_ms is None:
            return reader.embed_passages(texts)
        known = reader.cached_passages(texts)
        if known is not None:  # met before: nothing to wait for
            return known
        got = within(Deadline.start(timeout_ms), "the quotes' embedding",
                     lambda: reader.embed_passages(texts))
        if isinstance(got, Fallback):
            trace["fallback"] = got.as_dict()
            return None
        return got
    return embed
