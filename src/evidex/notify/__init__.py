"""Telling people: where messages go (the routes of the configuration), how they are sent
(a signed JSON webhook, e-mail through SMTP), the one retry policy, and the handoff message.

Two routes, each optional per recipient: a webhook (a JSON POST whose body carries its send
time and a unique delivery id and is signed with HMAC-SHA256 under a secret from the
environment, header ``X-Evidex-Signature: sha256=<hex>``) and e-mail through the configured SMTP
server (``server.smtp``; STARTTLS and credentials from the environment). Failing routes are
retried, then reported; one never blocks another. What an owner is told after a drift check is
gathered by ``sources`` (it knows the drift reports and the sources' owners) and sent here.
"""

from ._handoff import Handoff, clean_text, handoff_message, send_handoff
from ._routes import (
    HandoffRoute,
    Owner,
    Route,
    SmtpSettings,
    check_url,
    handoff_text,
    owner_name,
    owner_route,
    resolve_path,
)
from ._send import DELIVERY_KEYS, SIGNATURE_HEADER, Delivery, Message, deliver, send_webhook, sign, try_route

__all__ = [
    "DELIVERY_KEYS",
    "SIGNATURE_HEADER",
    "Delivery",
    "Handoff",
    "HandoffRoute",
    "Message",
    "Owner",
    "Route",
    "SmtpSettings",
    "check_url",
    "clean_text",
    "deliver",
    "handoff_message",
    "handoff_text",
    "owner_name",
    "owner_route",
    "resolve_path",
    "send_handoff",
    "send_webhook",
    "sign",
    "try_route",
]
