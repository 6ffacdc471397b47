"""What the probe learns without starting programs or heavy imports on the host: the ffmpeg CLI's version from
its program file (running it loads ~100 libraries), system facts through the os module. What it reports must be
exactly what `ffmpeg -version`, platform and socket would have said."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from specops.remote.probe.common import map_in_threads
from specops.remote.probe.libs import banner_version, ffmpeg_cli


def _path_with(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")


def test_the_version_read_from_the_real_ffmpeg_is_its_own_first_line(ffmpeg: str) -> None:
    first_line = subprocess.run([ffmpeg, "-version"], capture_output=True, text=True, check=True).stdout
    cli = ffmpeg_cli()
    assert cli["read_from_file"] is True
    assert first_line.startswith(cli["out"] + " Copyright")


def test_a_wrapper_script_is_run_as_before(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    wrapper = tmp_path / "ffmpeg"
    wrapper.write_text("#!/bin/sh\necho 'ffmpeg version 7.1-wrapped Copyright (c) the FFmpeg developers'\necho more\n")
    wrapper.chmod(0o755)
    _path_with(monkeypatch, tmp_path)
    cli = ffmpeg_cli()
    assert (cli["out"], cli["rc"], cli["path"], "read_from_file" in cli) == (
        "ffmpeg version 7.1-wrapped Copyright (c) the FFmpeg developers",
        0,
        str(wrapper),
        False,
    )


def test_a_copy_whose_libraries_are_gone_still_names_its_version(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Running it would fail (no libavutil); the consistency check still learns which FFmpeg the CLI is."""
    banner = b"\x00\x7fELF-ish\x00%s version 6.1.1-3ubuntu5\n Copyright (c) %d-%d the FFmpeg developers\x00"
    stray = tmp_path / "ffmpeg"
    stray.write_bytes(banner)
    stray.chmod(0o755)
    _path_with(monkeypatch, tmp_path)
    assert (ffmpeg_cli()["out"], banner_version(str(stray))) == ("ffmpeg version 6.1.1-3ubuntu5", "6.1.1-3ubuntu5")


def test_no_ffmpeg_on_path_is_not_found(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    cli = ffmpeg_cli()
    assert (cli["found"], cli["out"], cli["path"]) == (False, "", None)


def test_an_empty_or_unreadable_file_has_no_banner(tmp_path: Path) -> None:
    (tmp_path / "empty").write_bytes(b"")
    assert banner_version(str(tmp_path / "empty")) is None
    assert banner_version(str(tmp_path / "missing")) is None


def test_map_in_threads_keeps_order_and_raises_the_first_error() -> None:
    assert map_in_threads(lambda n: n * n, list(range(9)), workers=3) == [n * n for n in range(9)]
    assert map_in_threads(str, [], workers=4) == []

    def fail_on_odd(n: int) -> int:
        if n % 2:
            raise ValueError(f"odd {n}")
        return n

    with pytest.raises(ValueError, match="odd 1"):
        map_in_threads(fail_on_odd, [0, 1, 2, 3], workers=2)


def test_system_facts_say_what_platform_and_socket_would() -> None:
    """The probe reads them through the os module (no platform or socket import on the host); the values
    must be the ones those modules give."""
    import platform
    import socket
    import sys

    from specops.remote.probe.hoststate import _blocks, gather_python, gather_system

    system = gather_system()
    expected = (socket.gethostname(), platform.release(), " ".join(platform.libc_ver()).strip())
    assert (system["hostname"], system["kernel"], system["glibc"]) == expected
    assert gather_python()["version"] == platform.python_version() == sys.version.split()[0]
    assert _blocks("0100007F", "127.0.0.1") and _blocks("0B00000A", "10.0.0.11")
    assert not _blocks("0B00000A", "10.0.0.12")
