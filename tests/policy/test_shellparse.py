"""shellparse: every simple command that could run comes out, unquoted, in source order.

The table is the contract: each case is (source, argv of every emitted command in
order, flags). Flags: "error" = a "could not parse" problem, "function" = a function
definition problem, "opaque" = some command's name is not a literal word.
"""

from __future__ import annotations

import statistics
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.policy.shellparse import ParsedScript, Redirect, SimpleCommand, Word, parse

Argv = tuple[str, ...]

CASES: list[tuple[str, list[Argv], set[str]]] = [
    # plain commands and lists
    ("ls", [("ls",)], set()),
    ("ls -la src/", [("ls", "-la", "src/")], set()),
    ("", [], set()),
    ("   \n\n  ", [], set()),
    ("# only a comment", [], set()),
    ("ls; rm x", [("ls",), ("rm", "x")], set()),
    ("ls && rm x", [("ls",), ("rm", "x")], set()),
    ("ls || rm x", [("ls",), ("rm", "x")], set()),
    ("ls | rm x", [("ls",), ("rm", "x")], set()),
    ("ls |& rm x", [("ls",), ("rm", "x")], set()),
    ("ls\nrm x", [("ls",), ("rm", "x")], set()),
    ("ls & rm x", [("ls",), ("rm", "x")], set()),
    ("rm x &", [("rm", "x")], set()),
    ("! rm x", [("rm", "x")], set()),
    ("a && b || c; d | e & f", [("a",), ("b",), ("c",), ("d",), ("e",), ("f",)], set()),
    ("a && b && c && d && e", [("a",), ("b",), ("c",), ("d",), ("e",)], set()),
    ("ls;rm x", [("ls",), ("rm", "x")], set()),
    ("ls\r\nrm x", [("ls",), ("rm", "x")], set()),  # tree-sitter: CR is blank
    # comments and `#` inside words
    ("ls # ; rm x", [("ls",)], set()),
    ("echo a#b", [("echo", "a#b")], set()),
    ("echo a #b; rm x", [("echo", "a")], set()),
    ("echo '#'; rm x", [("echo", "#"), ("rm", "x")], set()),
    ("ls\n# rm x\nwc", [("ls",), ("wc",)], set()),
    # quoting and escapes in the command name and arguments
    ("r''m -rf x", [("rm", "-rf", "x")], set()),
    ('"rm" x', [("rm", "x")], set()),
    ('r"m" x', [("rm", "x")], set()),
    ("\\rm x", [("rm", "x")], set()),
    ("r\\m x", [("rm", "x")], set()),
    ("$'\\x72m' x", [("rm", "x")], set()),
    ("$'\\162m' x", [("rm", "x")], set()),
    ("$'\\u0072m' x", [("rm", "x")], set()),
    ("$'\\U00000072m' x", [("rm", "x")], set()),
    ("echo $'a\\tb\\nc\\\\d\\'e'", [("echo", "a\tb\nc\\d'e")], set()),
    ("echo $'\\e[1m' $'\\cA'", [("echo", "\x1b[1m", "\x01")], set()),
    ('echo $"hello world"', [("echo", "hello world")], set()),
    ("echo \"a\"'b'c", [("echo", "abc")], set()),
    ('grep "a;b" f', [("grep", "a;b", "f")], set()),
    ("grep 'a|b' f", [("grep", "a|b", "f")], set()),
    ("grep a\\;b f", [("grep", "a;b", "f")], set()),
    ('echo "a\\"b" "c\\d" "\\$x"', [("echo", 'a"b', "c\\d", "$x")], set()),
    ("echo 'a\\b'", [("echo", "a\\b")], set()),
    ("echo a\\ b", [("echo", "a b")], set()),
    ("echo '$(rm x)' '`rm y`'", [("echo", "$(rm x)", "`rm y`")], set()),
    ('echo "\\$(rm x)"', [("echo", "$(rm x)")], set()),
    ("echo a\\`rm\\`", [("echo", "a`rm`")], set()),
    ("echo 'it''s'", [("echo", "its")], set()),
    ('echo "it\'s"', [("echo", "it's")], set()),
    # line continuations
    ("ls \\\n -la", [("ls", "-la")], set()),
    ("r\\\nm x", [("rm", "x")], set()),
    ("ls && \\\nrm x", [("ls",), ("rm", "x")], set()),
    ("ls\n\\\n rm x", [("ls",), ("rm", "x")], set()),
    ("a=\\\n  rm x", [("rm", "x")], set()),
    ("a=b\\\nc rm x", [("rm", "x")], set()),
    ("a\\\n=1 rm x", [("rm", "x")], set()),
    ("# c \\\nrm x", [("rm", "x")], set()),
    ("ls a\\\n# -i x", [("ls", "a#", "-i", "x")], set()),  # `#` inside a word
    ("r\\\n\\\nm a\\\n\\\n#b", [("rm", "a#b")], set()),
    ("echo a\\\\\nrm z", [("echo", "a\\"), ("rm", "z")], set()),
    ("echo 'a\\\nb'; rm z", [("echo", "a\\\nb"), ("rm", "z")], set()),
    ("cat <<'EOF'\nfoo\\\nEOF\nrm y", [("cat",), ("rm", "y")], set()),
    ("a=$ rm x", [("x",)], {"error"}),  # tree-sitter reads `$ rm` as an expansion
    # command substitution everywhere
    ('echo "$(rm -rf /)"', [("echo", "$(rm -rf /)"), ("rm", "-rf", "/")], set()),
    ("echo `rm x`", [("echo", "`rm x`"), ("rm", "x")], set()),
    ("echo $(rm x)", [("echo", "$(rm x)"), ("rm", "x")], set()),
    ('echo "a `rm x` b"', [("echo", "a `rm x` b"), ("rm", "x")], set()),
    ("echo a$(rm x)b", [("echo", "a$(rm x)b"), ("rm", "x")], set()),
    ("ls ${x:=$(rm y)}", [("ls", "${x:=$(rm y)}"), ("rm", "y")], set()),
    ("ls ${x:-$(rm y)}", [("ls", "${x:-$(rm y)}"), ("rm", "y")], set()),
    ('ls "${x:-$(rm y)}"', [("ls", "${x:-$(rm y)}"), ("rm", "y")], set()),
    ("ls \"${x:-'$(rm y)'}\"", [("ls", "${x:-'$(rm y)'}"), ("rm", "y")], set()),
    ("ls ${x:-'$(rm y)'}", [("ls", "${x:-'$(rm y)'}")], set()),
    ("ls ${x/a/$(rm y)}", [("ls", "${x/a/$(rm y)}"), ("rm", "y")], set()),
    ("ls ${x#$(rm y)}", [("ls", "${x#$(rm y)}"), ("rm", "y")], set()),
    ("ls ${x%%$(rm y)}", [("ls", "${x%%$(rm y)}"), ("rm", "y")], set()),
    ("ls ${x-`rm y`}", [("ls", "${x-`rm y`}"), ("rm", "y")], set()),
    ('ls "${x:-`rm y`}"', [("ls", "${x:-`rm y`}"), ("rm", "y")], set()),
    ("ls ${x:$(rm y):1}", [("ls", "${x:$(rm y):1}"), ("rm", "y")], set()),
    ("echo $((1 + $(rm y)))", [("echo", "$((1 + $(rm y)))"), ("rm", "y")], set()),
    ("echo $[1 + $(rm y)]", [("echo", "$[1 + $(rm y)]"), ("rm", "y")], set()),
    (
        "echo $( $( $(rm x) ) )",
        [("echo", "$( $( $(rm x) ) )"), ("$( $(rm x) )",), ("$(rm x)",), ("rm", "x")],
        {"opaque"},
    ),
    (
        "echo `echo \\`rm x\\``",
        [("echo", "`echo \\`rm x\\``"), ("echo", "`rm x`"), ("rm", "x")],
        set(),
    ),
    (
        "echo $(ls | rm x; wc)",
        [("echo", "$(ls | rm x; wc)"), ("ls",), ("rm", "x"), ("wc",)],
        set(),
    ),
    ("echo $(\nrm x\n)", [("echo", "$(\nrm x\n)"), ("rm", "x")], set()),
    (
        "echo $(cat <<EOF\n$(rm x)\nEOF\n)",
        [("echo", "$(cat <<EOF\n$(rm x)\nEOF\n)"), ("cat",), ("rm", "x")],
        set(),
    ),
    ("echo $((rm x); ls)", [("echo",), ("rm", "x"), ("ls",)], {"error"}),
    ("((rm x) ; ls)", [("rm", "x"), ("ls",)], {"error"}),  # bash: nested subshells
    # process substitution
    ("cat <(rm z)", [("cat", "<(rm z)"), ("rm", "z")], set()),
    ("diff <(ls a) <(ls b)", [("diff", "<(ls a)", "<(ls b)"), ("ls", "a"), ("ls", "b")], set()),
    ("tee >(rm z)", [("tee", ">(rm z)"), ("rm", "z")], set()),
    ("cat < <(rm z)", [("cat",), ("rm", "z")], set()),
    # command name that is not a literal word
    ("$cmd arg", [("$cmd", "arg")], {"opaque"}),
    ("${cmd} arg", [("${cmd}", "arg")], {"opaque"}),
    ('"$cmd" arg', [("$cmd", "arg")], {"opaque"}),
    ('"$(which rm)" x', [("$(which rm)", "x"), ("which", "rm")], {"opaque"}),
    ("`which rm` x", [("`which rm`", "x"), ("which", "rm")], {"opaque"}),
    ("/bin/r? x", [("/bin/r?", "x")], {"opaque"}),
    ("*.sh", [("*.sh",)], {"opaque"}),
    ("'' x", [("", "x")], {"opaque"}),
    ("{rm,x}", [], {"error"}),  # tree-sitter: ERROR (bash runs `rm x`)
    ("~user/bin/tool", [("~user/bin/tool",)], {"opaque"}),
    ("$@", [("$@",)], {"opaque"}),
    # assignments
    ("a=1", [()], set()),
    ("a=1 b=2", [()], set()),
    ("A=1 B='x y' cmd arg", [("cmd", "arg")], set()),
    ("x=$(rm a) ls", [("ls",), ("rm", "a")], set()),
    ("x=$(rm a)", [(), ("rm", "a")], set()),
    ("x=`rm a`", [(), ("rm", "a")], set()),
    ('x="$(rm a)"', [(), ("rm", "a")], set()),
    ("x[$(rm i)]=1", [(), ("rm", "i")], set()),
    ("a=( $(rm x) b )", [(), ("rm", "x")], set()),
    ("a+=(x)", [()], set()),
    ("PATH=/tmp:$PATH ls", [("ls",)], set()),
    ("ls A=1", [("ls", "A=1")], set()),
    ("declare -x A=$(rm x) B", [("declare", "-x", "A=$(rm x)", "B"), ("rm", "x")], set()),
    ("local y=$(rm y)", [("local", "y=$(rm y)"), ("rm", "y")], set()),
    ("export PATH=/x:$PATH", [("export", "PATH=/x:$PATH")], set()),
    ("readonly R=1", [("readonly", "R=1")], set()),
    ("typeset -a t=(1 2)", [("typeset", "-a", "t=(1 2)")], set()),
    ("unset -f x", [("unset", "-f", "x")], set()),
    ("unset $(rm q)", [("unset", "$(rm q)"), ("rm", "q")], set()),
    # subshells, groups, conditionals, loops
    ("(rm x)", [("rm", "x")], set()),
    ("(cd a && rm x) | wc", [("cd", "a"), ("rm", "x"), ("wc",)], set()),
    ("{ rm a; ls; }", [("rm", "a"), ("ls",)], set()),
    ("if rm x; then ls; fi", [("rm", "x"), ("ls",)], set()),
    (
        "if a; then b; elif c; then d; else e; fi",
        [("a",), ("b",), ("c",), ("d",), ("e",)],
        set(),
    ),
    ("while rm x; do ls; done", [("rm", "x"), ("ls",)], set()),
    ("until rm x; do ls; done", [("rm", "x"), ("ls",)], set()),
    ("for f in $(ls); do rm $f; done", [("ls",), ("rm", "$f")], set()),
    ('for f in a b; do rm "$f"; done', [("rm", "$f")], set()),
    ("for f; do rm $f; done", [("rm", "$f")], set()),
    ("select x in a b; do rm $x; done", [("rm", "$x")], set()),
    ("for ((i=0; i<3; i++)); do rm $i; done", [("rm", "$i")], set()),
    ("for ((i=0; i<$(rm c); i++)); do ls; done", [("rm", "c"), ("ls",)], set()),
    ("case $x in a) rm a;; esac", [("rm", "a")], set()),
    ("case $(rm c) in a|b) ls;; *) wc;; esac", [("rm", "c"), ("ls",), ("wc",)], set()),
    ("case x in a) ls ;& b) rm b ;;& *) wc ;; esac", [("ls",), ("rm", "b"), ("wc",)], set()),
    ("[[ -f x ]] && rm x", [("rm", "x")], set()),
    ("[[ -f $(rm a) ]]", [("rm", "a")], set()),
    ("[[ $x == y* ]]", [], set()),
    ("[[ $x =~ ^$(rm z)$ ]]", [("rm", "z")], set()),
    ("[ -f x ] && rm x", [("rm", "x")], set()),
    ("(( i++ ))", [], set()),
    ("(( x = $(rm y) ))", [("rm", "y")], set()),
    ("(( i++ )) && rm x", [("rm", "x")], set()),
    # functions
    ("f(){ rm x; }; f", [("rm", "x"), ("f",)], {"function"}),
    ("function f { rm x; }", [("rm", "x")], {"function"}),
    ("function f() { rm x; }", [("rm", "x")], {"function"}),
    ("f() ( rm x )", [("rm", "x")], {"function"}),
    ("ls() { rm -rf /; }; ls", [("rm", "-rf", "/"), ("ls",)], {"function"}),
    # time and coproc keywords
    ("time ls -l | wc", [("ls", "-l"), ("wc",)], set()),
    ("time -p rm y", [("rm", "y")], set()),
    ("time { rm x; }", [("rm", "x")], set()),
    ("time", [], set()),
    ("coproc rm x", [("rm", "x")], set()),
    ("coproc N { rm x; }", [("rm", "x")], set()),
    ("coproc N ( rm y )", [("rm", "y")], set()),
    ("echo time", [("echo", "time")], set()),
    ("'time' rm x", [("time", "rm", "x")], set()),
    # redirections (details asserted separately)
    ("ls > out", [("ls",)], set()),
    ("cmd >o x y", [("cmd", "x", "y")], set()),  # tree-sitter: x, y are "destinations"
    ("sed >/dev/null -i s/a/b/ f", [("sed", "-i", "s/a/b/", "f")], set()),
    ("cmd x >o y 2>e z", [("cmd", "x", "y", "z")], set()),
    ("> o rm x", [("rm", "x")], set()),
    ("{ ls; } > o x", [("ls",)], {"error"}),
    ("cat <<< a rm", [("cat", "rm")], set()),
    ("echo $(< f rm)", [("echo", "$(< f rm)"), ("rm",)], set()),
    ("cat <<EOF > out rm\nb\nEOF", [("cat", "rm")], set()),
    ("ls 2>&1x", [("ls",)], set()),
    ("ls >a\\\nb rm", [("ls", "rm")], set()),
    ("ls >o\\\n} }", [("ls",)], {"error"}),  # tree-sitter: one word `} }`
    ("> out", [()], set()),
    ("[[ x ]] > f", [()], set()),
    ("{ rm a; } > out", [("rm", "a")], set()),
    ("exec 3>out", [("exec",)], set()),
    ("echo a > $(rm x)", [("echo", "a"), ("rm", "x")], set()),
    ("cat <<< $(rm x)", [("cat",), ("rm", "x")], set()),
    # heredocs
    ("cat <<EOF\n$(rm w)\nEOF", [("cat",), ("rm", "w")], set()),
    ("cat <<'EOF'\n$(rm w)\nEOF", [("cat",)], set()),
    ('cat <<"EOF"\n$(rm w)\nEOF', [("cat",)], set()),
    ("cat <<\\EOF\n$(rm w)\nEOF", [("cat",)], set()),
    ("cat <<EOF\n`rm w`\nEOF", [("cat",), ("rm", "w")], set()),
    ("cat <<EOF\n${x:-$(rm w)}\nEOF", [("cat",), ("rm", "w")], set()),
    ("cat <<EOF\n\\$(rm w)\nEOF", [("cat",)], {"error"}),  # tree-sitter: ERROR
    ("cat <<EOF\nrm x\nEOF\nls", [("cat",), ("ls",)], set()),
    ("cat <<-EOF | grep x && rm y\n\ta\n\tEOF", [("cat",), ("grep", "x"), ("rm", "y")], set()),
    ("cat <<EOF; rm y\nbody\nEOF", [("cat",), ("rm", "y")], {"error"}),
    ("cat <<EOF > out\nbody\nEOF", [("cat",)], set()),
    ("sed <<EOF -i s/a/b/ f\nb\nEOF", [("sed", "-i", "s/a/b/", "f")], set()),
    ("cat <<EOF x\\\ny\nb\nEOF", [("cat", "xy")], set()),
    ('cat <<"E"F x\n$(rm w)\nEF\nls', [("cat", "x"), ("F",), ("ls",)], {"error"}),
    # parse errors still emit what they can
    ("echo 'abc", [("echo",)], {"error"}),
    ('echo "abc; rm x', [("echo",)], {"error"}),
    ("echo $(rm x", [("echo", "$(rm x"), ("rm", "x")], {"error"}),
    ("if ls; then rm a", [("ls",), ("rm", "a")], {"error"}),
    ("rm x )", [("rm", "x")], {"error"}),
    ("ls ;; rm x", [("ls",), ("rm", "x")], set()),  # bash refuses; over-approximated
    ("echo \\$(rm x)", [("echo",), ("rm", "x")], {"error"}),
    # unicode is ordinary word text (and must not crash tree-sitter-bash, issue #337)
    ("echo {\U000d8985}", [("echo", "{\U000d8985}")], set()),
    ("echo héllo 日本 😀", [("echo", "héllo", "日本", "😀")], set()),
]


