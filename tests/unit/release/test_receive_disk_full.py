"""The host side of a push on a full disk: a `disk-full` refusal that says so, and no partial release left.

A partial release on a full disk would block every later push (the prune that removes `unfinished` releases
runs only after a verified deploy), so the receive removes it itself. The real full disk (a tmpfs base_dir on
a test host) is in tests/e2e/test_faults.py; here the extractor's failure is simulated.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import IO

import pytest

from specops.ops.release_replies import reply_hint
from specops.remote.release import claim, receive
from specops.remote.release.hostdata import Refused


def _full_disk_tar(root: str, source: IO[bytes]) -> dict[str, tuple[int, int, str]]:
    Path(root, "half-written.bin").write_bytes(b"x" * 4608)
    raise Refused("unsafe", "tar refused the stream: tar: weights.bin: Wrote only 4608 of 10240 bytes")


def _broken_tar(root: str, source: IO[bytes]) -> dict[str, tuple[int, int, str]]:
    raise Refused("unsafe", "tar refused the stream: tar: ../evil: Member name contains '..'")


def test_a_full_disk_is_refused_as_disk_full_and_the_partial_release_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(receive, "extract_with_tar", _full_disk_tar)
    with pytest.raises(Refused) as caught:
        receive.op_receive(str(tmp_path), "r-01", "", "sha256:x", extractor="tar")
    assert caught.value.kind == "disk-full"
    assert "no space left on the disk of" in str(caught.value) and "partial release was removed" in str(caught.value)
    assert os.listdir(tmp_path / "releases") == []
    assert "free space" in reply_hint("disk-full")


def test_other_refusals_leave_the_release_unfinished_for_the_next_prune(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(receive, "extract_with_tar", _broken_tar)
    with pytest.raises(Refused) as caught:
        receive.op_receive(str(tmp_path), "r-01", "", "sha256:x", extractor="tar")
    assert caught.value.kind == "unsafe"
    assert os.listdir(tmp_path / "releases" / "r-01") == ["unfinished"]


def test_enospc_and_edquot_from_python_count_as_a_full_disk() -> None:
    assert claim.is_disk_full(OSError(errno.ENOSPC, "No space left on device"))
    assert claim.is_disk_full(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert not claim.is_disk_full(OSError(errno.EACCES, "Permission denied"))
