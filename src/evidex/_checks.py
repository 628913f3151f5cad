"""The argument checks every door of the library shares: a bad argument is a one-line
``EvidexError`` (of the kind the caller's operation raises), never a traceback from deep inside."""

from __future__ import annotations

from .embed import EMBEDDERS, get_embedder
from .model import Actor, EvidexError, QueryError, StoreError

__all__ = ["check_actor", "check_model", "dimension", "positive_int"]


def dimension(model: str) -> int:
    """The vector width of ``model`` (0: no vectors)."""
    return 0 if model == "none" else get_embedder(model).dimension


def check_model(model: str | None) -> None:
    if model is not None and model != "none" and model not in EMBEDDERS:
        raise StoreError(f"unknown embedding model {model!r}; known: none, {', '.join(EMBEDDERS)}")


def positive_int(value: object, what: str, upper: int | None = None,
                 err: type[EvidexError] = QueryError) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise err(f"{what} must be an int, got {type(value).__name__} {value!r}")
    if value < 1 or (upper is not None and value > upper):
        bound = f"1..{upper}" if upper is not None else ">= 1"
        raise err(f"{what} must be in {bound}, got {value}")
    return value


def check_actor(actor: object) -> None:
    """Only trusted code builds an ``Actor``: anything else in its place is refused."""
    if not isinstance(actor, Actor):
        raise EvidexError("actor must be an evidex.Actor built by trusted code")
