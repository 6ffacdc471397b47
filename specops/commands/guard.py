"""Pure builders for the rollback guard: a transient systemd timer on the host that rolls back if the deploying
specops dies (specops/ops/guard.py arms and disarms it). Here so that a deploy's plan shows the same commands."""

from __future__ import annotations

from specops.config.inventory import HostSpec

GUARD_INTERVAL_S = 15


def guard_unit(spec: HostSpec) -> str:
    return f"specops-guard-{spec.service}"


def guard_script_path(spec: HostSpec) -> str:
    return f"{spec.service_dir}/.specops-guard.py"


def schema_argv(spec: HostSpec) -> list[str]:
    """The guard script's first line, `# specops rollback guard, schema N`: a guard a newer specops armed is
    left alone. Exits non-zero when there is no guard script (nothing to check)."""
    return ["head", "-n", "1", "--", guard_script_path(spec)]


def arm_argv(spec: HostSpec, lock_dir: str, stale_after_s: float) -> list[str]:
    """Start the timer: every GUARD_INTERVAL_S the host-side `guard` op checks the lock's heartbeat."""
    return [
        "systemd-run",
        f"--unit={guard_unit(spec)}",
        f"--on-active={GUARD_INTERVAL_S}",
        f"--on-unit-active={GUARD_INTERVAL_S}",
        "--timer-property=AccuracySec=1s",
        f"--description=specops rollback guard for {spec.unit_name}",
        spec.python,
        "-I",
        guard_script_path(spec),
        "guard",
        spec.service_dir,
        spec.unit_name,
        lock_dir,
        str(int(stale_after_s)),
    ]


def disarm_argvs(spec: HostSpec) -> list[list[str]]:
    """Stop the timer, then forget its failed runs (both exit non-zero when no guard exists: not an error)."""
    unit = guard_unit(spec)
    return [["systemctl", "stop", f"{unit}.timer"], ["systemctl", "reset-failed", f"{unit}.timer", f"{unit}.service"]]
