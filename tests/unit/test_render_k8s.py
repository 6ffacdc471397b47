"""`specops render HOST --target k8s`: what an operator applies to a cluster, checked as the cluster would.

Each shipped profile is rendered from the golden inventory and validated strictly (every supported
Kubernetes version); the container must run the unit's own argv, and the probe, GPU, shm and secret rules a
pod needs to survive SGLang's long loads are asserted on the rendered objects.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from specops.commands.k8s_validate import validate_objects
from specops.commands.systemd import launch_argv
from specops.config.loader import load_config
from tests.unit.clirun import run_cli

GOLDEN = Path(__file__).parent / "golden"
PROFILES = ["nextn", "dflash", "ddtree"]
SECRET_VALUE = "hf_s3cr3t_k8s_value"


def _render(capsys: pytest.CaptureFixture[str], config: Path, *args: str) -> list[dict[str, Any]]:
    result = run_cli(capsys, "--config", str(config), "render", "gold", "--target", "k8s", "--json", *args)
    assert result.code == 0, result.err
    objects = json.loads(result.out)["objects"]
    assert isinstance(objects, list)
    return objects


def _kind(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(obj for obj in objects if obj["kind"] == kind)


def _pod(objects: list[dict[str, Any]]) -> dict[str, Any]:
    pod = _kind(objects, "Deployment")["spec"]["template"]["spec"]
    assert isinstance(pod, dict)
    return pod


@pytest.mark.parametrize("profile", PROFILES)
def test_every_object_passes_strict_validation(capsys: pytest.CaptureFixture[str], profile: str) -> None:
    objects = _render(capsys, GOLDEN / "specops.toml", "-p", profile)
    assert [obj["kind"] for obj in objects][-2:] == ["Deployment", "Service"]
    assert validate_objects(objects) == []


def test_strict_validation_catches_a_probe_typo_and_an_unknown_kind(capsys: pytest.CaptureFixture[str]) -> None:
    objects = _render(capsys, GOLDEN / "specops.toml", "-p", "ddtree")
    _pod(objects)["containers"][0]["readinessProbe"]["timeoutSecond"] = 30
    objects.append({"apiVersion": "example.io/v1", "kind": "Nothing", "metadata": {"name": "x"}})
    problems = validate_objects(objects, versions=("1.30",))
    assert any("'timeoutSecond' was unexpected" in line for line in problems)
    assert any("Nothing/x (k8s 1.30): no schema" in line for line in problems)


@pytest.mark.parametrize("profile", PROFILES)
def test_container_argv_is_the_units_with_only_python_and_bind_address_changed(
    capsys: pytest.CaptureFixture[str], profile: str
) -> None:
    objects = _render(capsys, GOLDEN / "specops.toml", "-p", profile)
    command = _pod(objects)["containers"][0]["command"]
    config = load_config(GOLDEN / "specops.toml", GOLDEN)
    unit_argv = [str(word) for word in launch_argv(config.resolve("gold", profile))]
    host_at = unit_argv.index("--host") + 1
    assert unit_argv[host_at] == "127.0.0.1"
    expected = ["python3", *unit_argv[1:host_at], "0.0.0.0", *unit_argv[host_at + 1 :]]
    assert command == expected
    assert "args" not in _pod(objects)["containers"][0]  # the argv as one list: no shell, no split


@pytest.mark.parametrize("profile", PROFILES)
def test_probes_gpus_shm_and_grace_period(capsys: pytest.CaptureFixture[str], profile: str) -> None:
    objects = _render(capsys, GOLDEN / "specops.toml", "-p", profile)
    config = load_config(GOLDEN / "specops.toml", GOLDEN)
    readiness = config.resolve("gold", profile).profile
    pod = _pod(objects)
    engine = pod["containers"][0]
    startup, ready, live = engine["startupProbe"], engine["readinessProbe"], engine["livenessProbe"]
    assert startup["httpGet"]["path"] == ready["httpGet"]["path"] == "/health_generate"
    assert startup["periodSeconds"] * startup["failureThreshold"] >= readiness.readiness.timeout_s
    assert ready["timeoutSeconds"] >= 20 and startup["timeoutSeconds"] >= 20
    assert live["httpGet"]["path"] == "/health" and live["timeoutSeconds"] >= 5
    assert {probe["httpGet"]["port"] for probe in (startup, ready, live)} == {30001}
    assert pod["terminationGracePeriodSeconds"] >= readiness.drain.timeout_s
    assert engine["resources"]["limits"]["nvidia.com/gpu"] == engine["resources"]["requests"]["nvidia.com/gpu"] == "2"
    shm = next(vol for vol in pod["volumes"] if vol["name"] == "dshm")
    assert shm["emptyDir"]["medium"] == "Memory"
    assert {"name": "dshm", "mountPath": "/dev/shm"} in engine["volumeMounts"]
    assert _kind(objects, "Deployment")["spec"]["strategy"] == {"type": "Recreate"}
    assert _kind(objects, "Service")["spec"]["type"] == "ClusterIP"


def test_secrets_are_secret_references_and_no_value_is_printed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_TOKEN", SECRET_VALUE)
    objects = _render(capsys, GOLDEN / "specops.toml", "-p", "ddtree")
    env = _pod(objects)["containers"][0]["env"]
    token = next(item for item in env if item["name"] == "HF_TOKEN")
    assert token == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "gold-secrets", "key": "HF_TOKEN"}}}
    for args in ([], ["--output", str(tmp_path / "out")]):
        result = run_cli(
            capsys, "--config", str(GOLDEN / "specops.toml"), "render", "gold", "-p", "ddtree", "--target", "k8s", *args
        )
        assert result.code == 0, result.err
        assert SECRET_VALUE not in result.out + result.err
    written = "".join(path.read_text() for path in sorted((tmp_path / "out").iterdir()))
    assert SECRET_VALUE not in written
    assert all(obj["kind"] != "Secret" for obj in objects)


def test_output_writes_one_file_per_object_in_apply_order(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    objects = _render(capsys, GOLDEN / "specops.toml", "-p", "dflash")
    result = run_cli(capsys, "--config", str(GOLDEN / "specops.toml"), "render", "gold", "-p", "dflash",
                     "--target", "k8s", "--output", str(tmp_path / "manifests"))  # fmt: skip
    assert result.code == 0, result.err
    files = sorted((tmp_path / "manifests").iterdir())
    assert [json.loads(path.read_text()) for path in files] == objects
    assert [path.name.split("-", 2)[1] for path in files][-2:] == ["deployment", "service"]


def _inventory(tmp_path: Path, extra: str) -> Path:
    text = (GOLDEN / "specops.toml").read_text() + extra
    (tmp_path / "specops.toml").write_text(text)
    return tmp_path / "specops.toml"


def test_a_dollar_in_an_argument_cannot_make_the_kubelet_expand_a_secret(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """extra_args = ["$(HF_TOKEN)"] would put the Secret's value on the command line, where `ps` shows it."""
    text = (
        (GOLDEN / "specops.toml")
        .read_text()
        .replace('extra_args = ["--log-level"', 'extra_args = ["$(HF_TOKEN)", "--log-level"')
    )
    (tmp_path / "specops.toml").write_text(text.replace('NOTE = "50%', 'NOTE = "$(HF_TOKEN) 50%'))
    objects = _render(capsys, tmp_path / "specops.toml", "-p", "ddtree")
    engine = _pod(objects)["containers"][0]
    assert "$$(HF_TOKEN)" in engine["command"] and "$(HF_TOKEN)" not in engine["command"]
    note = next(item for item in engine["env"] if item["name"] == "NOTE")
    assert note["value"].startswith("$$(HF_TOKEN) 50%")


