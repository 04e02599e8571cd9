"""The sandbox's state file is never created or opened through a link planted where
it, or a file SQLite keeps beside it, will be (issue #42). Real links in a temporary
directory; the sandbox refuses in one line and writes nothing where a link points."""

from __future__ import annotations

from pathlib import Path

import pytest

from clobkit.sandbox import Sandbox, StateFileError


def _refused(state: Path) -> str:
    with pytest.raises(StateFileError) as info:
        Sandbox(state=str(state))
    said = str(info.value)
    assert "\n" not in said
    return said


def test_a_dangling_link_at_the_state_files_name_creates_nothing(tmp_path: Path) -> None:
    # SQLite followed it: the sandbox created its database wherever the link pointed
    target = tmp_path / "elsewhere" / "planted.db"
    target.parent.mkdir()
    (tmp_path / "state.db").symlink_to(target)
    said = _refused(tmp_path / "state.db")
    assert "state.db is a symbolic link" in said
    assert not target.exists()


def test_a_link_to_an_empty_file_is_not_written_through(tmp_path: Path) -> None:
    # an empty file is a new database to SQLite: its schema went into the victim
    victim = tmp_path / "victim"
    victim.write_bytes(b"")
    (tmp_path / "state.db").symlink_to(victim)
    assert "is a symbolic link" in _refused(tmp_path / "state.db")
    assert victim.read_bytes() == b""


@pytest.mark.parametrize("suffix", ["-wal", "-journal", "-shm"])
def test_a_link_planted_beside_the_state_file_is_refused(tmp_path: Path, suffix: str) -> None:
    # SQLite opens (and writes) its write-ahead log by name, following a link there
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    (tmp_path / f"state.db{suffix}").symlink_to(victim)
    assert f"state.db{suffix} is a symbolic link" in _refused(tmp_path / "state.db")
    assert victim.read_bytes() == b"precious"


def test_a_new_state_file_is_a_regular_file_and_opens_again(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    first = Sandbox(state=str(state))
    first.close_state()
    assert state.is_file()
    assert not state.is_symlink()
    Sandbox(state=str(state)).close_state()