def _flags(result: ParsedScript) -> set[str]:
    flags = set()
    if any(p.startswith("could not parse") for p in result.problems):
        flags.add("error")
    if any(p.startswith("defines a function") for p in result.problems):
        flags.add("function")
    if any(c.opaque for c in result.commands):
        flags.add("opaque")
    return flags


@pytest.mark.parametrize(("source", "argvs", "flags"), CASES, ids=[repr(c[0]) for c in CASES])
def test_table(source: str, argvs: list[Argv], flags: set[str]) -> None:
    result = parse(source)
    found = [c.argv for c in result.commands]
    if result.problems:
        # With a problem, simpler fallback readings may add commands (only stricter).
        assert found[: len(argvs)] == argvs
        assert _flags(result) >= flags, result.problems
    else:
        assert found == argvs
        assert _flags(result) == flags, result.problems


def test_table_is_big_enough() -> None:
    assert len(CASES) >= 120


def one(source: str) -> SimpleCommand:
    result = parse(source)
    assert len(result.commands) == 1, result.commands
    return result.commands[0]


def redirects(source: str) -> list[tuple[str, int | None, str | None]]:
    return [
        (r.op, r.fd, None if r.target is None else r.target.text)
        for c in parse(source).commands
        for r in c.redirects
    ]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("ls > out", [(">", None, "out")]),
        ("ls >> out", [(">>", None, "out")]),
        ("ls < in", [("<", None, "in")]),
        ("ls 2> err", [(">", 2, "err")]),
        ("ls 2>&1", [(">&", 2, None)]),
        ("ls >&2", [(">&", None, None)]),
        ("ls 1<&3", [("<&", 1, None)]),
        ("ls >&-", [(">&-", None, None)]),
        ("ls &> all", [("&>", None, "all")]),
        ("ls &>> all", [("&>>", None, "all")]),
        ("ls >&file", [(">&", None, "file")]),
        ("ls >| clobber", [(">|", None, "clobber")]),
        ("exec 3>out", [(">", 3, "out")]),
        ("ls > 'my file'", [(">", None, "my file")]),
        ("> out", [(">", None, "out")]),
        ("2>/dev/null A=1 ls -l >x", [(">", 2, "/dev/null"), (">", None, "x")]),
        ("cat <<< 'some text'", [("<<<", None, "some text")]),
        ("cat <<EOF\nbody\nEOF", [("<<", None, None)]),
        ("cat <<-EOF\n\tbody\n\tEOF", [("<<-", None, None)]),
        ("cat <<EOF > out\nbody\nEOF", [("<<", None, None), (">", None, "out")]),
        ("{ rm a; ls; } > out", [(">", None, "out"), (">", None, "out")]),
        ("(rm a) 2> err", [(">", 2, "err")]),
        ("while read l; do rm $l; done < list", [("<", None, "list"), ("<", None, "list")]),
        ("if true; then rm a; fi >> log", [(">>", None, "log"), (">>", None, "log")]),
        ("[[ -f x ]] > f", [(">", None, "f")]),
        ("a | b > out", [(">", None, "out")]),
        ("f() { rm x; } > o", [(">", None, "o")]),
        ("a=1 > out", [(">", None, "out")]),
        ("{ { rm a; } > in; } > out", [(">", None, "in"), (">", None, "out")]),
        ("echo $(</etc/passwd)", [("<", None, "/etc/passwd")]),
        ("x=$(< f > g)", [("<", None, "f"), (">", None, "g")]),
        ("exec 10>out", [(">", 10, "out")]),
        ("cmd >o x y", [(">", None, "o")]),
        ("cmd x >o y 2>e z", [(">", None, "o"), (">", 2, "e")]),
        ("ls 2>&1x", [(">&", 2, "1x")]),
        ("ls >a\\\nb rm", [(">", None, "ab")]),
        ("cat <<< a b", [("<<<", None, "a")]),
    ],
)
def test_redirects(source: str, expected: list[tuple[str, int | None, str | None]]) -> None:
    assert redirects(source) == expected


