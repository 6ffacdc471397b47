"""Waivers: a host's accepted failures of named doctor checks, with the operator's reason.

A CPU staging box fails the GPU checks by design; waiving exactly those keeps every other check (an unpatched
DDTREE build, a missing FFmpeg) able to stop a deploy, which `--force` cannot. The check ids are part of the
configuration language, so they are listed here, where the inventory is validated (the configuration layer
sits below the doctor); a unit test keeps this list equal to the doctor's registry.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

from specops.config.fields import PlainText

# every registered doctor check, in the doctor's order (specops/doctor/checks/; docs/checks.md)
CHECK_IDS: tuple[str, ...] = (
    "ssh.reachable", "ssh.privilege", "python.interpreter", "systemd.present", "gpu.nvml", "gpu.driver",
    "torch.variant", "gpu.count", "gpu.fabric", "gpu.ecc", "gpu.recovery_action", "gpu.mig", "gpu.compute_mode",
    "gpu.persistence", "gpu.clocks", "gpu.pcie", "cuda.driver_vs_torch", "gpu.arch_vs_cuda", "cuda.userspace_mix",
    "torchcodec.variant", "torchcodec.abi", "torchcodec.ffmpeg", "ffmpeg.consistency", "native_ext.abi",
    "sglang.version", "sglang.algorithm", "sglang.enum_stability", "sglang.server_args", "model.paths",
    "model.draft_target_dims", "gpu.memory_free", "disk.free", "port.free", "unit.managed", "unit.environment",
    "limits", "service.user", "root.owned", "gpu.xid",
)  # fmt: skip
SKIP_CHECK_REASON = "--skip-check"  # the reason a waiver from the command line carries
LIST_HINT = "`specops doctor --list` describes each check"


def unknown_check_message(check_id: str) -> str:
    """What an unknown id is told, in the config and on the command line: the closest id, else all of them."""
    close = difflib.get_close_matches(check_id, CHECK_IDS, n=1)
    known = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(CHECK_IDS)}"
    return f"unknown check {check_id!r} ({known})"


class Waiver(BaseModel):
    """One waived check: a FAIL or ERROR of it no longer stops a deploy or fails the doctor on this host."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    check: str = Field(description="the id of a doctor check (`specops doctor --list`)",
                       json_schema_extra={"enum": list(CHECK_IDS)})  # fmt: skip
    reason: PlainText = Field(description="why this host may fail the check; shown wherever the result is")

    @field_validator("check")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in CHECK_IDS:
            raise ValueError(f"{unknown_check_message(value)}; {LIST_HINT}")
        return value

    @field_validator("reason")
    @classmethod
    def _given(cls, value: str) -> str:
        if not value.strip():
            raise ValueError('a waiver needs a reason, e.g. reason = "CPU staging box: no GPUs"')
        return value.strip()


def unique_checks(waivers: Sequence[Waiver] | None) -> Sequence[Waiver] | None:
    """One waiver per check: a second one would leave two reasons for one result."""
    seen: set[str] = set()
    for waiver in waivers or ():
        if waiver.check in seen:
            raise ValueError(f"{waiver.check} is waived twice; keep one entry with its reason")
        seen.add(waiver.check)
    return waivers


def waiver_reasons(waivers: Sequence[Waiver], skipped: Sequence[str] = ()) -> Mapping[str, str]:
    """check id -> reason: the host's waivers, then the command line's `--skip-check` ids (the host's reason
    stays when both name a check)."""
    reasons = {waiver.check: waiver.reason for waiver in waivers}
    for check_id in skipped:
        reasons.setdefault(check_id, SKIP_CHECK_REASON)
    return reasons
