"""sed: in-place editing, and the script commands that write files or run programs.

The script is parsed (GNU syntax, which splits commands at `;` at least as often as
BSD sed does, so no command can hide inside what we take for a label): `w FILE`,
`W FILE` and the `s///w FILE` flag write; `e` and `s///e` run commands; `r`/`R`
read. `-i` writes every file operand (and its backup). Where GNU and BSD sed read
the same words differently (`-i` followed by a word), they are judged both ways.
"""

from __future__ import annotations

import re

from tether.policy.effects import (
    Effect,
    dynamic,
    known,
    names,
    read_paths,
    unknown,
    wild,
    write_paths,
)
from tether.policy.shellparse import Word

__all__ = ["judge_sed", "script_effects"]

_LONG = names(
    "expression file in-place line-length quiet silent regexp-extended separate unbuffered "
    "null-data zero-terminated debug sandbox posix follow-symlinks binary"
)
_FLAG_LETTERS = frozenset("nrEsuzb")


class _Unknown(Exception):
    """The script does something not known to be harmless."""


class _Invalid(_Unknown):
    """The script is not valid sed (so sed would refuse to run it)."""


def judge_sed(name: str, args: tuple[Word, ...]) -> Effect:
    """Both readings of an ambiguous `-i WORD` (GNU: script; BSD: suffix) must pass."""
    first = _judge(name, args, bsd=False) or unknown(f"{name}: the script is not valid")
    ambiguous = any(a.literal and re.fullmatch(r"-[a-zA-Z]*[iI]", a.text) for a in args)
    if not ambiguous or not first.known:
        return first
    second = _judge(name, args, bsd=True)
    if second is None:  # not a valid script when read the BSD way: sed would refuse
        return first
    if not second.known:
        return second
    return known(first.reason, first.reads + second.reads, first.writes + second.writes)


def _judge(name: str, args: tuple[Word, ...], *, bsd: bool) -> Effect | None:
    """The effect when read the GNU (or BSD) way; None if the script is invalid."""
    scripts: list[str] = []
    operands: list[Word] = []
    inplace: str | None = None
    i, n = 0, len(args)
    while i < n:
        w = args[i]
        i += 1
        t = w.text
        if dynamic(w) or wild(w):
            return unknown(f"{name}: an argument known only at run time could be a script or -i")
        if t == "--":
            operands.extend(args[i:])
            break
        if t.startswith("--"):
            given, eq, value = t[2:].partition("=")
            matches = [o for o in _LONG if o.startswith(given)] if given not in _LONG else [given]
            if len(matches) != 1:
                return unknown(f"{name} option {t} is not known")
            opt = matches[0]
            if opt in ("expression", "file", "line-length") and not eq:
                if i >= n:
                    return unknown(f"{name} {t} is missing its argument")
                value = args[i].text
                if dynamic(args[i]):
                    return unknown(f"{name}: a script known only at run time")
                i += 1
            if opt == "file":
                return unknown("sed -f reads its script from a file")
            if opt == "expression":
                scripts.append(value)
            if opt == "in-place":
                inplace = value
            continue
        if t.startswith("-") and t != "-":
            j = 1
            while j < len(t):
                c = t[j]
                j += 1
                if c in "iI":
                    inplace = t[j:]
                    if bsd and not inplace and i < n:
                        inplace = args[i].text
                        i += 1
                    break
                if c in "ef" or (c == "l" and not bsd):
                    arg = t[j:]
                    if not arg:
                        if i >= n or dynamic(args[i]):
                            return unknown(f"{name} -{c} without a known argument")
                        arg = args[i].text
                        i += 1
                    if c == "f":
                        return unknown("sed -f reads its script from a file")
                    if c == "e":
                        scripts.append(arg)
                    break
                if c not in _FLAG_LETTERS and not (bsd and c in "al"):
                    return unknown(f"{name} -{c} is not known")
            continue
        operands.append(w)
    if not scripts:
        if not operands:
            return unknown(f"{name} without a script")
        scripts.append(operands.pop(0).text)
    try:
        reads, writes = script_effects("\n".join(scripts))
    except _Invalid:
        return None
    except _Unknown as e:
        return unknown(f"{name}: {e}")
    if inplace is None:
        return _known(name, (*reads, *read_paths(operands)), writes)
    if any(map(dynamic, operands)):
        return unknown(f"{name} -i edits a path known only at run time")
    if "/" in inplace:
        return unknown(f"{name} -i with a backup directory")
    files = write_paths(operands)
    backups = tuple(_backup(f, inplace) for f in files) if inplace else ()
    return _known(name, (*reads, *files), (*writes, *files, *backups))


def _backup(path: str, suffix: str) -> str:
    head, _, base = path.rpartition("/")
    name = suffix.replace("*", base) if "*" in suffix else base + suffix
    return f"{head}/{name}" if head else name


def _known(name: str, reads: tuple[str, ...], writes: tuple[str, ...]) -> Effect:
    if writes:
        return known(f"{name} writes {', '.join(dict.fromkeys(writes))}", reads, writes)
    return known(f"{name} only reads", reads)


