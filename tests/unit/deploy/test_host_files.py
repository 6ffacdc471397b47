"""The read step's one request, run by a real interpreter: the installed unit and the env file the current
release runs with (its own, else the live one); a missing file reads as none, as a failed `cat` did."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from specops.commands.host_files import files_argv
from specops.commands.planned import run
from specops.deploy.host_state import read_host_files
from specops.deploy.step_commands import HOST_FILES
from specops.deploy.steps import Step
from specops.errors import CommandFailed
from specops.host.local import LocalHost
from specops.host.recording import RecordingHost, reply


def _read(unit: Path, own: str, live: Path) -> tuple[str | None, str | None]:
    argv = files_argv(sys.executable, str(unit), own, str(live))
    return read_host_files(LocalHost("gpu1"), Step("read", "read", (run(argv, role=HOST_FILES),)))


def test_the_unit_and_the_release_s_own_env_file(tmp_path: Path) -> None:
    unit, own, live = tmp_path / "sglang.service", tmp_path / ".specops-env", tmp_path / "env"
    unit.write_text("[Unit]\n")
    own.write_text('HF_TOKEN="own"\n')
    live.write_text('HF_TOKEN="live"\n')
    assert _read(unit, str(own), live) == ("[Unit]\n", 'HF_TOKEN="own"\n')


def test_without_its_own_env_file_the_live_one_and_without_a_unit_none(tmp_path: Path) -> None:
    live = tmp_path / "env"
    live.write_text('HF_TOKEN="live"\n')
    assert _read(tmp_path / "none.service", str(tmp_path / "missing"), live) == (None, 'HF_TOKEN="live"\n')
    assert _read(tmp_path / "none.service", "", tmp_path / "no-env") == (None, None)  # no current release


def test_an_answer_that_is_not_the_reply_is_a_clear_error() -> None:
    host = RecordingHost("gpu1").script(["python3"], reply("Welcome to the host!\n"))  # a chatty login, say
    step = Step("read", "read", (run(files_argv("python3", "/u", "", "/e"), role=HOST_FILES),))
    with pytest.raises(CommandFailed) as caught:
        read_host_files(host, step)
    assert "Welcome to the host!" in caught.value.message
