"""awk: programs that run commands, pipe, or print into files.

The program text is tokenised (strings, regex literals, comments) so that `||` and
`/a|b/` are not taken for pipes. Not known: `system(...)`, any `|` or `|&` pipe,
gawk's `@include`/`@load`/indirect calls, program files (`-f`), extensions
(`-l`), profiling and dump files. `print > "file"` writes that file (a
non-string target is not known); `getline < "file"` reads it.
"""

from __future__ import annotations

import re
from types import MappingProxyType

from tether.policy.argscan import Spec, scan
from tether.policy.effects import Effect, known, names, read_paths, unknown, write_paths
from tether.policy.shellparse import Word

__all__ = ["judge_awk", "program_effects"]

_UNKNOWN_OPTS = {
    "f": "awk -f runs a program file",
    "file": "awk -f runs a program file",
    "E": "awk -E runs a program file",
    "exec": "awk -E runs a program file",
    "i": "awk -i includes a program file",
    "include": "awk -i includes a program file",
    "l": "awk -l loads an extension library",
    "load": "awk -l loads an extension library",
    "W": "awk -W options are not known",
    "o": "awk -o writes a file",
    "pretty-print": "awk -o writes a file",
    "p": "awk -p writes a profile file",
    "profile": "awk -p writes a profile file",
    "d": "awk -d writes a variables file",
    "dump-variables": "awk -d writes a variables file",
    "D": "awk -D starts a debugger",
    "debug": "awk -D starts a debugger",
}
_SPEC = Spec(
    short_arg="FvfEilWe",
    short_optarg="odpDL",
    long_arg=MappingProxyType(
        dict.fromkeys(("source", "field-separator", "assign", "file", "exec", "include", "load"), 1)
    ),
    unknown=MappingProxyType(_UNKNOWN_OPTS),
)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def judge_awk(name: str, args: tuple[Word, ...]) -> Effect:
    """Options up to the program, the program, then input files and `var=value`s."""
    s = scan(_SPEC, args, stop_at_operand=True)
    if s.problem:
        return unknown(f"{name}: {s.problem}")
    if s.hidden:
        return unknown(f"{name}: an argument known only at run time could be an option")
    programs: list[str] = []
    for o in s.opts:
        if o.name in _SPEC.unknown:
            return unknown(_SPEC.unknown[o.name])
        if o.name in ("e", "source") and o.args:
            if not o.args[0].literal:
                return unknown(f"{name}: a program known only at run time")
            programs.append(o.args[0].text)
    rest = list(s.rest)
    if rest and rest[0].text == "--" and rest[0].literal:
        rest.pop(0)
    if not programs:
        if not rest:
            return unknown(f"{name} without a program")
        prog = rest.pop(0)
        if not prog.literal:
            return unknown(f"{name}: a program known only at run time")
        programs.append(prog.text)
    try:
        reads, writes = program_effects("\n".join(programs))
    except ValueError as e:
        return unknown(f"{name}: {e}")
    files = [w for w in rest if not (w.literal and _ASSIGNMENT.match(w.text))]
    all_reads = (*reads, *read_paths(files))
    if writes:
        return known(f"{name} writes {', '.join(writes)}", all_reads, writes)
    return known(f"{name} only reads", all_reads)


_TOKEN = re.compile(
    r"""(?P<space>[ \t\r]+|\\\n)|(?P<comment>\#[^\n]*)|(?P<newline>\n)
    |(?P<string>"(?:[^"\\\n]|\\.)*")|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<number>\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+)
    |(?P<op>\|\||\|&|&&|>>|>=|<=|==|!=|!~|\+\+|--|[-+*%^!=<>~?:,;(){}\[\]$|&]=?)
    |(?P<slash>/)|(?P<other>.)""",
    re.X | re.S,
)
_KEYWORDS = names("print printf return in do else getline if while for delete case exit")
_OPERANDS = frozenset({"string", "number"})


