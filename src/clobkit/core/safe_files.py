"""Files clobkit writes or reads beside other users: never through a planted link.

Every file clobkit writes (a recording's Parquet files and ``markets.json``, the
``order-ids`` output, the backtest report, the sandbox's state) is created under
a random name in its final directory with ``O_CREAT | O_EXCL`` (``tempfile``'s
``mkstemp``, which also refuses to follow a symlink at that name), written
through the descriptor it opened, and renamed into place: the rename replaces a
link at the final name instead of writing where it points, and a reader never
sees half a file. ``unsafe_directory`` names what makes a directory unsafe to
write into (another owner, or others allowed to write it without the sticky
bit), for a warning.

A file another library opens by name (the sandbox's SQLite state file) is made
by ``new_regular`` when it does not exist yet (exclusively, never through a link),
and refused when it, or a companion file the library writes beside it (SQLite's
``-wal`` and ``-journal``), is a link.

Small metadata files (``markets.json``) are read by ``read_regular``: opened
without blocking (a FIFO cannot hang the reader), refused unless a regular file,
and read up to a bound (``/dev/zero`` cannot fill memory).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Literal, overload

__all__ = [
    "NotRegular",
    "atomic_output",
    "new_regular",
    "open_regular",
    "read_regular",
    "unsafe_directory",
]


def _umask() -> int:
    """The process's umask, read without changing it (Linux: ``/proc/self/status``)."""
    with (
        contextlib.suppress(OSError, ValueError),
        open("/proc/self/status", encoding="ascii") as st,
    ):
        for line in st:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)  # elsewhere: set and put back (once, at first use)
    os.umask(mask)
    return mask


_MODE: int | None = None  # what open(..., "w") would have given a new file


def _file_mode() -> int:
    global _MODE
    if _MODE is None:
        _MODE = 0o666 & ~_umask()
    return _MODE


@overload
def atomic_output(
    final: str | os.PathLike[str], mode: Literal["wb"] = "wb"
) -> contextlib.AbstractContextManager[IO[bytes]]: ...
@overload
def atomic_output(
    final: str | os.PathLike[str], mode: Literal["w"]
) -> contextlib.AbstractContextManager[IO[str]]: ...
def atomic_output(
    final: str | os.PathLike[str], mode: str = "wb"
) -> contextlib.AbstractContextManager[IO[bytes]] | contextlib.AbstractContextManager[IO[str]]:
    """``with atomic_output(path) as f: f.write(...)``: ``f`` is a new file under a
    random name beside ``path`` (created exclusively, never through a link), renamed
    to ``path`` when the block ends without an error, removed when it raises.
    ``mode`` ``"wb"`` or ``"w"`` (UTF-8, no newline translation). The file gets the
    mode ``open`` would give it (0o666 less the umask)."""
    return _atomic_output(Path(final), mode)  # type: ignore[return-value]  # per mode, above


@contextlib.contextmanager
def _atomic_output(final: Path, mode: str) -> Iterator[IO[bytes] | IO[str]]:
    directory = final.parent
    fd, name = tempfile.mkstemp(dir=directory, prefix=f".{final.name}.", suffix=".part")
    tmp = Path(name)
    try:
        os.fchmod(fd, _file_mode())
        if mode == "w":
            file: IO[bytes] | IO[str] = os.fdopen(fd, "w", encoding="utf-8", newline="")
        else:
            file = os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    try:
        with file:
            yield file
        os.replace(tmp, final)  # replaces a link at ``final``, never writes through it
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def unsafe_directory(directory: str | os.PathLike[str]) -> str | None:
    """Why writing into ``directory`` could be tampered with by another local user
    (another owner; writable by the group or others without the sticky bit), or
    ``None``. A directory that does not exist yet is judged by its nearest parent."""
    path = Path(directory)
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        st = path.stat()
    except OSError:
        return None
    getuid = getattr(os, "getuid", None)
    if getuid is not None and st.st_uid != getuid():
        return f"{path} belongs to another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        return f"{path} can be written by other users (mode {stat.filemode(st.st_mode)})"
    return None


class NotRegular(OSError):
    """``read_regular``'s refusal: not a regular file, or larger than the bound."""


def open_regular(path: str | os.PathLike[str]) -> IO[bytes]:
    """``path`` opened for reading as a binary file, refused (``NotRegular``) unless it is
    a regular file: opened without blocking (a FIFO answers at once instead of waiting
    for a writer), checked on the descriptor opened (no swap in between)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(f"{os.fsdecode(path)} is not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)  # a regular file: reads as usual from here
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    Opened as ``open_regular`` opens it and refused (``NotRegular``, an ``OSError``
    naming the path) unless it is a regular file of at most ``limit`` bytes; read
    once, never past the bound whatever the file claims (a file that grows)."""
    with open_regular(path) as file:
        if os.fstat(file.fileno()).st_size > limit:
            raise NotRegular(f"{os.fsdecode(path)} is larger than {limit} bytes")
        data = file.read(limit + 1)
    if len(data) > limit:
        raise NotRegular(f"{os.fsdecode(path)} is larger than {limit} bytes")
    return data


def new_regular(path: str | os.PathLike[str], companions: tuple[str, ...] = ()) -> str | None:
    """Make ``path`` an empty regular file if nothing is there (``O_CREAT | O_EXCL``, no
    link followed), for a library that then opens it by name; why it must not be opened
    (it, or ``path`` plus one of ``companions``, is a symbolic link), or ``None``."""
    name = os.fsdecode(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    # already there (checked next), or not creatable (the library will say why)
    with contextlib.suppress(OSError):
        os.close(os.open(name, flags, 0o666))  # the umask applies, as to open()
    for linked in (name, *(name + suffix for suffix in companions)):
        if os.path.islink(linked):
            return f"{linked} is a symbolic link (name the file itself; none beside it)"
    return None
