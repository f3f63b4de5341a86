from __future__ import annotations

from tether.observe.redact import REDACTED, Redactor


def test_redacts_every_occurrence_and_ignores_short_strings() -> None:
    r = Redactor(["sk-abcdefgh1234", None, "", "abc"])
    assert r("a sk-abcdefgh1234 b sk-abcdefgh1234") == f"a {REDACTED} b {REDACTED}"
    assert r("abc stays") == "abc stays"
    assert not Redactor([None])
