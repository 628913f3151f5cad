"""What every section of the configuration shares: the strict base model, the reference
file's spellings mapped onto canonical values, language tags and cadences."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import (
    BeforeValidator,
)

from ..cadence import check_cadence
from ..model import VISIBILITIES, is_language_tag
from ..yamlfile import StrictModel

SOURCE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")
Visibility = Literal["public", "internal", "confidential", "restricted"]
assert set(Visibility.__args__) == VISIBILITIES  # type: ignore[attr-defined]


Strict = StrictModel


def language_tag(value: str | None) -> str | None:
    if value is not None and not is_language_tag(value):
        raise ValueError(f"must be a language tag like 'en' or 'de-CH', got {value!r}")
    return value


# -- knowledge operations (issue 24: reference file, vector timeout, schedules) ---------------
# Spellings of the reference knowledge.config.yaml map onto the canonical values here, so the
# rest of evidex sees one name per setting.

def alias(aliases: dict[str, str]) -> BeforeValidator:
    return BeforeValidator(lambda v: aliases.get(v, v) if isinstance(v, str) else v)


#: ``by_heading`` is the reference file's name for ``heading``.
Split = Annotated[Literal["heading", "paragraph", "document"],
                  alias({"by_heading": "heading", "by_paragraph": "paragraph"})]
#: ``reciprocal_rank`` is the reference file's name for ``rrf`` (reciprocal rank fusion), and
#: ``weighted_reciprocal_rank`` for ``weighted_rrf`` (RRF with the adaptive leg weights per query).
FuseMethod = Annotated[Literal["adaptive", "weighted_rrf", "rrf", "convex"],
                       alias({"reciprocal_rank": "rrf", "weighted_reciprocal_rank": "weighted_rrf"})]
#: ``say_so_and_offer_a_person`` / ``say_so`` are the reference file's names for the declines.
WhenNoEvidence = Annotated[Literal["decline_and_offer_person", "decline"],
                           alias({"say_so_and_offer_a_person": "decline_and_offer_person",
                                   "say_so": "decline"})]


def cadence_value(value: str | None) -> str | None:
    return None if value is None else check_cadence(value)


#: How often something runs: off, hourly, daily, weekly, or a five-field cron expression
#: (minute hour day-of-month month day-of-week, UTC), e.g. "30 2 * * 1-5" (see ``cadence``).
Cadence = str

