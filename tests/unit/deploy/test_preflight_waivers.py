"""Waived checks and --force in a deploy's preflight: the decision on its own, then what the operator is told
(text, --json, the audit log) by a dry run and a deploy against a scripted host."""

from __future__ import annotations

import json

from specops.config.waivers import Waiver
from specops.deploy.preflight import judge
from specops.doctor.model import CheckResult, Status, failed, passed
from specops.ops.audit import local_audit_path
from tests.unit.deploy.scene import HOST, DeployScene, use_scene
from tests.unit.deploy.test_deploy_branches import serving
from tests.unit.deploy.world import World

NO_GPU = failed("gpu.driver", "nvidia-smi not found on a GPU host: no NVIDIA driver installed", "install the driver")
CPU_TORCH = failed("torch.variant", "torch 2.13.0 is a CPU build on a GPU host", "reinstall torch")
UNPATCHED = failed("sglang.algorithm", "DDTREE is registered but SpeculativeAlgorithm.is_dflash() returns False "
                   "for it", "patch is_dflash() to include DDTREE and deploy that build")  # fmt: skip
PATCHED = passed("sglang.algorithm", "DDTREE is registered and is_dflash() is True for it")
STAGING = Waiver(check="gpu.driver", reason="CPU staging box")


def _ids(results: list[CheckResult]) -> list[str]:
    return [result.id for result in results]


def test_a_waived_failure_goes_through_with_its_reason_and_any_other_failure_blocks() -> None:
    verdict = judge([NO_GPU, CPU_TORCH, UNPATCHED], [STAGING], ["torch.variant"], force=False)
    assert _ids(verdict.blocking) == ["sglang.algorithm"] and verdict.overridden == []
    assert [(r.id, r.waived) for r in verdict.waived] == [("gpu.driver", "CPU staging box"),
                                                         ("torch.variant", "--skip-check")]  # fmt: skip
    assert [r.status for r in verdict.results] == [Status.FAIL] * 3  # waived checks still ran and still failed
    assert verdict.hint() == "patch is_dflash() to include DDTREE and deploy that build"


def test_the_hosts_reason_wins_over_the_command_line_and_a_passing_waived_check_is_not_listed() -> None:
    verdict = judge([NO_GPU, PATCHED], [STAGING, Waiver(check="sglang.algorithm", reason="r")], ["gpu.driver"], False)
    assert verdict.blocking == [] and [(r.id, r.waived) for r in verdict.waived] == [("gpu.driver", "CPU staging box")]


def test_force_blocks_nothing_and_names_only_the_unwaived_failures_it_overrides() -> None:
    verdict = judge([NO_GPU, UNPATCHED, PATCHED], [STAGING], [], force=True)
    assert verdict.blocking == [] and _ids(verdict.overridden) == ["sglang.algorithm"]


def test_a_check_without_its_own_fix_gets_the_waiver_and_force_hint() -> None:
    verdict = judge([CheckResult("disk.free", Status.ERROR, "the check itself crashed")], [], [], force=False)
    assert "waive disk.free for this host" in verdict.hint() and "--skip-check disk.free" in verdict.hint()


def _no_gpu_host(world: World, *results: CheckResult) -> DeployScene:
    scene = serving(world)
    scene.results = [NO_GPU, CPU_TORCH, *results]
    return scene


def test_skip_check_waives_the_named_checks_and_the_deploy_goes_on(world: World) -> None:
    run = world.run(_no_gpu_host(world, PATCHED), "--skip-check", "gpu.driver", "--skip-check", "torch.variant")
    preflight = run.plan["steps"][3]
    assert preflight["step"] == "preflight"
    assert (
        "waived: gpu.driver (--skip-check), torch.variant (--skip-check); a FAIL of another check"
        in (preflight["summary"])
    )
    assert (run.outcome["outcome"], run.result.code) == ("deployed", 0)
    assert [(c["id"], c["reason"]) for c in run.outcome["waived"]] == [("gpu.driver", "--skip-check"),
                                                                      ("torch.variant", "--skip-check")]  # fmt: skip
    assert [c["waived"] for c in run.outcome["preflight"]] == ["--skip-check", "--skip-check"]
    entry = json.loads(local_audit_path().read_text().splitlines()[-1])
    assert [c["id"] for c in entry["waived"]] == ["gpu.driver", "torch.variant"] and entry["forced"] is False
    run.assert_followed()


