"""Bash source -> the simple commands that would run (via tree-sitter-bash).

Pure syntax, no judgement: every simple command anywhere in the script — in
pipelines, lists, subshells, command and process substitutions (also inside double
quotes, `${x:=...}` and heredocs), function bodies, loops and conditionals — comes
out as a `SimpleCommand` with its words unquoted, its leading assignments and its
redirections. What cannot be proven to be plain words is marked, not guessed.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import tree_sitter_bash
from tree_sitter import Language, Node, Parser, Tree

from tether.policy.shellwords import (
    DQ,
    HEREDOC,
    UNQ,
    Lexed,
    ascii_safe,
    blank_continuations,
    heredoc_extent,
    lex,
    unescape_backticks,
)

__all__ = ["ParsedScript", "Redirect", "SimpleCommand", "Word", "parse"]


@dataclass(frozen=True, slots=True)
class Word:
    """One shell word.

    `text` is the value after quote removal and escape processing (`r''m`, `"rm"`,
    `\\rm` and `$'\\x72m'` all give "rm"). `literal` is False when the value is not
    known before running: it contains a parameter expansion, a command or process
    substitution, arithmetic, or a brace/tilde expansion the parser did not resolve.
    `glob` is True when it has unquoted `*`, `?` or `[` (a pattern for paths).
    """

    text: str
    literal: bool = True
    glob: bool = False
    raw: str = ""


@dataclass(frozen=True, slots=True)
class Redirect:
    """A redirection: `op` as written (">", ">>", "<", "2>", "&>", ">|", "<<", "<<<",
    ">&", "<&", ...), `fd` the explicit descriptor number if any, `target` the file
    word (None when it duplicates a descriptor like `2>&1`, or for heredocs)."""

    op: str
    target: Word | None
    fd: int | None = None


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One command that would run: `words[0]` is the command name.

    `assignments` are the leading `NAME=value` pairs. `opaque` lists reasons the
    command cannot be proven to be plain words (e.g. "the command name comes from
    a variable"); an empty tuple means it is fully known. `source` is its text.
    """

    words: tuple[Word, ...]
    assignments: tuple[tuple[str, Word], ...] = ()
    redirects: tuple[Redirect, ...] = ()
    source: str = ""
    opaque: tuple[str, ...] = ()

    @property
    def argv(self) -> tuple[str, ...]:
        return tuple(w.text for w in self.words)


@dataclass(frozen=True, slots=True)
class ParsedScript:
    """All simple commands of a script, plus script-level problems.

    `problems` are reasons the script as a whole cannot be proven plain: a parse
    error, a function definition, an alias, `trap`, ... (each at least "ask").
    """

    commands: tuple[SimpleCommand, ...]
    problems: tuple[str, ...] = ()


_EXPANSIONS = frozenset({"simple_expansion", "expansion", "command_substitution",
                         "process_substitution", "arithmetic_expansion"})  # fmt: skip
_REDIRECTS = frozenset(("file_redirect", "heredoc_redirect", "herestring_redirect"))
_INERT = frozenset({"comment", "raw_string", "ansi_c_string", "number", "variable_name",
                    "file_descriptor", "special_variable_name", "test_operator",
                    "heredoc_start", "heredoc_end"})  # fmt: skip
_LEAF_MODES = {"string_content": DQ, "heredoc_content": HEREDOC, "heredoc_body": HEREDOC}
_ARITH = frozenset({"c_style_for_statement", "binary_expression", "unary_expression",
                    "ternary_expression", "parenthesized_expression", "postfix_expression",
                    "arithmetic_expansion", "test_command"})  # fmt: skip
_PLAIN_WORD = re.compile(rb"[A-Za-z0-9_./:=@%+,^-]+")  # nothing to unquote, expand or glob
_ASSIGN_WORD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[[^]]*\])?\+?=")
_COPROC_NAME = re.compile(rb"([ \t]+[A-Za-z_][A-Za-z0-9_]*)[ \t]+(?:\{[ \t\n]|\()")
_BLANK = re.compile(rb"(?<!\\)\s")  # unescaped: tree-sitter made one word of two
_MAX_DEPTH, _MAX_PROBLEMS = 25, 5

Inh = tuple[Redirect, ...]  # redirects inherited from enclosing compound commands


@functools.cache
def _parser() -> Parser:
    """The one tree-sitter parser, built on first use (loading the grammar costs time)."""
    return Parser(Language(tree_sitter_bash.language()))


def parse(source: str) -> ParsedScript:
    """Every simple command `source` could run, in source order, plus its problems.

    Never raises: input is untrusted model output, so an internal failure becomes
    a problem (which makes the verdict at least "ask") instead of a traceback.
    """
    commands, problems = _parse_once(source)
    dangling = _DANGLING.search(source)
    if dangling:
        problems.append(f"could not parse: the line ends with {dangling[1]!r} (bash would wait)")
    if problems:
        # Where tree-sitter went wrong, bash may still run commands it lost. Read the
        # text again in simpler pieces and judge whatever they show as well: extra
        # commands can only make the verdict stricter, and it is at least "ask" already.
        seen = set(commands)
        for variant in _fallback_variants(source):
            for command in _parse_once(variant)[0]:
                if command not in seen:
                    seen.add(command)
                    commands.append(command)
    return ParsedScript(tuple(commands), tuple(dict.fromkeys(problems)))


