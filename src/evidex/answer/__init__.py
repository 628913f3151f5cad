"""Answers that cite or decline, as stages the facade calls in order (see ``_answer``)."""

from ._answer import (
    GENERATORS,
    Gated,
    gate,
    generate,
    number_sources,
    related,
    release,
    verify,
    with_related,
)
from ._budget import token_counter
from ._contract import check_output, markers, sentences
from ._extractive import DISAGREE_TEXT, extractive_answer
from ._grounding import supporting_span
from ._live import join_live, live_gate
from ._openai import SYSTEM_TEXT, OpenAIConfig, OpenAIGenerator
from ._types import DECLINE_TEXT, Answer, AnswerSettings, Source

__all__ = [
    "DECLINE_TEXT",
    "DISAGREE_TEXT",
    "GENERATORS",
    "SYSTEM_TEXT",
    "Answer",
    "AnswerSettings",
    "Gated",
    "OpenAIConfig",
    "OpenAIGenerator",
    "Source",
    "check_output",
    "extractive_answer",
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
    "verify",
    "with_related",
]
