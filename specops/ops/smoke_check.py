"""`specops smoke`: the deploy's smoke gate, on demand, against the service that runs now.

The baseline for the regression gate is what the deploy recorded for the current release; when the gate
fails, the engine's journal is read once more to name the cause (a round trip only worth making then). When
the profile names a baseline_release, that release's manifest is read for the speed-up (one more round trip).
"""

from __future__ import annotations

from specops.commands.manifest import Figures
from specops.config.inventory import HostSpec
from specops.config.profile import Profile
from specops.engine.smoke import SmokeResult
from specops.host.base import Host
from specops.ops.status import recorded_smoke_figures


def smoke_running(host: Host, spec: HostSpec, profile: Profile) -> SmokeResult:
    """Generate with the profile's prompt through the SSH channel and judge it with the profile's gates."""
    from specops.engine.client import EngineClient
    from specops.engine.readiness import unit_problems
    from specops.engine.smoke import run_smoke, with_cause

    with EngineClient(host, spec) as client:
        previous = recorded_smoke_figures(host, spec)
        result = run_smoke(client, profile, spec, previous, baseline=_baseline_figures(host, spec, profile))
        if not result.passed:
            result = with_cause(result, unit_problems(host, spec))
    return result


def _baseline_figures(host: Host, spec: HostSpec, profile: Profile) -> Figures | None:
    """The smoke figures the profile's baseline_release recorded on this host, if it names one."""
    from specops.ops.forensics import read_manifest

    release = profile.smoke.baseline_release
    manifest = read_manifest(host, spec, release) if release else None
    return manifest.gates.figures if manifest else None
