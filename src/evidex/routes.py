"""Where evidex sends messages to people: a source owner's routes, the mail server, the
handoff route (the ``owner``, ``server.smtp`` and ``answer.handoff`` settings of
``knowledge.config.yaml``; ``config`` validates the file with these models, ``notify`` sends).

Secrets never sit in the file: a webhook's signing key and the mail server's credentials are
named by environment variable. Also the checks every configured location goes through
(``check_url``, ``resolve_path``, and for a source's include/exclude globs ``file_globs`` and
``url_path_globs``), so a route's webhook and a source's URL are checked alike; and how every
route is tried (``try_route``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import Field, ValidationInfo, field_validator, model_validator

from .model import NotifyError
from .yamlfile import StrictModel

__all__ = ["HandoffRoute", "Owner", "Route", "SmtpSettings", "check_url", "file_globs", "handoff_text",
           "owner_name", "owner_route", "resolve_path", "try_route", "url_path_globs"]

_URL = re.compile(r"^https?://[^\s/?#]+[^\s]*$")


def try_route(send: Callable[[], None], attempts: int = 3, pause: float = 0.5,
              sleep: Callable[[float], None] = time.sleep) -> tuple[int, str | None]:
    """Call ``send`` until it does not raise ``NotifyError``, up to ``attempts`` times, pausing
    ``pause``, 2x``pause``, ... in between. Every route (an owner's, a handoff's, the drift
    webhook) is tried alike, so a receiver restarting loses nothing. Returns (the attempts made,
    the last error, or None once one went through)."""
    error = None
    for n in range(1, max(1, attempts) + 1):
        try:
            send()
            return n, None
        except NotifyError as exc:
            error = str(exc)
            if n < attempts:
                sleep(pause * 2 ** (n - 1))
    return max(1, attempts), error


_Strict = StrictModel


def check_url(value: str) -> str:
    if not _URL.match(value):
        raise ValueError(f"must be an http:// or https:// URL, got {value!r}")
    return value


def resolve_path(value: str, info: ValidationInfo) -> str:
    """A path relative to the configuration file (the validation context's ``base``)."""
    base = (info.context or {}).get("base")
    p = Path(value).expanduser()
    return str(p if p.is_absolute() or base is None else (Path(base) / p))


def file_globs(patterns: tuple[str, ...]) -> tuple[str, ...]:
    """Globs over paths relative to a source's folder: one with a leading "/" can never match,
    and an exclude that silently excludes nothing indexes what it was meant to keep out."""
    for p in patterns:
        if p.startswith("/"):
            raise ValueError(f"{p!r} never matches: patterns are relative to path (write {p.lstrip('/')!r})")
    return patterns


def url_path_globs(patterns: tuple[str, ...]) -> tuple[str, ...]:
    """Globs over URL paths, which start with "/": a pattern with a "/" that starts otherwise
    (not "/", "*" or a class) can never match, and an include matching nothing empties the source."""
    for p in patterns:
        if "/" in p and p[0] not in "/*[":
            raise ValueError(f"{p!r} never matches: URL paths start with '/' (write {'/' + p!r})")
    return patterns


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
