"""Where each tenant's store is (``Placement``), and opening one location as a ``KnowledgeBase``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..config import StoreConfig, StoreLocation
from ..kb import KnowledgeBase
from ..model import EvidexError


@dataclass(frozen=True)
class Placement:
    """Where each tenant's store is: ``default`` unless ``tenants`` names another."""

    default: StoreLocation
    tenants: Mapping[str, StoreLocation] = field(default_factory=dict)
    #: The ``store:`` section's replica settings (lags, waits, timeouts); None: the defaults.
    store: StoreConfig | None = None

    @classmethod
    def of(cls, store: StoreConfig | None, db: str | None, replicas: Sequence[str] = (),
           fallback: str = "evidex.db") -> Placement:
        """The configuration's placement, with ``db`` (and its ``replicas``) as the default
        location when the configuration names none, else ``fallback``. Naming it both ways is
        an error: which one would be meant?"""
        default = store.default if store is not None else None
        if default is None:
            default = StoreLocation.model_construct(url=db or fallback, replicas=tuple(replicas))
        elif db or replicas:
            raise EvidexError("the configuration's store.default names the store: leave out --db, "
                              "$EVIDEX_DB and --replica")
        return cls(default, dict(store.tenants) if store is not None else {}, store)

    def location(self, tenant: str) -> StoreLocation:
        return self.tenants.get(tenant, self.default)

    def locations(self) -> list[StoreLocation]:
        """Every distinct location, the default first."""
        out = [self.default]
        for loc in self.tenants.values():
            if location_key(loc) not in {location_key(x) for x in out}:
                out.append(loc)
        return out


def location_key(loc: StoreLocation) -> tuple[str, tuple[str, ...]]:
    """What makes two locations the same servers: the primary and its replicas."""
    return loc.url, tuple(loc.replicas)


def replica_settings(store: StoreConfig | None) -> Any:
    """The store layer's ``ReplicaSettings`` from the ``store:`` section (imported only when a
    location has replicas: it needs the PostgreSQL driver)."""
    from ..store import ReplicaSettings

    if store is None:
        return ReplicaSettings()
    return ReplicaSettings(max_lag_s=store.max_lag_s, max_lag_generations=store.max_lag_generations,
                           wait_s=store.replica_wait_ms / 1000, timeout_s=store.failover_timeout_s)


def open_location(location: StoreLocation, store: StoreConfig | None, **settings: Any) -> KnowledgeBase:
    """A ``KnowledgeBase`` on one location (``settings`` as for ``KnowledgeBase.open``)."""
    if location.replicas:
        settings = {**settings, "replicas": location.replicas, "replica_settings": replica_settings(store)}
    return KnowledgeBase.open(location.url, **settings)