def _parse_once(source: str) -> tuple[list[SimpleCommand], list[str]]:
    out: list[tuple[int, SimpleCommand]] = []
    problems: list[str] = []
    try:
        _Walker(source.encode("utf-8", "surrogatepass"), 0, out, problems, 0).run(())
    except Exception as exc:  # pragma: no cover - defensive; tests assert it never happens
        problems.append(f"could not parse: internal error ({type(exc).__name__})")
    out.sort(key=lambda item: item[0])
    return [cmd for _, cmd in out], problems


_DANGLING = re.compile(r"(?<!\\)(\|\||&&|\|&|\|)\s*\Z")


def _fallback_variants(source: str) -> list[str]:
    """Simpler readings of a script tree-sitter could not read: each line on its own
    (`echo hi⏎\\sudo ls` is two commands to bash), and `$((` read as `$( (`, a
    command substitution holding a subshell, as bash reads it when it is no arithmetic."""
    variants = [line for line in source.split("\n") if line.strip()] if "\n" in source else []
    if "$((" in source:
        variants.append(source.replace("$((", "$( ("))
    return [v for v in variants if v != source][:50]


def _dec(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


class _Walker:
    """Walks one tree with an explicit stack (long `&&` chains nest deeply) and appends
    `(position, command)` to the shared `out`. Text that needs re-reading (escaped
    backticks, substitutions tree-sitter left as text) goes to a nested walker."""

    def __init__(
        self, src: bytes, base: int, out: list[tuple[int, SimpleCommand]], problems: list[str],
        depth: int,
    ) -> None:  # fmt: skip
        self.src, self.base, self.out, self.problems, self.depth = src, base, out, problems, depth
        self.stack: list[tuple[Node, Inh, int]] = []  # node, inherited redirects, sentinel mark
        self.benign: set[int] = set()  # MISSING nodes that are tree-sitter gaps, not errors

    def run(self, inh: Inh) -> None:
        root = self._tree().root_node
        self.stack.append((root, inh, -1))
        while self.stack:
            node, inh, mark = self.stack.pop()
            if mark < 0:
                self._visit(node, inh)
            elif len(self.out) == mark:  # a redirected compound ran no simple command
                self._emit(node.start_byte, (), [], inh, node.end_byte)
        self._scan_errors(root)

    def _tree(self) -> Tree:
        """Parse a same-length stand-in of the source that tree-sitter reads the way
        bash does: non-ASCII as letters (a crash, see `ascii_safe`), line continuations
        as blanks, and no `time [-p]` / `coproc [NAME]` keywords, which tree-sitter
        reads as command words (`time { rm x; }` -> the words `time { rm x`)."""
        text = ascii_safe(self.src)
        tree = _parser().parse(text)
        if b"\\\n" in text:  # tree-sitter mis-joins words across `\<newline>`: blank them
            text = blank_continuations(text, _protected(tree.root_node))
            tree = _parser().parse(text)
        for _ in range(8):
            spans = (
                _keyword_spans(tree.root_node, text) if b"time" in text or b"coproc" in text else []
            )
            if not spans:
                break
            buf = bytearray(text)
            for a, b in spans:
                buf[a:b] = b" " * (b - a)
            text = bytes(buf)
            tree = _parser().parse(text)
        return tree

    def _text(self, node: Node) -> str:
        return _dec(self.src[node.start_byte : node.end_byte])

    def _push(self, node: Node, inh: Inh) -> None:
        self.stack.append((node, inh, -1))

    def _visit(self, node: Node, inh: Inh) -> None:
        t = node.type
        if t == "command" and node.start_byte == node.end_byte:  # `$( ;; )`: made up
            line = self.src.count(b"\n", 0, node.start_byte) + 1
            self.problems.append(f"could not parse: a command is missing on line {line}")
        elif t == "command":
            self._command(node, inh, [], node.end_byte, [])
        elif t == "redirected_statement":
            self._redirected(node, inh)
        elif t in ("variable_assignment", "variable_assignments") and not _in_arith(node):
            kids = [node] if t == "variable_assignment" else node.named_children
            assigns = [
                self._assignment(c, inh, []) for c in kids if c.type == "variable_assignment"
            ]
            self.stack.extend((c, inh, -1) for c in kids if c.type != "variable_assignment")
            self._emit(node.start_byte, (), assigns, inh, node.end_byte)
        elif t in ("declaration_command", "unset_command"):  # `export A=$(x)`: words
            kids, redirs, more = node.children, [], []
            for c in kids:
                if c.type in _REDIRECTS:
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
        elif t in _REDIRECTS:  # bare in `$(<file)` or after error recovery
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
            if t == "raw_string" and _in_double_quotes(node):  # "${x:-'$(cmd)'}" runs cmd
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
            elif c.type == "variable_assignment" or c.type in _REDIRECTS:
                parts.append([c])
            elif c.is_named and c.type != "comment":
                self._push(c, inh)
        assigns, redirs, words = [], [], []
        for p in parts:
            if p[0].type == "variable_assignment":
                assigns.append(self._assignment(p[0], inh, p[1:]))
            elif p[0].type in _REDIRECTS:  # tree-sitter: `cmd >o x` gives `x` to the redirect
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

    def _glued(self, left: Node, right: Node) -> bool:
        r"""Adjacent nodes are one word (`$"x"` comes as `$` + a string), and so are
        nodes split by a line continuation (`r\<newline>m` is `rm`)."""
        gap = self.src[left.end_byte : right.start_byte]
        return not gap.replace(b"\\\n", b"")

    def _groups(self, nodes: list[Node]) -> list[list[Node]]:
        groups: list[list[Node]] = []
        for c in nodes:
            if c.type in _REDIRECTS or c.type == "comment":
                continue
            if groups and self._glued(groups[-1][-1], c):
                groups[-1].append(c)
            else:
                groups.append([c])
        return groups

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
        cmd = SimpleCommand(words, tuple(assigns), redirects, _dec(self.src[start:end]), opaque)
        self.out.append((self.base + start, cmd))

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
            segments.append((_dec(self.src[cur : e.start_byte]), False))
            segments.append((self._text(e), True))
            cur = e.end_byte
            self._push(e, inh)
        segments.append((_dec(self.src[cur:end]), False))
        lexed = lex(segments)
        self._hidden(lexed, start, inh)
        return Word(lexed.text, lexed.literal, lexed.glob, _dec(raw))

    def _lex_text(self, start: int, end: int, mode: int, inh: Inh) -> None:
        """Text tree-sitter did not look into (`${x#$(cmd)}`, backticks in a heredoc)."""
        raw = self.src[start:end]
        if b"$" in raw or b"`" in raw or b"(" in raw:
            self._hidden(lex([(_dec(raw), False)], mode), start, inh)

    def _hidden(self, lexed: Lexed, at: int, inh: Inh) -> None:
        if lexed.too_deep:
            self.problems.append("could not parse: expansions nested too deeply to check")
        for inner, offset in lexed.hidden:
            self._subparse(inner.encode("utf-8", "surrogatepass"), at + offset, inh)

    def _subparse(self, text: bytes, at: int, inh: Inh) -> None:
        if self.depth >= _MAX_DEPTH:
            self.problems.append("could not parse: substitutions nested too deeply to check")
        else:
            _Walker(text, self.base + at, self.out, self.problems, self.depth + 1).run(inh)

    def _reparse_backticks(self, node: Node, inh: Inh) -> bool:
        """In `...` bash first drops backslashes before $ ` \\, so `echo \\`rm x\\``
        runs `rm x`; tree-sitter keeps them. Re-read the unescaped text instead."""
        kids = node.children
        if kids[0].type != "`":
            return False
        close = len(kids) > 1 and kids[-1].type == "`" and not kids[-1].is_missing
        inner = _dec(self.src[node.start_byte + 1 : node.end_byte - close])
        parent = node.parent
        text = unescape_backticks(inner, parent is not None and parent.type == "string")
        if text == inner:
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
            elif c.type in _REDIRECTS:
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
            elif ct in _REDIRECTS:
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

    def _scan_errors(self, root: Node) -> None:
        """Every ERROR / MISSING node is a problem: the script may not run as parsed."""
        found: list[tuple[int, str]] = []
        todo = [root] if root.has_error else []
        while todo:
            n = todo.pop()
            if n.is_missing and n.id not in self.benign:
                found.append((n.start_byte, f"missing {n.type!r}"))
            elif n.is_error:
                found.append((n.start_byte, f"unexpected {self._text(n)[:40]!r}"))
            else:
                todo.extend(c for c in n.children if c.has_error)
        where = " in a nested part" if self.depth else ""
        for pos, what in sorted(found)[:_MAX_PROBLEMS]:
            line = self.src.count(b"\n", 0, pos) + 1
            col = pos - self.src.rfind(b"\n", 0, pos)
            self.problems.append(f"could not parse: {what} at line {line}, column {col}{where}")
        if len(found) > _MAX_PROBLEMS:
            self.problems.append(f"could not parse: {len(found) - _MAX_PROBLEMS} more errors")


def _in_arith(node: Node) -> bool:
    """`for ((i=0; ...))` and `(( x = 1 ))` assign in arithmetic, not as statements."""
    parent = node.parent
    if parent is None:
        return False
    return parent.type in _ARITH or (
        parent.type == "compound_statement" and parent.children[0].type == "(("
    )


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


def _in_double_quotes(node: Node) -> bool:
    """Inside "..." (or a heredoc body) single quotes are plain characters."""
    parent = node.parent
    while parent is not None and parent.type not in ("command", "program", "command_substitution"):
        if parent.type in ("string", "heredoc_body"):
            return True
        parent = parent.parent
    return False


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
