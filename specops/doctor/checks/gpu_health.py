"""What the GPUs and the driver say about their own health: all GPUs present, the NVSwitch fabric up, no
memory fault and no recovery the driver asks for.

Every value comes from one `nvidia-smi --query-gpu` of the fields this driver knows (the probe leaves out the
ones it does not list), plus `nvidia-smi -L` and `systemctl is-active nvidia-fabricmanager`. A field the driver
lacks makes the check SKIP; `[N/A]` is a value (no NVSwitch, ECC off, MIG on), not an error.
"""

from __future__ import annotations

from specops.doctor.checks._helpers import host_key, listing
from specops.doctor.checks.gpu_nvml import gpu_indices, health_or_skip
from specops.doctor.model import CheckContext, CheckResult, failed, passed, skipped, warned
from specops.doctor.registry import check
from specops.probe.facts import GpuHealth

RESET_HINT = (
    "reset the GPU (`nvidia-smi -r -i {index}`, as root, with no process on it) or reboot; if it returns, RMA it"
)
FABRIC_HINT = (
    "start the fabric manager: `systemctl enable --now nvidia-fabricmanager` (its package version must equal the "
    "driver's, {driver}), then wait for fabric state Completed; if it stays stuck, reset the GPUs or reboot"
)


def _expected(ctx: CheckContext) -> tuple[list[int], str]:
    """The GPU indices this host is configured to use (hosts.NAME.gpus, else CUDA_VISIBLE_DEVICES) and where from."""
    if ctx.host is not None:
        wanted, source = ctx.host.gpus, host_key(ctx.host, "gpus")
    else:
        wanted, source = ctx.facts.env.get("CUDA_VISIBLE_DEVICES"), "CUDA_VISIBLE_DEVICES"
    return [int(part) for part in (wanted or "").split(",") if part.strip().isdigit()], source


@check("gpu.count", "every GPU the host is configured to use is listed, none lost or ERR!")
def gpu_count(ctx: CheckContext) -> CheckResult:
    health = health_or_skip(ctx, "gpu.count", rows=False)
    if isinstance(health, CheckResult):
        return health
    listed = {gpu.index for gpu in ctx.facts.nvidia.gpus} | {gpu.index for gpu in health.gpus if gpu.index is not None}
    count = health.listed if health.listed is not None else len(listed)
    evidence = [f"nvidia-smi -L lists {count} GPU(s)"]
    evidence += [f"GPU {lost.bus_id}: {lost.reason}" for lost in health.lost]
    broken = [gpu for gpu in health.gpus if gpu.err_fields]
    evidence += [f"{gpu.label}: ERR! in {', '.join(gpu.err_fields)}" for gpu in broken]
    wanted, source = _expected(ctx)
    absent = [index for index in wanted if index not in listed]
    if wanted:
        evidence.append(f"{source} = {','.join(map(str, wanted))}")
    hint = (
        "the GPU fell off the bus or did not enumerate: reboot (a cold power cycle if needed); "
        "if it stays missing, have the GPU, its riser and its power checked"
    )
    if health.lost or broken:
        names = [f"GPU {lost.bus_id} ({lost.reason})" for lost in health.lost] + [
            f"{gpu.label} reads ERR!" for gpu in broken
        ]
        return failed("gpu.count", f"a GPU is lost: {listing(names, 2)}", hint, evidence)
    if absent:
        named = ", ".join(map(str, absent))
        hint += f"; if this host never had GPU {named}, set {source} to indices nvidia-smi lists"
        return failed("gpu.count", f"{source} names GPU {named} but nvidia-smi lists only {count}", hint, evidence)
    return passed("gpu.count", f"{count} GPU(s) listed{f', as {source} expects' if wanted else ''}", evidence)


@check("gpu.fabric", "on an NVSwitch host the fabric is up (Completed, Success); else CUDA error 802")
def gpu_fabric(ctx: CheckContext) -> CheckResult:
    health = health_or_skip(ctx, "gpu.fabric", "fabric.state", "fabric.status")
    if isinstance(health, CheckResult):
        return health
    manager = f"nvidia-fabricmanager.service: {health.fabric_manager or 'not found'}"
    fabric = [gpu for gpu in health.gpus if gpu.fabric_state is not None]
    if not fabric:
        return passed("gpu.fabric", "no NVSwitch fabric (PCIe host): fabric state N/A", [manager])
    evidence = [f"{gpu.label}: fabric {gpu.fabric_state}, {gpu.fabric_status or 'N/A'}" for gpu in fabric]
    bad = [gpu for gpu in fabric if gpu.fabric_state != "Completed" or gpu.fabric_status != "Success"]
    if bad:
        first = bad[0]
        return failed(
            "gpu.fabric",
            f"NVSwitch fabric not ready on GPU {gpu_indices(bad)}: {first.fabric_state}, "
            f"{first.fabric_status or 'N/A'} ({manager}); CUDA will fail with error 802 'system not yet initialized'",
            FABRIC_HINT.format(driver=ctx.facts.nvidia.driver_version or "the same version"),
            [*evidence, manager],
        )
    return passed("gpu.fabric", f"NVSwitch fabric Completed, Success on {len(fabric)} GPU(s) ({manager})",
                  [*evidence, manager])  # fmt: skip


