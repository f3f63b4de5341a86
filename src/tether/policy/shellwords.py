"""Shell word unquoting for `shellparse`: quote removal, escapes, and what a word hides.

tree-sitter-bash finds the structure; this module turns the raw text of one word
into its value the way bash would (`r''m`, `"rm"`, `\\rm`, `$'\\x72m'` -> "rm") and
says whether the value is known before running. It also finds command
substitutions tree-sitter left as plain text (`${x#$(cmd)}`, backticks in heredocs
and in `${x:-...}` defaults) so the parser can emit their commands anyway.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "DQ",
    "HEREDOC",
    "UNQ",
    "Lexed",
    "heredoc_extent",
    "lex",
    "unescape_backticks",
]

UNQ, DQ, HEREDOC = 0, 1, 2  # start modes: unquoted text, inside "...", heredoc body
_SQ, _ANSI = 3, 4
_MAX_DEPTH = 40
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_SPECIAL_PARAMS = frozenset("@*#?$!-0123456789")
_ANSI_SIMPLE = {
    "a": b"\a",
    "b": b"\b",
    "e": b"\x1b",
    "E": b"\x1b",
    "f": b"\f",
    "n": b"\n",
    "r": b"\r",
    "t": b"\t",
    "v": b"\v",
    "\\": b"\\",
    "'": b"'",
    '"': b'"',
    "?": b"?",
}
_BRACE = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")
_QUOTED, _EXPANDED = "\0", "\1"  # placeholders in the "shape" of a word


@dataclass(frozen=True, slots=True)
class Lexed:
    """A lexed word: its value, whether it is known before running, whether it is
    a glob, and the scripts of substitutions found in its text (with their char
    offsets) that the parser must still emit."""

    text: str
    literal: bool
    glob: bool
    hidden: tuple[tuple[str, int], ...] = ()
    too_deep: bool = False


def unescape_backticks(inner: str, in_dq: bool) -> str:
    """What bash parses inside `...`: backslash before $ ` \\ (and " in "...") drops."""
    keep = '$`\\"' if in_dq else "$`\\"
    return re.sub(r"\\(.)", lambda m: m[1] if m[1] in keep else m[0], inner, flags=re.S)


def _match(s: str, k: int, close: str) -> int:
    """Index of the bracket closing the one at `s[k]` (quotes and escapes respected);
    len(s) when it is unterminated."""
    opener, depth, i, n = s[k], 0, k, len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            j = s.find("'", i + 1)
            i = n if j < 0 else j + 1
            continue
        if c == '"':
            i += 1
            while i < n and s[i] != '"':
                i += 2 if s[i] == "\\" else 1
            i += 1
            continue
        if c == opener:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return n


def _ansi_escape(s: str, i: int) -> tuple[bytes, int]:
    """Decode one backslash escape of a $'...' string at s[i]; return bytes, next index."""
    c = s[i + 1]
    simple = _ANSI_SIMPLE.get(c)
    if simple is not None:
        return simple, i + 2
    if c in "01234567":
        m = re.compile(r"[0-7]{1,3}").match(s, i + 1)
        assert m is not None
        return bytes([int(m[0], 8) & 0xFF]), m.end()
    if c in "xuU":
        width = {"x": 2, "u": 4, "U": 8}[c]
        m = re.compile(f"[0-9a-fA-F]{{1,{width}}}").match(s, i + 2)
        if m is None:
            return ("\\" + c).encode(), i + 2
        value = int(m[0], 16)
        if c == "x":
            return bytes([value]), m.end()
        if value > 0x10FFFF:
            return b"?", m.end()
        return chr(value).encode("utf-8", "surrogatepass"), m.end()
    if c == "c" and i + 2 < len(s):
        return bytes([ord(s[i + 2]) & 0x1F]) if ord(s[i + 2]) < 128 else b"", i + 3
    return ("\\" + c).encode("utf-8", "surrogatepass"), i + 2


def _flush_ansi(buf: bytearray) -> str:
    """bash stops a $'...' string at a NUL byte; invalid UTF-8 becomes U+FFFD."""
    return bytes(buf).split(b"\0", 1)[0].decode("utf-8", "replace")


def lex(segments: Sequence[tuple[str, bool]], mode: int = UNQ, depth: int = 0) -> Lexed:
    """Unquote a word given as (text, is_expansion) pieces.

    Expansion pieces are spans tree-sitter already parsed (`$x`, `$(...)`, ...);
    they are kept as written and make the word non-literal. Text pieces are
    unquoted here with one quoting state carried across pieces.
    """
    out: list[str] = []
    shape: list[str] = []
    hidden: list[tuple[str, int]] = []
    literal, too_deep = True, False
    state, ansi, pos = mode, bytearray(), 0

    def nested(inner: str, at: int, inner_mode: int) -> None:
        nonlocal too_deep
        if depth >= _MAX_DEPTH:
            too_deep = True
            return
        sub = lex([(inner, False)], inner_mode, depth + 1)
        hidden.extend((h, at + off) for h, off in sub.hidden)
        too_deep = too_deep or sub.too_deep

    for seg, is_expansion in segments:
        if is_expansion:
            out.append(seg)
            shape.append(_EXPANDED)
            literal = False
            pos += len(seg)
            continue
        i, n = 0, len(seg)
        while i < n:
            c = seg[i]
            if state == _SQ:
                if c == "'":
                    state = UNQ
                else:
                    out.append(c)
                    shape.append(_QUOTED)
                i += 1
                continue
            if state == _ANSI:
                if c == "'":
                    out.append(_flush_ansi(ansi))
                    shape.append(_QUOTED)
                    state, ansi = UNQ, bytearray()
                    i += 1
                elif c == "\\" and i + 1 < n:
                    decoded, i = _ansi_escape(seg, i)
                    ansi += decoded
                else:
                    ansi += c.encode("utf-8", "surrogatepass")
                    i += 1
                continue
            nxt = seg[i + 1] if i + 1 < n else ""
            if c == "\\":
                if nxt == "\n":
                    i += 2
                elif nxt and (state == UNQ or nxt in ('$`\\"' if state == DQ else "$`\\")):
                    out.append(nxt)
                    shape.append(_QUOTED)
                    i += 2
                else:
                    out.append("\\")
                    shape.append(_QUOTED)
                    i += 1
                continue
            start = i
            if c == "$" and state == UNQ and nxt in ("'", '"'):
                state = _ANSI if nxt == "'" else DQ
                i += 2
                continue
            if c == "$" and nxt == "(":
                if seg.startswith("((", i + 1):
                    k = _match(seg, i + 2, ")")
                    if k + 1 < n and seg[k + 1] == ")":
                        nested(seg[i + 3 : k], pos + i + 3, UNQ)
                        i = k + 2
                    else:
                        j = _match(seg, i + 1, ")")
                        hidden.append((seg[i + 2 : j], pos + i + 2))
                        i = j + 1
                else:
                    j = _match(seg, i + 1, ")")
                    hidden.append((seg[i + 2 : j], pos + i + 2))
                    i = j + 1
            elif c == "$" and nxt in ("{", "["):
                j = _match(seg, i + 1, "}" if nxt == "{" else "]")
                nested(seg[i + 2 : j], pos + i + 2, UNQ)
                i = j + 1
            elif c == "$" and (nxt in _NAME_CHARS or nxt in _SPECIAL_PARAMS):
                i += 2
                if nxt in _NAME_CHARS and not nxt.isdigit():
                    while i < n and seg[i] in _NAME_CHARS:
                        i += 1
            elif c == "`":
                j = i + 1
                while j < n and seg[j] != "`":
                    j += 2 if seg[j] == "\\" else 1
                hidden.append((unescape_backticks(seg[i + 1 : j], state == DQ), pos + i + 1))
                i = j + 1
            elif c in "<>" and nxt == "(" and state == UNQ:
                j = _match(seg, i + 1, ")")
                hidden.append((seg[i + 2 : j], pos + i + 2))
                i = j + 1
            elif state == UNQ and c in "'\"":
                state = _SQ if c == "'" else DQ
                i += 1
                continue
            elif state == DQ and c == '"':
                state = UNQ
                i += 1
                continue
            else:
                out.append(c)
                shape.append(c if state == UNQ else _QUOTED)
                i += 1
                continue
            out.append(seg[start:i])  # an expansion the text hid: keep it as written
            shape.append(_EXPANDED)
            literal = False
        pos += n
    if state == _ANSI:
        out.append(_flush_ansi(ansi))
    literal = literal and _plain_shape(shape)
    return Lexed("".join(out), literal, _globby(shape), tuple(hidden), too_deep)


