"""The output contract releases only allowlisted http(s) links, whatever the link's syntax or
scheme (issue 45, finding 9: ``[click](javascript:...)`` from a tool response passed, because the
check looked only at http/https/ftp/www)."""

from __future__ import annotations

import pytest

from evidex.answer import check_output

ALLOWED = ("https://help.example.com",)


def _links(answer: str) -> list[str]:
    return [v for v in check_output({"answer": answer, "citations": [1]}, [1], ALLOWED) if "allowlist" in v]


@pytest.mark.parametrize("answer", [
    "See [click](javascript:alert(1)) for the form. [1]",
    "See [click]( <JavaScript:alert(1)> ) for the form. [1]",
    "Open java\tscript:alert(1) for the form. [1]",
    "Open vbscript:msgbox(1) for the form. [1]",
    "Open data:text/html;base64,PHNjcmlwdD4= for the form. [1]",
    "Write to mailto:evil@example.net for the form. [1]",
    "Open file:///etc/passwd for the form. [1]",
    "Returns are explained on our site. [1]\n\n[1]: javascript:alert(1)",
    "Returns are explained on our site. [1]\n\n[site]: https://evil.example/x",
    "See ![logo](//evil.example/pixel.png) for the form. [1]",
    "See [the form](/download/form.pdf) for the form. [1]",
    "See https://help.example.com.evil.example/returns for the form. [1]",
    "See https://help.example.community/returns for the form. [1]",
    "See http://evil.example/returns for the form. [1]",
    "See ftp://evil.example/returns for the form. [1]",
    "See gopher://evil.example/1 for the form. [1]",
    "See www.evil.example for the form. [1]",
])
def test_every_link_off_the_allowlist_is_a_violation(answer: str) -> None:
    assert _links(answer), answer


@pytest.mark.parametrize("answer", [
    "See https://help.example.com/returns for the form. [1]",
    "See [the form](https://help.example.com/returns?x=1#top) for details. [1]",
    "See https://HELP.example.com/returns for the form. [1]",
    "Required data: your name and the order number. [1]",
    "Note: returns are free within 30 days, mail us at the desk. [1]",
])
def test_allowlisted_links_and_prose_with_colons_are_released(answer: str) -> None:
    assert _links(answer) == [], answer


def test_a_violation_names_the_host_or_scheme_never_the_url() -> None:
    [problem] = _links("See [click](javascript:alert('secret-token')) now. [1]")
    assert "secret-token" not in problem and "javascript" in problem
