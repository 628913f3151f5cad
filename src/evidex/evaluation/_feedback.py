"""``evidex feedback export``: what users said about real answers, as a draft case file.

The evaluation suite is otherwise fed only by hand-written cases; this turns the service's
answer records and the feedback on them (``store.AnswerRecord``, ``store.FeedbackRecord``) into
cases a person reviews before adding them to a set. The draft is a case file in the format
``evidex eval --cases`` reads (``examples/eval/README.md``), loadable as written:

- a **helpful** answer becomes an ``answerable`` case expecting the documents it cited
  (category ``feedback-helpful``);
- a **not helpful** one becomes a case *to label* (category ``feedback-to-label``), the note kept:
  an answered one as ``unanswerable`` (should it have declined?), a declined one as
  ``answerable`` expecting the documents it offered as related reading;
- a **declined** answer that was then handed off to a person, or rated helpful (the handoff
  helped), becomes an ``answerable`` *candidate* (category ``feedback-candidate``) expecting its
  related documents.

What cannot be written as a valid case (no document to expect, a question whose language cannot
be told) is kept as a comment under the cases with the reason, never dropped unsaid. Each
case's ``note`` names the trace id, so the case can be traced to the answer; no passage text is
in the file (the records hold none). Actors are the askers' groups and visibilities, never their
claims.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..knowledge import Knowledge
from ..model import EvidexError
from ..query import identify
from ..store import AnswerRecord, FeedbackRecord, since_stamp

__all__ = ["FeedbackDraft", "feedback_cases"]


@dataclass(frozen=True)
class FeedbackDraft:
    """The case file's text and how many drafts of each kind it holds."""

    text: str
    counts: dict[str, int] = field(default_factory=dict)


#: (groups, visibilities) -> the actor's name in the draft.
_Names = dict[tuple[tuple[str, ...], tuple[str, ...]], str]


def _actor_name(actor: dict[str, list[str]], names: _Names) -> str:
    key = (tuple(actor.get("groups", [])), tuple(actor.get("visibilities", ["public"])))
    if key not in names:
        names[key] = f"asker{len(names) + 1}"
    return names[key]


def _draft(answer: AnswerRecord, rating: FeedbackRecord | None, handed_off: bool
           ) -> tuple[str, dict[str, Any] | None, str]:
    """(kind, the case or None, why it is not a case)."""
    cited = list(dict.fromkeys(c["document_id"] for c in answer.cited))
    related = list(answer.related)
    said = f"trace {answer.trace_id}"
    note = f" User's note: {rating.note}" if rating is not None and rating.note else ""
    if rating is not None and rating.rating == "not_helpful":
        kind = "to-label"
        if answer.status == "answered":
            return kind, {"type": "unanswerable", "note": f"TO LABEL: rated not helpful ({said}); the "
                          f"answer cited {', '.join(cited) or 'nothing'}. Declining may be right, or "
                          f"another document answers it.{note}"}, ""
        if related:
            return kind, {"type": "answerable", "expect": {"documents": related},
                          "note": f"TO LABEL: declined ({answer.reason}) and rated not helpful "
                                  f"({said}); expecting the related reading it offered.{note}"}, ""
        return kind, None, f"declined ({answer.reason}), rated not helpful, nothing related to expect"
    if answer.status == "answered" and rating is not None:
        if not cited:
            return "helpful", None, "answered without a passage citation (a live lookup)"
        return "helpful", {"type": "answerable", "expect": {"documents": cited},
                           "note": f"Rated helpful ({said}).{note}"}, ""
    if answer.status == "declined" and (handed_off or rating is not None):
        why = "handed off to a person" if handed_off else "rated helpful"
        if related:
            return "candidate", {"type": "answerable", "expect": {"documents": related},
                                 "note": f"CANDIDATE: declined ({answer.reason}), then {why} ({said}); "
                                         f"expecting the related reading it offered.{note}"}, ""
        return "candidate", None, f"declined ({answer.reason}), then {why}, nothing related to expect"
    return "", None, ""


