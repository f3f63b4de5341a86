"""git: read-only subcommands versus everything else.

Global options: `-C DIR`, `--git-dir`, `--work-tree` are reads; `-c key=value`,
`--config-env`, `--exec-path=DIR` and `-p` (pager) can make git run any program,
so they are not known. Aliases and unknown subcommands are not known. Read-only
subcommands keep their risky options in check: `--output` writes, `--ext-diff`,
`--show-signature` and `grep -O` run programs. Forms of `branch`, `tag`, `remote`,
`stash`, `config`, `reflog`, `worktree`, `submodule` that only list are known.
Operands (revisions and paths) are reported as reads: a revision like `HEAD~1` is
a harmless path inside the workspace, while `git diff /etc/a /etc/b` (which falls
back to comparing files) is seen reading outside it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType

from tether.policy.argscan import Spec, scan
from tether.policy.effects import Effect, dynamic, known, names, read_paths, unknown, wild
from tether.policy.shellparse import Word

__all__ = ["judge_git"]

Sub = Callable[[str, tuple[Word, ...]], Effect]

_GLOBAL_FLAGS = names(
    "-P --no-pager --bare --no-replace-objects --literal-pathspecs --glob-pathspecs "
    "--noglob-pathspecs --icase-pathspecs --no-optional-locks --no-advice --html-path "
    "--man-path --info-path --version --exec-path"
)
_GLOBAL_ARGS = MappingProxyType(
    {"-C": True, "--work-tree": True, "--namespace": False,
     "--super-prefix": False, "--attr-source": False, "--list-cmds": False}
)  # fmt: skip
_NOT_KNOWN_GLOBAL = MappingProxyType(
    {
        "-c": "git -c sets configuration for this run (a pager, fsmonitor, aliases...)",
        "--config-env": "git --config-env sets configuration for this run",
        "-p": "git -p runs a pager",
        "--paginate": "git -p runs a pager",
        "--help": "git --help opens a manual page or a browser",
        "-h": "git -h may open a manual page",
        "--git-dir": "git --git-dir takes its configuration (which can run programs) from there",
    }
)


def judge_git(_name: str, args: tuple[Word, ...]) -> Effect:
    """Global options, then the subcommand's own verdict (with the global reads)."""
    reads: list[Word] = []
    i, n = 0, len(args)
    while i < n:
        w = args[i]
        if dynamic(w) or wild(w):
            return unknown("git: an argument known only at run time")
        t = w.text
        if not t.startswith("-"):
            break
        opt, eq, value = t.partition("=")
        if opt == "-c" or (t.startswith("-c") and len(t) > 2):
            opt = "-c"
        if opt in _NOT_KNOWN_GLOBAL:
            return unknown(_NOT_KNOWN_GLOBAL[opt])
        if opt == "--exec-path" and eq:
            return unknown("git --exec-path=DIR runs git programs from DIR")
        if opt in _GLOBAL_ARGS:
            if not eq:
                i += 1
                if i >= n or dynamic(args[i]):
                    return unknown(f"git {opt} without a known argument")
                arg = args[i]
            else:
                arg = Word(value)
            if _GLOBAL_ARGS[opt]:
                reads.append(arg)
        elif t not in _GLOBAL_FLAGS:
            return unknown(f"git option {t} is not known")
        i += 1
    if i == n:
        return known("git only prints", read_paths(reads))
    sub = args[i].text
    handler = _SUBCOMMANDS.get(sub)
    if handler is None:
        why = _NOT_READ_ONLY.get(sub, "may be an alias or is not known to be read-only")
        return unknown(f"git {sub} {why}")
    effect = handler(sub, args[i + 1 :])
    if not effect.known:
        return effect
    extra = read_paths(reads)
    return known(effect.reason, (*extra, *effect.reads), effect.writes)


_DIFF_RISKS = MappingProxyType(
    {
        "ext-diff": "git --ext-diff runs an external diff program",
        "show-signature": "git --show-signature runs gpg",
        "open-files-in-pager": "git grep -O runs a pager",
        "O": "git grep -O runs a pager",
        "lost-found": "git fsck --lost-found writes files",
        "exec": "runs a program",
        "upload-pack": "runs a program",
    }
)


def _reader(short_arg: str = "", pattern: bool = False) -> Sub:
    """A read-only subcommand: operands are reads, `--output` writes."""
    spec = Spec(
        short_arg=short_arg,
        short_optarg="O" if pattern else "",
        long_arg=MappingProxyType(dict.fromkeys(("output", "contents", "file"), 1)),
        reads=frozenset({"contents", "f", "file"}),
        writes=frozenset({"output"}),
        unknown=_DIFF_RISKS,
        operands="pattern" if pattern else "reads",
        pattern_opts=frozenset({"e", "f", "file"}),
    )

    def handler(sub: str, args: tuple[Word, ...]) -> Effect:
        effect = spec.judge(f"git {sub}", args)
        if effect.known and not effect.writes:
            return known(f"git {sub} only reads", effect.reads)
        return effect

    return handler


