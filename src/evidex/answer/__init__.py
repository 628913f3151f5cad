"""Answers that cite or decline."""

from ..conflicts import Value, disagree, values
from ._answer import GENERATORS, answer_question, number_sources
from ._budget import fit_sources, token_counter
from ._contract import check_output, markers, sentences
from ._extractive import DISAGREE_TEXT, Quote, choose_sentences, extractive_answer
from ._grounding import SUPPORT_SHARE, supporting_span
from ._openai import SYSTEM_TEXT, GeneratorError, OpenAIConfig, OpenAIGenerator
from ._types import DECLINE_TEXT, Answer, AnswerSettings, Source

__all__ = [
    "DECLINE_TEXT",
    "DISAGREE_TEXT",
    "GENERATORS",
    "SUPPORT_SHARE",
    "SYSTEM_TEXT",
    "Answer",
    "AnswerSettings",
    "GeneratorError",
    "OpenAIConfig",
    "OpenAIGenerator",
    "Quote",
    "Source",
    "Value",
    "answer_question",
    "check_output",
    "choose_sentences",
    "disagree",
    "extractive_answer",
    "fit_sources",
    "markers",
    "number_sources",
    "sentences",
    "supporting_span",
    "token_counter",
    "values",
]
