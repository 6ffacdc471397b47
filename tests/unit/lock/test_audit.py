"""The audit log: host copy + local copy, one intact line per entry, no secrets, read back newest last."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from specops.config.inventory import HostSpec
from specops.config.secrets import Secret
from specops.errors import CommandFailed
from specops.host.local import LocalHost
from specops.host.recording import RecordingHost, reply
from specops.ops import audit


@pytest.fixture
def spec(tmp_path: Path) -> HostSpec:
    return HostSpec(name="llm-two", ssh="llm-two", python="/usr/bin/python3", model_path="/m",
                    base_dir=str(tmp_path / "opt"))  # fmt: skip


@pytest.fixture
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_record_appends_on_the_host_and_locally_with_the_host_name(
    spec: HostSpec, state_home: Path, local: LocalHost
) -> None:
    entry = audit.new_entry("deploy", outcome="ok", from_release="r1", to_release="r2", profile="ddtree",
                            phases={"push": 1.5}, gates={"smoke": {"tokens_per_s": 41.0}}, message="all gates passed")  # fmt: skip
    audit.record(local, spec, entry)
    audit.record(local, spec, audit.new_entry("rollback", outcome="ok", from_release="r2", to_release="r1"))
    on_host = _lines(Path(spec.service_dir) / "audit.jsonl")
    assert [line["action"] for line in on_host] == ["deploy", "rollback"]
    assert on_host[0] | {"when": "-", "who": "-"} == {**entry, "when": "-", "who": "-"}
    assert str(on_host[0]["who"]).count("@") == 1 and str(on_host[0]["when"]).endswith("Z")
    local_copy = _lines(state_home / "specops" / "audit.jsonl")
    assert [(line["host"], line["action"]) for line in local_copy] == [("llm-two", "deploy"), ("llm-two", "rollback")]


def test_read_returns_the_last_entries_oldest_first(spec: HostSpec, state_home: Path, local: LocalHost) -> None:
    assert audit.read(local, spec, 5) == []  # no log yet: empty, not an error
    for number in range(7):
        audit.record(local, spec, audit.new_entry("deploy", outcome="ok", to_release=f"r{number}"))
    assert [entry.to_release for entry in audit.read(local, spec, 3)] == ["r4", "r5", "r6"]


def test_a_secret_anywhere_is_refused_and_nothing_is_written(
    spec: HostSpec, state_home: Path, local: LocalHost
) -> None:
    entry = audit.new_entry("deploy", outcome="ok", gates={"env": {"HF_TOKEN": Secret("hf_live_abc")}})
    with pytest.raises(audit.SecretInAuditEntry, match=r"entry\.gates\.env\.HF_TOKEN holds a Secret"):
        audit.record(local, spec, entry)
    with pytest.raises(audit.SecretInAuditEntry):
        audit.record(local, spec, {"notes": ["ok", Secret("x")]})
    assert not (Path(spec.service_dir) / "audit.jsonl").exists()
    assert not (state_home / "specops" / "audit.jsonl").exists()


def test_a_missing_interpreter_falls_back_to_dd(tmp_path: Path, state_home: Path, local: LocalHost) -> None:
    broken = HostSpec(name="llm-two", ssh="llm-two", python="/opt/venv-gone/bin/python", model_path="/m",
                      base_dir=str(tmp_path / "opt"))  # fmt: skip
    audit.record(local, broken, audit.new_entry("deploy", outcome="failed", message="venv missing"))
    assert [line["message"] for line in _lines(Path(broken.service_dir) / "audit.jsonl")] == ["venv missing"]


def test_a_host_failure_still_leaves_the_local_copy(spec: HostSpec, state_home: Path) -> None:
    host = RecordingHost("llm-two", default=reply(exit_code=1, stderr="disk full"))
    with pytest.raises(CommandFailed, match="disk full"):
        audit.record(host, spec, audit.new_entry("deploy", outcome="failed"))
    assert [line["outcome"] for line in _lines(state_home / "specops" / "audit.jsonl")] == ["failed"]


def test_concurrent_writers_never_interleave_inside_a_line(spec: HostSpec, state_home: Path, local: LocalHost) -> None:
    def write(writer: int) -> None:
        for number in range(3):
            audit.record(
                local, spec, audit.new_entry("deploy", outcome="ok", message=f"{writer}:{number}:" + "x" * 60000)
            )

    threads = [threading.Thread(target=write, args=(writer,)) for writer in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    entries = _lines(Path(spec.service_dir) / "audit.jsonl")
    assert sorted(str(entry["message"])[:4] for entry in entries) == sorted(
        f"{w}:{n}:" for w in range(4) for n in range(3)
    )


def test_xdg_state_home_default_and_relative_values(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    assert audit.local_audit_path() == tmp_path / ".local" / "state" / "specops" / "audit.jsonl"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/dir")
    assert audit.local_audit_path() == tmp_path / ".local" / "state" / "specops" / "audit.jsonl"


def test_an_unreadable_line_is_shown_not_fatal(spec: HostSpec, state_home: Path, local: LocalHost) -> None:
    path = Path(spec.service_dir) / "audit.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text('{"action": "deploy"}\nnot json\n')
    assert [line.to_json() for line in audit.read(local, spec, 10)] == [
        {"action": "deploy"},
        {"unreadable": "not json"},
    ]
