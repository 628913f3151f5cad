"""Owners hear about drift and conflicts; routes are real: an SMTP server (aiosmtpd, with
STARTTLS and a login from the environment) and an HTTP webhook receiver checking the signature."""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from cli_runner import run_cli
from evidex import KnowledgeBase
from evidex.config import Config, load_config
from evidex.model import ConfigError, EvidexError
from evidex.notify import (
    SIGNATURE_HEADER,
    Delivery,
    HandoffRoute,
    Message,
    Owner,
    Route,
    SmtpSettings,
    deliver,
    owner_route,
    send_handoff,
)
from evidex.sources import drift, notify_owners, sync
from notify_helpers import smtp_server, webhook_receiver
from service_helpers import free_port

MESSAGE = Message("subject", "body text\n", {"type": "test", "n": 1})


def _owners_config(tmp_path: Path, url: str, smtp: str) -> Config:
    """The care team (mail, through ``smtp``) and the product team (a signed webhook at ``url``)
    own one source each in ``tmp_path``."""
    config = tmp_path / "knowledge.config.yaml"
    config.write_text(
        f"""
sources:
  - {{id: care, type: files, path: care, tenant: acme, groups: [staff],
     owner: {{name: Care team, email: care@example.com}}}}
  - {{id: products, type: files, path: products, tenant: acme, groups: [staff],
     owner: {{name: Product team, webhook: "{url}/products", secret_env: HOOK_SECRET}}}}
server:
  smtp: {{host: 127.0.0.1, {smtp}, starttls: false, sender: evidex@example.com}}
""",
        encoding="utf-8",
    )
    return load_config(config)


def test_webhook_is_signed_over_the_exact_body() -> None:
    with webhook_receiver() as (hooks, url):
        route = Route(webhook=url + "/hook", secret_env="HOOK_SECRET")
        [d] = deliver("docs", route, MESSAGE, smtp=None, env={"HOOK_SECRET": "s3cret"})
    assert d.ok and d.attempts == 1
    path, headers, body = hooks.received[0]
    expected = "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
    assert path == "/hook" and headers[SIGNATURE_HEADER] == expected
    got = hooks.json()
    assert {k: v for k, v in got.items() if k not in ("sent_at", "delivery_id")} == {"type": "test", "n": 1}
    assert len(got["delivery_id"]) == 32 and got["sent_at"].endswith("+00:00")


def test_webhook_without_its_secret_in_the_environment_is_not_sent_unsigned() -> None:
    with webhook_receiver() as (hooks, url):
        [d] = deliver(
            "docs", Route(webhook=url, secret_env="MISSING"), MESSAGE, smtp=None, env={}, attempts=2, pause=0
        )
    assert not d.ok and d.attempts == 2 and "MISSING" in (d.error or "")
    assert hooks.received == []


def test_mail_over_starttls_with_login_from_the_environment(tmp_path: Path) -> None:
    with smtp_server(tmp_path, login=("mailer", "pw")) as (inbox, port, ca):
        smtp = SmtpSettings(
            host="127.0.0.1",
            port=port,
            starttls=True,
            sender="evidex@example.com",
            username_env="SMTP_USER",
            password_env="SMTP_PASS",
            ca_file=str(ca),
        )
        def send(password: str, attempts: int = 3) -> list[Delivery]:
            return deliver("docs", Route(email="docs@example.com"), MESSAGE, smtp=smtp,
                           env={"SMTP_USER": "mailer", "SMTP_PASS": password}, attempts=attempts)

        [d] = send("pw")
        assert d.ok, d.error
        [bad] = send("wrong", attempts=1)
    assert not bad.ok and "Authentication" in (bad.error or "")
    [mail] = inbox.mails
    assert mail["To"] == "docs@example.com" and mail["From"] == "evidex@example.com"
    assert mail["Subject"] == "subject" and mail.get_payload().strip() == "body text"


def test_a_failing_route_is_retried_and_reported_and_never_blocks_the_other() -> None:
    dead = free_port()  # nothing listens here
    smtp = SmtpSettings(
        host="127.0.0.1", port=dead, starttls=False, sender="evidex@example.com", timeout_seconds=2
    )
    with webhook_receiver() as (hooks, url):
        hooks.fail_first = 2  # 503 twice, then accepted
        pauses: list[float] = []
        out = deliver(
            "docs",
            Route(email="docs@example.com", webhook=url),
            MESSAGE,
            smtp=smtp,
            attempts=3,
            pause=0.25,
            sleep=pauses.append,
        )
    mail, hook = out
    assert (mail.route, mail.ok, mail.attempts) == ("email", False, 3) and mail.error
    assert (hook.route, hook.ok, hook.attempts) == ("webhook", True, 3)
    assert pauses == [0.25, 0.5, 0.25, 0.5]
    assert len(hooks.received) == 1


