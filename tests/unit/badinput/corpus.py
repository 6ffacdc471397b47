"""The bad-input corpus: cases kept as data (cases/*.toml), each run through the real CLI entry point.

A case writes a scene (specops.toml, profiles, patches, build folders) into a fresh folder, runs
`specops ARGS...` in-process with every host reached as a strict RecordingHost, and is *clean* when:
the exit code is the documented one, a line of the output matches the expected path-qualified message,
a refusal (any exit but 0 and 1) shows its `error:` and `hint:` lines, no traceback, no "internal error" and
no raw control character (ESC, C1, U+2028: the input's own, which a terminal would obey) is shown, and no
host saw a command that writes (a put, the release script, a systemctl start/restart/stop, a unit or env-file
write).

Case file format (one file per family):

    [defaults]                         # keys every case of the file starts from
    args = ["config", "check"]
    code = 3

    [[case]]
    id = "port_bool"
    host = "port = true"               # appended to the valid host table (`drop` removes its keys)
    error = 'specops\\.toml: hosts\\.llm-two\\.port: '    # a regex searched in stderr (stdout with --json)

    [[matrix]]                         # one case per value: `{}` in host/config/args/files is replaced
    id = "port"
    host = "port = {}"
    values = ["true", "1.5", '"x"']

    files = {"profiles/x.toml" = "...", "b" = "@dir", "w.whl" = "@hex:504b", "l" = "@symlink:/etc"}
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import tempfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

CASES_DIR = Path(__file__).parent / "cases"

VALID_HOST = """\
[hosts.llm-two]
ssh = "root@llm-two"
python = "/opt/venv/bin/python"
model_path = "/models/target"
draft_model_path = "/models/draft"
profile = "ddtree"
"""

RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
WRITING_WORDS = ("receive", "switch", "restart", "start", "stop", "daemon-reload", "enable", "reset-failed")


@dataclass(frozen=True)
class Case:
    """One bad input: the scene to write, the command line, what the operator must see."""

    family: str
    id: str
    args: tuple[str, ...]
    code: int
    error: str
    config: str
    files: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.family}/{self.id}"


@dataclass
class Outcome:
    """What running a case showed; `problems` is empty when the case is clean."""

    code: int
    out: str
    err: str
    host_calls: list[str]
    problems: list[str]


def _fill(value: Any, token: str) -> Any:
    if isinstance(value, str):
        return value.replace("{}", token)
    if isinstance(value, list):
        return [_fill(item, token) for item in value]
    if isinstance(value, dict):
        return {key.replace("{}", token): _fill(item, token) for key, item in value.items()}
    return value


def _config_text(raw: dict[str, Any]) -> str:
    if "config" in raw:
        return str(raw["config"])
    drop = set(raw.get("drop", []))
    lines = [line for line in VALID_HOST.splitlines() if line.split(" =")[0] not in drop]
    host = "\n".join(lines) + "\n" + str(raw.get("host", "")) + "\n"
    return str(raw.get("top", "")) + "\n" + host + str(raw.get("extra", ""))


def _case(family: str, raw: dict[str, Any]) -> Case:
    return Case(
        family=family,
        id=str(raw["id"]),
        args=tuple(str(arg) for arg in raw["args"]),
        code=int(raw["code"]),
        error=str(raw["error"]),
        config=_config_text(raw),
        files={str(k): str(v) for k, v in raw.get("files", {}).items()},
        env={str(k): str(v) for k, v in raw.get("env", {}).items()},
    )


def load_family(path: Path) -> list[Case]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    defaults: dict[str, Any] = data.get("defaults", {})
    family = path.stem
    cases = [_case(family, {**defaults, **raw}) for raw in data.get("case", [])]
    for matrix in data.get("matrix", []):
        values = matrix["values"]
        template = {key: value for key, value in matrix.items() if key not in ("values", "id")}
        for index, value in enumerate(values):
            raw = {**defaults, **_fill(template, str(value)), "id": f"{matrix['id']}[{index}]"}
            cases.append(_case(family, raw))
    return cases


def load_all() -> list[Case]:
    """Every CLI case (the hostile engine answers have their own runner: engine_cases.py)."""
    paths = sorted(path for path in CASES_DIR.glob("*.toml") if path.name != "engine_answers.toml")
    return [case for path in paths for case in load_family(path)]


def _write_files(root: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content == "@dir":
            path.mkdir(exist_ok=True)
        elif content.startswith("@symlink:"):
            path.symlink_to(content.removeprefix("@symlink:"))
        elif content.startswith("@hex:"):
            path.write_bytes(bytes.fromhex(content.removeprefix("@hex:")))
        elif content.startswith("@repeat:"):
            count, text = content.removeprefix("@repeat:").split(":", 1)
            path.write_text(text * int(count), encoding="utf-8")
        elif content.startswith("@mode000:"):
            path.write_text(content.removeprefix("@mode000:"), encoding="utf-8")
            path.chmod(0)
        else:
            path.write_text(content, encoding="utf-8")


@contextlib.contextmanager
def _scene(case: Case) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="badinput-") as tmp:
        root = Path(tmp)
        (root / "home").mkdir()
        (root / "specops.toml").write_text(case.config, encoding="utf-8")
        _write_files(root, case.files)
        environ = {**os.environ, "HOME": str(root / "home"), "NO_COLOR": "1", **case.env}
        environ.pop("SPECOPS_CONFIG", None)
        before = Path.cwd()
        os.chdir(root)
        try:
            with mock.patch.dict(os.environ, environ, clear=True):
                yield root
        finally:
            os.chdir(before)


def _writes(calls: list[Any]) -> list[str]:
    seen = []
    for call in calls:
        if call.kind == "put":
            seen.append(f"put {call.path}")
        elif call.kind == "run" and any(word in call.argv for word in WRITING_WORDS):
            seen.append("run " + " ".join(call.argv))
    return seen


def run_case(case: Case) -> Outcome:
    """Run one case through `specops.cli.main.main`; hosts are strict RecordingHosts (nothing scripted)."""
    from specops.cli.main import main
    from specops.host.recording import RecordingHost

    hosts: list[RecordingHost] = []

    def connect(spec: Any, *args: Any, **kwargs: Any) -> RecordingHost:
        host = RecordingHost(getattr(spec, "name", "recorded"))
        hosts.append(host)
        return host

    out, err = io.StringIO(), io.StringIO()
    patched = mock.patch("specops.host.ssh.connection.connect", connect)
    with _scene(case), patched, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(case.args))
    calls = [call for host in hosts for call in host.calls]
    outcome = Outcome(code, out.getvalue(), err.getvalue(), [repr(call) for call in calls], [])
    outcome.problems = judge(case, outcome, _writes(calls))
    return outcome


def judge(case: Case, outcome: Outcome, writes: list[str]) -> list[str]:
    """Every rule a bad input must keep; the list of those it broke."""
    problems = []
    shown = outcome.out + outcome.err
    if outcome.code != case.code:
        problems.append(f"exit {outcome.code}, documented {case.code}")
    if outcome.code == 70 or "internal error" in shown:
        problems.append("internal error")
    if "Traceback" in shown:
        problems.append("traceback shown")
    if (raw := RAW_CONTROL.search(shown)) is not None:  # the input's ESC or line break as it is: a terminal obeys it
        problems.append(f"raw control character shown: {raw.group()!r}")
    if not re.search(case.error, shown, re.MULTILINE):
        problems.append(f"no line matches {case.error!r}")
    if outcome.code not in (0, 1) and not _error_and_hint(outcome):
        problems.append("no `error:` and `hint:` lines")
    if writes:
        problems.append(f"a host was changed: {writes}")
    return problems


def _error_and_hint(outcome: Outcome) -> bool:
    """A refusal speaks with an `error:` line and a `hint:` line (with --json: an error document with a hint)."""
    lines = outcome.err.splitlines()
    if any(line.startswith("error: ") for line in lines):
        return any(line.lstrip().startswith("hint: ") for line in lines)
    try:
        document = json.loads(outcome.out)
    except ValueError:
        return False
    error = document.get("error") if isinstance(document, dict) else None
    return isinstance(error, dict) and bool(error.get("hint"))
