"""Reading and writing text files the way an editor would: nothing silently changed.

The file tools share these helpers so that every tool agrees on what "text" is:
a NUL byte in the first 8 KB means binary; UTF-8 (with or without a BOM) and UTF-16
with a BOM are decoded; bytes that are not valid UTF-8 never crash a tool. They are
kept as surrogate escapes, so an edit elsewhere in the file writes them back
unchanged, and `TextFile.display` shows them as U+FFFD. Writes are atomic and keep
the file's permissions.

Text from the model that must reach the OS (paths, commands, patterns) is checked
with `check_text`: a NUL byte or a lone surrogate is the model's mistake and becomes
a `ToolError`, not a crash. Names from the OS that are not valid UTF-8 are shown
with `escape_surrogates` (`\\xff.txt`), so no tool output holds a lone surrogate.
"""

from __future__ import annotations

import codecs
import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tether.errors import ToolError

__all__ = [
    "BINARY_SNIFF_BYTES",
    "Newline",
    "TextFile",
    "atomic_write",
    "check_text",
    "count_lines",
    "decode",
    "detect_newline",
    "escape_surrogates",
    "fsync_dir",
    "looks_binary",
    "printable",
    "read_text",
    "split_lines",
    "to_newline",
]

BINARY_SNIFF_BYTES = 8192
Newline = Literal["\n", "\r\n"]

_SURROGATE = re.compile("[\ud800-\udfff]")
_UTF16_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


@dataclass(frozen=True, slots=True)
class TextFile:
    """A decoded text file plus everything needed to write it back the same way.

    `text` is exact (BOM removed, line endings untouched, undecodable bytes kept as
    surrogate escapes); `encode(text)` turns it, or an edited version, back into bytes.
    """

    text: str
    encoding: str = "utf-8"
    bom: bool = False
    lossy: bool = False
    newline: Newline = "\n"
    size: int = 0

    @property
    def display(self) -> str:
        """The text as a model should see it: undecodable bytes become U+FFFD."""
        return printable(self.text) if self.lossy else self.text

    @property
    def ends_with_newline(self) -> bool:
        return self.text.endswith("\n")

    @property
    def description(self) -> str:
        """A short note on anything unusual about the encoding, or ""."""
        notes: list[str] = []
        if self.encoding != "utf-8":
            notes.append(self.encoding.upper())
        if self.bom:
            notes.append("BOM")
        if self.newline == "\r\n":
            notes.append("CRLF line endings")
        if self.lossy:
            notes.append("not valid UTF-8: undecodable bytes shown as \ufffd")
        return ", ".join(notes)

    def encode(self, text: str) -> bytes:
        """`text` in this file's encoding, with its BOM if it had one."""
        if self.encoding == "utf-8":
            try:
                data = text.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:  # a lone surrogate that is no escaped byte
                data = text.encode("utf-8", "replace")
            return (codecs.BOM_UTF8 + data) if self.bom else data
        data = text.encode(self.encoding, "replace")
        mark = next(m for m, enc in _UTF16_BOMS if enc == self.encoding)
        return (mark + data) if self.bom else data


def printable(text: str) -> str:
    """`text` with surrogate escapes (undecodable bytes) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def escape_surrogates(text: str) -> str:
    """`text` with every lone surrogate written out as an ASCII escape.

    A surrogate escape (an undecodable byte of a file name, from `os.fsdecode`)
    becomes `\\xNN`, exactly as `os.fsencode(name).decode("utf-8", "backslashreplace")`
    shows it; any other lone surrogate becomes `\\udNNN`. Text without surrogates
    comes back unchanged.
    """
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(_escape_surrogate, text)


def _escape_surrogate(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def check_text(value: str, what: str, *, allow_nul: bool = False, hint: str = "") -> None:
    """Refuse model-sent `value` that cannot be passed on to the OS or written as UTF-8.

    `what` names the argument in the message ("The command", "The path"). A NUL byte
    cannot be part of a path or a command line; a lone surrogate (e.g. "\\ud83d", half
    of an emoji) is not Unicode text at all and has no UTF-8 encoding.
    """
    if not allow_nul and "\x00" in value:
        raise ToolError(
            f"{what} contains a NUL byte (\\x00, at character {value.index(chr(0))}); "
            "no path or command line can hold one, so remove it."
        )
    bad = _SURROGATE.search(value)
    if bad is not None:
        raise ToolError(
            f"{what} contains text that is not valid Unicode (a lone surrogate, "
            f"U+{ord(bad.group()):04X}, at character {bad.start()}); send valid text, "
            f"e.g. a whole emoji rather than half of it.{' ' + hint if hint else ''}"
        )


def looks_binary(data: bytes) -> bool:
    """True when the start of `data` holds a NUL byte (and it is not UTF-16 text)."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    return b"\x00" in data[:BINARY_SNIFF_BYTES]


def detect_newline(text: str) -> Newline:
    """CRLF when most line breaks are CRLF, else LF (also for a file with no breaks)."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


def decode(data: bytes) -> TextFile:
    """Decode file bytes; never raises. Check `looks_binary` first for binary files."""
    for mark, encoding in _UTF16_BOMS:
        if data.startswith(mark):
            body = data[len(mark) :]
            try:
                return _text_file(body.decode(encoding), data, encoding, bom=True, lossy=False)
            except UnicodeDecodeError:
                text = body.decode(encoding, "replace")
                return _text_file(text, data, encoding, bom=True, lossy=True)
    has_bom = data.startswith(codecs.BOM_UTF8)
    body = data[len(codecs.BOM_UTF8) :] if has_bom else data
    try:
        return _text_file(body.decode("utf-8"), data, "utf-8", bom=has_bom, lossy=False)
    except UnicodeDecodeError:
        text = body.decode("utf-8", "surrogateescape")
        return _text_file(text, data, "utf-8", bom=has_bom, lossy=True)


def _text_file(text: str, data: bytes, encoding: str, *, bom: bool, lossy: bool) -> TextFile:
    return TextFile(
        text=text,
        encoding=encoding,
        bom=bom,
        lossy=lossy,
        newline=detect_newline(text),
        size=len(data),
    )


def read_text(path: Path) -> TextFile | None:
    """The decoded file, or None when it looks binary. OSErrors propagate."""
    data = path.read_bytes()
    if looks_binary(data):
        return None
    return decode(data)


def to_newline(text: str, newline: Newline) -> str:
    """`text` with every line break (LF or CRLF) written as `newline`."""
    normal = text.replace("\r\n", "\n")
    return normal if newline == "\n" else normal.replace("\n", "\r\n")


def split_lines(text: str) -> list[str]:
    """Lines without their terminators (LF or CRLF); a final newline adds no line."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def count_lines(text: str) -> int:
    """How many lines an editor would show (a last line without newline counts)."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def atomic_write(path: Path, data: str | bytes) -> None:
    """Replace `path` with `data` all at once: a crash leaves the old or the new file.

    A `str` is written as UTF-8 exactly as given (no newline translation). The temp
    file lives in the same directory (so `os.replace` is a rename), is fsynced before
    the rename, and gets the old file's permission bits; a new file gets the usual
    umask-derived mode. Missing parent directories are created.
    """
    payload = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        old_mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        old_mode = None
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    # 0o666 lets the kernel apply the process umask, exactly as for a fresh open().
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        if old_mode is not None:
            tmp.chmod(old_mode)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Make the rename itself durable; not every platform can open a directory."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
