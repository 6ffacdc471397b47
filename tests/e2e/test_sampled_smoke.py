"""The sampled smoke end to end on a real test host: a healthy build is verified with its TTFT and sampled
throughput in `--json`, in the manifest, in the phase lines and in the summary; a build that decodes repetition
loops only at temperature > 0 passes every greedy gate, fails the sampled one, and the deploy rolls back; a
named baseline release gives the speed-up, and a floor above it fails the smoke."""

from __future__ import annotations

import json

import pytest

from tests.e2e.deployscene import PATCH, UNPATCHED, Scene
from tests.testbed.engine import SAMPLING_LOOP_PATCH

pytestmark = pytest.mark.e2e


def _manifest(scene: Scene, release: str) -> dict[str, object]:
    text = scene.host.read_file(f"/opt/specops/sglang/releases/{release}/manifest.json")
    loaded = json.loads(text)
    assert isinstance(loaded, dict)
    return loaded


def test_a_build_that_loops_only_when_sampling_fails_the_smoke_and_rolls_back(scene: Scene) -> None:
    healthy = scene.cli("deploy", scene.host.name, "--build", str(UNPATCHED), "--patch", str(PATCH))
    assert healthy.code == 0, healthy.out + healthy.err
    summary = healthy.out.splitlines()
    assert "TTFT P50/P99" in summary[0]
    row = summary[1].split()
    assert row[1] == "deployed" and row[-3].count("/") == 1 and row[-2] == "ms", summary
    smoke_line = next(line for line in healthy.err.splitlines() if " smoke smoke passed - " in line)
    assert "4 sampled at temperature 0.7: TTFT p50 " in smoke_line, smoke_line

    status = scene.cli("status", scene.host.name, "--json")
    good = json.loads(status.out)["current"]
    figures = _manifest(scene, good)["gates"]["smoke"]["figures"]  # type: ignore[index]
    assert figures["sampled_requests"] == 4 and figures["sampled_temperature"] == 0.7
    assert 0 < figures["ttft_p50_s"] <= figures["ttft_p99_s"] and figures["sampled_tokens_per_s"] > 0

    looping = scene.cli("deploy", scene.host.name, "--build", str(UNPATCHED), "--patch", str(PATCH),
                        "--patch", str(SAMPLING_LOOP_PATCH), "--json")  # fmt: skip
    assert looping.code == 1, looping.out + looping.err
    host = json.loads(looping.out)["hosts"][scene.host.name]
    assert host["outcome"] == "rolled-back" and host["release"] == good
    smoke = host["gates"]["smoke"]
    gates = {gate["id"]: gate for gate in smoke["gates"]}
    assert [gate_id for gate_id, gate in gates.items() if not gate["ok"]] == ["sampled-output"], smoke["reason"]
    assert gates["output"]["ok"] and gates["tokens-per-s"]["ok"]  # greedy: nothing to see
    assert gates["sampled-output"]["observed"] == "4 of 4 degenerate"
    assert gates["sampled-output"]["detail"].startswith("request 1 ('Write a short story about a lighthouse …'): "
                                                        "repetition loop: ")  # fmt: skip
    assert " vs " in gates["ttft"]["observed"]  # compared with the verified release of the same profile
    assert "sampled-output 4 of 4 degenerate" in host["cause"] and "repetition loop" in host["cause"]
    assert all(answer["degenerate"].startswith("repetition loop") for answer in smoke["sampled"])
    assert host["rollback"]["ok"] is True and host["rollback"]["to"] == good
    current = scene.host.exec(["readlink", "/opt/specops/sglang/current"]).stdout.decode().strip()
    assert current.endswith(good)

    again = scene.cli("smoke", scene.host.name, "--json")
    assert again.code == 0, again.out + again.err
    assert json.loads(again.out)["figures"]["ttft_p50_s"] > 0

    # the speed-up against a named baseline release: here the same build, so about 1x; with a floor above
    # that, the smoke says speculation does not pay off (a speculative build no faster than its baseline)
    config = scene.folder / "specops.toml"
    override = f'\n[hosts.{scene.host.name}.overrides.ddtree.smoke]\nbaseline_release = "{good}"\n'
    config.write_text(config.read_text() + override)
    reported = scene.cli("smoke", scene.host.name, "--json")
    assert reported.code == 0, reported.out + reported.err
    speedup = json.loads(reported.out)["figures"]["speedup_vs_baseline"]
    assert 0.7 < speedup < 1.4
    config.write_text(config.read_text() + "min_speedup = 1.5\n")
    floored = scene.cli("smoke", scene.host.name, "--json")
    assert floored.code == 1, floored.out + floored.err
    gate = next(gate for gate in json.loads(floored.out)["gates"] if gate["id"] == "speedup")
    assert gate["detail"] == "slower than 1.5x the baseline: speculation does not pay off on this host"
