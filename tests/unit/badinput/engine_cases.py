"""Hostile engine answers (cases/engine_answers.toml) against the real EngineClient and smoke gate.

Each case starts a hostile engine on 127.0.0.1 (engine_server.py), reaches it through LocalHost's tunnel (a
plain TCP connection, the code path an SSH tunnel takes) and calls what a command calls: a client method
(`server_info`, `models`, `generate`, `metrics`, `health`) or the whole smoke gate (`smoke`). Clean means: a
SpecopsError with the documented exit code and a message naming the host and the request (or, for the smoke
gate, a failed gate naming the cause, exit 1), within the time bound, and never another exception.
"""

from __future__ import annotations

import re
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.unit.badinput.corpus import CASES_DIR, Outcome
from tests.unit.badinput.engine_server import Answer, hostile_engine

ENGINE_FILE = CASES_DIR / "engine_answers.toml"
CASE_KEYS = {"id", "call", "routes", "code", "error", "within_s", "client_timeout_s"}
ANSWER_KEYS = {"status", "text", "json", "huge_bytes", "drip_s", "close_early"}


@dataclass(frozen=True)
class EngineCase:
    id: str
    call: str
    routes: dict[str, Answer]
    code: int
    error: str
    within_s: float
    client_timeout_s: float  # the client's budget per request (short only where a case tests giving up)

    @property
    def key(self) -> str:
        return f"engine_answers/{self.id}"


def load_engine_cases(path: Path = ENGINE_FILE) -> list[EngineCase]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    defaults: dict[str, Any] = data.get("defaults", {})
    cases = []
    for raw in data.get("case", []):
        merged = {**defaults, **raw}
        _known_keys(merged, CASE_KEYS, f"case {merged.get('id')!r}")
        for route, answer in merged.get("routes", {}).items():
            _known_keys(answer, ANSWER_KEYS, f"case {merged.get('id')!r} route {route}")
        routes = {route: Answer.from_data(answer) for route, answer in merged.get("routes", {}).items()}
        cases.append(EngineCase(str(merged["id"]), str(merged["call"]), routes, int(merged["code"]),
                                str(merged["error"]), float(merged.get("within_s", 10.0)),
                                float(merged["client_timeout_s"])))  # fmt: skip
    return cases


def _known_keys(table: dict[str, Any], known: set[str], where: str) -> None:
    """A key the loader does not read (a case's `within_s` written under its route table, say) would be
    silently ignored: refuse it instead."""
    unknown = sorted(set(table) - known)
    if unknown:
        raise ValueError(f"{ENGINE_FILE.name}: {where}: unknown keys {unknown}")


def _spec(port: int) -> Any:
    from specops.config.inventory import HostSpec

    return HostSpec(name="llm-two", ssh="root@llm-two", python="/opt/venv/bin/python", model_path="/models/target",
                    served_model_name="qwen", port=port, listen="127.0.0.1")  # fmt: skip


def _profile() -> Any:
    from specops.config.profile import Profile

    return Profile.model_validate({"name": "nextn", "algorithm": "NEXTN", "smoke": {"max_new_tokens": 8}})


def _call(case: EngineCase, port: int) -> tuple[int, str]:
    from specops.engine.client import EngineClient
    from specops.engine.smoke import run_smoke
    from specops.host.local import LocalHost

    spec = _spec(port)
    with EngineClient(LocalHost("llm-two"), spec, timeout=case.client_timeout_s) as client:
        if case.call == "smoke":
            result = run_smoke(client, _profile(), spec, {"tokens_per_s": 50.0, "accept_length": 2.0})
            lines = [f"{g.id}: {g.observed} (expected {g.expected}) {g.detail}" for g in result.gates if not g.ok]
            return (0 if result.passed else 1), "\n".join(lines)
        if case.call == "health":
            return 0, f"health: {client.health_generate(timeout=case.client_timeout_s)}"
        method = getattr(client, case.call)
        answer = method("hi", 4) if case.call == "generate" else method()
        return 0, f"returned {str(answer)[:200]}"


def run_engine_case(case: EngineCase) -> Outcome:
    from specops.errors import SpecopsError

    started = time.monotonic()
    with hostile_engine(case.routes) as port:
        try:
            code, shown = _call(case, port)
        except SpecopsError as error:
            code, shown = int(error.exit_code), error.message
        except Exception as error:  # what the CLI would report as an internal error
            code, shown = 70, f"Traceback: {type(error).__name__}: {error}"
    took = time.monotonic() - started
    outcome = Outcome(code, "", shown, [], [])
    if code != case.code:
        outcome.problems.append(f"exit {code}, documented {case.code}")
    if code == 70:
        outcome.problems.append(f"internal error: {shown}")
    if not re.search(case.error, shown, re.MULTILINE):
        outcome.problems.append(f"no line matches {case.error!r}")
    if took > case.within_s:
        outcome.problems.append(f"took {took:.1f}s, bound {case.within_s:g}s")
    return outcome
