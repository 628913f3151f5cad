"""Sending one message over one route: a signed JSON webhook or an e-mail through SMTP, and
the one retry policy every route is tried with.

A message is sent to every route it names independently: a route that fails is retried a few
times with a growing pause and then reported as failed (``Delivery.error``); it never stops the
other routes. Nothing here logs and forgets: the caller gets one ``Delivery`` per route tried.

Every webhook body is stamped inside what is signed: ``sent_at`` (UTC, the attempt's time) and
``delivery_id`` (random, new for every attempt), so a receiver can refuse a stale body and one
it has seen before; a captured delivery cannot be replayed. Connections go straight to the
configured host: proxy settings of the environment (``HTTP_PROXY``, ...) are never used, since
evidex's configuration names no proxy and a proxy nobody configured must not see the messages.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import smtplib
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.message import EmailMessage
from typing import Any

from ..model import NotifyError
from ._routes import Route, SmtpSettings

__all__ = ["DELIVERY_KEYS", "SIGNATURE_HEADER", "Delivery", "Message", "deliver", "send_webhook", "sign",
           "try_route"]

#: The webhook body's HMAC-SHA256 under the route's secret: ``sha256=<hex digest>``.
SIGNATURE_HEADER = "X-Evidex-Signature"
#: The keys every webhook body gets from the sender (inside the signed body).
DELIVERY_KEYS = ("sent_at", "delivery_id")
_USER_AGENT = "evidex-notify/0.1"


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


def _post(url: str, payload: Mapping[str, Any], secret: str | None, timeout: float) -> int:
    """One attempt: POST the stamped, signed body; the status, or ``NotifyError``."""
    import httpx  # loaded on first use: its import pulls in click and rich

    stamped = {**payload, "sent_at": datetime.now(UTC).isoformat(timespec="seconds"),
               "delivery_id": secrets.token_hex(16)}
    body = json.dumps(stamped, ensure_ascii=False, sort_keys=True).encode("utf-8")
    headers = {"Content-Type": "application/json", "User-Agent": _USER_AGENT}
    if secret is not None:
        headers[SIGNATURE_HEADER] = sign(secret, body)
    try:
        with httpx.Client(trust_env=False, follow_redirects=False, timeout=timeout) as client:
            resp = client.post(url, content=body, headers=headers)
    except httpx.HTTPError as exc:
        raise NotifyError(f"{type(exc).__name__}: {exc}") from None
    if not 200 <= resp.status_code < 300:
        raise NotifyError(f"HTTP {resp.status_code}")
    return resp.status_code


def send_webhook(url: str, payload: Mapping[str, Any], *, secret_env: str | None = None,
                 env: Mapping[str, str] | None = None, timeout: float = 10.0, attempts: int = 3,
                 pause: float = 0.5,
                 sleep: Callable[[float], None] = time.sleep) -> tuple[int, str | None, int]:
    """POST ``payload`` as JSON to ``url`` (signed with the secret in ``secret_env``), tried
    as every route is: (attempts made, the last error or None, the HTTP status of the attempt
    that went through or 0). A missing secret is an error of every attempt: never sent unsigned."""
    environ = os.environ if env is None else env
    status = [0]

    def send() -> None:
        secret = _env(secret_env, environ, "the webhook secret") if secret_env else None
        status[0] = _post(url, payload, secret, timeout)

    made, error = try_route(send, attempts, pause, sleep)
    return made, error, status[0]


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
        # smtplib opens a plain socket to the configured host: no proxy setting applies to it.
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
    out = []
    if route.email:
        d = Delivery(to, "email", route.email)
        d.attempts, d.error = try_route(lambda: _email(route, message, smtp, environ), attempts, pause,
                                        sleep)
        out.append(d)
    if route.webhook:
        d = Delivery(to, "webhook", route.webhook)
        d.attempts, d.error, _ = send_webhook(route.webhook, message.payload, secret_env=route.secret_env,
                                              env=environ, timeout=timeout, attempts=attempts,
                                              pause=pause, sleep=sleep)
        out.append(d)
    for d in out:
        d.ok = d.error is None
    return out