def _regex(text: str, i: int) -> int:
    """Index just after the regex literal starting at `text[i] == '/'`."""
    j = i + 1
    in_bracket = False
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == "\n":
            raise ValueError("a regex literal runs past the line")
        if in_bracket:
            if c == "/":
                raise ValueError("a / inside [...] is read differently by awk versions")
            if c == "]":
                in_bracket = False
        elif c == "[":
            in_bracket = True
            if text[j + 1 : j + 2] == "^":
                j += 1
            if text[j + 1 : j + 2] == "]":
                j += 1
        elif c == "/":
            return j + 1
        j += 1
    raise ValueError("an unterminated regex literal")


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) tokens; regex literals and comments are dropped."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        m = _TOKEN.match(text, i)
        if m is None:  # pragma: no cover - the pattern matches any character
            raise ValueError("cannot read the program")
        kind = m.lastgroup or "other"
        if kind == "slash":
            prev_kind, prev = out[-1] if out else ("op", "")
            operand = (
                prev_kind in _OPERANDS
                or (prev_kind == "ident" and prev not in _KEYWORDS)
                or prev in (")", "]", "++", "--", "$")
            )
            if not operand:
                i = _regex(text, i)
                out.append(("regex", ""))
                continue
            out.append(("op", "/"))
        elif kind == "other" and m.group() == "@":
            raise ValueError("gawk @-directives and indirect calls can run anything")
        elif kind == "other" and m.group() == '"':
            raise ValueError("an unterminated string")
        elif kind not in ("space", "comment"):
            out.append((kind, m.group()))
        i = m.end()
    return out


def program_effects(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(files read, files written) by an awk program; ValueError if not known."""
    if re.search(r"\bsystem\b", text):
        raise ValueError("system() runs a command")
    toks = _tokens(text)
    reads: list[str] = []
    writes: list[str] = []
    depth = 0
    print_depth: int | None = None
    for k, (kind, tok) in enumerate(toks):
        if tok in ("(", "["):
            depth += 1
        elif tok in (")", "]"):
            depth -= 1
        elif tok in ("|", "|&"):
            raise ValueError("a pipe runs a command")
        elif kind == "newline" or tok in (";", "{", "}"):
            print_depth = None
        elif kind == "ident" and tok in ("print", "printf"):
            print_depth = depth
        elif tok in (">", ">>") and print_depth == depth:
            writes.append(_target(toks, k + 1, "print", _PRINT_END))
        elif kind == "ident" and tok == "getline":
            target = _getline_source(toks, k + 1, depth)
            if target is not None:
                reads.append(target)
    return read_paths([Word(r) for r in reads]), write_paths([Word(w) for w in writes])


_PRINT_END = frozenset({"\n", ";", "}"})
_GETLINE_END = frozenset({"\n", ";", "}", ")", "&&", "||"})


def _target(toks: list[tuple[str, str]], k: int, what: str, ends: frozenset[str]) -> str:
    """The file named by one string right after `>`/`<`, the statement ending there
    (`print > "." "./../x"` concatenates: that name is known only at run time)."""
    after = toks[k + 1][1] if k + 1 < len(toks) else "\n"
    if k < len(toks) and toks[k][0] == "string" and after in ends:
        return toks[k][1][1:-1]
    raise ValueError(f"{what} redirects to a file named only at run time")


def _getline_source(toks: list[tuple[str, str]], k: int, depth: int) -> str | None:
    """The file `getline [var] < "file"` reads, None when it reads the input."""
    d = depth
    while k < len(toks):
        kind, tok = toks[k]
        if tok in ("(", "["):
            d += 1
        elif tok in (")", "]"):
            d -= 1
            if d < depth:
                return None
        elif kind == "newline" or tok in (";", "{", "}", "&&", "||", "?", ":", ","):
            if d == depth:
                return None
        elif tok == "<" and d == depth:
            return _target(toks, k + 1, "getline", _GETLINE_END)
        k += 1
    return None
