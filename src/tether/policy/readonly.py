"""Programs that only read: their options that take arguments, and the risky ones.

Only options known to take an argument are listed: missing one only makes its
argument count as an extra path read (a needless question at worst), while
listing a wrong one could hide a path. `any_args_safe` marks programs that stay
read-only whatever arguments they get (so `xargs` may feed them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Literal

from tether.policy.argscan import Spec
from tether.policy.effects import Effect, names
from tether.policy.shellparse import Word

__all__ = ["HANDLERS", "SPECS", "any_args_safe", "spec_of"]

Handler = Callable[[str, tuple[Word, ...]], Effect]


def spec_of(
    short_arg: str = "",
    *,
    short_optarg: str = "",
    long_arg: str = "",
    long_arg2: str = "",
    reads: str = "",
    writes: str = "",
    unknown: Mapping[str, str] | None = None,
    operands: Literal["reads", "none", "pattern"] = "reads",
    pattern_opts: str = "",
    default_read: str | None = None,
    default_read_if: str | None = None,
    safe: bool = False,
) -> Spec:
    """A `Spec` from space-separated names (keeps the table below readable)."""
    nargs = {n: 1 for n in long_arg.split()} | {n: 2 for n in long_arg2.split()}
    return Spec(
        short_arg=short_arg,
        short_optarg=short_optarg,
        long_arg=MappingProxyType(nargs),
        reads=frozenset(reads.split()),
        writes=frozenset(writes.split()),
        unknown=MappingProxyType(dict(unknown or {})),
        operands=operands,
        pattern_opts=frozenset(pattern_opts.split()),
        default_read=default_read,
        default_read_if=None if default_read_if is None else frozenset(default_read_if.split()),
        any_args_safe=safe,
    )


_NONE = spec_of(operands="none", safe=True)
_READS = spec_of(safe=True)
_GREP = spec_of(
    "efmABdD",  # not -C: BSD grep takes its number only attached (-C3)
    long_arg="regexp file max-count after-context before-context exclude-from",
    reads="f file exclude-from",
    operands="pattern",
    pattern_opts="e f regexp file",
    default_read=".",
    default_read_if="r R recursive dereference-recursive",
    safe=True,
)

SPECS: Mapping[str, Spec] = MappingProxyType(
    {
        "cat": _READS,
        "tac": spec_of("s", long_arg="separator", safe=True),
        "head": spec_of("nc", long_arg="lines bytes", safe=True),
        "tail": spec_of("ncs", long_arg="lines bytes pid sleep-interval", safe=True),
        "wc": spec_of(long_arg="files0-from", reads="files0-from", safe=True),
        "ls": spec_of(
            long_arg="ignore hide", default_read=".", safe=True
        ),  # BSD: -I -T -w are flags
        "stat": spec_of("c", long_arg="format printf", safe=True),
        "file": spec_of(
            "mfFeP",
            long_arg="magic-file files-from separator exclude parameter",
            reads="m f magic-file files-from",
            unknown={"C": "file -C writes a compiled magic file", "compile": "file -C writes"},
        ),
        "du": spec_of(
            "BXdt",
            long_arg="exclude-from files0-from max-depth threshold block-size",
            reads="X exclude-from files0-from",
            default_read=".",
            safe=True,
        ),
        "df": spec_of("Btx", safe=True),
        "tree": spec_of(
            "LPIoHT",
            long_arg="gitfile infofile charset filelimit timefmt",
            reads="gitfile infofile",
            writes="o",
            unknown={"R": "tree -R writes a listing into every directory"},
            default_read=".",
        ),
        "nl": spec_of("bdfhilnsvw", safe=True),
        "od": spec_of("AjNSt", short_optarg="w", safe=True),
        "hexdump": spec_of("efns", reads="f", safe=True),
        "hd": spec_of("efns", reads="f", safe=True),
        **dict.fromkeys(
            ("md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "cksum"),
            _READS,
        ),
        "sum": _READS,
        "b2sum": spec_of("l", safe=True),
        "shasum": spec_of("a", safe=True),
        "diff": spec_of(
            "CUDFILSWXx",
            long_arg="exclude-from from-file to-file label",
            reads="X exclude-from from-file to-file",
            safe=True,
        ),
        "cmp": spec_of("in", safe=True),
        "comm": _READS,
        "readlink": _READS,
        "realpath": spec_of(
            long_arg="relative-to relative-base", reads="relative-to relative-base", safe=True
        ),
        "basename": spec_of("s", operands="none", safe=True),
        "dirname": _NONE,
        "grep": _GREP,
        "egrep": _GREP,
        "fgrep": _GREP,
        "zgrep": _GREP,
        "rg": spec_of(
            "efgmABCjMtTErd",
            long_arg="regexp file ignore-file glob iglob pre-glob type type-not max-count",
            reads="f file ignore-file",
            unknown={
                "pre": "rg --pre runs a program on every file",
                "hostname-bin": "rg --hostname-bin runs a program",
            },
            operands="pattern",
            pattern_opts="e f regexp file files type-list",
            default_read=".",
        ),
        "ag": spec_of(
            "mpGgW",
            long_arg="path-to-ignore file-search-regex ignore depth max-count",
            reads="p path-to-ignore",
            unknown={"pager": "ag --pager runs a program"},
            operands="pattern",
            pattern_opts="g list-file-types",
            default_read=".",
        ),
        "jq": spec_of(
            "fL",
            long_arg="from-file indent",
            long_arg2="arg argjson slurpfile rawfile",
            reads="f L from-file slurpfile rawfile",
            operands="pattern",
            pattern_opts="f from-file",
        ),
        "sort": spec_of(
            "koStT",
            long_arg="key output buffer-size field-separator temporary-directory files0-from "
            "random-source compress-program parallel batch-size",
            reads="files0-from random-source",
            writes="o output T temporary-directory",
            unknown={"compress-program": "sort --compress-program runs a program"},
        ),
        "shuf": spec_of(
            "nio",
            long_arg="output random-source head-count",
            reads="random-source",
            writes="o output",
        ),
        "iconv": spec_of("fto", long_arg="from-code to-code output", writes="o output"),
        "cut": spec_of("bcfd", long_arg="bytes characters fields delimiter", safe=True),
        "tr": _NONE,
        "paste": spec_of("d", long_arg="delimiters", safe=True),
        "join": spec_of("eot12jav", safe=True),
        "column": spec_of("cso", safe=True),
        "fold": spec_of("w", long_arg="width", safe=True),
        "fmt": spec_of("w", long_arg="width prefix", safe=True),  # BSD: -p is a flag
        "expand": spec_of("t", long_arg="tabs", safe=True),
        "unexpand": spec_of("t", long_arg="tabs", safe=True),
        "rev": _READS,
        "who": _READS,
        "strings": spec_of("nte", safe=True),  # `@file` operands: see _response_files
        "base64": spec_of(
            "wiob", long_arg="wrap input output", reads="i input", writes="o output"
        ),  # macOS base64 -i IN -o OUT
        "zcat": _READS,
        "bzcat": _READS,
        "xzcat": _READS,
        "echo": _NONE,
        "pwd": _NONE,
        "true": _NONE,
        "false": _NONE,
        ":": _NONE,
        "seq": spec_of("fs", operands="none", safe=True),
        "expr": _NONE,
        **dict.fromkeys(
            names(
                "whoami id uname nproc uptime locale tty arch groups logname users getconf "
                "printenv free ps lsof sleep yes numfmt factor cal getent which whereis type "
                "jobs times help dirs"
            ),
            _NONE,
        ),
    }
)


def _plain(spec: Spec) -> Handler:
    def handler(name: str, args: tuple[Word, ...]) -> Effect:
        return spec.judge(name, args)

    return handler


HANDLERS: Mapping[str, Handler] = MappingProxyType({n: _plain(spec) for n, spec in SPECS.items()})


def any_args_safe(name: str) -> bool:
    """Read-only whatever arguments it gets (so `xargs NAME` stays read-only)."""
    spec = SPECS.get(name)
    return spec is not None and spec.any_args_safe