def feedback_cases(kb: Knowledge, tenant: str, since: str,
                   ingest: Sequence[str | Mapping[str, Any]]) -> FeedbackDraft:
    """The draft case file of ``tenant``'s feedback given (and handoffs sent) at or after
    ``since`` (ISO 8601 date or time, UTC). ``ingest``: the folders (relative to where the file
    will be written) that hold the tenant's documents, the draft's ``collection.ingest``: a path,
    or an entry with what files do not state themselves (``groups``, ``visibility``,
    ``language``), as another case file's collection has them (``evidex feedback export --like``)."""
    if not tenant or not tenant.strip():
        raise EvidexError("tenant must name the tenant whose feedback is exported")
    if not ingest:
        raise EvidexError("name at least one folder of the tenant's documents (the draft's "
                          "collection.ingest), relative to the file written")
    stamp = since_stamp(since)
    store = kb.for_tenant(tenant).store
    ratings = {f.trace_id: f for f in store.feedback(tenant, since=stamp)}
    handed = {t for h in store.handoffs(tenant, since=stamp, limit=100_000) for t in h.trace_ids}
    wanted = sorted(set(ratings) | handed)
    answers = [a for t in wanted for a in store.answer_records(tenant, trace_id=t, limit=1)]
    answers.sort(key=lambda a: (a.asked_at, a.trace_id))
    cases: list[dict[str, Any]] = []
    kept: list[str] = []
    names: _Names = {}
    counts = {"helpful": 0, "to-label": 0, "candidate": 0, "commented": 0}
    for a in answers:
        kind, case, why = _draft(a, ratings.get(a.trace_id), a.trace_id in handed)
        if not kind:
            continue
        language = identify(a.question)
        if case is not None and language is None:
            case, why = None, "the question's language could not be told (add language:)"
        if case is None:
            counts["commented"] += 1
            kept.append(f"# {a.trace_id} ({a.asked_at}, {kind}): {why}. Question: "
                        + " ".join(a.question.split()))
            continue
        counts[kind] += 1
        cases.append({"id": f"fb-{a.trace_id[:12]}", "category": f"feedback-{kind}", "type": case["type"],
                      "question": a.question, "language": language, "as": _actor_name(a.actor, names),
                      **({"expect": case["expect"]} if "expect" in case else {}), "note": case["note"]})
    if not cases:
        raise EvidexError(f"no feedback or handoff since {stamp} in tenant {tenant!r} makes a case"
                          + (f" ({counts['commented']} could not be written as one)" if kept else ""))
    # Askers numbered by who they are (groups, visibilities), not by which answer came first: the
    # same feedback exports the same file whatever the answers' times and trace ids.
    renamed = {old: f"asker{n}" for n, (_, old) in enumerate(sorted(names.items()), start=1)}
    names = {key: renamed[old] for key, old in names.items()}
    for c in cases:
        c["as"] = renamed[c["as"]]
    data = {
        "version": 1,
        "collection": {"tenant": tenant, "ingest": [{"path": p, "tenant": tenant} if isinstance(p, str)
                                                    else {**p, "tenant": tenant} for p in ingest]},
        "actors": {name: {"tenant": tenant, "groups": list(groups), "visibilities": list(vis)}
                   for (groups, vis), name in names.items()},
        "cases": cases,
    }
    head = (f"# Draft evaluation cases from {tenant}'s feedback since {stamp} (evidex feedback export).\n"
            "# Review every case before adding it to a set: helpful answers expect what they cited,\n"
            "# TO LABEL and CANDIDATE cases need a person's decision (see each note).\n")
    body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    tail = ("\n# Not written as cases:\n" + "\n".join(kept) + "\n") if kept else ""
    return FeedbackDraft(head + body + tail, counts)
