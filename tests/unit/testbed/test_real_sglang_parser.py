"""The rendered units through REAL upstream SGLang's parser, and the DDTREE patch on a copy of its spec_info.

The probe code runs in the real-SGLang venv's python (as on a host), importing each build once.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from specops.commands.systemd import launch_argv
from specops.config.loader import Target
from specops.doctor.checks.server_args import server_args
from specops.doctor.checks.sglang import sglang_algorithm
from specops.doctor.model import Status
from specops.probe.facts import SpecInfoFacts
from tests.testbed.realsglang import SGLANG_VERSION, parser_build_dir
from tests.testbed.realsglang_fixtures import real_sglang  # noqa: F401
from tests.unit.doctor.factory import HOST, context, healthy_facts, load_profile

pytestmark = pytest.mark.testbed  # imports real SGLang (~25 s): outside the fast suite (pytest -m "not testbed")
REPO = Path(__file__).resolve().parents[3]
DRIVER = """
import json, sys
from concurrent.futures import ThreadPoolExecutor
sys.path.insert(0, sys.argv[1])
from specops.remote.probe.sglang import inspect_spec_info
jobs = json.loads(sys.argv[2])
with ThreadPoolExecutor(len(jobs)) as pool:
    print(json.dumps(list(pool.map(lambda job: inspect_spec_info(*job, timeout=120), jobs))))
"""
# the DDTREE patch written the current way (0.5.16+): a member, its predicate, and is_dflash_family()
PATCH_FROM = "    def is_dflash_family(self) -> bool:\n        return self.is_dflash() or self.is_dspark()\n"
PATCH_TO = (
    "    def is_ddtree(self) -> bool:\n        return self == SpeculativeAlgorithm.DDTREE\n\n"
    "    def is_dflash_family(self) -> bool:\n        return self.is_dflash() or self.is_dspark() or self.is_ddtree()\n"
)


def _argv(profile: str) -> list[str]:
    return launch_argv(Target(HOST, load_profile(profile)))[3:]


def _inspect(entry: Path, jobs: list[list[Any]]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(entry / "venv" / "bin" / "python"), "-I", "-c", DRIVER, str(REPO), json.dumps(jobs)],
        capture_output=True, text=True, timeout=400, check=True,
    )  # fmt: skip
    results: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return results


def _patched_copy(entry: Path, dest: Path) -> Path:
    shutil.copytree(parser_build_dir(entry), dest)
    spec_info = dest / "sglang" / "srt" / "speculative" / "spec_info.py"
    text = spec_info.read_text()
    assert PATCH_FROM in text and "    DFLASH = auto()\n" in text
    text = text.replace("    DFLASH = auto()\n", "    DFLASH = auto()\n    DDTREE = auto()\n", 1)
    spec_info.write_text(text.replace(PATCH_FROM, PATCH_TO, 1))
    return dest


def test_units_through_the_real_parser_and_the_ddtree_patch_the_current_way(
    real_sglang: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    build = str(parser_build_dir(real_sglang))
    patched = str(_patched_copy(real_sglang, tmp_path / "patched"))
    nextn, dflash, ddtree, patched_facts = _inspect(
        real_sglang,
        [["current", build, _argv("nextn")], ["current", build, _argv("dflash")],
         ["candidate", build, _argv("ddtree")], ["candidate", patched, None]],
    )  # fmt: skip
    for facts in (nextn, dflash):
        assert facts["version"] == SGLANG_VERSION and facts["method"] == "import"
        assert facts["server_args"]["method"] == "parser"
        assert (facts["server_args"]["unknown_flags"], facts["server_args"]["errors"]) == ([], [])
    assert nextn["aliases"] == {"NEXTN": "EAGLE"} and "NEXTN" not in nextn["members"]
    assert ddtree["server_args"]["unknown_flags"] == ["--speculative-ddtree-budget"]

    ddtree_build = SpecInfoFacts.model_validate(ddtree)
    ctx = context(healthy_facts(sglang=[ddtree_build]))
    refused = server_args(ctx)
    assert (refused.status, refused.summary) == (
        Status.FAIL,
        f"sglang {SGLANG_VERSION} does not know --speculative-ddtree-budget (a DDTree fork flag: no upstream "
        "release has it): this build cannot run the ddtree profile",
    )
    missing = sglang_algorithm(ctx)
    assert missing.status is Status.FAIL and missing.summary.startswith("DDTREE is not in SpeculativeAlgorithm")

    assert patched_facts["capture_rule"] == "is_dflash_family"
    assert (patched_facts["is_dflash"]["DDTREE"], patched_facts["is_dflash_family"]["DDTREE"]) == (False, True)
    verdict = sglang_algorithm(context(healthy_facts(sglang=[SpecInfoFacts.model_validate(patched_facts)])))
    assert (verdict.status, verdict.summary) == (
        Status.PASS,
        "DDTREE is registered and is_dflash_family() is True for it",
    )
