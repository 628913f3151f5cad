"""The command line's settings and the caller it acts for.

``state`` holds what the global options set (--db, --replica, --analyzer, --embedder, --config),
read by every command; ``open_kb`` opens the store they name: the configuration's ``store:``
placement when it has one (tenants on several servers, replicas), else --db with its --replica
servers. Every command has one read session (``state.session``, made by the callback), which
it hands to every store call it makes: its reads include its own writes and, when run as
``evidex`` (``main``), for a few seconds those of the commands before it (remembered in the
cache folder, ``command_session``), on whichever server answers.

The caller of a search, an answer or a resolve (``caller``) comes, in this order, from ``--as
NAME`` (a caller the configuration names in ``server.api_keys``: its tenant, groups,
visibilities and claims), else from ``--tenant``, ``--groups`` and ``--visibilities``, each of
which defaults to ``$EVIDEX_TENANT``, ``$EVIDEX_GROUPS`` and ``$EVIDEX_VISIBILITIES``. A
caller is never guessed: with none of these the command stops with a usage error. The local
operator running the command is trusted to say whom it acts for, as with ``--claim``.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

from ..config import ApiKey, Config
from ..embed import default_cache_path
from ..knowledge import Knowledge
from ..model import Actor, EvidexError
from ..placement import Placement, open_configured
from ..store import ReadSession, RecentWrites
from ._output import UsageError

__all__ = ["AsOpt", "ClaimOpt", "GroupsOpt", "State", "TenantOpt", "VisOpt", "caller", "command_session",
           "need_config", "open_kb", "pairs", "placement", "server_note", "split_csv", "state", "tenant_of"]

TENANT_ENV, GROUPS_ENV, VISIBILITIES_ENV = "EVIDEX_TENANT", "EVIDEX_GROUPS", "EVIDEX_VISIBILITIES"

TenantOpt = Annotated[str | None, typer.Option(
    "--tenant", help=f"Tenant of the caller (default: ${TENANT_ENV}).")]
GroupsOpt = Annotated[str | None, typer.Option(
    "--groups", help=f"Comma-separated groups of the caller (default: ${GROUPS_ENV}).")]
VisOpt = Annotated[str | None, typer.Option(
    "--visibilities", help="Comma-separated visibilities the caller may read (default: "
    f"public only, or ${VISIBILITIES_ENV}; add internal, confidential, restricted explicitly).")]
AsOpt = Annotated[str | None, typer.Option(
    "--as", help="Act as this caller of the configuration's server.api_keys (by its name, e.g. "
    "demo-customer): its tenant, groups, visibilities and claims.")]
ClaimOpt = Annotated[
    list[str] | None,
    typer.Option("--claim", help="A verified attribute of the caller, NAME=VALUE (repeatable), e.g. "
                                 "customer_id=C-1001: live tools take their actor parameters from it."),
]


class State:
    """The command line's settings from its callback (--db, --analyzer, --embedder, --config),
    read by every command; one object so the tools commands see what the main ones see."""

    db: str = "evidex.db"
    #: Whether --db (or $EVIDEX_DB) named the store, rather than the default file.
    db_given: bool = False
    replicas: tuple[str, ...] = ()
    analyzer: str | None = None
    embedder: str | None = None
    config: Config | None = None
    config_path: str | None = None
    #: The command's read session, handed to every store call (see the module docstring).
    session: ReadSession = ReadSession()
    #: Whether the session remembers writes across commands (``main`` sets it; a test calling
    #: the app in-process reads its own writes only).
    remembering: bool = False

    @property
    def cfg(self) -> Config:
        """The --config file's settings, or the built-in defaults when none was given."""
        return self.config or Config()


state = State()


def placement() -> Placement:
    """Where the stores are: the configuration's ``store:`` section, with --db (and --replica)
    as its default location when the section names none."""
    try:
        return Placement.of(state.cfg.store, state.db if state.db_given else None, state.replicas)
    except EvidexError as exc:
        raise UsageError(str(exc)) from None


def open_kb(create: bool = False) -> Knowledge:
    """The stores the command line and the configuration name (``placement``), with their
    settings.

    Only commands that add documents (``create``) may create a missing SQLite file: a search
    or an answer from a mistyped --db would otherwise create an empty store and decline every
    question as if the collection lacked the answer."""
    return open_configured(state.cfg, placement(), create=create, analyzer=state.analyzer,
                           embedder=state.embedder)


def server_note(kb: Knowledge, tenant: str) -> str | None:
    """``server: LOCATION`` for a command that touched ``tenant``'s data, when the stores span
    more than one server (several placements, or replicas); None for one plain store."""
    if len(kb.servers()) < 2:
        return None
    return f"server: {kb.server_of(tenant)}"


def command_session() -> tuple[RecentWrites, str]:
    """What the read session of one command remembers writes in, and as which caller (see the
    module docstring)."""
    store = state.cfg.store
    seconds = store.remember_writes_s if store is not None else 12.0
    folder = default_cache_path().parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        memory = RecentWrites(seconds, folder / "recent-writes.sqlite")
    except OSError:  # no writable cache folder: the command still reads its own writes
        memory = RecentWrites(seconds)
    return memory, "evidex"


def need_config() -> Config:
    """The --config file's settings, for commands that cannot run on defaults."""
    if state.config is None:
        raise UsageError("this command reads the sources of a configuration: give --config FILE "
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
            raise UsageError(f"{option} takes NAME=VALUE, got {item!r}")
        if key.strip() in out:
            raise UsageError(f"{option} {key.strip()!r} is given twice")
        out[key.strip()] = value
    return out


def caller(tenant: str | None, groups: str | None, visibilities: str | None, as_name: str | None,
           claims: list[str] | None = None) -> Actor:
    """The caller the options name (see the module docstring); ``claims`` are ``--claim`` values,
    which add to (and override) a configured caller's claims."""
    extra = pairs(claims, "--claim")
    if as_name is not None:
        if tenant is not None or groups is not None or visibilities is not None:
            raise UsageError("--as names the whole caller: leave out --tenant, --groups and --visibilities")
        key = _configured(as_name)
        return _actor(key.tenant, ",".join(key.groups), ",".join(key.visibilities), {**key.claims, **extra},
                      f"--as {as_name!r} has no groups in the configuration: it could read nothing")
    tenant = tenant if tenant is not None else os.environ.get(TENANT_ENV)
    groups = groups if groups is not None else os.environ.get(GROUPS_ENV)
    if not tenant and not groups:
        raise UsageError(f"no caller: give --tenant and --groups (or set ${TENANT_ENV} and ${GROUPS_ENV}), "
                         "or --as NAME, a caller of the configuration's server.api_keys")
    if not tenant:
        raise UsageError(f"no tenant for the caller: give --tenant (or set ${TENANT_ENV})")
    if groups is None:
        raise UsageError(f"no groups for the caller: give --groups (or set ${GROUPS_ENV})")
    if visibilities is None:
        visibilities = os.environ.get(VISIBILITIES_ENV) or "public"
    return _actor(tenant, groups, visibilities, extra,
                  "--groups names no group: give the caller's groups, comma-separated")


def tenant_of(tenant: str | None, as_name: str | None) -> str:
    """The tenant a command acts in: ``--tenant``, else ``--as``'s, else ``$EVIDEX_TENANT``."""
    if as_name is not None:
        if tenant is not None:
            raise UsageError("--as names the caller's tenant: leave out --tenant")
        return _configured(as_name).tenant
    chosen = tenant if tenant is not None else os.environ.get(TENANT_ENV)
    if not chosen:
        raise UsageError(f"no tenant: give --tenant (or set ${TENANT_ENV}), or --as NAME")
    return chosen


def _configured(name: str) -> ApiKey:
    if state.config is None:
        raise UsageError("--as NAME is a caller of a configuration's server.api_keys: give --config FILE "
                         "(or set EVIDEX_CONFIG)")
    keys = state.config.server.api_keys if state.config.server else ()
    for key in keys:
        if key.name == name:
            return key
    names = ", ".join(k.name for k in keys if k.name) or "none (give the keys a name:)"
    raise UsageError(f"--as {name!r} is no caller of {state.config_path}; server.api_keys names: {names}")


def _actor(tenant: str, groups: str, visibilities: str, claims: dict[str, str], no_group: str) -> Actor:
    named = frozenset(split_csv(groups))
    if not named:  # a caller in no group reads nothing: every search would come back empty
        raise UsageError(no_group)
    return Actor(tenant, named, visibilities=frozenset(split_csv(visibilities)), claims=claims)
