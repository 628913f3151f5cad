"""The ``store:`` section: one location, or tenants placed on several (each a PostgreSQL
primary with its read replicas, or a SQLite file)."""

from __future__ import annotations

from typing import Annotated

from pydantic import (
    BeforeValidator,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..notify import resolve_path
from ..store import is_postgres_url
from ._common import (
    Strict,
)


def _location(value: object) -> object:
    """``acme: URL`` is short for ``acme: {url: URL}``."""
    return {"url": value} if isinstance(value, str) else value


class StoreLocation(Strict):
    """One store: a PostgreSQL URL (with its streaming read replicas) or a SQLite file."""

    url: str = Field(description="postgresql://... (or a SQLite file, relative to this file)")
    replicas: tuple[str, ...] = Field(
        default=(), description="postgresql:// URLs of streaming replicas of url's server: reads go "
                                "to them, writes to url")

    @field_validator("url")
    @classmethod
    def _url(cls, value: str, info: ValidationInfo) -> str:
        if not value.strip():
            raise ValueError("must name a store: a postgresql:// URL or a SQLite file")
        if is_postgres_url(value) or value.startswith("sqlite:///"):
            return value
        return resolve_path(value, info)

    @model_validator(mode="after")
    def _replicas(self) -> StoreLocation:
        for r in self.replicas:
            if not is_postgres_url(r):
                raise ValueError(f"replica {r!r} is not a postgresql:// URL (replicas are PostgreSQL "
                                 "standbys)")
        if self.replicas and not is_postgres_url(self.url):
            raise ValueError("replicas need a PostgreSQL primary: url is not a postgresql:// URL")
        if len(set(self.replicas)) != len(self.replicas) or self.url in self.replicas:
            raise ValueError("url and each replica must be different servers")
        return self


Location = Annotated[StoreLocation, BeforeValidator(_location)]


class StoreConfig(Strict):
    """Where the store lives: one location, or tenants placed on several (each with replicas)."""

    default: Location | None = Field(
        default=None, description="the store of every tenant not in tenants (the command line's --db "
                                  "when absent)")
    tenants: dict[str, Location] = Field(
        default_factory=dict, description="tenant -> its own store; a tenant's data, statistics, records "
                                          "and citations live there only (evidex move-tenant moves one)")
    max_lag_s: float = Field(default=10.0, gt=0, description="a replica further behind its primary is "
                                                               "skipped until it catches up")
    max_lag_generations: int | None = Field(
        default=None, ge=1, description="... or further behind than this many store generations")
    replica_wait_ms: int = Field(
        default=1000, ge=0, le=60_000,
        description="how long a read that must see a write waits for a replica that has replayed it "
                    "before the primary answers it")
    failover_timeout_s: float = Field(
        default=4.0, gt=0, le=60, description="a primary that does not answer within this fails a write "
                                              "with one error (reads go on from the replicas)")
    read_your_writes_s: float | None = Field(
        default=None, gt=0,
        description="for this long after a caller's write (an API key's, an evidex command's), its reads "
                    "wait for a server that has it; default max_lag_s + 2")

    @field_validator("tenants")
    @classmethod
    def _tenant_names(cls, value: dict[str, StoreLocation]) -> dict[str, StoreLocation]:
        for name in value:
            if not name.strip() or any(ord(ch) < 32 for ch in name):
                raise ValueError(f"tenant name {name!r} is empty or holds control characters")
        return value

    @property
    def remember_writes_s(self) -> float:
        """How long a caller's reads must include its last write: past ``max_lag_s`` (and two
        probes' worth of margin), every replica that serves at all has replayed it anyway."""
        return self.read_your_writes_s if self.read_your_writes_s is not None else self.max_lag_s + 2.0