def _listing(list_opts: str, arg_opts: str, allowed: str) -> Sub:
    """branch/tag: listing options only; names given only to a listing are patterns."""
    list_set = frozenset(list_opts.split())
    arg_set = frozenset(arg_opts.split())
    allowed_set = frozenset(allowed.split()) | list_set | arg_set

    def handler(sub: str, args: tuple[Word, ...]) -> Effect:
        listing, names = False, 0
        i = 0
        while i < len(args):
            w = args[i]
            i += 1
            if dynamic(w) or wild(w):
                return unknown(f"git {sub}: an argument known only at run time")
            t = w.text
            if t == "--":
                names += len(args) - i
                break
            if not t.startswith("-"):
                names += 1
                continue
            if t.startswith("--"):
                opts = [t[2:].split("=", 1)[0]]
            else:
                opts = list(re.sub(r"n-?\d+", "n", t[1:]) if sub == "tag" else t[1:])
                opts = ["vv" if t == "-vv" else o for o in opts]
            if not all(o in allowed_set for o in opts):
                return unknown(f"git {sub} {t} creates or changes something")
            listing = listing or any(o in list_set for o in opts)
            opt = opts[0]
            if opt in arg_set and "=" not in t and i < len(args):
                if dynamic(args[i]):
                    return unknown(f"git {sub}: an argument known only at run time")
                i += 1
        if names and not listing:
            return unknown(f"git {sub} with a name creates or changes it")
        return known(f"git {sub} only lists")

    return handler


def _words(allowed: str, network: str = "") -> Sub:
    """Subcommands known only with these leading words (`stash list`; "" = none).

    A word in `network` contacts a remote when given a name (unless `-n`).
    """
    allowed_set = frozenset(allowed.split(",")) if allowed else frozenset({""})

    def handler(sub: str, args: tuple[Word, ...]) -> Effect:
        if any(dynamic(a) or wild(a) for a in args):
            return unknown(f"git {sub}: an argument known only at run time")
        positional = [a.text for a in args if not a.text.startswith("-")]
        first = positional[0] if positional else ""
        what = f"git {sub} {first}".rstrip()
        if first not in allowed_set:
            return unknown(f"{what} is not known to be read-only")
        offline = "-n" in {a.text for a in args}
        if first and first == network and len(positional) > 1 and not offline:
            return unknown(f"{what} NAME reaches the network (without -n)")
        return known(f"{what} only reads")

    return handler


_CONFIG_READS = names(
    "get get-all get-regexp get-urlmatch list l show-origin show-scope name-only null z "
    "global system local worktree file f blob type bool int bool-or-int path expiry-date "
    "default includes no-includes all regexp value fixed-value"
)


def _config(_sub: str, args: tuple[Word, ...]) -> Effect:
    s = scan(
        Spec(
            short_arg="f",
            long_arg=MappingProxyType(dict.fromkeys(("file", "blob", "type", "default"), 1)),
        ),
        args,
    )
    if s.problem or s.hidden:
        return unknown("git config: an argument known only at run time")
    if not all(o.name in _CONFIG_READS for o in s.opts):
        return unknown("git config with this option changes the configuration")
    reads = read_paths([o.args[-1] for o in s.opts if o.name in ("f", "file") and o.args])
    action = s.has(names("get get-all get-regexp get-urlmatch list l"))
    first = s.operands[0].text if s.operands else ""
    if action or first in ("get", "list") or not first or (len(s.operands) == 1 and "." in first):
        return known("git config only reads", reads)
    return unknown("git config with a value sets it")


def _reflog(_sub: str, args: tuple[Word, ...]) -> Effect:
    first = next((a for a in args if not a.text.startswith("-")), None)
    if first is not None and (
        dynamic(first) or first.text in ("expire", "delete", "drop", "write")
    ):
        return unknown("git reflog expire/delete changes the reflog")
    if (
        first is not None
        and first.text not in ("show", "exists")
        and re.fullmatch(r"[a-z]+", first.text)
    ):
        return unknown(f"git reflog {first.text} is not known to be read-only")
    return known("git reflog only lists")


_SUBCOMMANDS: Mapping[str, Sub] = MappingProxyType(
    {
        **dict.fromkeys(
            names(
                "status log show diff blame annotate ls-files ls-tree rev-parse rev-list "
                "describe shortlog cat-file show-ref for-each-ref merge-base name-rev "
                "whatchanged check-ignore check-attr count-objects version var show-branch "
                "cherry diff-tree diff-index diff-files range-diff check-ref-format fsck"
            ),
            _reader(),
        ),
        "grep": _reader("efABCm", pattern=True),
        "branch": _listing(
            "l list contains no-contains merged no-merged points-at",
            "contains no-contains merged no-merged points-at sort format abbrev",
            "a all r remotes v vv verbose show-current color no-color column no-column "
            "i ignore-case no-abbrev q quiet omit-empty",
        ),
        "tag": _listing(
            "l list n contains no-contains merged no-merged points-at",
            "contains no-contains merged no-merged points-at sort format",
            "color no-color column no-column i ignore-case omit-empty",
        ),
        "remote": _words(",show,get-url", network="show"),
        "stash": _words("list,show"),
        "worktree": _words("list"),
        "submodule": _words(",status"),
        "config": _config,
        "reflog": _reflog,
    }
)

_NETWORK = "reaches the network"
_NOT_READ_ONLY = MappingProxyType(
    {
        **dict.fromkeys(("push", "fetch", "pull", "clone", "ls-remote", "send-email"), _NETWORK),
        **dict.fromkeys(
            names(
                "commit add rm mv reset restore checkout switch merge rebase cherry-pick revert "
                "apply am clean stash gc prune init notes replace update-ref update-index "
                "filter-branch"
            ),
            "changes the repository or the working tree",
        ),
        "help": "opens a manual page or a browser",
    }
)
