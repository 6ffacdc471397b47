"""Pure builders for the boot unit: `specops-boot-<service>.service`, enabled beside the engine's unit.

Why: a reboot deletes the rollback guard's transient timer. A host that goes down after a deploy switched
`current` and before it verified the release would boot the unverified release with nothing to roll it
back. At boot this oneshot runs the guard file's `boot` op (remote/release/bootguard.py), which starts the
very timer the deploy armed (`timer_argv`) when `current` was never verified: the guard then rolls back as it
would have without the reboot.
"""

from __future__ import annotations

from specops.commands.guard import guard_script_path, timer_argv
from specops.commands.quoting import exec_arg
from specops.commands.unit import unit_path
from specops.config.inventory import HostSpec


def boot_unit(spec: HostSpec) -> str:
    return f"specops-boot-{spec.service}.service"


def boot_unit_path(spec: HostSpec) -> str:
    return unit_path(boot_unit(spec))


def boot_argv(spec: HostSpec, lock_dir: str, stale_after_s: float) -> list[str]:
    """The boot op: the service folder, then the guard's own arming command (run as the deploy runs it)."""
    guard = guard_script_path(spec)
    return [spec.python, "-IS", guard, "boot", spec.service_dir, *timer_argv(spec, lock_dir, stale_after_s)]


def boot_unit_text(spec: HostSpec, lock_dir: str, stale_after_s: float) -> str:
    """The unit file; `# Managed by specops.` first, as every unit specops writes."""
    command = " ".join(exec_arg(word) for word in boot_argv(spec, lock_dir, stale_after_s))
    return (
        "# Managed by specops. At boot: re-arm the rollback guard when the host went down mid-deploy.\n"
        "[Unit]\n"
        f"Description=specops boot check for {spec.unit_name}: roll back a release its deploy never verified\n"
        f"ConditionPathExists={guard_script_path(spec)}\n"
        f"Before={spec.unit_name}\n"
        "\n"
        "[Service]\n"
        "Type=oneshot\n"
        f"ExecStart={command}\n"
        "\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )
