"""Where tree-sitter-bash reads bash differently, and how the shell walk makes up for it.

The walk in `shellwalk` trusts the tree; this module keeps the tree trustworthy. It
builds the same-length stand-in text tree-sitter parses (non-ASCII as letters, line
continuations as blanks, no `time` / `coproc` keywords), answers the node questions
the grammar gets wrong (arithmetic assignments, quotes inside "...", backticks) and
turns the ERROR / MISSING nodes left in a tree into problems.
"""

from __future__ import annotations

import functools
import re

import tree_sitter_bash
from tree_sitter import Language, Node, Parser, Tree

from tether.policy.shellwords import unescape_backticks

__all__ = [
    "ascii_safe",
    "backtick_text",
    "blank_continuations",
    "in_arith",
    "in_double_quotes",
    "scan_errors",
    "standin_tree",
]

_ARITH = frozenset({"c_style_for_statement", "binary_expression", "unary_expression",
                    "ternary_expression", "parenthesized_expression", "postfix_expression",
                    "arithmetic_expansion", "test_command"})  # fmt: skip
_COPROC_NAME = re.compile(rb"([ \t]+[A-Za-z_][A-Za-z0-9_]*)[ \t]+(?:\{[ \t\n]|\()")
_MAX_PROBLEMS = 5
_BLANKS = b" \t\n;&|()<>"
_SAFE = bytes(range(128)) + bytes(65 + (b % 26) for b in range(128, 256))


@functools.cache
def _parser() -> Parser:
    """The one tree-sitter parser, built on first use (loading the grammar costs time)."""
    return Parser(Language(tree_sitter_bash.language()))


def standin_tree(src: bytes) -> Tree:
    """Parse a same-length stand-in of the source that tree-sitter reads the way
    bash does: non-ASCII as letters (a crash, see `ascii_safe`), line continuations
    as blanks, and no `time [-p]` / `coproc [NAME]` keywords, which tree-sitter
    reads as command words (`time { rm x; }` -> the words `time { rm x`)."""
    text = ascii_safe(src)
    tree = _parser().parse(text)
    if b"\\\n" in text:  # tree-sitter mis-joins words across `\<newline>`: blank them
        text = blank_continuations(text, _protected(tree.root_node))
        tree = _parser().parse(text)
    for _ in range(8):
        spans = _keyword_spans(tree.root_node, text) if b"time" in text or b"coproc" in text else []
        if not spans:
            break
        buf = bytearray(text)
        for a, b in spans:
            buf[a:b] = b" " * (b - a)
        text = bytes(buf)
        tree = _parser().parse(text)
    return tree


def ascii_safe(src: bytes) -> bytes:
    """Non-ASCII bytes as letters, same length. tree-sitter-bash 0.25 segfaults on `{`
    followed by some 4-byte UTF-8 characters (upstream issue #337); bash treats
    non-ASCII bytes as ordinary word characters, so letters parse the same."""
    return src if src.isascii() else src.translate(_SAFE)


def blank_continuations(text: bytes, protected: list[tuple[int, int]]) -> bytes:
    """`\\<newline>` as two blanks, outside `protected` spans (same length, so offsets
    hold). The parser glues words split only by one (`r\\<newline>m` is `rm`); a `#`
    glued that way is inside a word, not a comment (`a\\<newline>#b` is `a#b`)."""
    out = bytearray(text)
    for m in re.finditer(rb"(\\+)\n", text):
        pos = m.end() - 2
        if len(m[1]) % 2 and not any(a <= pos < b for a, b in protected):
            out[pos : pos + 2] = b"  "
            before = pos
            while text[before - 2 : before] == b"\\\n":
                before -= 2
            if text[pos + 2 : pos + 3] == b"#" and before and text[before - 1] not in _BLANKS:
                out[pos + 2] = ord("_")
    return bytes(out)


def _protected(root: Node) -> list[tuple[int, int]]:
    """Where `\\<newline>` is not a line continuation: comments, '...', heredoc bodies."""
    spans, todo = [], [root]
    while todo:
        n = todo.pop()
        if n.type in ("comment", "raw_string", "ansi_c_string", "heredoc_body"):
            spans.append((n.start_byte, n.end_byte))
        else:
            todo.extend(n.children)
    return spans


def _keyword_spans(root: Node, text: bytes) -> list[tuple[int, int]]:
    """Spans of `time [-p]` and `coproc [NAME]` used as the command word."""
    spans: list[tuple[int, int]] = []
    todo = [root]
    while todo:
        n = todo.pop()
        todo.extend(n.named_children)
        name = n.children[0] if n.type == "command" else None
        if name is None or name.type != "command_name":
            continue
        word, end, nxt = text[name.start_byte : name.end_byte], name.end_byte, name.next_sibling
        if word == b"time" and nxt is not None and text[nxt.start_byte : nxt.end_byte] == b"-p":
            end = nxt.end_byte
        elif word == b"coproc" and (m := _COPROC_NAME.match(text, end)):
            end = m.end(1)
        if word in (b"time", b"coproc"):
            spans.append((name.start_byte, end))
    return spans


def in_arith(node: Node) -> bool:
    """`for ((i=0; ...))` and `(( x = 1 ))` assign in arithmetic, not as statements."""
    parent = node.parent
    if parent is None:
        return False
    return parent.type in _ARITH or (
        parent.type == "compound_statement" and parent.children[0].type == "(("
    )


def in_double_quotes(node: Node) -> bool:
    """Inside "..." (or a heredoc body) single quotes are plain characters."""
    parent = node.parent
    while parent is not None and parent.type not in ("command", "program", "command_substitution"):
        if parent.type in ("string", "heredoc_body"):
            return True
        parent = parent.parent
    return False


def backtick_text(src: bytes, node: Node) -> str | None:
    """In `...` bash first drops backslashes before $ ` \\, so `echo \\`rm x\\``
    runs `rm x`; tree-sitter keeps them. The unescaped text of a backtick command
    substitution when it differs (the walk re-reads it), else None."""
    kids = node.children
    if kids[0].type != "`":
        return None
    close = len(kids) > 1 and kids[-1].type == "`" and not kids[-1].is_missing
    inner = src[node.start_byte + 1 : node.end_byte - close].decode("utf-8", "replace")
    parent = node.parent
    text = unescape_backticks(inner, parent is not None and parent.type == "string")
    return None if text == inner else text


def scan_errors(root: Node, src: bytes, benign: set[int], depth: int) -> list[str]:
    """Every ERROR / MISSING node is a problem: the script may not run as parsed.
    `benign` are the ids of MISSING nodes that are tree-sitter gaps, not errors."""
    found: list[tuple[int, str]] = []
    todo = [root] if root.has_error else []
    while todo:
        n = todo.pop()
        if n.is_missing and n.id not in benign:
            found.append((n.start_byte, f"missing {n.type!r}"))
        elif n.is_error:
            text = src[n.start_byte : n.end_byte].decode("utf-8", "replace")
            found.append((n.start_byte, f"unexpected {text[:40]!r}"))
        else:
            todo.extend(c for c in n.children if c.has_error)
    where = " in a nested part" if depth else ""
    problems = []
    for pos, what in sorted(found)[:_MAX_PROBLEMS]:
        line = src.count(b"\n", 0, pos) + 1
        col = pos - src.rfind(b"\n", 0, pos)
        problems.append(f"could not parse: {what} at line {line}, column {col}{where}")
    if len(found) > _MAX_PROBLEMS:
        problems.append(f"could not parse: {len(found) - _MAX_PROBLEMS} more errors")
    return problems
