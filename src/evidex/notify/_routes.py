"""Where evidex sends messages to people: a source owner's routes, the mail server, the
handoff route (the ``owner``, ``server.smtp`` and ``answer.handoff`` settings of
``knowledge.config.yaml``; ``config`` validates the file with these models, ``_send`` sends).

Secrets never sit in the file: a webhook's signing key and the mail server's credentials are
named by environment variable. ``check_url`` is the check every configured URL goes through
(a route's webhook, a source's pages), and ``resolve_path`` makes a configured path relative to
the configuration file.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, ValidationInfo, field_validator, model_validator

from ..yamlfile import StrictModel

__all__ = ["HandoffRoute", "Owner", "Route", "SmtpSettings", "check_url", "handoff_text", "owner_name",
           "owner_route", "resolve_path"]

#: scheme://host, then anything but whitespace and control characters (a URL is one token:
#: whitespace inside it was a mistake of the file, and parsers strip some of it silently).
_URL = re.compile(r"https?://[^\s/?#]+[^\s]*")


_Strict = StrictModel


def check_url(value: str) -> str:
    """An http(s) URL without whitespace or control characters anywhere (a line break at its
    end included: ``re``'s ``$`` would let one through)."""
    if any(ch.isspace() or not ch.isprintable() for ch in value):
        raise ValueError(f"must be a URL without spaces or control characters, got {value!r}")
    if not _URL.fullmatch(value):
        raise ValueError(f"must be an http:// or https:// URL, got {value!r}")
    return value


def resolve_path(value: str, info: ValidationInfo) -> str:
    """A path relative to the configuration file (the validation context's ``base``)."""
    base = (info.context or {}).get("base")
    p = Path(value).expanduser()
    return str(p if p.is_absolute() or base is None else (Path(base) / p))


_EMAIL = re.compile(r"^[^@\s<>,;]+@[^@\s<>,;]+\.[^@\s<>,;.]+$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def _email(value: str | None) -> str | None:
    if value is not None and not _EMAIL.match(value):
        raise ValueError(f"must be an e-mail address like name@example.com, got {value!r}")
    return value


def _env_name(value: str | None) -> str | None:
    if value is not None and not _ENV_NAME.match(value):
        raise ValueError(f"must name an environment variable (letters, digits, '_'), got {value!r}")
    return value


class Route(_Strict):
    """Where a message goes: an e-mail address (sent through ``server.smtp``) and/or a webhook
    (a JSON POST). Secrets never sit in the file: ``secret_env`` names the environment variable
    holding the key the webhook body is signed with (HMAC-SHA256, header
    ``X-Evidex-Signature: sha256=<hex>``)."""

    email: str | None = None
    webhook: str | None = None
    secret_env: str | None = None

    _mail = field_validator("email")(_email)
    _env = field_validator("secret_env")(_env_name)

    @field_validator("webhook")
    @classmethod
    def _hook(cls, value: str | None) -> str | None:
        return None if value is None else check_url(value)

    @property
    def reachable(self) -> bool:
        return self.email is not None or self.webhook is not None


class Owner(Route):
    """A source's content owner: told about its drift and its conflicts on their routes. A plain
    string in the file (``owner: docs@example.com``) only names the owner."""

    name: str = Field(min_length=1, max_length=200)


class HandoffRoute(Route):
    """``answer.handoff`` as a route: a declined answer offers ``message``, and a handoff the
    asker sends (``POST /v1/handoff``, the web page's button) goes to this route."""

    message: str = Field(default="Please contact a person on the support team.", min_length=1)
    #: Handoffs one API key may send per hour (a person reads each one).
    per_key_per_hour: int = Field(default=10, ge=1, le=10_000)

    @model_validator(mode="after")
    def _somewhere(self) -> HandoffRoute:
        if not self.reachable:
            raise ValueError("a handoff route needs an email, a webhook, or both")
        return self


class SmtpSettings(_Strict):
    """The mail server e-mail routes go through (stdlib ``smtplib``). Credentials come from the
    environment variables named here, never from the file."""

    host: str = Field(min_length=1)
    port: int = Field(default=587, ge=1, le=65535)
    starttls: bool = True
    sender: str
    username_env: str | None = None
    password_env: str | None = None
    #: A CA bundle (PEM) to trust for STARTTLS besides the system's, for a private mail server.
    ca_file: str | None = None
    timeout_seconds: float = Field(default=10.0, gt=0, le=120)

    @field_validator("ca_file")
    @classmethod
    def _ca(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else resolve_path(value, info)

    _mail = field_validator("sender")(_email)
    _env = field_validator("username_env", "password_env")(_env_name)


def owner_route(owner: str | Owner | None) -> Owner | None:
    """The owner as a route. A plain string only names the owner (no route: nobody is sent
    mail they were not configured to get)."""
    return owner if owner is None or isinstance(owner, Owner) else Owner(name=owner)


def owner_name(owner: str | Owner | None) -> str | None:
    return owner.name if isinstance(owner, Owner) else owner


def handoff_text(handoff: str | HandoffRoute | None) -> str | None:
    return handoff.message if isinstance(handoff, HandoffRoute) else handoff
