"""``clobkit.core.safe_files``: files written through no planted link, small files read
as regular files only, within a bound (real links, FIFOs and devices in a temporary
directory)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from clobkit.core.safe_files import (
    NotRegular,
    atomic_output,
    new_regular,
    open_regular,
    read_regular,
    unsafe_directory,
)


def test_atomic_output_replaces_a_planted_link_instead_of_writing_through_it(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    final = tmp_path / "out.csv"
    final.symlink_to(victim)
    with atomic_output(final, "w") as f:
        f.write("a,b\n")
    assert victim.read_text() == "precious"
    assert not final.is_symlink()
    assert final.read_text() == "a,b\n"


def test_atomic_output_leaves_nothing_when_the_block_raises(tmp_path: Path) -> None:
    final = tmp_path / "out.bin"

    def broken() -> None:
        with atomic_output(final) as f:
            f.write(b"half")
            raise RuntimeError("broken")

    with pytest.raises(RuntimeError):
        broken()
    assert list(tmp_path.iterdir()) == []


def test_atomic_output_gives_the_mode_open_would(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_bytes(b"")
    final = tmp_path / "safe"
    with atomic_output(final) as f:
        f.write(b"x")
    assert stat.S_IMODE(final.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)


def test_atomic_output_names_are_not_predictable(tmp_path: Path) -> None:
    names: set[str] = set()
    for _ in range(3):
        with atomic_output(tmp_path / "out"):
            names.update(p.name for p in tmp_path.iterdir() if p.name.endswith(".part"))
    assert len(names) == 3
    assert not any(p.name.endswith(".part") for p in tmp_path.iterdir())


def test_read_regular_refuses_a_fifo_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "markets.json"
    os.mkfifo(fifo)
    with pytest.raises(NotRegular, match="not a regular file"):
        read_regular(fifo, 1024)


def test_read_regular_refuses_a_device_and_a_directory(tmp_path: Path) -> None:
    with pytest.raises(NotRegular, match="not a regular file"):
        read_regular("/dev/zero", 1024)
    with pytest.raises(NotRegular, match="not a regular file"):
        read_regular(tmp_path, 1024)


def test_open_regular_gives_a_regular_file_and_refuses_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "book-000000000000-20251201T000000.parquet"
    path.write_bytes(b"PAR1")
    with open_regular(path) as f:
        assert f.read() == b"PAR1"
    fifo = tmp_path / "book-000000000001-20251201T000001.parquet"
    os.mkfifo(fifo)
    for other in (fifo, tmp_path, Path("/dev/null")):
        with pytest.raises(NotRegular, match="not a regular file"):
            open_regular(other)


def test_read_regular_bounds_the_size(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b"x" * 2000)
    with pytest.raises(NotRegular, match="larger than 1999 bytes"):
        read_regular(path, 1999)
    assert read_regular(path, 2000) == b"x" * 2000


def test_unsafe_directory_names_a_world_writable_one(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    assert unsafe_directory(shared) is None
    shared.chmod(0o777)
    reason = unsafe_directory(shared)
    assert reason is not None
    assert "can be written by other users" in reason
    shared.chmod(0o1777)  # sticky, as /tmp: others cannot replace one's files
    assert unsafe_directory(shared) is None
    assert unsafe_directory(shared / "not" / "yet") is None  # judged by its parent


def test_new_regular_makes_a_file_and_refuses_links(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    assert new_regular(path, ("-wal",)) is None
    assert path.is_file()
    assert path.read_bytes() == b""
    path.write_bytes(b"kept")
    assert new_regular(path) is None  # an existing file is left as it is
    assert path.read_bytes() == b"kept"
    target = tmp_path / "nowhere"
    dangling = tmp_path / "other.db"
    dangling.symlink_to(target)
    reason = new_regular(dangling)
    assert reason is not None
    assert "is a symbolic link" in reason
    assert not target.exists()
    (tmp_path / "state.db-wal").symlink_to(target)
    assert "state.db-wal is a symbolic link" in (new_regular(path, ("-wal",)) or "")
