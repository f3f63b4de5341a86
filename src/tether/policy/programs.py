"""Interpreters, build tools, package managers and network tools: not known.

They run code (`python -c`, `make`, `npm run`, a script) or reach the network
(`curl`, `ssh`), so they may do anything. Only plain version queries of tools
that answer before reading anything from the workspace are known read-only
(`python --version` runs no `.pth` hooks; `pip`, `cargo`/`rustc` (rust-toolchain
files), `go` (go.mod toolchains), `yarn`/`pnpm` (yarnPath, corepack) may run
workspace code or download toolchains even for `--version`, so they are not).
Unknown programs are not known either; the reasons here only make the question
clearer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType

from tether.policy.effects import Effect, known, unknown
from tether.policy.shellparse import Word

__all__ = ["HANDLERS", "judge_other"]

Handler = Callable[[str, tuple[Word, ...]], Effect]

_VERSIONS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "python": ("--version", "-V", "-VV"),
        "node": ("--version", "-v"),
        "nodejs": ("--version", "-v"),
        "deno": ("--version", "-V"),
        "perl": ("--version", "-v"),
        "php": ("--version", "-v"),
        "npm": ("--version", "-v"),
        "java": ("--version", "-version"),
        "javac": ("--version", "-version"),
        "make": ("--version", "-v"),
    }
)
_PYTHON = re.compile(r"python[0-9.]*|pypy[0-9.]*|pip[0-9.]*")

_GROUPS = (
    (
        "runs code given to it",
        "python python2 python3 pypy pypy3 node nodejs deno bun perl ruby irb php lua luajit "
        "Rscript R osascript tclsh wish julia ghci runghc scala groovy java kotlin swift "
        "elixir iex erl escript guile racket sbcl clojure jshell dotnet ipython jupyter vim vi "
        "nvim emacs nano ed ex watch parallel expect script",
    ),
    (
        "runs build scripts",
        "make gmake cmake ninja meson bazel buck mvn gradle gradlew ant sbt cargo go rustc "
        "gcc g++ cc c++ clang clang++ ld javac tsc esbuild vite webpack rollup just task",
    ),
    (
        "runs package scripts or installs packages",
        "npm npx pnpm pnpx yarn bunx pip pip3 pipx uv uvx poetry pdm hatch conda mamba gem "
        "bundle bundler composer brew apt apt-get dnf yum pacman apk snap flatpak nix rustup",
    ),
    ("runs a test suite (project code)", "pytest tox nox jest vitest mocha rspec phpunit"),
    (
        "reaches the network",
        "curl wget ssh scp sftp rsync nc ncat netcat ftp telnet socat ping dig nslookup host "
        "git-lfs aria2c http https xh gh hub aws gcloud az kubectl docker podman",
    ),
    (
        "manages processes or the system",
        "kill pkill killall systemctl service reboot shutdown halt mount umount crontab at "
        "chroot unshare nsenter ulimit renice taskset chrt flock setsid disown",
    ),
)
_REASONS: Mapping[str, str] = MappingProxyType(
    {name: why for why, names in _GROUPS for name in names.split()}
)


def judge_other(name: str, args: tuple[Word, ...]) -> Effect:
    """A program with no handler: only a version query is known."""
    base = name
    if _PYTHON.fullmatch(name):
        base = "pip" if name.startswith("pip") else "python"
    versions = _VERSIONS.get(base, ())
    if len(args) == 1 and args[0].literal and args[0].text in versions:
        return known(f"{name} {args[0].text} only prints its version")
    why = _REASONS.get(base) or ("runs code given to it" if base == "python" else None)
    if why is None:
        return unknown(f"{name} is not known to be read-only")
    return unknown(f"{name} {why}")


HANDLERS: Mapping[str, Handler] = MappingProxyType({n: judge_other for n in _REASONS})
