"""The ``answer:`` section: generator, declines and handoff, links, the reader."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    Field,
)

from ..notify import HandoffRoute
from ._common import (
    Strict,
    WhenNoEvidence,
)


class AnswerConfig(Strict):
    generator: Literal["extractive", "openai"] = "extractive"
    #: Every answer sentence cites its passage; "required" is the only value (stated, not a choice).
    cite: Literal["required"] = "required"
    #: What a decline offers: the handoff to a person, or nothing.
    when_no_evidence: WhenNoEvidence = "decline_and_offer_person"
    handoff: Annotated[str, Field(min_length=1)] | HandoffRoute | None = None
    include_flagged: bool = False
    link_allowlist: tuple[str, ...] = ()
    #: Decide which sentence answers with the trained reader (see AnswerSettings.reader).
    reader: bool = False
    #: Its decision threshold (None: the one the reader's manifest records).
    reader_threshold: float | None = None

