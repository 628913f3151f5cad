"""Answers that cite or decline: ``respond`` runs the stages in order (``_pipeline``; the stages
themselves in ``_answer`` and ``_live``) over the narrow ``StoreReader`` the facade hands it.
The stages are this package's own: tests that exercise one import it from its module."""

from ._answer import GENERATORS
from ._budget import token_counter
from ._contract import check_output, markers, sentences
from ._extractive import DISAGREE_TEXT, extractive_answer
from ._grounding import supporting_span
from ._openai import SYSTEM_TEXT, OpenAIConfig, OpenAIGenerator
from ._pipeline import Request, respond
from ._reader import Searched, StoreReader
from ._types import DECLINE_TEXT, Answer, AnswerSettings, Source

__all__ = [
    "DECLINE_TEXT",
    "DISAGREE_TEXT",
    "GENERATORS",
    "SYSTEM_TEXT",
    "Answer",
    "AnswerSettings",
    "OpenAIConfig",
    "OpenAIGenerator",
    "Request",
    "Searched",
    "Source",
    "StoreReader",
    "check_output",
    "extractive_answer",
    "markers",
    "respond",
    "sentences",
    "supporting_span",
    "token_counter",
]
