"""Answers that cite or decline."""

from ._answer import GENERATORS, answer_question, number_sources
from ._budget import fit_sources, token_counter
from ._contract import check_output, markers, sentences
from ._extractive import extractive_answer, split_sentences
from ._openai import SYSTEM_TEXT, GeneratorError, OpenAIConfig, OpenAIGenerator
from ._types import DECLINE_TEXT, Answer, AnswerSettings, Source

__all__ = [
    "DECLINE_TEXT",
    "GENERATORS",
    "SYSTEM_TEXT",
    "Answer",
    "AnswerSettings",
    "GeneratorError",
    "OpenAIConfig",
    "OpenAIGenerator",
    "Source",
    "answer_question",
    "check_output",
    "extractive_answer",
    "fit_sources",
    "markers",
    "number_sources",
    "sentences",
    "split_sentences",
    "token_counter",
]
