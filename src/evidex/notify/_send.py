"""Sending one message over one route: a signed JSON webhook or an e-mail through SMTP.

A message is sent to every route it names independently: a route that fails is retried a few
times with a growing pause and then reported as failed (``Delivery.error``); it never stops the
other routes. Nothing here logs and forgets: the caller gets one ``Delivery`` per route tried.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import smtplib
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

import httpx

from ..model import NotifyError
from ..routes import Route, SmtpSettings, try_route

__all__ = ["SIGNATURE_HEADER", "Delivery", "Message", "deliver", "sign"]

#: The webhook body's HMAC-SHA256 under the route's secret: ``sha256=<hex digest>``.
SIGNATURE_HEADER = "X-Evidex-Signature"
_USER_AGENT = "evidex-notify/0.1"


@dataclass(frozen=True)
class Message:
    """One message: ``payload`` is the webhook's JSON body, ``subject``/``text`` the e-mail."""

    subject: str
    text: str
    payload: Mapping[str, Any]


@dataclass
class Delivery:
    """What happened on one route: ``ok`` after ``attempts`` tries, else the last ``error``."""

    to: str
    route: str  # "email" or "webhook"
    target: str
    ok: bool = False
    attempts: int = 0
    error: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"to": self.to, "route": self.route, "target": self.target, "ok": self.ok,
                "attempts": self.attempts, "error": self.error, **self.detail}


def sign(secret: str, body: bytes) -> str:
    """The signature header's value: what a receiver recomputes over the raw body."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def _env(name: str, env: Mapping[str, str], what: str) -> str:
    value = env.get(name)
    if not value:
        raise NotifyError(f"the environment variable {name} ({what}) is not set")
    return value


def _webhook(route: Route, message: Message, env: Mapping[str, str], timeout: float) -> None:
    body = json.dumps(message.payload, ensure_ascii=False, sort_keys=True).encode("utf-8")
    headers = {"Content-Type": "application/json", "User-Agent": _USER_AGENT}
    if route.secret_env:
        headers[SIGNATURE_HEADER] = sign(_env(route.secret_env, env, "the webhook secret"), body)
    assert route.webhook is not None
    try:
        resp = httpx.post(route.webhook, content=body, headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        raise NotifyError(f"{type(exc).__name__}: {exc}") from None
    if not 200 <= resp.status_code < 300:
        raise NotifyError(f"HTTP {resp.status_code}")


def _email(route: Route, message: Message, smtp: SmtpSettings | None, env: Mapping[str, str]) -> None:
    if smtp is None:
        raise NotifyError("no mail server configured (server.smtp)")
    assert route.email is not None
    mail = EmailMessage()
    try:
        mail["From"], mail["To"], mail["Subject"] = smtp.sender, route.email, message.subject
    except ValueError as exc:  # a header with a line break: this route fails, the others go
        raise NotifyError(f"the e-mail cannot be built: {exc}") from None
    mail["User-Agent"] = _USER_AGENT
    mail.set_content(message.text)
    try:
        with smtplib.SMTP(smtp.host, smtp.port, timeout=smtp.timeout_seconds) as s:
            if smtp.starttls:
                ctx = ssl.create_default_context(cafile=smtp.ca_file)
                s.starttls(context=ctx)
            if smtp.username_env:
                password = _env(smtp.password_env, env, "the SMTP password") if smtp.password_env else ""
                s.login(_env(smtp.username_env, env, "the SMTP user"), password)
            s.send_message(mail)
    except (smtplib.SMTPException, OSError, ssl.SSLError) as exc:
        raise NotifyError(f"{type(exc).__name__}: {exc}") from None


def deliver(to: str, route: Route, message: Message, *, smtp: SmtpSettings | None,
            env: Mapping[str, str] | None = None, attempts: int = 3, pause: float = 0.5,
            timeout: float = 10.0, sleep: Callable[[float], None] = time.sleep) -> list[Delivery]:
    """Send ``message`` to each of ``route``'s targets (e-mail, webhook), each tried up to
    ``attempts`` times with pauses of ``pause``, 2x``pause``, ...; one ``Delivery`` per target."""
    environ = os.environ if env is None else env
    jobs: list[tuple[str, str, Callable[[], None]]] = []
    if route.email:
        jobs.append(("email", route.email, lambda: _email(route, message, smtp, environ)))
    if route.webhook:
        jobs.append(("webhook", route.webhook, lambda: _webhook(route, message, environ, timeout)))
    out = []
    for kind, target, send in jobs:
        d = Delivery(to, kind, target)
        d.attempts, d.error = try_route(send, attempts, pause, sleep)
        d.ok = d.error is None
        out.append(d)
    return out
