"""The shellparse tree walk: one tree-sitter tree -> the simple commands it runs.

Statements, pipelines, compound commands, redirects and assignments are taken
apart here; words come from `shellread`, and the grammar's blind spots are made
up for by `shellfix`. Text that needs re-reading (escaped backticks, a broken
heredoc line, substitutions tree-sitter left as text) goes to a nested walker.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from tether.policy.shellfix import (
    backtick_text,
    in_arith,
    in_double_quotes,
    scan_errors,
    standin_tree,
)
from tether.policy.shellread import REDIRECTS, Inh, WordReader, dec
from tether.policy.shelltypes import Redirect, SimpleCommand, Word
from tether.policy.shellwords import DQ, HEREDOC, UNQ, heredoc_extent

__all__ = ["Walker"]

_INERT = frozenset({"comment", "raw_string", "ansi_c_string", "number", "variable_name",
                    "file_descriptor", "special_variable_name", "test_operator",
                    "heredoc_start", "heredoc_end"})  # fmt: skip
_LEAF_MODES = {"string_content": DQ, "heredoc_content": HEREDOC, "heredoc_body": HEREDOC}
_ASSIGN_WORD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[[^]]*\])?\+?=")
_MAX_DEPTH = 25


class Walker(WordReader):
    """Walks one tree with an explicit stack (long `&&` chains nest deeply) and appends
    `(position, command)` to the shared `out`."""

    def __init__(
        self, src: bytes, base: int, out: list[tuple[int, SimpleCommand]], problems: list[str],
        depth: int,
    ) -> None:  # fmt: skip
        super().__init__(src, problems)
        self.base, self.out, self.depth = base, out, depth
        self.benign: set[int] = set()  # MISSING nodes that are tree-sitter gaps, not errors

    def run(self, inh: Inh) -> None:
        root = standin_tree(self.src).root_node
        self.stack.append((root, inh, -1))
        while self.stack:
            node, inh, mark = self.stack.pop()
            if mark < 0:
                self._visit(node, inh)
            elif len(self.out) == mark:  # a redirected compound ran no simple command
                self._emit(node.start_byte, (), [], inh, node.end_byte)
        self.problems.extend(scan_errors(root, self.src, self.benign, self.depth))

    def _visit(self, node: Node, inh: Inh) -> None:
        t = node.type
        if t == "command" and node.start_byte == node.end_byte:  # `$( ;; )`: made up
            line = self.src.count(b"\n", 0, node.start_byte) + 1
            self.problems.append(f"could not parse: a command is missing on line {line}")
        elif t == "command":
            self._command(node, inh, [], node.end_byte, [])
        elif t == "redirected_statement":
            self._redirected(node, inh)
        elif t in ("variable_assignment", "variable_assignments") and not in_arith(node):
            kids = [node] if t == "variable_assignment" else node.named_children
            assigns = [
                self._assignment(c, inh, []) for c in kids if c.type == "variable_assignment"
            ]
            self.stack.extend((c, inh, -1) for c in kids if c.type != "variable_assignment")
            self._emit(node.start_byte, (), assigns, inh, node.end_byte)
        elif t in ("declaration_command", "unset_command"):  # `export A=$(x)`: words
            kids, redirs, more = node.children, [], []
            for c in kids:
                if c.type in REDIRECTS:
                    found, _, extra = self._redirect(c, inh)
                    redirs.extend(found)
                    more.extend(extra)
            words = [Word(self._text(kids[0]))]
            words.extend(self._word(g, inh) for g in self._groups(kids[1:]))
            self._emit(node.start_byte, (*words, *more), [], (*redirs, *inh), node.end_byte)
        elif t == "function_definition":
            name = node.child_by_field_name("name")
            self.problems.append(f"defines a function {self._text(name) if name else ''!r}")
            self._redirected(node, inh)
        elif t == "command_substitution" and self._reparse_backticks(node, inh):
            pass
        elif t in REDIRECTS:  # bare in `$(<file)` or after error recovery
            found, end, more = self._redirect(node, inh)  # `$(< f x)` runs x
            self._emit(node.start_byte, tuple(more), [], (*found, *inh), end)
        elif t == "ERROR" and node.children and node.children[0].type == "$((":
            self._lex_text(node.start_byte, node.end_byte, UNQ, inh)  # `$((a); b)`
        elif t == "ERROR" and node.children and node.children[0].type == "((":  # `((a); b)`
            self._subparse(
                b"( " + self.src[node.start_byte + 1 : node.end_byte], node.start_byte, inh
            )
        elif t == "ERROR" and any(c.type == "heredoc_start" for c in node.children):
            self._heredoc_error(node, inh)
        elif node.child_count == 0:
            if t == "raw_string" and in_double_quotes(node):  # "${x:-'$(cmd)'}" runs cmd
                self._lex_text(node.start_byte, node.end_byte, DQ, inh)
            elif node.is_named and t not in _INERT:
                self._lex_text(node.start_byte, node.end_byte, _LEAF_MODES.get(t, UNQ), inh)
        else:
            self.stack.extend((c, inh, -1) for c in node.named_children)

    def _command(
        self, node: Node, inh: Inh, extra: list[Redirect], end: int, more: list[Word]
    ) -> None:
        parts: list[list[Node]] = []  # assignments, redirects, words; each + glued nodes
        for i, c in enumerate(node.children):
            if node.field_name_for_child(i) in ("name", "argument"):
                if c.named_child_count == 1 and c.named_children[0].is_missing:
                    self.benign.add(c.named_children[0].id)  # tree-sitter: `a=1 >f` (no name)
                elif (
                    parts
                    and parts[-1][0].type != "heredoc_redirect"
                    and self._glued(parts[-1][-1], c)
                ):
                    parts[-1].append(c)  # `a=b\<newline>c`, `>a\<newline>b`, `2>&1x`
                else:
                    parts.append([c])
            elif c.type == "variable_assignment" or c.type in REDIRECTS:
                parts.append([c])
            elif c.is_named and c.type != "comment":
                self._push(c, inh)
        assigns, redirs, words = [], [], []
        for p in parts:
            if p[0].type == "variable_assignment":
                assigns.append(self._assignment(p[0], inh, p[1:]))
            elif p[0].type in REDIRECTS:  # tree-sitter: `cmd >o x` gives `x` to the redirect
                found, _, extra_words = self._redirect(p[0], inh, p[1:])
                redirs.extend(found)
                words.extend(extra_words)
            else:
                words.append(self._word(p, inh))
        words.extend(more)
        while words and (m := _ASSIGN_WORD.match(words[0].raw.replace("\\\n", ""))):
            w = words.pop(0)  # `a\<newline>=1 cmd`: tree-sitter missed the assignment
            value = w.text.partition("=")[2]
            assigns.append((m[1], Word(value, w.literal, w.glob, w.raw.partition("=")[2])))
        if words or assigns or redirs or extra:
            end = max(end, node.end_byte)
            self._emit(node.start_byte, tuple(words), assigns, (*redirs, *extra, *inh), end)

    def _emit(
        self, start: int, words: tuple[Word, ...], assigns: list[tuple[str, Word]], redirects: Inh,
        end: int,
    ) -> None:  # fmt: skip
        opaque: tuple[str, ...] = ()
        if words and not words[0].literal:
            opaque = ("the command name is not a literal word (it is expanded when it runs)",)
        elif words and words[0].glob:
            opaque = ("the command name is a glob pattern",)
        elif words and not words[0].text:
            opaque = ("the command name is empty after expansion",)
        cmd = SimpleCommand(words, tuple(assigns), redirects, dec(self.src[start:end]), opaque)
        self.out.append((self.base + start, cmd))

    def _subparse(self, text: bytes, at: int, inh: Inh) -> None:
        if self.depth >= _MAX_DEPTH:
            self.problems.append("could not parse: substitutions nested too deeply to check")
        else:
            Walker(text, self.base + at, self.out, self.problems, self.depth + 1).run(inh)

    def _reparse_backticks(self, node: Node, inh: Inh) -> bool:
        """Re-read a backtick substitution whose text bash unescapes (`backtick_text`)."""
        text = backtick_text(self.src, node)
        if text is None:
            return False
        self._subparse(text.encode("utf-8", "surrogatepass"), node.start_byte + 1, inh)
        return True

    def _heredoc_error(self, node: Node, inh: Inh) -> None:
        """tree-sitter fails on `cat <<EOF; rm y` (an operator after the delimiter):
        re-read the rest of that line, the body and what follows the end line."""
        op = next(c for c in node.children if c.type in ("<<", "<<-", "heredoc_start"))
        self.stack.extend((c, inh, -1) for c in node.named_children if c.end_byte <= op.start_byte)
        word_end, eol, quoted, body_end, after = heredoc_extent(self.src, op.end_byte, op.type)
        rest = self.src[word_end:eol]
        lead = len(rest) - len(rest.lstrip(b" \t;&|"))
        self._subparse(rest[lead:], word_end + lead, inh)
        if not quoted:
            self._lex_text(eol + 1, body_end, HEREDOC, inh)
        if after < node.end_byte:
            self._subparse(self.src[after : node.end_byte], after, inh)

    def _assignment(self, node: Node, inh: Inh, glued: list[Node]) -> tuple[str, Word]:
        name = node.child_by_field_name("name")
        if name is not None and name.type == "subscript":
            self._push(name, inh)  # `a[$(cmd)]=1` runs cmd
            name = name.child_by_field_name("name")
        kids = node.children
        ops = [i for i, c in enumerate(kids) if c.type in ("=", "+=")]
        values = [*(kids[ops[0] + 1 :] if ops else []), *glued]
        value = self._word(values, inh) if values else Word("", raw="")
        return (self._text(name) if name is not None else ""), value

    def _redirected(self, node: Node, inh: Inh) -> None:
        """A statement with redirects (or a function definition). Each simple command
        inside may write there; if none runs, `[[ x ]] >f` still creates f."""
        body: Node | None = None
        own: list[Redirect] = []
        more: list[Word] = []  # tree-sitter: `cmd >o x` has `x` as a second destination
        head = node.start_byte
        for i, c in enumerate(node.children):
            if node.field_name_for_child(i) == "body":
                body = c
            elif c.type in REDIRECTS:
                found, end, extra = self._redirect(c, inh)
                own.extend(found)
                more.extend(extra)
                head = max(head, end)
            elif c.is_named and node.type != "function_definition":
                self._push(c, inh)
        while body is not None and body.type == "pipeline":  # `a | b >f`: only b writes f
            parts = body.named_children
            self.stack.extend((part, inh, -1) for part in parts[:-1])
            body = parts[-1] if parts else None
        if body is None:
            self._emit(node.start_byte, tuple(more), [], (*own, *inh), head)
        elif body.type == "command":
            self._command(body, inh, own, head, more)
        else:
            if more:  # bash: `{ ls; } >o x` is a syntax error
                self.problems.append("could not parse: words after a redirect of a compound")
            self.stack.append((node, (*own, *inh), len(self.out)))
            self._push(body, (*own, *inh))

    def _redirect(
        self, node: Node, inh: Inh, glued: list[Node] | tuple[()] = ()
    ) -> tuple[list[Redirect], int, list[Word]]:
        """The redirects of one redirect node (a heredoc carries those written after
        its start), where its head ends (a heredoc body is not its text), and words
        tree-sitter put after the target that are the command's arguments."""
        t = node.type
        fd: int | None = None
        op, quoted, nested, more = "", False, [], []
        start: Node | None = None  # the heredoc delimiter (and what is glued to it)
        targets: list[Node] = []
        head = node.start_byte if t == "heredoc_redirect" else node.end_byte
        for i, c in enumerate(node.children):
            ct = c.type
            if ct == "file_descriptor":
                digits = self.src[c.start_byte : c.end_byte]
                fd = int(digits) if digits.isdigit() and len(digits) < 9 else None
            elif not c.is_named and not op:
                op = ct
            elif ct == "heredoc_start":
                quoted = any(q in self.src[c.start_byte : c.end_byte] for q in b"'\"\\")
                head = max(head, c.end_byte)
                start = c
            elif node.field_name_for_child(i) == "argument":  # `sed <<EOF -i f`: sed's words
                if b"\n" in self.src[head : c.end_byte].replace(b"\\\n", b""):
                    continue  # not on the heredoc's line: error recovery
                if start is not None and self._glued(start, c):
                    start = c  # `<<"E"F`: still the delimiter
                else:
                    targets.append(c)
                    start = None
                head = c.end_byte
            elif ct == "heredoc_body":
                if not quoted:
                    self._push(c, inh)
            elif ct in REDIRECTS:
                found, end, extra = self._redirect(c, inh)
                nested.extend(found)
                more.extend(extra)
                head = max(head, end)
            elif node.field_name_for_child(i) == "destination" or (
                t == "herestring_redirect" and c.is_named
            ):
                targets.append(c)
            elif c.is_named and ct != "heredoc_end":
                self._push(c, inh)  # the rest of a pipeline or list after `<<EOF`
        groups: list[list[Node]] = [[]] if t == "heredoc_redirect" else []  # no file target
        first, *rest = groups + self._groups([*targets, *glued]) or [[]]
        target = self._word(first, inh) if first else None
        if op in (">&", "<&") and target is not None and target.literal:
            target = None if target.text.isdigit() or target.text == "-" else target
        more[:0] = [self._word(g, inh) for g in rest]
        if rest:
            head = max(head, rest[-1][-1].end_byte)
        return [Redirect(op, target, fd), *nested], head, more
