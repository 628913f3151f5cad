"""Answers that cite or decline, as stages the facade calls in order (see ``_answer``)."""

from ..conflicts import Value, disagree, values
from ._answer import (
    GENERATORS,
    RELATED,
    Checked,
    Gated,
    gate,
    generate,
    number_sources,
    related,
    release,
    verify,
    with_related,
)
from ._budget import fit_sources, token_counter
from ._contract import check_output, markers, sentences
from ._extractive import DISAGREE_TEXT, extractive_answer
from ._grounding import SUPPORT_SHARE, supporting_span
from ._live import LIVE_DECLINE_TEXT, join_live, live_gate
from ._openai import SYSTEM_TEXT, GeneratorError, OpenAIConfig, OpenAIGenerator
from ._types import DECLINE_TEXT, Answer, AnswerSettings, Source

__all__ = [
    "DECLINE_TEXT",
    "DISAGREE_TEXT",
    "GENERATORS",
    "LIVE_DECLINE_TEXT",
    "RELATED",
    "SUPPORT_SHARE",
    "SYSTEM_TEXT",
    "Answer",
    "AnswerSettings",
    "Checked",
    "Gated",
    "GeneratorError",
    "OpenAIConfig",
    "OpenAIGenerator",
    "Source",
    "Value",
    "check_output",
    "disagree",
    "extractive_answer",
    "fit_sources",
    "gate",
    "generate",
    "join_live",
    "live_gate",
    "markers",
    "number_sources",
    "related",
    "release",
    "sentences",
    "supporting_span",
    "token_counter",
    "values",
    "verify",
    "with_related",
]
