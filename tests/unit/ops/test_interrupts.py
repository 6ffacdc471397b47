"""SIGINT, SIGTERM and SIGHUP end a command the same way: an Interrupted (a KeyboardInterrupt) with the signal's
name and exit code 128 + its number, and a message naming what each host serves."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from specops.ops import interrupts
from specops.ops.interrupts import Interrupted
from tests.unit.clirun import run_cli


@pytest.fixture
def handlers() -> Iterator[None]:
    saved = {signum: signal.getsignal(signum) for signum in interrupts.HANDLED}
    interrupts.install()
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)
    interrupts.take_notes()
    interrupts.answered()


@pytest.mark.parametrize(("signum", "name", "code"), [(signal.SIGINT, "SIGINT", 130),
                                                      (signal.SIGTERM, "SIGTERM", 143),
                                                      (signal.SIGHUP, "SIGHUP", 129)])  # fmt: skip
def test_each_signal_raises_an_interruption_with_its_exit_code(handlers: None, signum: int, name: str,
                                                               code: int) -> None:  # fmt: skip
    with pytest.raises(KeyboardInterrupt) as raised:
        os.kill(os.getpid(), signum)
    assert (interrupts.signal_name(raised.value), interrupts.exit_code(raised.value)) == (name, code)


def test_a_signal_during_a_restore_does_not_cut_it_short(handlers: None) -> None:
    finished = False
    with interrupts.shielded():
        os.kill(os.getpid(), signal.SIGTERM)
        finished = True
    assert finished


def test_plain_ctrl_c_is_sigint() -> None:
    assert (interrupts.signal_name(KeyboardInterrupt()), interrupts.exit_code(KeyboardInterrupt())) == ("SIGINT", 130)


def test_an_interrupted_command_says_what_serves_and_exits_128_plus_the_signal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: os.PathLike[str]
) -> None:
    def hang_up(*args: object, **kwargs: object) -> None:
        interrupts.note("llm-two: 20261129T174200Z-3f2a9c1b7d10 serves (verified)")
        raise Interrupted(signal.SIGHUP)

    monkeypatch.setattr("specops.cli.state.AppState.load_config", hang_up)
    result = run_cli(capsys, "hosts")
    assert result.code == 129
    assert result.err.splitlines() == [
        "error: interrupted (SIGHUP)",
        "error: llm-two: 20261129T174200Z-3f2a9c1b7d10 serves (verified)",
        "hint: `specops status HOST` shows what serves",
    ]
    as_json = run_cli(capsys, "hosts", "--json")
    assert as_json.code == 129
    assert '"message": "interrupted (SIGHUP)"' in as_json.out and '"exit_code": 129' in as_json.out


def _channel_dropped_while_a_signal_lands(signum: int) -> None:
    """A paramiko Channel garbage-collected in the main thread: its `__del__` calls `close()` under a bare
    `except: pass`; the signal arrives while that close runs, so the handler's exception is raised there."""
    import paramiko

    channel = paramiko.Channel(1)
    channel.close = lambda: os.kill(os.getpid(), signum)  # type: ignore[method-assign]
    del channel


def test_a_signal_dropped_by_a_finaliser_still_ends_the_command_at_the_next_step_boundary(handlers: None) -> None:
    _channel_dropped_while_a_signal_lands(signal.SIGTERM)  # nothing raised here: paramiko dropped the exception
    with pytest.raises(KeyboardInterrupt) as raised:
        interrupts.check()
    assert (interrupts.signal_name(raised.value), interrupts.exit_code(raised.value)) == ("SIGTERM", 143)


def test_the_step_boundary_does_not_raise_again_while_the_interruption_is_handled(handlers: None) -> None:
    """The interruption's own unwinding (an except, a finally, a with-exit: the lock's release) and the restore
    of what served run step boundaries too: none of them may be cut short by the signal they are answering."""
    with pytest.raises(KeyboardInterrupt):
        try:
            os.kill(os.getpid(), signal.SIGHUP)
        finally:
            interrupts.check()  # the unlock while Ctrl-C unwinds: nothing raised over it
    with interrupts.shielded():
        interrupts.check()
    interrupts.answered()
    interrupts.check()  # answered by the CLI: nothing pending


def test_a_signal_dropped_after_the_last_step_still_sets_the_exit_code(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, handlers: None
) -> None:
    from specops.cli.state import AppState

    load = AppState.load_config

    def dropped_then_load(self: AppState) -> object:
        _channel_dropped_while_a_signal_lands(signal.SIGTERM)
        return load(self)

    monkeypatch.setattr("specops.cli.state.AppState.load_config", dropped_then_load)
    result = run_cli(capsys, "hosts")
    assert result.code == 143
    assert result.err.splitlines()[-2:] == [
        "error: interrupted (SIGTERM) as the command ended",
        "hint: what it reported above is what it did",
    ]