def test_redirect_target_is_a_word() -> None:
    (r,) = one("ls > $HOME/out").redirects
    assert r == Redirect(">", Word("$HOME/out", literal=False, raw="$HOME/out"))
    (r,) = one("ls > *.txt").redirects
    assert r.target is not None and r.target.glob


def test_redirect_only_on_the_command_it_belongs_to() -> None:
    result = parse("a > x; b | c 2> y")
    assert [
        (c.argv, [r.target.text for r in c.redirects if r.target]) for c in result.commands
    ] == [
        (("a",), ["x"]),
        (("b",), []),
        (("c",), ["y"]),
    ]


def test_substitution_in_redirect_target_does_not_inherit_it() -> None:
    cmds = parse("echo a > $(rm x)").commands
    assert cmds[1].argv == ("rm", "x") and cmds[1].redirects == ()


def test_compound_redirect_reaches_nested_substitutions() -> None:
    cmds = parse("{ echo $(rm x); } 2> err").commands
    assert all(c.redirects == (Redirect(">", Word("err", raw="err"), 2),) for c in cmds)


def test_assignments() -> None:
    cmd = parse('A=1 B="x y" C= D=$(date) cmd').commands[0]
    assert [(n, w.text, w.literal) for n, w in cmd.assignments] == [
        ("A", "1", True),
        ("B", "x y", True),
        ("C", "", True),
        ("D", "$(date)", False),
    ]
    assert cmd.argv == ("cmd",)
    assert [n for n, _ in one("a[1]=x b+=y").assignments] == ["a", "b"]


