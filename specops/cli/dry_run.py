"""`specops deploy --dry-run`: what a deploy would do on each host, read-only.

It connects (to read the releases and the installed unit) but takes no lock and writes nothing: the plan
lists the release, what the push would send, the unit diff, and the steps in order with their reasons.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from specops.cli.output import print_json, print_raw

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.deploy.plan import DeployPlan, HostPlan
    from specops.host.base import Host

Opener = Callable[["HostSpec"], Callable[[], AbstractContextManager["Host"]]]


def host_plan_view(plan: DeployPlan, host_plan: HostPlan, host: Host) -> dict[str, Any]:
    from specops.commands.release import files_to_send, newest_complete
    from specops.deploy.plan import unit_diff
    from specops.ops.release import base_files, identical_release, read_listing
    from specops.ops.unit import read_unit

    spec = host_plan.target.host
    listing = read_listing(host, spec)
    same = identical_release(plan.staged, listing.releases)
    base = newest_complete(listing.releases)
    files = base_files(host, spec, base) if base is not None and same is None else None
    send = 0 if same is not None else len(files_to_send(plan.staged.files, files)) - 1
    diff = unit_diff(read_unit(host, spec), host_plan.unit_text, spec.unit_name)
    release = same.id if same is not None else plan.staged.release_id()
    steps = [
        f"lock {spec.name} (/run/specops/lock), heartbeat while deploying",
        f"push {release}: send {send} of {len(plan.staged.files)} files"
        + (f", hard-link the rest from {base.id}" if files and base else "")
        + (" (already on the host: nothing to send)" if same is not None else ""),
        "preflight: the doctor's checks on the candidate; a FAIL stops here (--force overrides)",
        f"write {spec.env_file} (0600) and {spec.unit_name}" + (" (unchanged)" if not diff else " (changed)"),
        "arm the host-side rollback guard (rolls back if this deploy dies)",
        f"switch {spec.current_dir} -> releases/{release}, restart {spec.unit_name}",
        f"readiness (deadline {host_plan.target.profile.readiness.timeout_s} s, extended by load progress), "
        "then the smoke gate",
        "verified: record the gates, prune old releases; failed: roll back to the last verified release",
    ]
    return {"host": spec.name, "profile": host_plan.target.profile.name, "current": listing.current,
            "release": release, "tree_hash": plan.staged.tree_hash, "files_to_send": send,
            "unit_diff": "".join(diff), "steps": steps}  # fmt: skip


def show_plan(plan: DeployPlan, opener: Opener, as_json: bool) -> None:
    views = []
    for host_plan in plan.hosts:
        with opener(host_plan.target.host)() as host:
            views.append(host_plan_view(plan, host_plan, host))
    if as_json:
        print_json({"dry_run": True, "hosts": views})
        return
    for view in views:
        print_raw(f"{view['host']}: would deploy {view['release']} (profile {view['profile']}), "
                  f"current {view['current'] or 'none'}\n")  # fmt: skip
        for number, step in enumerate(view["steps"], start=1):
            print_raw(f"  {number}. {step}\n")
        print_raw(view["unit_diff"] or "  unit: unchanged\n")
    print_raw("dry run: nothing was changed\n")