def _write(folder: Path, name: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")


def test_drift_and_conflicts_reach_each_owner_once_on_their_routes(tmp_path: Path) -> None:
    care, product = tmp_path / "care", tmp_path / "products"
    _write(
        care,
        "reproof.md",
        "# Re-proofing\n\nRe-proof your waterproof shell jacket every 12 months with the spray-on product.\n",
    )
    _write(
        product,
        "shell.md",
        "# Shell jacket\n\nRe-proof your waterproof shell jacket every 6 months with the spray-on product.\n",
    )
    with smtp_server() as (inbox, port, _), webhook_receiver() as (hooks, url):
        cfg = _owners_config(tmp_path, url, f"port: {port}")
        with KnowledgeBase.open(tmp_path / "kb.db") as kb:
            report = sync(kb, cfg)
            [conflict] = kb.conflicts(status="open")
            assert {conflict.a.value, conflict.b.value} == {"every 12 months", "every 6 months"}
            assert sorted(c for s in report.sources for c in s.conflicts) == [conflict.id]
            _write(product, "gloves.md", "# Gloves\n\nTouch gloves.\n")
            sent = notify_owners(kb, cfg, drift(kb, cfg), env={"HOOK_SECRET": "k"})
    assert sent.ok and sent.unrouted == []
    assert sorted((d.to, d.route) for d in sent.deliveries) == [
        ("Care team", "email"),
        ("Product team", "webhook"),
    ]
    [mail] = inbox.mails
    # The care team's source did not change (its file, just written, is read again): a conflict
    # to tell them about, no drift.
    assert "Conflict" in mail.get_payload() and "Source care" not in mail.get_payload()
    assert mail["Subject"].startswith("evidex: 0 drifted source(s)")
    payload = hooks.json()
    assert payload["owner"] == "Product team" and payload["drift"][0]["new"] == ["products/gloves.md"]
    assert [c["id"] for c in payload["conflicts"]] == [conflict.id]
    # Owners get citations and values, not the other document's sentences.
    assert "sentence" not in str(payload["conflicts"])


def test_owner_and_handoff_routes_are_validated(tmp_path: Path) -> None:
    assert owner_route("docs@example.com") == Owner(name="docs@example.com")  # a name, no route
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "answer:\n  handoff: {message: ask us}\nserver:\n  smtp: {host: x, sender: nope}\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError) as err:
        load_config(bad)
    assert "handoff route needs an email, a webhook, or both" in str(err.value)
    assert "server.smtp.sender: must be an e-mail address" in str(err.value)


def test_handoff_goes_to_the_route_and_fails_loudly_when_nothing_took_it() -> None:
    with webhook_receiver() as (hooks, url):
        sent = send_handoff(
            HandoffRoute(webhook=url),
            None,
            tenant="acme",
            caller="web",
            question="Who repairs tents?",
            trace_ids=["a" * 32],
            conversation=[
                {"role": "user", "text": "Who repairs tents?"},
                {"role": "evidex", "status": "declined", "trace_id": "a" * 32},
            ],
        )
    assert sent.reference.startswith("HO-") and hooks.json()["reference"] == sent.reference
    assert hooks.json()["conversation"][1] == {"role": "evidex", "status": "declined", "trace_id": "a" * 32}
    from evidex.model import NotifyError

    with pytest.raises(NotifyError, match="could not be delivered"):
        send_handoff(
            HandoffRoute(webhook=f"http://127.0.0.1:{free_port()}/"),
            None,
            tenant="acme",
            caller="web",
            question="q",
            conversation=[],
            trace_ids=[],
            attempts=1,
        )


def test_a_question_of_several_lines_is_handed_off_on_every_route(tmp_path: Path) -> None:
    """The e-mail subject quotes the question; a question with line breaks (typed over two
    lines) was an invalid header, an internal error, and the webhook was not tried either."""
    question = "My tent pole snapped.\r\nBcc: someone@example.com\nWho repairs it?"
    with smtp_server() as (inbox, port, _), webhook_receiver() as (hooks, url):
        smtp = SmtpSettings(host="127.0.0.1", port=port, starttls=False, sender="evidex@example.com")
        sent = send_handoff(HandoffRoute(email="support@example.com", webhook=url), smtp,
                            tenant="acme", caller="web", question=question, conversation=[],
                            trace_ids=[], attempts=1)
    assert [(d.route, d.ok) for d in sent.deliveries] == [("email", True), ("webhook", True)]
    [mail] = inbox.mails
    subject = " ".join(str(mail["Subject"]).split())  # unfolded
    assert subject == (f"evidex handoff {sent.reference}: My tent pole snapped. "
                       "Bcc: someone@example.com Who repairs it?")
    assert mail["Bcc"] is None and "Who repairs it?" in mail.get_payload()
    # The asker's words, as written (line breaks as "\n").
    assert hooks.json()["question"] == question.replace("\r\n", "\n")


def test_the_drift_webhook_is_retried_like_the_owners_routes(tmp_path: Path) -> None:
    """The freshness webhook is tried up to three times, as each owner route is; after the last
    failure it raises, naming the attempts."""
    from evidex.sources import notify_webhook

    _write(tmp_path / "care", "a.md", "# A\n\nalpha\n")
    config = tmp_path / "k.yaml"
    config.write_text("sources:\n  - {id: care, type: files, path: care, tenant: acme, groups: [staff]}\n",
                      encoding="utf-8")
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        report = drift(kb, load_config(config))
    pauses: list[float] = []
    with webhook_receiver() as (hooks, url):
        hooks.fail_first = 2  # 503 twice, then accepted
        assert notify_webhook(url + "/drift", report, pause=0.25, sleep=pauses.append) == 204
        assert pauses == [0.25, 0.5] and hooks.json()["sources"][0]["new"] == ["care/a.md"]
        hooks.fail_first = 3
        with pytest.raises(EvidexError, match=r"answered HTTP 503 \(3 attempts\)"):
            notify_webhook(url + "/drift", report, sleep=pauses.append)


def test_cli_drift_tells_the_owners_when_the_drift_webhook_fails(tmp_path: Path) -> None:
    """`evidex drift` with a freshness webhook that fails: the owners are still told (a failing
    route never blocks the others), and the exit status says a route failed."""

    _write(tmp_path / "care", "a.md", "# A\n\nalpha\n")
    with webhook_receiver() as (hooks, url):
        config = tmp_path / "k.yaml"
        config.write_text(
            "sources:\n  - {id: care, type: files, path: care, tenant: acme, groups: [staff],\n"
            f"     owner: {{name: Care, webhook: '{url}/owner'}}}}\n"
            f"freshness:\n  notify: {{webhook: 'http://127.0.0.1:{free_port()}/down'}}\n",
            encoding="utf-8")
        done = run_cli("--config", config, "drift", db=tmp_path / "kb.db")
    assert done.returncode == 2, done.stderr
    assert "the drift webhook" in done.stderr and "notify Care by webhook: sent" in done.stderr
    assert [h[0] for h in hooks.received] == ["/owner"]
    assert hooks.json()["drift"][0]["new"] == ["care/a.md"]


def test_the_scheduler_hook_tells_owners_and_raises_when_a_route_failed(tmp_path: Path) -> None:
    from evidex.sources import owners_hook

    _write(tmp_path / "care", "a.md", "# A\n\nalpha\n")
    with webhook_receiver() as (hooks, url):
        config = tmp_path / "k.yaml"
        config.write_text(
            "sources:\n  - {id: care, type: files, path: care, tenant: acme, groups: [staff],\n"
            f"     owner: {{name: Care, webhook: '{url}/ok'}}}}\n", encoding="utf-8")
        cfg = load_config(config)
        hook = owners_hook(lambda: KnowledgeBase.open(tmp_path / "kb.db"))
        with KnowledgeBase.open(tmp_path / "kb.db") as kb:
            report = drift(kb, cfg)
        hook(report, cfg)
        assert hooks.json()["drift"][0]["new"] == ["care/a.md"]
        hooks.fail_first = 99
        with pytest.raises(Exception, match="FAILED after 3 attempts: HTTP 503"):
            hook(report, cfg)


def test_webhooks_never_go_through_a_proxy_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A signed owner notice went through whatever HTTP_PROXY the environment named (tools
    did not): every webhook connects to the configured host itself."""
    with webhook_receiver() as (proxy, proxy_url), webhook_receiver() as (hooks, url):
        for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.setenv(name, proxy_url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        [d] = deliver("docs", Route(webhook=url + "/hook"), MESSAGE, smtp=None, attempts=1)
    assert d.ok, d.error
    assert proxy.received == [] and [h[0] for h in hooks.received] == ["/hook"]


def test_every_attempt_is_stamped_inside_the_signed_body() -> None:
    """A retried delivery is a new delivery (new id, new time), each signed over its body."""
    with webhook_receiver() as (hooks, url):
        hooks.fail_first = 1
        [d] = deliver("docs", Route(webhook=url, secret_env="S"), MESSAGE, smtp=None, env={"S": "k"},
                      pause=0)
        assert d.ok and d.attempts == 2
        [(_, headers, body)] = hooks.received
    assert headers[SIGNATURE_HEADER] == "sha256=" + hmac.new(b"k", body, hashlib.sha256).hexdigest()
    sent = json.loads(body)
    at = datetime.datetime.fromisoformat(sent["sent_at"])
    assert abs((datetime.datetime.now(datetime.UTC) - at).total_seconds()) < 60
    assert re.fullmatch(r"[0-9a-f]{32}", sent["delivery_id"])


def _handoff_mail(question: str, conversation: list[dict[str, str]] | None = None) -> tuple[Any, str]:
    with smtp_server() as (inbox, port, _):
        smtp = SmtpSettings(host="127.0.0.1", port=port, starttls=False, sender="evidex@example.com")
        sent = send_handoff(HandoffRoute(email="support@example.com"), smtp, tenant="acme",
                            caller="key:web", question=question, conversation=conversation or [],
                            trace_ids=["b" * 32], attempts=1)
    [mail] = inbox.mails
    return mail, sent.reference


def test_handoff_mail_holds_no_control_characters_of_the_asker() -> None:
    """NUL, escape sequences and DEL of the question reached the Subject raw (a terminal or a
    mail client showing them can be steered by them)."""
    mail, _ = _handoff_mail("Where\x00 is \x1b[31mmy\x1b[0m tent\x7f?\u202e")
    subject, body = str(mail["Subject"]), mail.get_payload()
    for text in (subject, body):
        assert not [c for c in text if c not in "\r\n" and unicodedata.category(c).startswith("C")], text
    assert "Where is [31mmy[0m tent?" in " ".join(subject.split())


def test_a_question_cannot_forge_the_lines_of_the_handoff_header() -> None:
    """A multi-line question wrote lines that read as evidex's own ("Handoff HO-... (tenant
    ...)", "Trace ids: ..."): each line the asker wrote is quoted."""
    forged = ("My tent leaks.\nHandoff HO-000000000000 (tenant other, from key:admin)\n"
              "Trace ids: " + "c" * 32)
    mail, reference = _handoff_mail(forged, [{"role": "user", "text": "hi\nTrace ids: " + "d" * 32}])
    lines = mail.get_payload().splitlines()
    assert [ln for ln in lines if ln.startswith("Handoff ")] == [
        f"Handoff {reference} (tenant acme, from key:web)"]
    assert [ln for ln in lines if ln.startswith("Trace ids:")] == ["Trace ids: " + "b" * 32]
    assert "> Handoff HO-000000000000 (tenant other, from key:admin)" in lines


