"""Environment variables that change what a command runs, so setting one must ask.

`LD_PRELOAD=x ls` is not `ls`: the variable makes the loader, the shell, git, a
pager or an interpreter run other code. Applies to leading assignments, to
`env NAME=value`, to assignment-only commands (they change later commands) and
to builtins that set variables (`export`, `read`, `printf -v`, ...).
"""

from __future__ import annotations

__all__ = ["risky_name"]

# fmt: off
_EXACT = frozenset(
    {
        # the shell itself
        "PATH", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS1", "PS2", "PS3", "PS4",
        "PROMPT_COMMAND", "IFS", "CDPATH", "HOME", "SHELL", "FPATH", "ZDOTDIR",
        "BASH_LOADABLES_PATH", "GLOBIGNORE", "EXECIGNORE", "INPUTRC", "HISTFILE",
        # programs that run other programs
        "PAGER", "EDITOR", "VISUAL", "MANPAGER", "MANOPT", "BROWSER", "SSH_ASKPASS",
        "SUDO_ASKPASS", "GCONV_PATH", "LOCPATH", "NLSPATH", "RIPGREP_CONFIG_PATH",
        "GREP_OPTIONS", "TAR_OPTIONS", "UNZIP", "UNZIPOPT", "ZIPOPT", "GZIP", "BZIP2",
        "XZ_OPT", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "TERMINFO", "TERMINFO_DIRS",
        # interpreters
        "NODE_OPTIONS", "NODE_PATH", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT",
        "RUBYLIB", "CLASSPATH", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS",
        "AWKPATH", "AWKLIBPATH", "TCLLIBPATH", "LUA_PATH", "LUA_CPATH", "LUA_INIT",
        # where programs write
        "SIMPLE_BACKUP_SUFFIX", "TMPDIR",
    }
)
_PREFIXES = ("LD_", "DYLD_", "PYTHON", "BASH_FUNC_", "LESS", "GIT_", "PERL")
_SAFE_GIT = frozenset(
    {
        "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "GIT_TERMINAL_PROMPT",
        "GIT_OPTIONAL_LOCKS", "GIT_NO_REPLACE_OBJECTS", "GIT_LITERAL_PATHSPECS",
        "GIT_FLUSH", "GIT_MERGE_AUTOEDIT",
    }
)
# fmt: on


def risky_name(name: str) -> str | None:
    """Why setting `name` changes what runs, or None if it is harmless.

    `PATH[0]` and `PATH+` (from `PATH+=...`) count as `PATH`.
    """
    name = name.split("[", 1)[0].rstrip("+")
    if name in _SAFE_GIT:
        return None
    if name in _EXACT or name.startswith(_PREFIXES):
        return f"sets {name}, which changes what runs"
    return None
