"""The command line's settings and the caller it acts for.

``state`` holds what the global options set (--db, --analyzer, --embedder, --config), read by
every command; ``open_kb`` opens the store they name. The caller of a search or an answer is
built here from the command's options (``actor``), so every command reads it alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..config import Config
from ..kb import KnowledgeBase
from ..model import Actor, EvidexError
from ..store import is_postgres_url

__all__ = ["ClaimOpt", "GroupsOpt", "State", "TenantOpt", "VisOpt", "actor", "need_config", "open_kb",
           "pairs", "split_csv", "state"]

TenantOpt = Annotated[str, typer.Option("--tenant", help="Tenant of the caller.")]
GroupsOpt = Annotated[str, typer.Option("--groups", help="Comma-separated groups of the caller.")]
VisOpt = Annotated[
    str, typer.Option("--visibilities", help="Comma-separated visibilities the caller may read "
                      "(default: public only; add internal, confidential, restricted explicitly).")
]
ClaimOpt = Annotated[
    list[str] | None,
    typer.Option("--claim", help="A verified attribute of the caller, NAME=VALUE (repeatable), e.g. "
                                 "customer_id=C-1001: live tools take their actor parameters from it."),
]


class State:
    """The command line's settings from its callback (--db, --analyzer, --embedder, --config),
    read by every command; one object so the tools commands see what the main ones see."""

    db: str = "evidex.db"
    analyzer: str | None = None
    embedder: str | None = None
    config: Config | None = None
    config_path: str | None = None

    @property
    def cfg(self) -> Config:
        """The --config file's settings, or the built-in defaults when none was given."""
        return self.config or Config()


state = State()


def open_kb(create: bool = False) -> KnowledgeBase:
    """The store of --db with the command line's and the configuration's settings.

    Only commands that add documents (``create``) may create a missing SQLite file: a search
    or an answer from a mistyped --db would otherwise create an empty store and decline every
    question as if the collection lacked the answer."""
    if not create and not is_postgres_url(state.db) \
            and not Path(state.db.removeprefix("sqlite:///")).is_file():
        raise EvidexError(f"no store at {state.db} (evidex ingest creates one; or give --db)")
    r = state.cfg.retrieval
    return KnowledgeBase.open(state.db, analyzer=state.analyzer or r.analyzer,
                              embedder=state.embedder or r.embedder,
                              vector_timeout_ms=r.vector.timeout_ms, tools=state.cfg.tools)


def need_config() -> Config:
    """The --config file's settings, for commands that cannot run on defaults."""
    if state.config is None:
        raise EvidexError("this command reads the sources of a configuration: give --config FILE "
                          "(or set EVIDEX_CONFIG)")
    return state.config


def split_csv(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def pairs(values: list[str] | None, option: str) -> dict[str, str]:
    """``k=v`` option values as a mapping; a value without ``=`` or a repeated key is an error
    (``!r`` escapes control characters in the message)."""
    out: dict[str, str] = {}
    for item in values or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise EvidexError(f"{option} takes NAME=VALUE, got {item!r}")
        if key.strip() in out:
            raise EvidexError(f"{option} {key.strip()!r} is given twice")
        out[key.strip()] = value
    return out


def actor(tenant: str, groups: str, visibilities: str, claims: list[str] | None = None) -> Actor:
    named = frozenset(split_csv(groups))
    if not named:  # a caller in no group reads nothing: every search would come back empty
        raise EvidexError("--groups names no group: give the caller's groups, comma-separated")
    return Actor(tenant, named, visibilities=frozenset(split_csv(visibilities)),
                 claims=pairs(claims, "--claim"))