def _globby(shape: list[str]) -> bool:
    """Unquoted `*`, `?`, or a `[` closed later by `]`."""
    if "*" in shape or "?" in shape:
        return True
    return "[" in shape and "]" in shape[shape.index("[") :]


def _plain_shape(shape: list[str]) -> bool:
    """False for brace expansion and tilde forms other than `~` / `~/...`.

    `~` and `~/path` count as literal (the text keeps the `~`, and the policy treats
    such paths as outside the workspace); `~user`, `~+`, `~-` do not.
    """
    text = "".join(shape)
    if "{" in text and _BRACE.search(text):
        return False
    for k, ch in enumerate(text):
        if ch == "~" and (k == 0 or text[k - 1] in "=:"):
            prefix = re.split(r"[/:]", text[k + 1 :], maxsplit=1)[0]
            if prefix and _QUOTED not in prefix and _EXPANDED not in prefix:
                return False
    return True


_HEREDOC_WORD = re.compile(rb"[ \t]*((?:[^\s;&|<>()'\"\\]|\\.|'[^']*'?|\"(?:[^\"\\]|\\.)*\"?)*)")


def heredoc_extent(src: bytes, at: int, op: str) -> tuple[int, int, bool, int, int]:
    """For a heredoc operator ending at `at`: where its delimiter word ends, where that
    line ends, whether the delimiter is quoted (no expansion in the body), where the
    body ends and where the closing line ends (`len(src)` when there is none)."""
    m = _HEREDOC_WORD.match(src, at)
    assert m is not None  # the pattern can match the empty string
    delim = lex([(m[1].decode("utf-8", "replace"), False)]).text.encode("utf-8", "replace")
    quoted = any(q in m[1] for q in b"'\"\\")
    eol = src.find(b"\n", m.end())
    pos = eol = len(src) if eol < 0 else eol
    while pos < len(src):
        start = pos + 1
        end = src.find(b"\n", start)
        end = len(src) if end < 0 else end
        line = src[start:end]
        if (line.lstrip(b"\t") if op == "<<-" else line) == delim:
            return m.end(), eol, quoted, start, end
        pos = end
    return m.end(), eol, quoted, len(src), len(src)
