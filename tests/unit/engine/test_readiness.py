"""wait_ready against scripted hosts: each poll is one `sh -c` (systemctl show + journal) plus a health probe.

The clock is fake (sleep advances it), so deadlines of minutes run in milliseconds and the timings asserted are
exact: how many polls, when the wait ended, why.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from specops.commands.journal import POLL_MARKER
from specops.config.inventory import HostSpec
from specops.config.profile import Profile
from specops.engine.readiness import POLL_INTERVAL_S, journal_position, wait_ready
from specops.host.recording import RecordingHost, reply

DATA = Path(__file__).parent / "data"
LOADING = ["[2026-11-29 17:22:14] Load weight begin. avail mem=78.50 GB"]
SHARD = "[2026-11-29 17:22:14] Loading safetensors checkpoint shards: 50% Completed | 2/4"
READY = "[2026-11-29 17:22:23] The server is fired up and ready to roll!"


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def poll(lines: Sequence[str] = (), *, active: str = "active", sub: str = "running", restarts: int = 0,
         status: int = 0, pid: int = 4242, cursor: str | None = "s=abc;i=1") -> str:  # fmt: skip
    show = (f"ActiveState={active}\nSubState={sub}\nNRestarts={restarts}\nExecMainStatus={status}\n"
            f"ExecMainPID={pid}\nMainPID={pid if active == 'active' else 0}\n")  # fmt: skip
    journal = "".join(f"{line}\n" for line in lines)
    if cursor:
        journal += f"-- cursor: {cursor}\n"
    return f"{show}{POLL_MARKER}\n{journal}"


def scripted(*outputs: str) -> RecordingHost:
    host = RecordingHost("llm-one")
    host.script(lambda argv: argv[:2] == ("sh", "-c") and "systemctl show" in argv[2], *map(reply, outputs))
    return host


def healths(*codes: int):
    answers = list(codes)
    calls: list[int] = []

    def health() -> int:
        code = answers.pop(0) if len(answers) > 1 else answers[0]
        calls.append(code)
        return code

    health.calls = calls  # type: ignore[attr-defined]
    return health


def run(host: RecordingHost, spec: HostSpec, profile: Profile, health, clock: FakeTime, **kwargs):
    seen: list[tuple[str, str]] = []
    result = wait_ready(host, spec, profile, since_cursor_or_time="s=start;i=0", health=health,
                        on_progress=lambda phase, line: seen.append((phase, line)), clock=clock.clock,
                        sleep=clock.sleep, **kwargs)  # fmt: skip
    return result, seen


def test_503_while_starting_then_200_is_ready(spec, ddtree) -> None:
    host = scripted(poll(LOADING), poll([SHARD]), poll(["INFO:     Uvicorn running on http://127.0.0.1:30000"]),
                    poll([READY]))  # fmt: skip
    health = healths(0, 503, 503, 200)
    result, seen = run(host, spec, ddtree, health, FakeTime())
    assert result.ok and result.cause is None
    assert result.reason == "GET /health_generate answered 200 and the unit is active"
    assert health.calls == [0, 503, 503, 200]
    assert result.seconds == 3 * POLL_INTERVAL_S and result.phase == "ready" and result.last_line == READY
    assert [phase for phase, _ in seen] == ["loading weights", "loading weights", "warming up", "ready"]
    polls = host.commands
    assert polls[0][-2:] == ("--after-cursor", "s=start;i=0") and polls[1][-2:] == ("--after-cursor", "s=abc;i=1")


def test_active_unit_without_health_200_is_never_ready(spec, ddtree) -> None:
    result, _ = run(scripted(poll()), spec, ddtree, healths(503), FakeTime(), grace_s=5)
    assert not result.ok
    assert result.reason == "not ready after 60s (phase: starting; deadline passed: readiness.timeout_s = 60s)"
    assert result.seconds == 60.0


def test_crash_mid_load_with_torchcodec_fails_at_once_naming_ffmpeg(spec, ddtree) -> None:
    traceback = (DATA / "torchcodec_no_ffmpeg.txt").read_text().splitlines()
    host = scripted(poll(LOADING), poll(traceback[:30]), poll(traceback[30:]))
    health = healths(503)
    result, _ = run(host, spec, ddtree, health, FakeTime())
    assert not result.ok
    assert result.seconds == POLL_INTERVAL_S  # the poll that saw the traceback, not the 60 s deadline
    assert result.cause is not None and result.cause.signature.id == "torchcodec-ffmpeg"
    assert result.cause.details["tried"] == "8, 7, 6, 5, 4"  # completed by the drain poll after the fatal line
    assert "FFmpeg 4, 5, 6, 7 or 8" in result.reason
    assert health.calls == [503]  # no HTTP probe once the journal showed the fatal error
    assert len(host.commands) == 3


def test_process_exit_fails_at_once_with_the_last_error(spec, ddtree) -> None:
    host = scripted(poll(LOADING), poll(["RuntimeError: weights are corrupt"], active="failed", sub="failed",
                                        status=1))  # fmt: skip
    result, _ = run(host, spec, ddtree, healths(0), FakeTime())
    assert not result.ok and result.cause is None
    assert result.reason == (
        "the engine process exited with status 1 (unit failed/failed); last error: RuntimeError: weights are corrupt"
    )


def test_auto_restart_counts_as_exit_and_import_error_is_the_cause(spec, ddtree) -> None:
    host = scripted(poll(LOADING), poll(["ModuleNotFoundError: No module named 'sgl_kernel'"],
                                        active="activating", sub="auto-restart", status=1))  # fmt: skip
    result, _ = run(host, spec, ddtree, healths(0), FakeTime())
    assert not result.ok
    assert result.cause is not None and result.cause.signature.id == "import-error"
    assert "unit activating/auto-restart" in result.reason


def test_restart_between_polls_is_detected(spec, ddtree) -> None:
    host = scripted(poll(LOADING, restarts=2), poll([], restarts=3, pid=5151))
    result, _ = run(host, spec, ddtree, healths(503), FakeTime())
    assert not result.ok
    assert result.reason == "systemd restarted the engine (NRestarts 2 -> 3)"
    assert result.restarts == 1


def test_progress_extends_the_deadline_up_to_the_hard_cap(spec, ddtree) -> None:
    quiet = scripted(poll(LOADING), poll([]))
    result, _ = run(quiet, spec, ddtree, healths(503), FakeTime(), grace_s=30, poll_interval_s=10)
    assert not result.ok and result.seconds == 60.0  # the load line gave 30 s grace, inside the 60 s limit

    busy = scripted(poll([SHARD]))  # a progress line on every poll: slow but advancing
    result, _ = run(busy, spec, ddtree, healths(503), FakeTime(), grace_s=30, poll_interval_s=10)
    assert not result.ok and result.seconds == 120.0  # extended past 60 s, stopped at 2 x timeout_s
    assert result.reason == (
        "not ready after 120s (phase: loading weights; deadline passed: readiness.timeout_s = 60s, "
        "moved to 120s by start-up progress (at most 120s))"
    )

    late = scripted(*[poll([])] * 5, poll([SHARD]), poll([]))  # progress at t=50 s: deadline -> 80 s
    result, _ = run(late, spec, ddtree, healths(503), FakeTime(), grace_s=30, poll_interval_s=10)
    assert result.seconds == 80.0  # the deadline the reason prints is the one applied
    assert result.reason.endswith("readiness.timeout_s = 60s, moved to 80s by start-up progress (at most 120s))")


def test_journal_position_is_the_cursor_or_the_host_time() -> None:
    host = RecordingHost("llm-one")
    host.script(["journalctl", "-n", "1"], reply("Started sglang.service\n-- cursor: s=1f;i=9;b=2\n"))
    assert journal_position(host) == "s=1f;i=9;b=2"
    empty = RecordingHost("llm-two")
    empty.script(["journalctl"], reply("-- No entries --\n"))
    empty.script(["date"], reply("1764400000\n"))
    assert journal_position(empty) == "@1764400000"


@pytest.fixture(autouse=True)
def _no_real_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.sleep", lambda seconds: pytest.fail("wait_ready slept for real"))


def test_a_start_refused_by_the_start_limit_is_named_as_such_not_as_an_exit_status(spec, ddtree) -> None:
    """The previous process's SIGTERM status (15) is still in ExecMainStatus: it explains nothing."""
    refused = poll(active="failed", sub="failed", status=15).replace(
        POLL_MARKER, "Result=start-limit-hit\nStartLimitBurst=3\nStartLimitIntervalUSec=30min\n" + POLL_MARKER
    )
    result, _ = run(scripted(refused), spec, ddtree, healths(503), FakeTime())
    assert not result.ok
    assert result.reason.startswith(
        "systemd refused to start the unit: start-limit-hit (StartLimitBurst=3 in StartLimitIntervalSec=30min)"
    )
    assert "`systemctl reset-failed sglang.service`" in result.reason
    assert "status 15" not in result.reason and result.seconds == 0.0


def test_a_journal_with_nothing_new_for_the_unit_still_answers_with_the_units_state(spec, ddtree) -> None:
    """journalctl exits 1 with no output when the unit logged nothing after the cursor (an engine that kept
    running): the poll's unit state still counts, and the engine that answers 200 is ready."""
    quiet = poll(cursor=None)
    host = RecordingHost("llm-one")
    host.script(lambda argv: argv[:2] == ("sh", "-c") and "systemctl show" in argv[2], reply(quiet, exit_code=1))
    result, _ = run(host, spec, ddtree, healths(200), FakeTime())
    assert result.ok, result.reason
    assert host.commands[-1][-2:] == ("--after-cursor", "s=start;i=0")  # the position stays where it was


def test_a_poll_that_fails_before_the_units_state_is_an_error(spec, ddtree) -> None:
    from specops.errors import CommandFailed

    host = RecordingHost("llm-one")
    host.script(lambda argv: argv[:2] == ("sh", "-c"), reply(stderr="sh: systemctl: not found", exit_code=127))
    with pytest.raises(CommandFailed, match="exited with 127"):
        run(host, spec, ddtree, healths(200), FakeTime())
