"""Who is calling: bearer credentials -> :class:`Principal`, from trusted configuration only.

The HTTP app, the web page (which sends the key the user typed) and the MCP server all go
through :class:`Authenticator`, so there is one identity model. An actor is never built from a
request body, a query string or a tool argument: only from a configured API key (matched by the
SHA-256 of what was presented) or from the verified claims of a JWT signed by a configured key.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ..config import ApiKey, JwtSettings, ServerSettings
from ..model import Actor, EvidexError

__all__ = ["Authenticator", "Principal", "RateLimiter", "key_sha256"]

#: Longer bearer values are refused unread: no key or token of ours comes near it.
MAX_CREDENTIAL_CHARS = 8192


def key_sha256(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Principal:
    actor: Actor
    admin: bool
    #: Names the caller in logs and rate limits: the key's configured name or the first 8 hex
    #: digits of its hash, or the token subject's hash; never the credential itself.
    label: str


class Authenticator:
    def __init__(self, settings: ServerSettings) -> None:
        self._keys: dict[str, Principal] = {k.key_sha256: self._key_principal(k) for k in settings.api_keys}
        self._jwt = settings.jwt
        self._jwt_key: Any = None
        if self._jwt is not None:
            self._jwt_key = self._jwt.secret if self._jwt.secret else self._load_public_key(self._jwt)

    @property
    def configured(self) -> bool:
        return bool(self._keys) or self._jwt is not None

    @staticmethod
    def _key_principal(k: ApiKey) -> Principal:
        actor = Actor(k.tenant, frozenset(k.groups), visibilities=frozenset(k.visibilities),
                      claims=k.claims)
        return Principal(actor, k.admin, f"key:{k.name or k.key_sha256[:8]}")

    @staticmethod
    def _load_public_key(st: JwtSettings) -> Any:
        from cryptography.hazmat.primitives.serialization import load_pem_public_key

        try:
            return load_pem_public_key(str(st.public_key).encode("ascii"))
        except (ValueError, TypeError, UnicodeEncodeError) as exc:
            raise EvidexError(f"server.jwt.public_key is not a PEM public key: {exc}") from None

    def from_header(self, value: str | None) -> Principal | None:
        """The principal for an ``Authorization`` header value, or None (-> 401)."""
        if not value:
            return None
        scheme, _, token = value.partition(" ")
        if scheme.lower() != "bearer":
            return None
        return self.from_credential(token.strip())

    def from_credential(self, token: str) -> Principal | None:
        if not token or len(token) > MAX_CREDENTIAL_CHARS:
            return None
        found = self._keys.get(key_sha256(token))
        if found is not None:
            return found
        if self._jwt is not None and token.count(".") == 2:
            return self._from_jwt(token, self._jwt)
        return None

    def _from_jwt(self, token: str, st: JwtSettings) -> Principal | None:
        import jwt

        required = ["exp", "iss"] + (["aud"] if st.audience else [])
        try:
            claims = jwt.decode(token, self._jwt_key, algorithms=list(st.algorithms), issuer=st.issuer,
                                audience=st.audience, leeway=st.leeway_seconds,
                                options={"require": required})
        except jwt.PyJWTError:
            return None
        tenant, groups = claims.get(st.tenant_claim), claims.get(st.groups_claim, [])
        if not isinstance(tenant, str) or not isinstance(groups, list) or \
                not all(isinstance(g, str) for g in groups):
            return None
        try:
            actor = Actor(tenant, frozenset(groups), visibilities=frozenset(st.visibilities),
                          claims=_token_claims(claims, st))
        except EvidexError:
            return None
        subject = str(claims.get("sub", ""))
        admin = st.admin_group is not None and st.admin_group in actor.groups
        return Principal(actor, admin, f"jwt:{key_sha256(tenant + '/' + subject)[:8]}")


def _token_claims(token: dict[str, Any], st: JwtSettings) -> dict[str, str]:
    """The actor claims a verified token carries (``jwt.claims``: actor claim -> token claim);
    a string or integer value is taken, anything else (nothing, a list, an unprintable value)
    leaves the claim out, so a tool that needs it is not called."""
    out = {}
    for name, source in st.claims.items():
        value = token.get(source)
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if isinstance(value, str) and value and value.strip() == value and len(value) <= 256 \
                and value.isprintable():
            out[name] = value
    return out


class RateLimiter:
    """Token buckets per label (a principal, or a client address for failed credential checks),
    each holding one minute's worth of requests.

    In-process state: with N worker processes each keeps its own buckets, so a key can make up
    to N times the configured rate. Used from the event loop thread only (no lock needed).
    """

    MAX_BUCKETS = 10_000

    def __init__(self, per_minute: int) -> None:
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def waiting(self, label: str, now: float | None = None) -> float:
        """Seconds until ``label`` has a whole token again (0: it has one); takes nothing."""
        now = time.monotonic() if now is None else now
        if label not in self._buckets:
            return 0.0
        tokens, last = self._buckets[label]
        tokens = min(self.capacity, tokens + (now - last) * self.rate)
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate

    def take(self, label: str, now: float | None = None) -> float:
        """0 when a request may go ahead, else the seconds until one may."""
        now = time.monotonic() if now is None else now
        tokens, last = self._buckets.pop(label, (self.capacity, now))
        tokens = min(self.capacity, tokens + (now - last) * self.rate)
        wait = 0.0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = (1.0 - tokens) / self.rate
        self._buckets[label] = (tokens, now)
        while len(self._buckets) > self.MAX_BUCKETS:
            self._buckets.popitem(last=False)  # least recently seen
        return wait
