"""Token counts estimated before sending, when the provider has reported no usage yet.

Context thresholds are checked on every request, for any provider, and a real
tokenizer is a large, model-specific dependency. BPE tokenizers (cl100k, o200k and
their kin) first cut text with a regex into pieces: a word with its leading space
(split where a lowercase letter meets a capital), 1-3 digits, a punctuation run with
its leading space and trailing newlines, whitespace runs. Most pieces of code and
English are then one token. So the estimate counts those pieces as o200k's
pre-tokenizer would for ASCII, and adds what merging costs beyond one token per
piece: long words, capitals, consonant clusters (flags, names, hashes), long
punctuation runs, and non-ASCII text by the character.

The counting runs on big integers, a bit per byte and class, so no Python code
runs per character or per piece (~50 MB/s). Fitted to o200k_base (cl100k agrees
on code within ~1%): source files within ~2% typically, 10% at worst (checked by
tests/context/test_tokens.py). For CJK and Cyrillic text the two disagree by
40-90%; the estimate sits between them, above o200k.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tether.messages import Message

__all__ = ["estimate_request_tokens", "estimate_tokens"]

# Byte classes, one bit each; bytes of non-ASCII characters are in none of them.
_LETTER, _UPPER, _DIGIT, _PUNCT, _SPACE, _NEWLINE, _CONSONANT = 1, 2, 4, 8, 16, 32, 64


def _class_table() -> bytes:
    table = bytearray(256)
    for code in range(128):
        ch = chr(code)
        if ch.isalpha():
            table[code] = _LETTER | (_UPPER if ch.isupper() else 0)
            table[code] |= 0 if ch in "aeiouyAEIOUY" else _CONSONANT
        elif ch.isdigit():
            table[code] = _DIGIT
        elif ch == "\n":
            table[code] = _NEWLINE
        elif ch.isspace():
            table[code] = _SPACE
        else:
            table[code] = _PUNCT
    return bytes(table)


_CLASSES = _class_table()
_pc = int.bit_count
# Bit 0, 1 or 2 on the first byte of a 2-, 3- or 4-byte UTF-8 character.
_LEADS = bytes(
    1 if 0xC0 <= b < 0xE0 else 2 if 0xE0 <= b < 0xF0 else 4 if 0xF0 <= b < 0xF8 else 0
    for b in range(256)
)

# Tokens per feature of `_features`: 1 (or 1/3) where the pre-tokenizer fixes it, else
# fitted to o200k_base; the non-ASCII ones sit between o200k and cl100k.
_WEIGHTS = (1, 1, -0.64, -1, 1, 1, 0.03, 0.15, 0.91, 1.35, 1, 1 / 3, 0.35, 0.9, 1.5, 0.1)
_CHUNK = 1 << 14  # characters per pass: keeps the integers small and in cache
_PER_MESSAGE = 4  # role and delimiters, as in chat formats
_PER_CALL = 3  # a tool call's framing around its name and arguments
_PER_REQUEST = 3  # the priming of the reply


def _features(text: str) -> tuple[int, ...]:
    """Counts of pre-tokenizer pieces and corrections, then of what makes pieces cost more."""
    data = text.encode("utf-8", "surrogatepass")
    ones = int.from_bytes(b"\x01" * len(data), "little")  # bit 0 of every byte
    bits = int.from_bytes(data.translate(_CLASSES), "little")
    letter, upper, digit = bits & ones, (bits >> 1) & ones, (bits >> 2) & ones
    punct, space, newline = (bits >> 3) & ones, (bits >> 4) & ones, (bits >> 5) & ones
    cons = (bits >> 6) & ones
    # `x << 8` moves each byte's bit onto the next byte: "the previous byte is x".
    # A piece starts where a run of letters, digits, punctuation or newlines starts
    # (all four classes at once, each in its own bit) ...
    kinds = bits & (ones * (_LETTER | _DIGIT | _PUNCT | _NEWLINE))
    starts = kinds & ~(kinds << 8)
    # ... and where a capital follows a lowercase letter ("fooBar" is "foo", "Bar").
    camel = upper & ((letter ^ upper) << 8)
    # One mark between a non-space and a letter is the word's first byte: ".attr".
    glued = punct & ~((punct | space) << 8) & (letter >> 8)
    # Newlines right after punctuation belong to it: "):\n" is one piece.
    tail = newline & (punct << 8)
    # Of n spaces the last joins what follows, so n >= 2 is a piece of its own; so is
    # a space before a number (numbers take no leading space).
    solid = ones ^ (space | newline)
    indent = solid & (space << 8) & (space << 16)
    numeral = digit & (space << 8)
    # Extras: the 4th and later byte of a run of punctuation, consonants or digits
    # (only where the byte changes: "=====" is cheap), the 9th+ letter of a word, and
    # the 3rd+ capital in a row.
    raw = int.from_bytes(data, "little")
    change = _nonzero_bytes(raw ^ (raw << 8), ones)
    run4 = bits & (bits << 8) & (bits << 16) & (bits << 24)
    long = letter & (letter << 8)
    long &= long << 16
    long &= (long << 32) & (letter << 64)
    caps = upper & (upper << 8) & (upper << 16)
    # Numbers are cut into pieces of up to 3 digits.
    digits4 = (run4 >> 2) & digit
    wide2 = wide3 = wide4 = again3 = 0
    if not data.isascii():
        # Non-ASCII costs by the character, counted at UTF-8 lead bytes; a 3-byte
        # character repeating the one before ("────") costs much less.
        leads = int.from_bytes(data.translate(_LEADS), "little")
        wide2, wide4 = _pc(leads & ones), _pc(leads & (ones << 2))
        change3 = _nonzero_bytes(raw ^ (raw << 24), ones)
        change3 |= (change3 >> 8) | (change3 >> 16)
        wide3 = _pc(leads & (change3 << 1))
        again3 = _pc(leads & (ones << 1)) - wide3
    return (
        _pc(starts), _pc(camel), _pc(glued), _pc(tail), _pc(indent), _pc(numeral),
        _pc(long), _pc(caps), _pc((run4 >> 3) & punct & change), _pc((run4 >> 6) & cons),
        _pc(digits4 ^ (digits4 & (digit << 32))), _pc(digits4 & (digits4 << 24)),
        wide2, wide3, wide4, again3,
    )  # fmt: skip


def _nonzero_bytes(value: int, ones: int) -> int:
    """Bit 0 of each byte of the result is set where that byte of `value` is not 0."""
    value |= value >> 4
    value |= value >> 2
    value |= value >> 1
    return value & ones


def estimate_tokens(text: str) -> int:
    """About how many tokens `text` is for a modern BPE tokenizer; 0 for ""."""
    if not text:
        return 0
    total = 0.0
    for start in range(0, len(text), _CHUNK):
        features = _features(text[start : start + _CHUNK])
        total += sum(w * f for w, f in zip(_WEIGHTS, features, strict=True))
    return max(1, round(total))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=_plain)


def _plain(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else str(value)


def estimate_request_tokens(
    system: str, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
) -> int:
    """About how many input tokens a request is: the system prompt, every message's
    text, tool calls' names and arguments, tool results, the tools as their JSON, and
    the framing chat formats add per message. Reasoning is left out: it is not sent back.
    """
    total = _PER_REQUEST + sum(estimate_tokens(_json(tool)) for tool in tools)
    if system:
        total += _PER_MESSAGE + estimate_tokens(system)
    for message in messages:
        total += _PER_MESSAGE + estimate_tokens(message.content)
        for call in message.tool_calls:
            total += _PER_CALL + estimate_tokens(call.name) + estimate_tokens(call.arguments)
    return total
