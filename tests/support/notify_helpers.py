"""Real local receivers for the notification tests: an SMTP server (aiosmtpd, optionally with
STARTTLS and AUTH) and a webhook receiver (stdlib http.server) recording what arrived."""

from __future__ import annotations

import datetime
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from email import message_from_bytes
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult

from service_helpers import free_port


class Inbox:
    def __init__(self) -> None:
        self.mails: list[Any] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.mails.append(message_from_bytes(envelope.content))
        return "250 OK"


def _cert(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (the client trusts it through ``ca_file``)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    crt, pem = folder / "smtp.crt", folder / "smtp.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return crt, pem


@contextmanager
def smtp_server(
    folder: Path | None = None, login: tuple[str, str] | None = None
) -> Iterator[tuple[Inbox, int, Path | None]]:
    """(inbox, port, CA file); with ``folder``, STARTTLS is offered (and required for AUTH)."""
    import ssl

    inbox, port = Inbox(), free_port()
    kw: dict[str, Any] = {}
    ca = None
    if folder is not None:
        ca, key = _cert(folder)
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(ca, key)
        kw.update(tls_context=ctx, require_starttls=True)
    if login is not None:

        def check(server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> AuthResult:
            ok = (auth_data.login.decode(), auth_data.password.decode()) == login
            return AuthResult(success=ok, handled=False)

        kw.update(authenticator=check, auth_required=True)
    ctl = Controller(inbox, hostname="127.0.0.1", port=port, **kw)
    ctl.start()
    try:
        yield inbox, port, ca
    finally:
        ctl.stop()


class Hooks:
    """What the webhook receiver got: (path, headers, raw body), and how many to refuse first."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict[str, str], bytes]] = []
        self.fail_first = 0
        self.lock = threading.Lock()

    def json(self, i: int = -1) -> Any:
        return json.loads(self.received[i][2])


@contextmanager
def webhook_receiver() -> Iterator[tuple[Hooks, str]]:
    hooks = Hooks()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with hooks.lock:
                failing = hooks.fail_first > 0
                hooks.fail_first -= failing
                if not failing:
                    hooks.received.append((self.path, dict(self.headers), body))
            self.send_response(503 if failing else 204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield hooks, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