def test_assignment_only_statement_has_no_words() -> None:
    result = parse("A=$(rm x)")
    assert result.commands[0].words == ()
    assert result.commands[0].assignments[0][0] == "A"
    assert result.commands[1].argv == ("rm", "x")


@pytest.mark.parametrize(
    ("word", "text", "literal", "glob"),
    [
        ("plain", "plain", True, False),
        ("'a b'", "a b", True, False),
        ("$x", "$x", False, False),
        ("${x}", "${x}", False, False),
        ('"$x"', "$x", False, False),
        ("a$(b)", "a$(b)", False, False),
        ("`b`", "`b`", False, False),
        ("$((1+2))", "$((1+2))", False, False),
        ("{a,b}", "{a,b}", False, False),
        ("a{1..3}", "a{1..3}", False, False),
        ("'{a,b}'", "{a,b}", True, False),
        ("{a}", "{a}", True, False),
        ("{}", "{}", True, False),
        ("~", "~", True, False),
        ("~/x", "~/x", True, False),
        ("'~'/x", "~/x", True, False),
        ("~user/x", "~user/x", False, False),
        ("~+", "~+", False, False),
        ("x=~other", "x=~other", False, False),
        ("*.py", "*.py", True, True),
        ("'*'.py", "*.py", True, False),
        ("\\*", "*", True, False),
        ("a?", "a?", True, True),
        ("[ab]c", "[ab]c", True, True),
        ("[", "[", True, False),
        ('"*"$x', "*$x", False, False),
        ("$'\\x41'", "A", True, False),
        ("$'a\\x00b'", "a", True, False),
        ("$'\\xc3\\xa9'", "é", True, False),
        ("$'\\q'", "\\q", True, False),
        ('$"x"', "x", True, False),
        ("$", "$", True, False),
        ("a$", "a$", True, False),
        ("a#b", "a#b", True, False),
    ],
)
def test_word(word: str, text: str, literal: bool, glob: bool) -> None:
    w = parse(f"echo {word}").commands[0].words[1]
    assert (w.text, w.literal, w.glob) == (text, literal, glob)
    assert w.raw == word


