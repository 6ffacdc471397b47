"""specops's own restarts never use up the unit's crash-loop protection (StartLimitBurst=).

The profile here allows 2 starts in its interval (start_limit_burst = 2): three deploys in a row, each with a
restart, must all succeed, because every deliberate restart first runs `systemctl reset-failed UNIT`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.deployscene import Scene
from tests.testbed.engine import RENUMBER_PATCH

pytestmark = pytest.mark.e2e
PROFILES = Path(__file__).resolve().parents[2] / "profiles"


@pytest.fixture
def scene(scene: Scene) -> Scene:
    """The shared scene, with a ddtree profile whose start limit is two starts."""
    made = scene
    profile = (PROFILES / "ddtree.toml").read_text().replace("[readiness]\n", "[readiness]\nstart_limit_burst = 2\n")
    (made.folder / "profiles").mkdir()
    (made.folder / "profiles" / "ddtree.toml").write_text(profile)
    return made


def test_three_deploys_in_a_row_with_a_start_limit_of_two_all_succeed(scene: Scene) -> None:
    served = []
    for patches in ((), ("--patch", str(RENUMBER_PATCH)), ()):
        result, outcome = scene.deploy(*patches)
        assert result.code == 0, result.out + result.err
        assert outcome["outcome"] == "deployed", outcome
        served.append(outcome["release"])
    assert len(set(served)) == 2  # the third deploy put the first release back: a restart each time
    shown = scene.host.exec(["systemctl", "show", "sglang.service", "-p", "StartLimitBurst,Result"]).stdout.decode()
    assert sorted(shown.split()) == ["Result=success", "StartLimitBurst=2"]