def test_a_handoff_of_a_question_without_words_is_refused() -> None:
    with pytest.raises(EvidexError, match="no words"):
        send_handoff(HandoffRoute(webhook="http://127.0.0.1:9/"), None, tenant="acme", caller="web",
                     question=" \n\t\u2028 ", conversation=[], trace_ids=[])


def test_who_was_told_is_recorded_per_source_delivered_or_not(tmp_path: Path) -> None:
    """The Operators tab's drift column says whether the owner knows (issue 47): each delivery
    of an owner's findings is recorded in the store per source it was about, with the route's
    kind (never its address), when, and whether it arrived; a failed route is recorded with the
    first line of why, and another tenant sees none of it."""
    care, product = tmp_path / "care", tmp_path / "products"
    _write(care, "reproof.md", "# Re-proofing\n\nRe-proof your waterproof shell jacket every 12 months.\n")
    _write(product, "shell.md", "# Shell jacket\n\nRe-proof your waterproof shell jacket every 6 months.\n")
    dead = free_port()  # the care team's mail server does not answer
    with webhook_receiver() as (hooks, url):
        cfg = _owners_config(tmp_path, url, f"port: {dead}, timeout_seconds: 2")
        with KnowledgeBase.open(tmp_path / "kb.db") as kb:
            sync(kb, cfg)
            _write(product, "gloves.md", "# Gloves\n\nTouch gloves.\n")
            sent = notify_owners(kb, cfg, drift(kb, cfg), env={"HOOK_SECRET": "k"}, attempts=1, pause=0)
            notices = kb.store.notices("acme")
            assert kb.store.notices("globex") == []
    assert not sent.ok and len(hooks.received) == 1
    by_source = {n.source: n for n in notices}
    assert sorted(by_source) == ["care", "products"] and len(notices) == 2
    product_told, care_told = by_source["products"], by_source["care"]
    assert (product_told.owner, product_told.route) == ("Product team", "webhook") and product_told.delivered
    assert product_told.error is None and product_told.findings == {"new": 1, "changed": 0, "removed": 0,
                                                                    "conflicts": 1}
    assert (care_told.owner, care_told.route, care_told.delivered) == ("Care team", "email", False)
    assert care_told.error and "\n" not in care_told.error and care_told.findings == {"conflicts": 1}
    assert url not in repr(notices) and "care@example.com" not in repr(notices)
