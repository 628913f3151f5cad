"""The ``server:`` section of ``knowledge.config.yaml``: who may call the service, as what.

Identity is trusted configuration: each API key (stored only as its SHA-256) maps to one actor.
Nothing in a request body can name a tenant or a group, so these models are the only place an
identity is ever defined.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["ApiKey", "JwtSettings", "ServerSettings"]

_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ApiKey(_Strict):
    key_sha256: str = Field(description="SHA-256 hex digest of the key; the key itself is never stored")
    tenant: str = Field(min_length=1)
    groups: tuple[str, ...] = ()
    visibilities: tuple[str, ...] = ("public",)
    admin: bool = False
    name: str | None = Field(default=None, description="a label for logs; never the key")

    @field_validator("key_sha256")
    @classmethod
    def _hex(cls, value: str) -> str:
        value = value.strip().lower()
        if not _HEX64.match(value):
            raise ValueError("must be 64 hexadecimal characters (the SHA-256 of the key)")
        return value


class JwtSettings(_Strict):
    """Bearer JWTs verified against configured keys; claims map to tenant and groups."""

    issuer: str
    audience: str | None = None
    algorithms: tuple[str, ...] = ("RS256",)
    public_key: str | None = Field(default=None, description="PEM public key (RS*/ES* algorithms)")
    secret: str | None = Field(default=None, description="shared secret (HS* algorithms)")
    tenant_claim: str = "tenant"
    groups_claim: str = "groups"
    visibilities: tuple[str, ...] = ("public",)


class ServerSettings(_Strict):
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    api_keys: tuple[ApiKey, ...] = ()
    jwt: JwtSettings | None = None
    max_body_bytes: int = Field(default=64 * 1024, ge=1024)
    rate_limit_per_minute: int = Field(default=600, ge=1)
    allowed_link_hosts: tuple[str, ...] = ()