def test_an_unpatched_ddtree_build_still_stops_with_the_gpu_checks_skipped(world: World) -> None:
    run = world.run(_no_gpu_host(world, UNPATCHED), "--skip-check", "gpu.driver,torch.variant")
    assert (run.outcome["outcome"], run.result.code) == ("preflight-failed", 1)
    assert run.outcome["cause"].startswith("sglang.algorithm: DDTREE is registered but")
    assert "gpu.driver" not in run.outcome["cause"]
    run.assert_followed(upto="preflight", then=("unlock", "serving", "record"))


def test_a_hosts_waivers_from_the_config_are_honoured_and_shown_with_their_reason(world: World) -> None:
    config = world.folder / "specops.toml"
    config.write_text(config.read_text() + 'waive = [{ check = "gpu.driver", reason = "CPU staging box" },\n'
                      '         { check = "torch.variant", reason = "CPU torch" }]\n')  # fmt: skip
    scene = _no_gpu_host(world, PATCHED)
    run = world.run(scene)
    assert "waived: gpu.driver (CPU staging box), torch.variant (CPU torch)" in run.plan["steps"][3]["summary"]
    assert (run.outcome["outcome"], run.result.code) == ("deployed", 0)
    use_scene(world.monkeypatch, scene, [scene.host()], [True])
    text = world.cli("deploy", HOST, "--build", str(world.build))
    assert text.code == 0, text.err
    assert f"{HOST}: waived gpu.driver: nvidia-smi not found on a GPU host: no NVIDIA driver installed (CPU " \
           "staging box)" in text.out  # fmt: skip
    assert f"{HOST} preflight waived torch.variant: torch 2.13.0 is a CPU build on a GPU host (CPU torch)" in text.err


def test_force_names_every_check_it_overrode_in_text_json_and_the_audit_log(world: World) -> None:
    scene = _no_gpu_host(world, UNPATCHED)
    run = world.run(scene, "--force")
    assert (run.outcome["outcome"], run.result.code) == ("deployed", 0)
    assert _overridden(run.outcome["overridden"]) == ["gpu.driver", "torch.variant", "sglang.algorithm"]
    entry = json.loads(local_audit_path().read_text().splitlines()[-1])
    assert entry["forced"] is True and _overridden(entry["overridden"]) == _overridden(run.outcome["overridden"])
    use_scene(world.monkeypatch, scene, [scene.host()], [True])
    text = world.cli("deploy", HOST, "--build", str(world.build), "--force", "--skip-check", "gpu.driver")
    assert text.code == 0, text.err
    lines = [line for line in text.out.splitlines() if line.startswith(f"{HOST}: ")]
    assert lines[:3] == [
        f"{HOST}: waived gpu.driver: {NO_GPU.summary} (--skip-check)",
        f"{HOST}: --force overrode torch.variant: {CPU_TORCH.summary}",
        f"{HOST}: --force overrode sglang.algorithm: {UNPATCHED.summary}",
    ]


def _overridden(checks: list[dict[str, str]]) -> list[str]:
    assert all(check["summary"] for check in checks)
    return [check["id"] for check in checks]


def test_an_unknown_skip_check_is_a_usage_error_before_anything_connects(world: World) -> None:
    scene = serving(world)
    hosts = [scene.host()]
    use_scene(world.monkeypatch, scene, hosts, [True])
    for dry in ((), ("--dry-run",)):
        result = world.cli("deploy", HOST, "--build", str(world.build), "--skip-check", "gpu.driver,gpu.drivr", *dry)
        assert result.code == 2
        error, hint = result.err.splitlines()
        assert error == "error: --skip-check: unknown check 'gpu.drivr' (did you mean 'gpu.driver'?)"
        assert hint.startswith("hint: known checks: ssh.reachable, ssh.privilege, ")
        assert hint.endswith("; `specops doctor --list` describes each check")
    assert hosts[0].commands == []


def test_a_deploy_with_skip_check_never_connects_before_its_ids_are_checked() -> None:
    """The console script's early start connects before typer parses; it does not know --skip-check, so a
    misspelt id is refused before any connection."""
    from specops.cli.early.deploy import plain_deploy

    assert plain_deploy(["deploy", HOST, "--build", "b"]) is not None
    assert plain_deploy(["deploy", HOST, "--build", "b", "--skip-check", "gpu.drivr"]) is None