def test_source_is_exact_text() -> None:
    result = parse("A=1 ls  -l > out && { rm 'x'; } | wc # c")
    assert [c.source for c in result.commands] == ["A=1 ls  -l > out", "rm 'x'", "wc"]
    assert parse("cat <<EOF > o\nbody\nEOF").commands[0].source == "cat <<EOF > o"
    assert parse("echo $(rm   x)").commands[1].source == "rm   x"


def test_opaque_reasons() -> None:
    assert one("$cmd x").opaque
    assert one("*.sh").opaque == ("the command name is a glob pattern",)
    assert one("'' x").opaque == ("the command name is empty after expansion",)
    assert one("ls $x").opaque == ()
    assert one("a=1").opaque == ()


def test_function_problem_names_it() -> None:
    problems = parse("f(){ rm x; }").problems
    assert len(problems) == 1 and "'f'" in problems[0]


def test_parse_error_problem_has_position() -> None:
    (problem,) = parse("ls\necho 'abc").problems
    assert problem.startswith("could not parse") and "line 2" in problem


def test_nul_byte_is_not_silently_split() -> None:
    argvs = [c.argv for c in parse("ls\0; rm x").commands]
    assert ("rm", "x") in argvs


def test_deep_nesting_is_a_problem_not_a_crash() -> None:
    deep = "echo " + "$( " * 60 + "rm x" + " )" * 60
    result = parse(deep)
    assert result.problems or ("rm", "x") in [c.argv for c in result.commands]
    backticks = "echo `echo \\`echo \\\\\\`rm x\\\\\\`\\``"
    assert ("rm", "x") in [c.argv for c in parse(backticks).commands]
    long_list = " && ".join(f"c{i}" for i in range(3000))
    assert len(parse(long_list).commands) == 3000


