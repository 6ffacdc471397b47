"""Every host of a deploy is connected up front, in parallel: an unreachable host is reported as such, is no
canary and does not use up the failure budget; each deploy uses its host's connection once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from specops.config.inventory import HostSpec
from specops.deploy.connections import Opener, connect_all
from specops.deploy.fleet import FleetOptions, fleet_exit_code, run_fleet
from specops.deploy.outcome import HostOutcome, Outcome
from specops.deploy.plan import HostPlan
from specops.errors import ConnectError, ExitCode
from specops.host.base import Host
from specops.host.recording import RecordingHost
from tests.unit.deploy.test_fleet import HOSTS
from tests.unit.deploy.test_fleet import plans as fleet_plans

plans = fleet_plans  # the four-host inventory of the fleet tests (a fixture)


class Network:
    """Hosts that connect at once, except the silent ones, which answer only when every host has been tried:
    connected one after the other, the first silent host would wait forever (the test would time out)."""

    def __init__(self, silent: set[str]) -> None:
        self.silent = silent
        self.tried: list[str] = []
        self.all_tried = threading.Event()
        self.opened: list[str] = []
        self.closed: list[str] = []
        self.lock = threading.Lock()

    def opener(self, spec: HostSpec) -> Opener:
        @contextmanager
        def open_host() -> Iterator[Host]:
            with self.lock:
                self.tried.append(spec.name)
                if len(self.tried) == len(HOSTS):
                    self.all_tried.set()
            if spec.name in self.silent:
                assert self.all_tried.wait(timeout=10), "hosts are connected one after the other"
                raise ConnectError(f"root@{spec.name}:22: SSH handshake failed: no SSH handshake within 3s")
            self.opened.append(spec.name)
            try:
                yield RecordingHost(spec.name)
            finally:
                self.closed.append(spec.name)

        return open_host


def _deploy(open_host: Opener, host_plan: HostPlan, used: list[str]) -> HostOutcome:
    """A deploy as far as connections go: it opens its host once."""
    with open_host() as host:
        used.append(host.name)
    return HostOutcome(host_plan.name, Outcome.DEPLOYED)


def test_a_silent_first_host_costs_one_timeout_and_the_others_are_deployed(plans: list[HostPlan]) -> None:
    network = Network(silent={"a", "c"})
    used: list[str] = []
    with connect_all([p.target.host for p in plans], network.opener) as connections:
        assert connections.not_connected == {"a", "c"}

        def run_host(host_plan: HostPlan) -> HostOutcome:
            spec = host_plan.target.host
            return _deploy(connections.opener(spec, network.opener(spec)), host_plan, used)

        results = run_fleet(plans, run_host, FleetOptions(canary=1), not_connected=connections.not_connected)
    assert list(results) == HOSTS
    assert [results[name].outcome for name in HOSTS] == ["unreachable", "deployed", "unreachable", "deployed"]
    assert "no SSH handshake within 3s" in results["a"].cause
    assert fleet_exit_code(results) == ExitCode.UNREACHABLE
    assert sorted(network.tried) == HOSTS  # each host tried once, all before any deploy
    assert used == ["b", "d"] and sorted(network.closed) == ["b", "d"]


def test_a_second_opening_connects_again_and_an_untaken_connection_is_closed(plans: list[HostPlan]) -> None:
    network = Network(silent=set())
    specs = [p.target.host for p in plans]
    with connect_all(specs, network.opener) as connections:
        open_b = connections.opener(specs[1], network.opener(specs[1]))
        with open_b() as first, open_b() as second:
            assert first is not second  # the audit line's fresh connection
        assert network.opened.count("b") == 2
    assert sorted(network.closed) == sorted([*HOSTS, "b"])