_SIMPLE = frozenset("=dDgGhHlnNpPxzF")
_ENDS = frozenset(";\n}#")


def script_effects(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(files read, files written) by a sed script; raises `_Unknown` otherwise."""
    reads: list[str] = []
    writes: list[str] = []
    p = _Parser(text)
    while True:
        p.skip(" \t\n;")
        if p.eof():
            break
        c = p.peek()
        if c == "#":
            p.until("\n")
            continue
        if c == "}":
            p.i += 1
            continue
        p.address()
        p.skip(" \t")
        while p.peek() == "!":
            p.i += 1
            p.skip(" \t")
        c = p.take()
        if c == "{" or c in _SIMPLE:
            if c == "l":
                p.skip_digits()
        elif c in "qQ":
            p.skip(" \t")
            p.skip_digits()
        elif c in "aic":
            body = p.until("\n")
            while body.endswith("\\") and not p.eof():
                p.i += 1
                body = p.until("\n")
            if ";" in body or "}" in body:
                raise _Unknown(f"the text of '{c}' could be read as more commands")
            continue
        elif c in ":btTv":
            p.skip(" \t")
            p.label()
        elif c in "rRwW":
            path = p.filename()
            (reads if c in "rR" else writes).append(path)
            continue
        elif c == "s":
            writes.extend(p.substitute())
            continue
        elif c == "y":
            delim = p.take()
            p.delimited(delim, brackets=False)
            p.delimited(delim, brackets=False)
        elif c == "e":
            raise _Unknown("the e command runs a shell command")
        else:
            raise _Invalid(f"unknown command {c!r}")
        p.end_of_command()
    return read_paths([Word(r) for r in reads]), write_paths([Word(w) for w in writes])


class _Parser:
    """A cursor over sed script text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def eof(self) -> bool:
        return self.i >= len(self.text)

    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def take(self) -> str:
        if self.eof():
            raise _Invalid("the script ends early")
        self.i += 1
        return self.text[self.i - 1]

    def skip(self, chars: str) -> None:
        while self.i < len(self.text) and self.text[self.i] in chars:
            self.i += 1

    def skip_digits(self) -> None:
        self.skip("0123456789")

    def until(self, stop: str) -> str:
        j = self.text.find(stop, self.i)
        j = len(self.text) if j < 0 else j
        out, self.i = self.text[self.i : j], j
        return out

    def label(self) -> None:
        while not self.eof() and self.peek() not in "; \t\n}":
            self.i += 1

    def filename(self) -> str:
        self.skip(" \t")
        name = self.until("\n")
        if not name or ";" in name or "}" in name:
            raise _Unknown("a file name that could be read as more commands")
        return name

    def end_of_command(self) -> None:
        self.skip(" \t")
        if not self.eof() and self.peek() not in _ENDS and self.text[self.i - 1] != "{":
            raise _Invalid(f"unexpected {self.peek()!r} after a command")

    def address(self) -> None:
        for part in range(2):
            c = self.peek()
            if c.isdigit():
                self.skip_digits()
                if self.peek() == "~":
                    self.i += 1
                    self.skip_digits()
            elif c == "$":
                self.i += 1
            elif c in "/\\":
                self.i += 1
                delim = self.take() if c == "\\" else "/"
                self.delimited(delim, brackets=True)
                self.skip("IM")
            elif c in "+~" and part == 1:
                self.i += 1
                self.skip_digits()
            elif part == 1:
                raise _Invalid("a range without an end address")
            else:
                return
            self.skip(" \t")
            if part == 1 or self.peek() != ",":
                return
            self.i += 1
            self.skip(" \t")

    def delimited(self, delim: str, *, brackets: bool) -> None:
        """Skip to the unescaped `delim` (GNU and BSD sed both take one inside a
        regex's `[...]` literally: `s/[^/]*$//`)."""
        if delim in ("\n", "\\", ""):
            raise _Invalid("a bad delimiter")
        in_bracket = False
        while True:
            c = self.take()
            if c == "\\":
                self.take()
            elif in_bracket:
                if c == "\n":
                    raise _Invalid("a newline inside [...]")
                if c == "[" and self.peek() in ":.=":
                    self.until(self.peek() + "]")
                    self.i += 2
                elif c == "]":
                    in_bracket = False
            elif c == delim:
                return
            elif brackets and c == "[":
                in_bracket = True
                if self.peek() == "^":
                    self.i += 1
                if self.peek() == "]":
                    self.i += 1

    def substitute(self) -> list[str]:
        delim = self.take()
        self.delimited(delim, brackets=True)
        self.delimited(delim, brackets=False)
        while not self.eof() and self.peek() not in _ENDS:
            f = self.take()
            if f == "w":
                return [self.filename()]
            if f == "e":
                raise _Unknown("the s///e flag runs the result as a command")
            if f in " \t":
                self.end_of_command()
                break
            if not (f.isdigit() or f in "gpiImM"):
                raise _Invalid(f"unknown s flag {f!r}")
        return []
