"""find: its starting points are read; `-delete` deletes, `-fprint*` writes, `-exec` runs.

Every primary must be known with its argument count, or a word we took for an
argument could be an action (`-delete`). `-exec`/`-execdir`/`-ok`/`-okdir CMD ... ;`
(or `{} +`) come back as runs, `{}` left as an argument. A word known only at run
time could be an action, unless it is a double-quoted argument of a test.
"""

from __future__ import annotations

import re

from tether.policy.effects import (
    Effect,
    Run,
    dynamic,
    names,
    quoted,
    read_paths,
    unknown,
    wild,
    write_paths,
)
from tether.policy.shellparse import SimpleCommand, Word

__all__ = ["judge_find"]

_ZERO = names(
    "-daystart -depth -d -follow -ignore_readdir_race -noignore_readdir_race -mount -xdev "
    "-noleaf -warn -nowarn -true -false -empty -executable -readable -writable -nogroup "
    "-nouser -print -print0 -ls -prune -quit -x -acl -sparse -xattr -not -and -or -a -o "
    "( ) ! , -help --help -version --version"
)
_ONE = names(
    "-maxdepth -mindepth -amin -atime -cmin -ctime -mmin -mtime -fstype -gid -group -ilname "
    "-iname -inum -ipath -iregex -iwholename -links -lname -name -path -perm -regex "
    "-regextype -size -type -uid -used -user -wholename -xtype -context -printf -Bmin "
    "-Btime -flags"
)
_ONE_READ = names("-newer -anewer -cnewer -samefile -Bnewer")
_ONE_WRITE = names("-fprint -fprint0 -fls")
_EXEC = names("-exec -execdir -ok -okdir")
_NEWER_XY = re.compile(r"-newer[aBcm][aBcmt]")
_LEADING = names("-H -L -P -E -X -s -x")


def _starting_point(word: Word) -> bool:
    """A word before the expression; one known only at run time must be a quoted path."""
    if dynamic(word):
        inner = (word.raw or "")[1:2]
        return quoted(word) and inner not in ("$", "`", "-", "(", "!", ")", ",", "")
    t = word.text
    return not (t.startswith("-") or t in ("(", ")", "!", ",")) and not wild(word)


def judge_find(name: str, args: tuple[Word, ...]) -> Effect:
    i, n = 0, len(args)
    starts: list[Word] = []
    while i < n and args[i].literal and (args[i].text in _LEADING or args[i].text[:2] == "-O"):
        i += 1
    if i < n and args[i].literal and args[i].text in ("-D", "-f"):
        if args[i].text == "-f" and i + 1 < n:
            starts.append(args[i + 1])
        i += 2
    while i < n and (args[i].literal or dynamic(args[i])) and not args[i].text.startswith("-"):
        if args[i].text in ("(", ")", "!", ","):
            break
        if not _starting_point(args[i]):
            return unknown(f"{name}: a starting point known only at run time could be an action")
        starts.append(args[i])
        i += 1
    reads: list[Word] = list(starts) or [Word(".")]
    writes: list[Word] = []
    runs: list[Run] = []
    while i < n:
        w = args[i]
        t = w.text
        if dynamic(w) or wild(w):
            return unknown(f"{name}: an argument known only at run time could be an action")
        if t in _EXEC:
            j = i + 1
            while j < n and not (
                args[j].literal
                and (args[j].text == ";" or (args[j].text == "+" and args[j - 1].text == "{}"))
            ):
                j += 1
            if j >= n or j == i + 1:
                return unknown(f"{name} {t} without a command and its ';'")
            pasted = [a.text for a in args[i + 1 : j] if "{}" in a.text and a.text != "{}"]
            if pasted:
                # `sh -c 'echo {}'`: a file named `$(rm x)` would become code.
                return unknown(f"{name} {t} pastes file names into {pasted[0]!r}")
            runs.append(Run(SimpleCommand(args[i + 1 : j])))
            i = j + 1
            continue
        if t == "-delete":
            return unknown("find -delete deletes files")
        if t == "-files0-from":
            return unknown("find -files0-from takes its starting points from a file")
        nargs = 0
        if t in _ZERO:
            nargs = 1 if t == "-depth" and i + 1 < n and args[i + 1].text.isdigit() else 0
        elif t in _ONE or t in _ONE_READ or t in _ONE_WRITE or _NEWER_XY.fullmatch(t):
            nargs = 1
        elif t == "-fprintf":
            nargs = 2
        else:
            return unknown(f"find {t} is not known")
        taken = args[i + 1 : i + 1 + nargs]
        if len(taken) < nargs:
            return unknown(f"find {t} is missing its argument")
        if any(dynamic(a) and not quoted(a) for a in taken):
            return unknown(f"{name}: an argument known only at run time could be an action")
        if t in _ONE_READ or (_NEWER_XY.fullmatch(t) and not t.endswith("t")):
            reads.append(taken[0])
        elif t in _ONE_WRITE or t == "-fprintf":
            if dynamic(taken[0]):
                return unknown(f"find {t} writes a path known only at run time")
            writes.append(taken[0])
        i += 1 + nargs
    written = write_paths(writes)
    reason = f"find writes {', '.join(written)}" if written else "find only reads"
    if runs:
        reason += " and runs a command on what it finds"
    reads_out = tuple(dict.fromkeys(read_paths(reads)))
    return Effect(True, reason, reads_out, tuple(dict.fromkeys(written)), runs=tuple(runs))
