"""GPU modes and link state that make a healthy GPU unusable or slow for SGLang: MIG, compute mode, persistence,
hardware clock slowdown, a PCIe link running narrower than it can.

Read from the same health query as gpu_health.py; `[N/A]` (a GPU without MIG, a GPU that does not report a
width) is not a problem, and a field the driver does not list makes the check SKIP.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from specops.doctor.checks.gpu_nvml import gpu_indices, health_or_skip
from specops.doctor.model import CheckContext, CheckResult, failed, passed, warned
from specops.doctor.registry import check
from specops.probe.facts import GpuHealth

HW_CLOCK_REASONS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")


@dataclass(frozen=True)
class Bad:
    """A value of a mode that is a problem: the verdict, the summary after 'GPU 0,3 ', and the fix ({index})."""

    value: str
    verdict: Callable[[str, str, str, list[str]], CheckResult]
    summary: str
    hint: str


def _mode(ctx: CheckContext, check_id: str, field: str, read: Callable[[GpuHealth], str | None],
          bad: tuple[Bad, ...], good: str) -> CheckResult:  # fmt: skip
    """One mode per GPU against its bad values (the first found wins, so list the worst first)."""
    health = health_or_skip(ctx, check_id, field)
    if isinstance(health, CheckResult):
        return health
    evidence = [f"{gpu.label}: {field} {read(gpu) or 'N/A'}" for gpu in health.gpus]
    for rule in bad:
        hit = [gpu for gpu in health.gpus if read(gpu) == rule.value]
        if hit:
            summary = f"GPU {gpu_indices(hit)} {rule.summary}"
            return rule.verdict(check_id, summary, rule.hint.format(index=hit[0].index), evidence)
    return passed(check_id, f"{good} on {len(health.gpus)} GPU(s)", evidence)


MIG_ENABLED = Bad("Enabled", failed, "has MIG enabled: a process sees one MIG slice, not the whole GPU",
                  "disable MIG: `nvidia-smi -i {index} -mig 0` (root, GPU idle; a reset may be needed)")  # fmt: skip
_COMPUTE_FIX = "set compute mode Default: `nvidia-smi -i {index} -c DEFAULT` (root)"
COMPUTE_BAD = (
    Bad("Prohibited", failed, "is in compute mode Prohibited: CUDA says devices busy or unavailable", _COMPUTE_FIX),
    Bad("Exclusive_Process", warned, "is in compute mode Exclusive_Process: a second process cannot use it",
        _COMPUTE_FIX),
)  # fmt: skip
PERSISTENCE_OFF = Bad("Disabled", warned, "has persistence mode off: each start reloads the driver",
                      "`systemctl enable --now nvidia-persistenced` (or `nvidia-smi -pm 1` as root)")  # fmt: skip


@check("gpu.mig", "MIG is off: SGLang serves on whole GPUs")
def gpu_mig(ctx: CheckContext) -> CheckResult:
    return _mode(ctx, "gpu.mig", "mig.mode.current", lambda gpu: gpu.mig_current, (MIG_ENABLED,), "MIG off")


@check("gpu.compute_mode", "compute mode Default: Prohibited refuses every process, Exclusive_Process all but one")
def gpu_compute_mode(ctx: CheckContext) -> CheckResult:
    return _mode(ctx, "gpu.compute_mode", "compute_mode", lambda gpu: gpu.compute_mode, COMPUTE_BAD,
                 "compute mode Default")  # fmt: skip


@check("gpu.persistence", "persistence mode is on (the driver stays loaded between processes)")
def gpu_persistence(ctx: CheckContext) -> CheckResult:
    return _mode(ctx, "gpu.persistence", "persistence_mode", lambda gpu: gpu.persistence, (PERSISTENCE_OFF,),
                 "persistence mode Enabled")  # fmt: skip


@check("gpu.clocks", "no hardware clock slowdown active (HW slowdown, HW thermal, power brake)")
def gpu_clocks(ctx: CheckContext) -> CheckResult:
    health = health_or_skip(ctx, "gpu.clocks", *(f"clocks_event_reasons.{name}" for name in HW_CLOCK_REASONS))
    if isinstance(health, CheckResult):
        return health
    active = {gpu.label: [name for name in HW_CLOCK_REASONS if gpu.clock_events.get(name)] for gpu in health.gpus}
    evidence = [f"{label}: {', '.join(names) or 'no hardware slowdown'} active" for label, names in active.items()]
    slowed = [gpu for gpu in health.gpus if active[gpu.label]]
    if slowed:
        first = slowed[0]
        return warned(
            "gpu.clocks",
            f"{first.label}: {', '.join(active[first.label])} active: the GPU runs below its clocks",
            "check cooling (fans, airflow, the BMC's thermal profile) and power (PSU, cabling); "
            "`nvidia-smi -q -d PERFORMANCE` shows the reasons",
            evidence,
        )
    return passed("gpu.clocks", f"no hardware clock slowdown on {len(health.gpus)} GPU(s)", evidence)


@check("gpu.pcie", "each GPU's PCIe link runs at its full width (an idle link may lower its speed, not its width)")
def gpu_pcie(ctx: CheckContext) -> CheckResult:
    health = health_or_skip(ctx, "gpu.pcie", "pcie.link.width.current", "pcie.link.width.max")
    if isinstance(health, CheckResult):
        return health
    evidence = [f"{gpu.label}: PCIe width x{gpu.pcie_width_current or '?'} of x{gpu.pcie_width_max or '?'}"
                for gpu in health.gpus]  # fmt: skip
    narrow = [
        g for g in health.gpus if g.pcie_width_current and g.pcie_width_max and g.pcie_width_current < g.pcie_width_max
    ]
    if narrow:
        first = narrow[0]
        return warned(
            "gpu.pcie",
            f"{first.label}: PCIe link x{first.pcie_width_current} of x{first.pcie_width_max}: host copies run slower",
            "reseat the card or its riser; check the slot and the BIOS lane bifurcation",
            evidence,
        )
    return passed("gpu.pcie", f"PCIe links at full width on {len(health.gpus)} GPU(s)", evidence)