def test_results_are_immutable_values() -> None:
    a, b = parse("ls -l | wc"), parse("ls -l | wc")
    assert a == b and hash(a) == hash(b)


_TOKENS = "$( <( <<EOF\n EOF ${ $(( \\\n time coproc case in esac do done for if fi then function"
_TOKENS += " $' $\" \\` {\U000d8985 é \0"
_ALPHABET = st.sampled_from([*"ab x$`'\"(){}[]<>|&;\\\n#=*?~!-019", *_TOKENS.split(" "), " in "])


@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_ALPHABET, max_size=40).map("".join) | st.text(max_size=60))
def test_never_raises(source: str) -> None:
    result = parse(source)
    assert isinstance(result, ParsedScript)
    assert all(isinstance(c, SimpleCommand) for c in result.commands)
    assert not any("internal error" in p for p in result.problems), result.problems


def test_parse_time() -> None:
    corpus = [
        "git status",
        "ls -la src/",
        "grep -rn 'foo bar' src | head -20",
        "python -m pytest tests -q",
        "find . -name '*.py' -exec grep -l TODO {} +",
        'echo "$(date)" > out.txt',
        "sed -n '1,20p' src/tether/cli.py",
        "cd /tmp && ls -l && cat notes.txt",
        "FOO=1 make -j4 test 2>&1 | tail",
        'for f in *.py; do wc -l "$f"; done',
    ] * 50
    parse("warm up")
    times = []
    for source in corpus:
        start = time.perf_counter()
        parse(source)
        times.append(time.perf_counter() - start)
    assert statistics.mean(times) < 0.002
