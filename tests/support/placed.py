"""Callers and documents of the placement tests (tests/placement): each tenant's documents are
readable by group ``g``, and each tenant's caller is in it."""

from __future__ import annotations

import uuid

from actors import PUBLIC_INTERNAL
from evidex import Actor, Document
from evidex.config import StoreConfig
from evidex.placement import Placement
from pgcluster import PgServer


def actor(tenant: str) -> Actor:
    return Actor(tenant, frozenset({"g"}), visibilities=PUBLIC_INTERNAL)


def tenant_doc(tenant: str, i: int, version: str = "1", text: str = "") -> Document:
    return Document(f"d{i}", tenant, frozenset({"g"}), version,
                    text or f"alpha beta {tenant} number {i}\n\ngamma delta part {i % 7} of {tenant}")


def placement_of(default: str, **tenants: str) -> Placement:
    return Placement.of(StoreConfig.model_validate({"default": default, "tenants": tenants}), None)


def fresh_schemas(two: tuple[PgServer, PgServer]) -> tuple[str, str]:
    """A fresh schema on each server."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    return two[0].url(schema), two[1].url(schema)