_ECC_FIELDS = (
    "remapped_rows.pending",
    "remapped_rows.failure",
    "ecc.errors.uncorrected.volatile.total",
    "ecc.errors.uncorrected.aggregate.total",
)


def _ecc_line(gpu: GpuHealth) -> str:
    def show(value: object) -> str:
        return "N/A" if value is None else ("Yes" if value is True else "No" if value is False else str(value))

    return (f"{gpu.label}: remapped_rows pending {show(gpu.remap_pending)}, failure {show(gpu.remap_failure)}; "
            f"uncorrected ECC volatile {show(gpu.ecc_volatile_uncorrected)}, "
            f"aggregate {show(gpu.ecc_aggregate_uncorrected)}")  # fmt: skip


@check("gpu.ecc", "no row-remap failure or uncorrected ECC error since the driver loaded; no remap pending")
def gpu_ecc(ctx: CheckContext) -> CheckResult:
    health = health_or_skip(ctx, "gpu.ecc", *_ECC_FIELDS)
    if isinstance(health, CheckResult):
        return health
    evidence = [_ecc_line(gpu) for gpu in health.gpus]
    known = [g for g in health.gpus if (g.remap_pending, g.remap_failure, g.ecc_volatile_uncorrected) != (None,) * 3]
    if not known:
        return skipped("gpu.ecc", "no GPU reports ECC or row remapping (N/A: ECC off, MIG on, or no HBM)")
    broken = [g for g in known if g.remap_failure or (g.ecc_volatile_uncorrected or 0) > 0]
    if broken:
        gpu = broken[0]
        why = (
            "a row remap failed"
            if gpu.remap_failure
            else f"{gpu.ecc_volatile_uncorrected} uncorrected ECC error(s) since the driver loaded"
        )
        return failed("gpu.ecc", f"{gpu.label}: {why}", RESET_HINT.format(index=gpu.index), evidence)
    pending = [g for g in known if g.remap_pending]
    if pending:
        return warned(
            "gpu.ecc",
            f"a row remap is pending on GPU {gpu_indices(pending)}: work goes on, a GPU reset is due",
            f"reset at the next window (`nvidia-smi -r -i {pending[0].index}`, as root, with no process on it; a "
            "deploy that restarts the engine is a good moment) or reboot; the remap takes effect then",
            evidence,
        )
    history = [g for g in known if (g.ecc_aggregate_uncorrected or 0) > 0]
    if history:
        return warned(
            "gpu.ecc",
            f"GPU {gpu_indices(history)} had uncorrected ECC errors before the driver loaded (none since)",
            "history, not a current fault: watch the aggregate count; if it keeps growing, RMA the GPU",
            evidence,
        )
    return passed("gpu.ecc", f"no uncorrected ECC error and no remap pending on {len(known)} GPU(s)", evidence)


@check("gpu.recovery_action", "the driver asks for no recovery action (gpu_recovery_action None)")
def gpu_recovery_action(ctx: CheckContext) -> CheckResult:
    health = health_or_skip(ctx, "gpu.recovery_action", "gpu_recovery_action")
    if isinstance(health, CheckResult):
        return health
    evidence = [f"{gpu.label}: gpu_recovery_action {gpu.recovery_action or 'N/A'}" for gpu in health.gpus]
    asking = [gpu for gpu in health.gpus if gpu.recovery_action not in (None, "None")]
    if asking:
        gpu = asking[0]
        hint = f"the driver's action is '{gpu.recovery_action}': " + RESET_HINT.format(index=gpu.index)
        summary = f"{gpu.label}: the driver asks for recovery action {gpu.recovery_action}"
        return failed("gpu.recovery_action", summary, hint, evidence)
    return passed("gpu.recovery_action", f"no recovery action asked on {len(health.gpus)} GPU(s)", evidence)
