"""Programs that change files: known when all they do is write named paths.

`touch a`, `mkdir -p d`, `cp src dst`, `mv a b` (both written: the source goes
away), `ln -s target link` and `tee f` are effects_known with their `writes` (a
symlink's target counts as read: a link inside the workspace must not become a
silent way to read outside it). Deleting (`rm`), permissions (`chmod`), raw
devices (`dd`) and archives that extract are not known. Archive and compressor
forms that only list, test or print (`tar -tf`, `unzip -l`, `gzip -dc`) are.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from types import MappingProxyType

from tether.policy.argscan import Spec, effect_of, scan
from tether.policy.effects import Effect, dynamic, known, names, read_paths, unknown
from tether.policy.shellparse import Word

__all__ = ["HANDLERS"]

Handler = Callable[[str, tuple[Word, ...]], Effect]

_COPY = Spec(
    short_arg="tS",
    long_arg=MappingProxyType({"target-directory": 1, "suffix": 1, "no-preserve": 1, "sparse": 1}),
)


def _targets(
    name: str, args: tuple[Word, ...], spec: Spec
) -> tuple[Effect | None, tuple[Word, ...], Word | None]:
    """(problem, sources, destination) for cp/mv/ln-like argument lists."""
    s = scan(spec, args)
    if s.problem or s.hidden:
        why = s.problem or "an argument known only at run time could be an option"
        return unknown(f"{name}: {why}"), (), None
    suffixes = [o.args[0].text for o in s.opts if o.name in ("S", "suffix") and o.args]
    if any("/" in x for x in suffixes):
        return unknown(f"{name}: a backup suffix with / writes elsewhere"), (), None
    tdir = [o.args[0] for o in s.opts if o.name in ("t", "target-directory") and o.args]
    if tdir:
        return None, s.operands, tdir[-1]
    if len(s.operands) < 2:
        return None, s.operands, None
    return None, s.operands[:-1], s.operands[-1]


def _cp(name: str, args: tuple[Word, ...]) -> Effect:
    problem, sources, dest = _targets(name, args, _COPY)
    if problem:
        return problem
    if dest is None or not sources:
        return unknown(f"{name} without a source and a destination")
    if dynamic(dest) or dest.glob:
        return unknown(f"{name} writes a path known only at run time")
    if name == "mv":
        if any(map(dynamic, sources)):
            return unknown("mv moves a path known only at run time")
        return effect_of(name, (), (*sources, dest))
    return effect_of(name, sources, (dest,))


def _ln(name: str, args: tuple[Word, ...]) -> Effect:
    problem, sources, dest = _targets(name, args, _COPY)
    if problem:
        return problem
    if dest is None:
        if len(sources) != 1:
            return unknown("ln without a target")
        dest = Word(posixpath.basename(sources[0].text.rstrip("/")) or ".")
    if dynamic(dest) or dest.glob:
        return unknown("ln writes a path known only at run time")
    return effect_of(name, sources, (dest,))


def _creates(spec: Spec) -> Handler:
    """touch, mkdir, tee: every operand is written."""

    def handler(name: str, args: tuple[Word, ...]) -> Effect:
        s = scan(spec, args)
        if s.problem:
            return unknown(f"{name}: {s.problem}")
        if any(map(dynamic, s.operands)) or s.hidden:
            return unknown(f"{name} writes a path known only at run time")
        reads = tuple(o.args[-1] for o in s.opts if o.name in spec.reads and o.args)
        if not s.operands:
            return known(f"{name} writes nothing", read_paths(reads))
        return effect_of(name, reads, s.operands)

    return handler


_TAR_LETTERS = frozenset("tvfzjJaCTXR")
_TAR_ARG_LETTERS = frozenset("fCTX")
_TAR_LONG = names(
    "list file verbose gzip gunzip bzip2 xz zstd lzip wildcards no-wildcards exclude "
    "numeric-owner full-time utc anchored no-anchored ignore-case occurrence totals "
    "quoting-style directory files-from exclude-from null no-recursion auto-compress "
    "block-number show-transformed-names"
)
_TAR_READS = names("f file C directory T files-from X exclude-from")
_TAR = Spec(
    short_arg="fCTXbKLNgV",
    long_arg=MappingProxyType(
        dict.fromkeys(("file", "directory", "files-from", "exclude-from"), 1)
    ),
)


def _old_style(args: tuple[Word, ...]) -> tuple[Word, ...]:
    """`tar tvfC a.tar dir` -> `-t -v -f a.tar -C dir`: letters take the next words."""
    out: list[Word] = []
    rest = list(args[1:])
    for c in args[0].text:
        out.append(Word("-" + c))
        if c in _TAR.short_arg and rest:
            out.append(rest.pop(0))
    return (*out, *rest)


def _tar(_name: str, args: tuple[Word, ...]) -> Effect:
    """Only the listing form (`tar -tf a.tar`, `tar tvzf a.tgz`) is known."""
    if args and args[0].literal and args[0].text[:1] not in ("-", ""):
        args = _old_style(args)
    s = scan(_TAR, args)
    if s.problem or s.hidden:
        return unknown(f"tar: {s.problem or 'an argument known only at run time'}")
    names = {o.name for o in s.opts}
    if not names & {"t", "list"}:
        return unknown("tar creates or extracts files")
    bad = sorted(n for n in names if n not in _TAR_LETTERS and n not in _TAR_LONG)
    if bad:
        return unknown(f"tar option {bad[0]} is not known to be read-only")
    reads = [o.args[-1] for o in s.opts if o.name in _TAR_READS and o.args]
    if any(":" in w.text for w in reads):
        return unknown("tar with host:path reaches another machine")
    return known("tar only lists an archive", read_paths(reads))


_UNZIP_LETTERS = frozenset("lvtpcqzx")
_ZIPINFO_LETTERS = frozenset("12smlvhtTzC")


def _unzip(name: str, args: tuple[Word, ...]) -> Effect:
    """`unzip -l/-v/-t/-p/-c/-Z` and `zipinfo` only read the archive."""
    zipinfo = name == "zipinfo"
    letters: set[str] = set()
    operands: list[Word] = []
    for a in args:
        if dynamic(a):
            return unknown(f"{name}: an argument known only at run time")
        if a.text.startswith("-") and len(a.text) > 1:
            for c in a.text[1:]:
                zipinfo = zipinfo or c == "Z"
                allowed = _ZIPINFO_LETTERS if zipinfo else _UNZIP_LETTERS
                if c != "Z" and c not in allowed:
                    return unknown(f"{name} -{c} is not known to be read-only")
                letters.add(c)
        else:
            operands.append(a)
    if not zipinfo and not letters & set("lvtpcz"):
        return unknown("unzip extracts files")
    return known(f"{name} only reads an archive", read_paths(operands[:1]))


def _compressor(short_arg: str) -> Handler:
    """gzip & co.: to stdout, listing or testing reads; otherwise files are replaced."""
    spec = Spec(short_arg=short_arg, long_arg=MappingProxyType({"suffix": 1}))

    def handler(name: str, args: tuple[Word, ...]) -> Effect:
        s = scan(spec, args)
        if s.problem or s.hidden:
            return unknown(f"{name}: {s.problem or 'an argument known only at run time'}")
        if s.has(names("c l t stdout to-stdout list test")):
            return known(f"{name} only reads", read_paths(s.operands))
        return unknown(f"{name} replaces files with their (de)compressed form")

    return handler


_UNKNOWN = MappingProxyType(
    {
        **dict.fromkeys(("rm", "rmdir", "unlink", "shred", "srm"), "deletes files"),
        **dict.fromkeys(
            ("chmod", "chown", "chgrp", "chattr", "setfacl", "chcon"),
            "changes file permissions or owners",
        ),
        "truncate": "changes file sizes",
        "dd": "writes raw data anywhere",
        "install": "installs files with permissions",
        "patch": "changes files from a diff",
        "split": "writes many files",
        "csplit": "writes many files",
        "zip": "writes archives",
        "mkfifo": "creates special files",
        "mknod": "creates special files",
    }
)

HANDLERS: Mapping[str, Handler] = MappingProxyType(
    {
        "cp": _cp,
        "mv": _cp,
        "ln": _ln,
        "touch": _creates(
            Spec(
                short_arg="rdt",
                long_arg=MappingProxyType({"reference": 1, "date": 1}),
                reads=frozenset({"r", "reference"}),
            )
        ),
        "mkdir": _creates(Spec(short_arg="m", long_arg=MappingProxyType({"mode": 1}))),
        "tee": _creates(Spec()),
        "tar": _tar,
        "unzip": _unzip,
        "zipinfo": _unzip,
        **dict.fromkeys(("gzip", "gunzip", "bzip2", "bunzip2"), _compressor("S")),
        **dict.fromkeys(("xz", "unxz"), _compressor("")),
        **{
            n: (lambda why: lambda name, _args: unknown(f"{name} {why}"))(r)
            for n, r in _UNKNOWN.items()
        },
    }
)
