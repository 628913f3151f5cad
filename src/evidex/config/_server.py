"""The ``server:`` section: who may call the service, as what (API keys and JWTs map to
actors; nothing in a request names a tenant or a group)."""

from __future__ import annotations

import ipaddress
import re

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from .. import tools as _tools
from ..model import VISIBILITIES
from ..notify import SmtpSettings
from ._common import (
    HEX64,
    Strict,
)

# -- the server: section ----------------------------------------------------------------------

def _visibilities(values: tuple[str, ...]) -> tuple[str, ...]:
    unknown = sorted(set(values) - VISIBILITIES)
    if unknown:
        raise ValueError(f"unknown visibilities {unknown}; known: {sorted(VISIBILITIES)}")
    return values


class ApiKey(Strict):
    key_sha256: str = Field(description="SHA-256 hex digest of the key; the key itself is never stored")
    tenant: str = Field(min_length=1)
    groups: tuple[str, ...] = ()
    visibilities: tuple[str, ...] = ("public",)
    admin: bool = False
    name: str | None = Field(default=None, description="a label for logs; never the key")
    claims: dict[str, str] = Field(
        default_factory=dict, description="verified attributes of this key's caller (e.g. "
                                          "customer_id), which live tools take parameters from")

    _claims = field_validator("claims")(_tools.check_claim_names)

    @field_validator("key_sha256")
    @classmethod
    def _hex(cls, value: str) -> str:
        value = value.strip().lower()
        if not HEX64.match(value):
            raise ValueError("must be 64 hexadecimal characters (the SHA-256 of the key)")
        return value

    @field_validator("visibilities")
    @classmethod
    def _known(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _visibilities(value)


class JwtSettings(Strict):
    """Bearer JWTs verified against configured keys; claims map to tenant and groups."""

    issuer: str
    audience: str | None = None
    algorithms: tuple[str, ...] = ("RS256",)
    public_key: str | None = Field(default=None, description="PEM public key (RS*/ES* algorithms)")
    secret: str | None = Field(default=None, description="shared secret (HS* algorithms)")
    tenant_claim: str = "tenant"
    groups_claim: str = "groups"
    visibilities: tuple[str, ...] = ("public",)
    admin_group: str | None = Field(
        default=None, description="tokens whose groups claim holds this group may run admin operations")
    leeway_seconds: int = Field(default=30, ge=0, le=300)
    claims: dict[str, str] = Field(
        default_factory=dict, description="actor claim -> token claim: verified attributes "
                                          "taken from the token (e.g. customer_id: sub)")

    _claims = field_validator("claims")(_tools.check_claim_names)

    @field_validator("visibilities")
    @classmethod
    def _known(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _visibilities(value)

    @model_validator(mode="after")
    def _keys_match_algorithms(self) -> JwtSettings:
        # A token's own header must never pick how it is checked: "none" is refused, and the
        # key material must fit every listed algorithm, so an RS256 public key can never be
        # used as an HS256 secret (the classic algorithm-confusion forgery).
        if not self.algorithms:
            raise ValueError("algorithms must not be empty")
        hs = [a for a in self.algorithms if a.upper().startswith("HS")]
        if any(a.lower() == "none" for a in self.algorithms):
            raise ValueError("the 'none' algorithm is never accepted")
        if hs and len(hs) != len(self.algorithms):
            raise ValueError("do not mix HS* (shared secret) and public-key algorithms")
        if hs and not self.secret:
            raise ValueError("HS* algorithms need a secret")
        if not hs and not self.public_key:
            raise ValueError("public-key algorithms need public_key (PEM)")
        return self


class ServerSettings(Strict):
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    api_keys: tuple[ApiKey, ...] = ()
    jwt: JwtSettings | None = None
    max_body_bytes: int = Field(default=64 * 1024, ge=1024)
    rate_limit_per_minute: int = Field(
        default=600, ge=1,
        description="requests per minute per key (a token bucket holding one minute's worth); "
                    "kept in process memory, so with N workers a key may make up to N times this")
    failed_auth_per_minute: int = Field(
        default=30, ge=1,
        description="failed credential checks per minute per client address; past it, every "
                    "/v1 request from that address gets 429 before its credentials are checked "
                    "(a guess must not be answered), until the bucket refills. Per worker process")
    allowed_link_hosts: tuple[str, ...] = Field(
        default=(), description="hosts whose http(s) source links the web page shows as links")
    store_handles: int = Field(
        default=2, ge=1, le=64,
        description="open store handles per worker process; requests beyond this wait for one")
    smtp: SmtpSettings | None = None
    tool_hosts: tuple[str, ...] = Field(
        default=(), description="origins (scheme://host[:port]) live tools may call; nothing else")
    _tool_hosts = field_validator("tool_hosts")(_tools.check_origins)
    metrics: bool = Field(
        default=True, description="serve GET /metrics (Prometheus text format) to admin keys, each "
                                  "its own tenant's series; false: 404 and nothing is counted")
    trusted_proxies: tuple[str, ...] = Field(
        default=(),
        description="addresses or networks (CIDR) of the reverse proxies in front of the service. "
                    "Only a connection from one of them may name the client with X-Forwarded-For "
                    "(and the scheme with X-Forwarded-Proto); empty (the default): those headers "
                    "are ignored and every per-address limit keys on the connecting address")

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for v in values:
            try:
                ipaddress.ip_network(v, strict=False)
            except ValueError:
                raise ValueError(f"{v!r} is not an IP address or network (e.g. 10.0.0.5, "
                                 "10.0.0.0/24); list each proxy, never '*'") from None
        return values

    @field_validator("api_keys")
    @classmethod
    def _unique(cls, keys: tuple[ApiKey, ...]) -> tuple[ApiKey, ...]:
        seen: set[str] = set()
        for i, k in enumerate(keys):
            if k.key_sha256 in seen:
                raise ValueError(f"api key {i} repeats the key_sha256 of an earlier key")
            seen.add(k.key_sha256)
        return keys

    @field_validator("allowed_link_hosts")
    @classmethod
    def _hosts(cls, hosts: tuple[str, ...]) -> tuple[str, ...]:
        for h in hosts:
            if not re.fullmatch(r"[a-z0-9.-]{1,253}(:[0-9]{1,5})?", h):
                raise ValueError(f"{h!r} is not a lower-case host name (no scheme, no path)")
        return hosts


