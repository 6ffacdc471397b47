"""The test world of the deploy tests: a config, a tiny build, and a way to run a dry run then a deploy."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from specops.build.stage import stage_build
from specops.config.loader import load_config
from specops.deploy.plan import plan_host
from specops.host.recording import RecordingHost
from tests.unit.clirun import CliResult, run_cli
from tests.unit.deploy.plan_match import explain, follows, planned, recorded
from tests.unit.deploy.scene import CONFIG, HOST, DeployScene, use_scene, write_build

OLD_TREE = "0" * 64
NOW = "20261130T120000Z"
PASS_BRANCH = ("always", "checks-pass", "gates-pass")
FAIL_BRANCH = ("always", "checks-pass", "gates-fail")


@dataclass
class Run:
    plan: dict[str, Any]
    dry: CliResult
    result: CliResult
    outcome: dict[str, Any]
    dry_host: RecordingHost
    host: RecordingHost

    def assert_followed(self, branches: tuple[str, ...] = PASS_BRANCH, upto: str | None = None,
                        then: tuple[str, ...] = ()) -> None:  # fmt: skip
        expected, calls = planned(self.plan, branches, upto, then), recorded(self.host.calls)
        assert follows(expected, calls), explain(expected, calls)

    def step_names(self) -> list[str]:
        return [step["step"] for step in self.plan["steps"]]


@dataclass
class World:
    folder: Path
    build: Path
    tree_hash: str
    unit_text: str
    capsys: pytest.CaptureFixture[str]
    monkeypatch: pytest.MonkeyPatch

    def scene(self, **kwargs: Any) -> DeployScene:
        spec = load_config(self.folder / "specops.toml", self.folder).host(HOST)
        return DeployScene(spec, **kwargs)

    def cli(self, *args: str) -> CliResult:
        return run_cli(self.capsys, "--config", str(self.folder / "specops.toml"), *args)

    def run(self, scene: DeployScene, *options: str, smokes: tuple[bool, ...] = (True,)) -> Run:
        """The dry run, then the deploy; a new release gets the same id in both (derived from its content)."""
        hosts = [scene.host()]
        use_scene(self.monkeypatch, scene, hosts, list(smokes))
        dry = self.cli("deploy", HOST, "--build", str(self.build), "--dry-run", "--json", *options)
        assert dry.code == 0, dry.out + dry.err
        assert not [call for call in hosts[0].calls if call.kind == "put"]  # a dry run writes nothing
        hosts.append(scene.host())
        use_scene(self.monkeypatch, scene, hosts, list(smokes))
        result = self.cli("deploy", HOST, "--build", str(self.build), "--json", *options)
        found = json.loads(result.out) if result.out.startswith("{") else {}
        outcome = found["hosts"][HOST] if "hosts" in found else {}  # an interruption: {"error": ...} only
        plan = json.loads(dry.out)["hosts"][0]
        return Run(plan, dry, result, outcome, hosts[0], hosts[1])


def make_world(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> World:
    for variable, folder in (("XDG_CACHE_HOME", "cache"), ("XDG_STATE_HOME", "state"), ("HOME", "home")):
        monkeypatch.setenv(variable, str(tmp_path / folder))
    (tmp_path / "specops.toml").write_text(CONFIG)
    build = write_build(tmp_path)
    staged = stage_build(build, [], tmp_path / "stage")
    config = load_config(tmp_path / "specops.toml", tmp_path)
    unit_text = plan_host(config, HOST, None).unit_text
    return World(tmp_path, build, staged.tree_hash, unit_text, capsys, monkeypatch)
