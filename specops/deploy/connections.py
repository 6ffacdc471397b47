"""Connect to every host of a deploy at once, before the first host is deployed.

Why: a rollout deploys hosts one (or N) at a time, but connecting is independent of that order. Opened one
after the other, a host that drops packets costs a whole connect timeout before the next host even starts,
and, failing, stops the rollout through the failure budget. Opened together, all silent hosts cost the same
ONE connect timeout (ConnectTimeout from ~/.ssh/config, else the default) before the first deploy starts, and
the reachable hosts are deployed; an unreachable host is reported as such and says nothing about the release.

Each host's deploy takes its connection the first time it opens the host; any later opening (the audit
line's fresh connection) connects again, as before.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from specops.errors import SpecopsError
from specops.host.base import Host

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec

Opener = Callable[[], AbstractContextManager[Host]]
MAX_PARALLEL = 32


@dataclass
class Opened:
    manager: AbstractContextManager[Host] | None = None
    host: Host | None = None
    error: SpecopsError | None = None  # why it could not connect (a ConnectError: unreachable)


@dataclass
class Connections:
    """The hosts' connections opened up front; `not_connected` names the hosts that could not be reached."""

    opened: dict[str, Opened] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def not_connected(self) -> set[str]:
        return {name for name, opened in self.opened.items() if opened.error is not None}

    def opener(self, spec: HostSpec, fallback: Opener) -> Opener:
        """The first opening yields the connection made up front (or raises why there is none); later ones,
        and hosts not connected up front, use `fallback` (a fresh connection)."""

        @contextmanager
        def open_host() -> Iterator[Host]:
            with self.lock:
                opened = self.opened.pop(spec.name, None)
            if opened is None:
                with fallback() as host:
                    yield host
                return
            if opened.error is not None:
                raise opened.error
            assert opened.manager is not None and opened.host is not None
            try:
                yield opened.host
            finally:
                opened.manager.__exit__(None, None, None)

        return open_host

    def close(self) -> None:
        """Close what no deploy took (a host skipped by the canary or the failure budget)."""
        with self.lock:
            left, self.opened = self.opened, {}
        for opened in left.values():
            if opened.manager is not None:
                opened.manager.__exit__(None, None, None)


def connect_one(open_host: Opener) -> Opened:
    """Connect now; what went wrong is kept, not raised (the deploy of that host reports it)."""
    try:
        manager = open_host()  # an opener may connect here already, or on entering
        return Opened(manager=manager, host=manager.__enter__())
    except SpecopsError as error:  # unreachable, a refused host key, an unsupported ProxyJump...
        return Opened(error=error)


# What a deploy imports only when it first needs it (the probe's models and the checks at preflight, the engine
# client at the drain and the gates): loaded meanwhile, in a thread, while this process waits on the network.
LATER_MODULES = (
    "specops.probe.parse",
    "specops.doctor.checks",
    "specops.engine.client",
    "specops.engine.smoke",
    "specops.engine.sampled",
)


def prefetch(modules: tuple[str, ...] = LATER_MODULES) -> threading.Thread:
    """Import `modules` in a daemon thread: its bytecode runs while the main thread waits on sockets (the GIL is
    free then), so the first preflight and gates do not pay the imports. A module the main thread asks for
    meanwhile waits for this thread's import of it (the import system's per-module lock)."""

    def load() -> None:
        for name in modules:
            with contextlib.suppress(ImportError):  # the main thread will import it (and report) itself
                importlib.import_module(name)

    thread = threading.Thread(target=load, name="specops-prefetch", daemon=True)
    thread.start()
    return thread


@contextmanager
def connect_all(
    specs: list[HostSpec], opener: Callable[[HostSpec], Opener], early: dict[str, Opened] | None = None
) -> Iterator[Connections]:
    """Open every host's connection in parallel; all are closed when the block ends. `early`: connections the
    console script already opened for some of these hosts (specops/cli/early/deploy.py), taken as they are."""
    connections = Connections()
    try:
        connections.opened.update(early or {})
        prefetch()
        missing = [spec for spec in specs if spec.name not in connections.opened]
        if len(missing) == 1:  # in this thread: Ctrl-C interrupts the connect itself
            connections.opened[missing[0].name] = connect_one(opener(missing[0]))
        elif missing:
            with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(missing))) as pool:
                futures = {spec.name: pool.submit(connect_one, opener(spec)) for spec in missing}
                for name, future in futures.items():
                    connections.opened[name] = future.result()
        yield connections
    finally:
        connections.close()
