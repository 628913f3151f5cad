"""Telling people: source owners about drift and conflicts, a support person about a handoff.

Two routes, each optional per recipient: a webhook (a JSON POST whose body is signed with
HMAC-SHA256 under a secret from the environment, header ``X-Evidex-Signature: sha256=<hex>``) and
e-mail through the configured SMTP server (``server.smtp``; STARTTLS and credentials from the
environment). Failing routes are retried, then reported; one never blocks another.
"""

from ._handoff import Handoff, send_handoff
from ._owners import NotifyReport, OwnerFindings, findings_by_owner, notify_owners, owners_hook
from ._send import SIGNATURE_HEADER, Delivery, Message, deliver, sign

__all__ = [
    "SIGNATURE_HEADER",
    "Delivery",
    "Handoff",
    "Message",
    "NotifyReport",
    "OwnerFindings",
    "deliver",
    "findings_by_owner",
    "notify_owners",
    "owners_hook",
    "send_handoff",
    "sign",
]