def test_a_profile_sglang_would_refuse_is_refused_as_render_refuses_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = _inventory(tmp_path, "\n[hosts.gold.overrides.ddtree.server]\npage_size = 16\n")
    unit = run_cli(capsys, "--config", str(config), "render", "gold", "-p", "ddtree")
    k8s = run_cli(capsys, "--config", str(config), "render", "gold", "-p", "ddtree", "--target", "k8s")
    assert unit.code == k8s.code == 3
    assert "DDTREE needs page_size = 1" in k8s.err
    assert k8s.err == unit.err and k8s.out == ""


def test_secrets_without_a_named_secret_is_a_config_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = (GOLDEN / "specops.toml").read_text().replace('secret = "gold-secrets"\n', "")
    (tmp_path / "specops.toml").write_text(text)
    result = run_cli(
        capsys, "--config", str(tmp_path / "specops.toml"), "render", "gold", "-p", "dflash", "--target", "k8s"
    )
    assert result.code == 3
    assert "specops.toml: hosts.gold.k8s.secret: required: hosts.gold.secrets lists HF_TOKEN" in result.err
    assert result.out == ""


def test_check_validates_for_the_user(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(
        capsys, "--config", str(GOLDEN / "specops.toml"), "render", "gold", "-p", "nextn", "--target", "k8s", "--check"
    )
    assert result.code == 0, result.err
    assert "valid (strict) for Kubernetes 1.30-1.37" in result.err
    assert "Deployment/sglang-gold" in result.err


def test_check_without_kubernetes_validate_says_how_to_install_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "kubernetes_validate", None)
    result = run_cli(
        capsys, "--config", str(GOLDEN / "specops.toml"), "render", "gold", "-p", "nextn", "--target", "k8s", "--check"
    )
    assert result.code == 2
    assert "--check needs the kubernetes-validate package" in result.err
    assert "pip install 'specops[k8s]'" in result.err


def _two_ranks(tmp_path: Path) -> Path:
    return _inventory(tmp_path, "nodes = 2\n")  # appended to [hosts.gold.k8s]


def _lws_pods(objects: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    lws = _kind(objects, "LeaderWorkerSet")
    template = lws["spec"]["leaderWorkerTemplate"]
    return lws, template["leaderTemplate"]["spec"], template["workerTemplate"]["spec"]


@pytest.mark.parametrize("profile", PROFILES)
def test_a_two_rank_engine_is_a_leaderworkerset_that_passes_strict_validation(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, profile: str
) -> None:
    objects = _render(capsys, _two_ranks(tmp_path), "-p", profile)
    assert [obj["kind"] for obj in objects] == ["ConfigMap", "LeaderWorkerSet", "Service"]
    assert validate_objects(objects) == []
    lws, leader, worker = _lws_pods(objects)
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    assert lws["spec"]["startupPolicy"] == "LeaderCreated"  # LeaderReady would wait for a rank 0 that waits
    assert lws["spec"]["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart"
    single = _pod(_render(capsys, GOLDEN / "specops.toml", "-p", profile))["containers"][0]["command"]
    dist = ["--dist-init-addr", "$(LWS_LEADER_ADDRESS):20000", "--nnodes", "$(LWS_GROUP_SIZE)",
            "--node-rank", "$(LWS_WORKER_INDEX)"]  # fmt: skip
    for pod in (leader, worker):
        engine = pod["containers"][0]
        assert engine["command"] == single + dist
        assert engine["resources"]["limits"] == engine["resources"]["requests"] == {"nvidia.com/gpu": "1"}
        assert pod["initContainers"][0]["name"] == "preflight"
    assert leader["containers"][0]["readinessProbe"]["httpGet"]["path"] == "/health_generate"
    assert not {"startupProbe", "readinessProbe", "livenessProbe", "ports"} & set(worker["containers"][0])
    assert _kind(objects, "Service")["spec"]["selector"]["specops.io/role"] == "leader"


def test_the_leaderworkerset_schema_catches_a_typo_in_a_worker_pod_and_in_its_own_spec(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    objects = _render(capsys, _two_ranks(tmp_path), "-p", "ddtree")
    lws, _leader, worker = _lws_pods(objects)
    worker["containers"][0]["resources"]["limit"] = {}
    lws["spec"]["startupPolicy"] = "LeaderStarted"
    problems = validate_objects([lws], versions=("1.30",))
    assert any("'limit' was unexpected" in line for line in problems), problems
    lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["resources"].pop("limit")
    problems = validate_objects([lws], versions=("1.30",))
    assert problems and "'LeaderStarted' is not one of" in problems[0]


def test_ranks_that_cannot_share_the_gpus_evenly_are_a_config_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = _inventory(tmp_path, "nodes = 3\n")
    result = run_cli(capsys, "--config", str(config), "render", "gold", "-p", "ddtree", "--target", "k8s")
    assert result.code == 3
    assert "specops.toml: hosts.gold.k8s.nodes: 3 pods cannot share 2 GPUs" in result.err


def test_an_api_key_reaches_sglang_through_the_secret_never_as_text(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SGLANG_API_KEY", SECRET_VALUE)
    text = (
        (GOLDEN / "specops.toml")
        .read_text()
        .replace('secrets = ["HF_TOKEN"]', 'secrets = ["HF_TOKEN", "SGLANG_API_KEY"]')
    )
    (tmp_path / "specops.toml").write_text(
        text.replace("tp_size = 2\n", 'tp_size = 2\napi_key_secret = "SGLANG_API_KEY"\n')
    )
    result = run_cli(
        capsys, "--config", str(tmp_path / "specops.toml"), "render", "gold", "-p", "nextn", "--target", "k8s"
    )
    assert result.code == 0, result.err
    assert SECRET_VALUE not in result.out + result.err
    engine = _pod(_render(capsys, tmp_path / "specops.toml", "-p", "nextn"))["containers"][0]
    assert engine["command"][engine["command"].index("--api-key") + 1] == "$(SGLANG_API_KEY)"
    key = {"name": "SGLANG_API_KEY", "valueFrom": {"secretKeyRef": {"name": "gold-secrets", "key": "SGLANG_API_KEY"}}}
    assert key in engine["env"]


def test_the_same_inputs_give_the_same_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("--config", str(GOLDEN / "specops.toml"), "render", "gold", "-p", "ddtree", "--target", "k8s")
    first, second = run_cli(capsys, *args), run_cli(capsys, *args)
    assert first.code == 0 and first.out == second.out
    assert first.out.startswith("---\n{")


def test_output_onto_a_file_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("keep me")
    result = run_cli(capsys, "--config", str(GOLDEN / "specops.toml"), "render", "gold", "-p", "ddtree",
                     "--target", "k8s", "--output", str(tmp_path / "taken"))  # fmt: skip
    assert result.code == 2
    assert "--output" in result.err and (tmp_path / "taken").read_text() == "keep me"
