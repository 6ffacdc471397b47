"""`specops doctor` on a host whose specops.toml waives a check: the check still runs and its result is shown
with the reason, but a waived failure does not fail the doctor."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from specops.doctor.runner import DoctorTarget, HostReport
from tests.unit.clirun import CliResult, run_cli
from tests.unit.conftest import VALID_HOST
from tests.unit.doctor.factory import healthy_facts

WAIVE = 'waive = [{ check = "gpu.driver", reason = "CPU staging box" }]\n'


@pytest.fixture
def doctor(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """The doctor on llm-two, whose probe finds no nvidia-smi (a CPU box): gpu.driver FAILs there."""
    facts = healthy_facts()
    facts = facts.model_copy(update={"nvidia": facts.nvidia.model_copy(update={"smi_found": False, "gpus": []})})

    def observe(target: DoctorTarget, deep: bool, connected: threading.Event) -> HostReport:
        connected.set()
        return HostReport(name=target.name, facts=facts)

    monkeypatch.setattr("specops.doctor.runner._observe", observe)
    return lambda *args: run_cli(capsys, "doctor", "llm-two", "--only", "gpu.driver,python.interpreter", *args)


def test_without_a_waiver_the_failing_check_fails_the_doctor(
    write_config: Callable[[str], Path], doctor: Callable[..., CliResult]
) -> None:
    write_config(VALID_HOST)
    result = doctor("--json")
    assert result.code == 1
    [gpu] = [c for c in json.loads(result.out)["hosts"]["llm-two"]["checks"] if c["id"] == "gpu.driver"]
    assert (gpu["status"], gpu["waived"]) == ("fail", None)


def test_a_waived_failure_is_shown_with_its_reason_and_does_not_fail_the_doctor(
    write_config: Callable[[str], Path], doctor: Callable[..., CliResult]
) -> None:
    write_config(VALID_HOST + WAIVE)
    result = doctor("--json")
    assert result.code == 0, result.out
    [gpu] = [c for c in json.loads(result.out)["hosts"]["llm-two"]["checks"] if c["id"] == "gpu.driver"]
    assert (gpu["status"], gpu["waived"]) == ("fail", "CPU staging box")  # it ran, and failed
    text = doctor()
    assert text.code == 0
    lines = text.out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("[✗] gpu.driver"))
    assert lines[at + 1].strip() == "waived: CPU staging box"
    assert lines[-1] == "1/1 checks passed on 1 host, 1 waived"


def test_strict_still_ignores_a_waived_failure(
    write_config: Callable[[str], Path], doctor: Callable[..., CliResult]
) -> None:
    write_config(VALID_HOST + WAIVE)
    assert doctor("--strict").code == 0
