"""One connection per jump host for many hosts in parallel; one passphrase prompt per key and run."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from specops.errors import ConnectError
from specops.host.ssh.passphrase import KeyUnlocker
from specops.host.ssh.shared import SharedConnections


def test_eight_threads_share_one_connection_per_key() -> None:
    opened: list[str] = []
    gate = threading.Barrier(8)
    pool: SharedConnections[str] = SharedConnections(close=opened.remove, alive=lambda _: True)

    def open_one() -> str:
        opened.append(f"conn{len(opened) + 1}")
        return opened[-1]

    def reach(_: int) -> str:
        gate.wait()
        return pool.get("bastion", open_one)

    with ThreadPoolExecutor(8) as workers:
        assert set(workers.map(reach, range(8))) == {"conn1"}
    assert pool.opened == 1
    pool.close_all()
    assert opened == []


def test_a_dead_connection_is_opened_again() -> None:
    alive = {"first": False}
    pool: SharedConnections[str] = SharedConnections(close=lambda _: None, alive=lambda c: alive.get(c, True))
    assert pool.get("k", lambda: "first") == "first"
    assert pool.get("k", lambda: "second") == "second"
    assert pool.opened == 2


def test_the_waiting_hosts_get_the_same_failure_without_trying_again() -> None:
    attempts = []
    started, release = threading.Event(), threading.Event()

    def open_slowly() -> str:
        attempts.append(1)
        started.set()
        release.wait(5)
        raise ConnectError("bastion: connection refused")

    pool: SharedConnections[str] = SharedConnections(close=lambda _: None, alive=lambda _: True)
    with ThreadPoolExecutor(4) as workers:
        first = workers.submit(pool.get, "k", open_slowly)
        started.wait(5)
        others = [workers.submit(pool.get, "k", open_slowly) for _ in range(3)]
        release.set()
        for future in [first, *others]:
            with pytest.raises(ConnectError, match="connection refused"):
                future.result()
    assert len(attempts) == 1
    with pytest.raises(ConnectError):  # a later command (arriving after the failure) tries again
        release.set()
        pool.get("k", open_slowly)
    assert len(attempts) == 2


def test_a_passphrase_is_asked_once_per_key_with_a_terminal() -> None:
    prompts: list[str] = []
    unlocker = KeyUnlocker(ask=lambda prompt: prompts.append(prompt) or "right", terminal=lambda: True)

    def load(passphrase: str) -> object:
        if passphrase != "right":
            raise ValueError("wrong")
        return "KEY"

    with ThreadPoolExecutor(4) as workers:
        assert list(workers.map(lambda _: unlocker.unlock("/k/id", load), range(4))) == ["KEY"] * 4
    assert prompts == ["Enter passphrase for key '/k/id': "]


def test_wrong_passphrases_and_no_terminal_are_clear_errors() -> None:
    answers = iter(["a", "b", "c"])
    unlocker = KeyUnlocker(ask=lambda _: next(answers), terminal=lambda: True)

    def never(_: str) -> object:
        raise ValueError("wrong")

    with pytest.raises(ConnectError, match=r"the key /k/id: wrong passphrase \(3 tries\)"):
        unlocker.unlock("/k/id", never)
    headless = KeyUnlocker(ask=lambda _: pytest.fail("asked without a terminal"), terminal=lambda: False)
    with pytest.raises(ConnectError) as caught:
        headless.unlock("/k/id", never)
    assert caught.value.message == "the key /k/id is protected by a passphrase, and there is no terminal to ask for it"
    assert "ssh-add /k/id" in caught.value.hint
