"""tree-sitter nodes -> `Word`s: the word-reading half of the walk in `shellwalk`.

A shell word may be several adjacent nodes (`$"x"`, `r\\<newline>m`); this module
glues them, unquotes the text with `shellwords.lex`, and queues every substitution
the word holds (as a node, or hidden in text tree-sitter did not look into) so the
walk emits the commands inside it too.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from tether.policy.shelltypes import Redirect, Word
from tether.policy.shellwords import Lexed, lex

__all__ = ["REDIRECTS", "Inh", "WordReader", "dec"]

REDIRECTS = frozenset(("file_redirect", "heredoc_redirect", "herestring_redirect"))
_EXPANSIONS = frozenset({"simple_expansion", "expansion", "command_substitution",
                         "process_substitution", "arithmetic_expansion"})  # fmt: skip
_PLAIN_WORD = re.compile(rb"[A-Za-z0-9_./:=@%+,^-]+")  # nothing to unquote, expand or glob
_BLANK = re.compile(rb"(?<!\\)\s")  # unescaped: tree-sitter made one word of two

Inh = tuple[Redirect, ...]  # redirects inherited from enclosing compound commands


def dec(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


class WordReader:
    """Reads the words of one source text. Nodes still to walk go on `stack` as
    `(node, inherited redirects, -1)`; text to re-read as a script goes to
    `_subparse`, which the walker provides."""

    def __init__(self, src: bytes, problems: list[str]) -> None:
        self.src, self.problems = src, problems
        self.stack: list[tuple[Node, Inh, int]] = []  # node, inherited redirects, sentinel mark

    def _subparse(self, text: bytes, at: int, inh: Inh) -> None:
        raise NotImplementedError

    def _text(self, node: Node) -> str:
        return dec(self.src[node.start_byte : node.end_byte])

    def _push(self, node: Node, inh: Inh) -> None:
        self.stack.append((node, inh, -1))

    def _glued(self, left: Node, right: Node) -> bool:
        r"""Adjacent nodes are one word (`$"x"` comes as `$` + a string), and so are
        nodes split by a line continuation (`r\<newline>m` is `rm`)."""
        gap = self.src[left.end_byte : right.start_byte]
        return not gap.replace(b"\\\n", b"")

    def _groups(self, nodes: list[Node]) -> list[list[Node]]:
        groups: list[list[Node]] = []
        for c in nodes:
            if c.type in REDIRECTS or c.type == "comment":
                continue
            if groups and self._glued(groups[-1][-1], c):
                groups[-1].append(c)
            else:
                groups.append([c])
        return groups

    def _word(self, nodes: list[Node], inh: Inh) -> Word:
        """One word from adjacent nodes; its substitutions are queued for walking."""
        start, end = nodes[0].start_byte, nodes[-1].end_byte
        raw = self.src[start:end]
        if _PLAIN_WORD.fullmatch(raw):
            return Word(raw.decode(), True, False, raw.decode())
        found: list[Node] = []
        todo = list(nodes)
        while todo:
            n = todo.pop()
            if (
                n.type == "concatenation"
                and any(
                    not self._glued(a, b) for a, b in zip(n.children, n.children[1:], strict=False)
                )
            ) or (n.type == "word" and _BLANK.search(self.src[n.start_byte : n.end_byte])):
                self.problems.append("could not parse: a word with blanks in it (`a `` b`)")
            if n.type in _EXPANSIONS:
                found.append(n)
                if n.type == "simple_expansion" and re.search(
                    rb"\s", self.src[n.start_byte : n.end_byte]
                ):
                    self.problems.append("could not parse: `$` followed by a blank")  # `a=$ x`
            else:
                todo.extend(n.children)
        segments: list[tuple[str, bool]] = []
        cur = start
        for e in sorted(found, key=lambda n: n.start_byte):
            segments.append((dec(self.src[cur : e.start_byte]), False))
            segments.append((self._text(e), True))
            cur = e.end_byte
            self._push(e, inh)
        segments.append((dec(self.src[cur:end]), False))
        lexed = lex(segments)
        self._hidden(lexed, start, inh)
        return Word(lexed.text, lexed.literal, lexed.glob, dec(raw))

    def _lex_text(self, start: int, end: int, mode: int, inh: Inh) -> None:
        """Text tree-sitter did not look into (`${x#$(cmd)}`, backticks in a heredoc)."""
        raw = self.src[start:end]
        if b"$" in raw or b"`" in raw or b"(" in raw:
            self._hidden(lex([(dec(raw), False)], mode), start, inh)

    def _hidden(self, lexed: Lexed, at: int, inh: Inh) -> None:
        if lexed.too_deep:
            self.problems.append("could not parse: expansions nested too deeply to check")
        for inner, offset in lexed.hidden:
            self._subparse(inner.encode("utf-8", "surrogatepass"), at + offset, inh)
