"""The checks on facts the real probe gathered on this machine: the model fixtures and the test engine build.

The other tests build facts by hand; this one proves the checks read what the probe really reports
(flattened config fields, safetensors shapes, spec_info imported from a real sglang-shaped package).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from specops.config.inventory import HostSpec
from specops.doctor.model import CheckContext, Status
from specops.doctor.registry import all_checks, run_checks
from specops.host.local import LocalHost
from specops.probe.run import probe
from tests.testbed.models import write_model_fixtures
from tests.unit.doctor.factory import ROOT, load_profile

ENGINE_BUILD = ROOT / "tests" / "testbed" / "engine" / "build" / "python"
CHECKS = {"model.paths", "model.draft_target_dims", "sglang.algorithm"}


def _results(tmp_path: Path, draft: str) -> dict[str, tuple[Status, str]]:
    models = write_model_fixtures(tmp_path / "models")
    spec = HostSpec(
        name="local",
        ssh="localhost",
        python=sys.executable,
        model_path=str(models["target"]),
        draft_model_path=str(models[draft]),
        base_dir=str(tmp_path / "base"),
        port=30999,
    )
    profile = load_profile("ddtree")
    facts = probe(LocalHost(), spec, profile, extra_roots={"candidate": str(ENGINE_BUILD)})
    context = CheckContext(host=spec, facts=facts, profile=profile, gpu_host=False)
    results = run_checks(context, [spec for spec in all_checks() if spec.id in CHECKS])
    return {r.id: (r.status, r.summary) for r in results}


@pytest.mark.parametrize(
    ("draft", "status", "summary"),
    [
        ("draft", Status.PASS, "draft fc.weight [5120, 25600] = 5 target layers × hidden 5120"),
        (
            "draft_fc_5120",
            Status.FAIL,
            "draft fc.weight is [5120, 5120]: expected input 25600 = 5 target layers × hidden 5120",
        ),
    ],
)
def test_draft_dims_on_the_model_fixtures(tmp_path: Path, draft: str, status: Status, summary: str) -> None:
    results = _results(tmp_path, draft)
    assert results["model.paths"][0] is Status.PASS
    assert results["model.draft_target_dims"] == (status, summary)
    # the test engine build registers DDTREE without the is_dflash() patch
    assert results["sglang.algorithm"] == (
        Status.FAIL,
        "DDTREE is registered but SpeculativeAlgorithm.is_dflash() returns False for it: "
        "the draft model would get [N, 5120] hidden states instead of [N, 25600]",
    )
