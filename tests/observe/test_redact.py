from __future__ import annotations

from tether.observe.redact import REDACTED, Redactor


def test_redacts_every_occurrence_and_ignores_short_strings() -> None:
    r = Redactor(["sk-abcdefgh1234", None, "", "abc"])
    assert r("a sk-abcdefgh1234 b sk-abcdefgh1234") == f"a {REDACTED} b {REDACTED}"
    assert r("abc stays") == "abc stays"
    assert not Redactor([None])


def test_stream_redactor_catches_a_secret_split_across_pieces() -> None:
    stream = Redactor(["sk-SECRETSECRET"]).stream()
    pieces = ["hello sk-SEC", "RETSEC", "RET bye sk", "-x"]
    shown = [stream.feed(p) for p in pieces]
    assert shown == ["hello ", "", f"{REDACTED} bye ", "sk-x"]
    assert stream.flush() == ""


def test_stream_redactor_releases_a_false_start_at_the_end() -> None:
    stream = Redactor(["sk-SECRETSECRET"]).stream()
    assert stream.feed("ends with sk-SE") == "ends with "
    assert stream.flush() == "sk-SE"


def test_lone_surrogates_are_replaced_in_output() -> None:
    assert Redactor()("a\ud83db") == "a\ufffdb"
