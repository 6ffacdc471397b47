"""Pure builders for a trial's transient unit: its name, its `systemd-run` command line, its stop.

Why a transient unit (`systemd-run`) and not a unit file: it lives only in systemd's memory, is unloaded once
it stops (`--collect`), and `RuntimeMaxSec=` makes systemd stop it by itself when the operator's machine
vanishes mid-trial; nothing of it is left on disk. Its settings are the managed unit's own, read from the unit
text `render_unit` renders for the trial's GPUs and port, so the trial runs with the same hardening, limits and
caches as production does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

TRIAL_PREFIX = "specops-trial-"
# [Service] settings of the rendered unit a trial keeps (the rest is the managed service's: Restart=, its
# start timeouts, its journal identity); ExecStart= and Environment= are given from their sources instead.
KEPT_SETTINGS = (
    "User", "Group", "SupplementaryGroups", "EnvironmentFile", "TimeoutStopSec", "KillMode", "LimitNOFILE",
    "LimitMEMLOCK", "NoNewPrivileges", "ProtectSystem", "PrivateTmp", "StandardOutput", "StandardError",
)  # fmt: skip


def trial_unit_name(release_id: str) -> str:
    """One name per candidate release: a second trial of the same release meets the first one's unit."""
    return f"{TRIAL_PREFIX}{release_id}.service"


def service_settings(unit_text: str) -> list[tuple[str, str]]:
    """The KEPT_SETTINGS of a rendered unit's [Service] section, in order (continued lines skipped)."""
    settings: list[tuple[str, str]] = []
    section, continued = "", False
    for raw in unit_text.splitlines():
        line = raw.strip()
        if continued:
            continued = line.endswith("\\")
            continue
        continued = line.endswith("\\")
        if line.startswith("[") and line.endswith("]"):
            section = line
        elif section == "[Service]" and "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            if key in KEPT_SETTINGS:
                settings.append((key, value))
    return settings


def trial_start_argv(
    unit: str,
    settings: Sequence[tuple[str, str]],
    environment: Mapping[str, str],
    working_directory: str,
    command: Sequence[str],
    runtime_max_s: int,
) -> list[str]:
    """`systemd-run` starting `command` as `unit`: the managed unit's `settings`, its `environment`, the
    candidate release as its working directory, stopped by systemd after `runtime_max_s` whatever happens."""
    argv = ["systemd-run", f"--unit={unit}", "--collect", "--quiet", f"--description=specops trial ({unit})"]
    argv += [f"--property={key}={value}" for key, value in settings]
    argv += [f"--property=WorkingDirectory={working_directory}", f"--property=RuntimeMaxSec={runtime_max_s}",
             f"--property=SyslogIdentifier={unit.removesuffix('.service')}"]  # fmt: skip
    argv += [f"--setenv={name}={value}" for name, value in environment.items()]
    return [*argv, "--", *command]


def trial_stop_argv(unit: str) -> list[str]:
    """Stop the trial (SIGTERM to its main process, then what is left of its group); exits 5 when it is gone."""
    return ["systemctl", "stop", unit]


def trial_reset_argv(unit: str) -> list[str]:
    """Forget a failed trial unit (`--collect` unloads it on a clean stop; a failed one may linger otherwise)."""
    return ["systemctl", "reset-failed", unit]


def trial_units_argv() -> list[str]:
    """Every trial unit systemd knows (loaded, any state): one left by an earlier trial is named, never reused."""
    return ["systemctl", "list-units", "--all", "--plain", "--no-legend", f"{TRIAL_PREFIX}*"]
