"""A trial's planning: its options read (errors name the option) and the refusals decided from one probe.

The facts are the nvidia-smi test double's 2×H200 scenario with production's engine holding GPU 0, as the
real probe and parser see them; each refusal is the mistake it stops (a trial on production's GPU, on a
port something serves, on a GPU too full for the profile's engine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specops.config.loader import Target
from specops.deploy.trial_plan import TrialOptions, parse_duration, parse_gpus, placed, read_prompts, refusals
from specops.errors import UsageError
from specops.probe.facts import GpuProcess, HostFacts, PortFacts
from tests.unit.doctor.factory import HOST, healthy_facts, load_profile, nvidia_from_scenario

PRODUCTION = Target(HOST.model_copy(update={"gpus": "0", "port": 30000}), load_profile("nextn"))
CANDIDATE = Target(PRODUCTION.host, load_profile("ddtree"))


def _facts(held: dict[int, int], ports: dict[int, str | None] | None = None) -> HostFacts:
    """The 2-GPU host with `held` MiB in use per GPU (one process each) and these ports in use."""
    nvidia = nvidia_from_scenario("h200x2-580")
    gpus = [gpu.model_copy(update={"memory_used_mib": held.get(gpu.index, 0)}) for gpu in nvidia.gpus]
    processes = [GpuProcess(pid=4000 + gpu.index, process_name="python3", used_memory_mib=held[gpu.index],
                            gpu_uuid=gpu.uuid) for gpu in gpus if held.get(gpu.index)]  # fmt: skip
    ports_facts = [PortFacts(port=port, in_use=True, holder=holder) for port, holder in (ports or {}).items()]
    return healthy_facts(nvidia=nvidia.model_copy(update={"gpus": gpus, "processes": processes}), ports=ports_facts)


def _refusals(facts: HostFacts, gpus: tuple[int, ...] = (1,), port: int = 30001) -> list[str]:
    options = TrialOptions(gpus=gpus, port=port)
    return refusals(facts, PRODUCTION, placed(CANDIDATE, options), options)


def test_a_trial_on_the_spare_gpu_and_a_free_port_may_start() -> None:
    assert _refusals(_facts({0: 60000})) == []


def test_a_trial_on_productions_gpu_names_the_config_and_the_process_holding_it() -> None:
    found = _refusals(_facts({0: 60000}), gpus=(0,))
    assert found[0] == 'GPU 0 serves production (sglang.service: gpus = "0")'
    assert "GPU 0 is in use by pid 4000 (python3, 60000 MiB)" in found
    assert any(line.startswith("GPU 0 has 83771 MiB free; profile ddtree needs 115016 MiB") for line in found)


def test_a_gpu_held_by_another_process_is_refused_even_when_the_config_names_no_gpus() -> None:
    production = Target(PRODUCTION.host.model_copy(update={"gpus": None}), PRODUCTION.profile)
    options = TrialOptions(gpus=(1,), port=30001)
    found = refusals(_facts({1: 2000}), production, placed(CANDIDATE, options), options)
    assert found == ["GPU 1 is in use by pid 4001 (python3, 2000 MiB)"]


def test_a_taken_port_and_productions_own_port_are_refused() -> None:
    assert _refusals(_facts({}, {30001: "pid 77 nginx"})) == ["port 30001 is taken by pid 77 nginx"]
    assert "port 30000 is production's own (sglang.service)" in _refusals(_facts({}), port=30000)


def test_a_gpu_the_host_does_not_have_is_refused() -> None:
    assert _refusals(_facts({}), gpus=(5,)) == ["GPU 5: no such GPU (the host has 0, 1)"]


def test_the_trial_target_has_the_trial_gpus_and_port_and_keeps_the_service() -> None:
    trial = placed(CANDIDATE, TrialOptions(gpus=(1, 2), port=30005))
    assert (trial.host.gpus, trial.host.port, trial.host.unit_name) == ("1,2", 30005, "sglang.service")


@pytest.mark.parametrize(("text", "seconds"), [("600", 600), ("30m", 1800), ("2h", 7200), ("1d", 86400)])
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "59", "8d", "10x", "-5m"])
def test_bad_durations_name_the_option(text: str) -> None:
    with pytest.raises(UsageError, match=r"^--duration: "):
        parse_duration(text)


def test_gpus() -> None:
    assert parse_gpus("2,3") == (2, 3)
    for text in ("", "1,1", "a", "1;2"):
        with pytest.raises(UsageError, match=r"^--gpus: "):
            parse_gpus(text)


def test_prompts_file(tmp_path: Path) -> None:
    path = tmp_path / "prompts.txt"
    path.write_text("# the questions users ask\nWhy is the sky blue?\n\n  Write a haiku.  \n")
    assert read_prompts(path) == ("Why is the sky blue?", "Write a haiku.")
    path.write_text("# only a comment\n")
    with pytest.raises(UsageError, match=f"^--prompts: {path}: no prompt in it$"):
        read_prompts(path)
    with pytest.raises(UsageError, match=r"^--prompts: .*missing\.txt: No such file"):
        read_prompts(tmp_path / "missing.txt")


def test_a_second_trial_of_the_same_release_is_refused_naming_the_running_unit() -> None:
    options = TrialOptions(gpus=(1,), port=30001)
    unit = "specops-trial-81618f3c32d8-b75c26.service"
    found = refusals(_facts({0: 60000}), PRODUCTION, placed(CANDIDATE, options), options, unit)
    assert found == [f"a trial of this release runs already ({unit})"]
