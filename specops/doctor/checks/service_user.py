"""The service user (`run_as`): it must exist, the groups the unit names must exist, and it must be able to
open the GPU device nodes.

Why before a deploy: systemd refuses to start a unit whose User=/Group=/SupplementaryGroups= name a missing
account (status 217/USER, 216/GROUP), and an engine that cannot open /dev/nvidia* sees no GPU ("CUDA driver
initialization failed") minutes into its start. Both are cheap to see from the probe's account facts.
"""

from __future__ import annotations

from specops.config.inventory import HostSpec
from specops.doctor.checks._helpers import host_key, listing
from specops.doctor.model import CheckContext, CheckResult, failed, passed, skipped
from specops.doctor.registry import check
from specops.probe.facts import DeviceNode, ServiceUserFacts

CHECK_ID = "service.user"
READ, WRITE, SEARCH = 4, 2, 1  # the rwx bits of one class (owner, group or other)
# what the engine needs of each path it reaches: the interpreter is executed, the models are read
NEEDS = {"python": (READ | SEARCH, "run"), "target": (READ, "read"), "draft": (READ, "read")}


def effective_groups(host: HostSpec, facts: ServiceUserFacts) -> set[str]:
    """The engine's groups under the unit: Group= (run_as), the groups that list the user, SupplementaryGroups=."""
    return {str(host.run_as), *facts.user.member_of, *host.run_as_groups}


def allowed(node: DeviceNode, uid: int | None, groups: set[str], gids: set[int], want: int) -> bool:
    """Whether the kernel grants `want` (READ|WRITE|SEARCH) to a process with that uid and those groups: the
    owner's bits if it owns the node, else the group's if it is in the group, else the others' (root excepted)."""
    if uid is not None and node.uid == uid:
        bits = node.mode >> 6
    elif (node.group in groups) or (node.gid in gids):
        bits = node.mode >> 3
    else:
        bits = node.mode
    return bits & want == want


def _mode_line(node: DeviceNode) -> str:
    return f"{node.path}: mode {node.mode:04o}, owner uid {node.uid}, group {node.group or node.gid}"


def _create_hint(host: HostSpec) -> str:
    groups = f" --groups {','.join(host.run_as_groups)}" if host.run_as_groups else ""
    return (f"create it on the host: `useradd --system --user-group --no-create-home --shell /usr/sbin/nologin"
            f"{groups} {host.run_as}`, or change {host_key(host, 'run_as')}")  # fmt: skip


@check(CHECK_ID, "the run_as user and its groups exist, and it can open the GPU device nodes")
def service_user(ctx: CheckContext) -> CheckResult:
    host = ctx.host
    if host is None or host.run_as is None:
        return skipped(CHECK_ID, "the engine runs as root (no run_as)")
    facts = ctx.facts.service_user
    if facts is None:
        why = ctx.facts.errors.get("service_user", "the probe did not report it")
        return failed(CHECK_ID, f"could not look at user {host.run_as}: {why}", "re-run with --debug and report it")
    if not facts.user.exists:
        return failed(CHECK_ID, f"user {host.run_as} does not exist on the host (systemd would refuse to start "
                      "the unit: status 217/USER)", _create_hint(host))  # fmt: skip
    missing = [name for name, gid in facts.groups.items() if gid is None]
    if missing:
        return failed(
            CHECK_ID,
            f"group {listing(missing)} does not exist on the host (systemd would refuse to start the unit: 216/GROUP)",
            _missing_group_hint(host, missing, facts),
        )
    return _device_verdict(host, facts)


def _missing_group_hint(host: HostSpec, missing: list[str], facts: ServiceUserFacts) -> str:
    if host.run_as in missing:
        return f"the unit sets Group={host.run_as}: `groupadd --system {host.run_as}` (or recreate the user with " \
            "--user-group)"  # fmt: skip
    owners = sorted({node.group for node in facts.devices if node.group and node.gid != 0})
    where = f" (the GPU device nodes here belong to: {', '.join(owners)})" if owners else ""
    return f"remove {', '.join(missing)} from {host_key(host, 'run_as_groups')}{where}, or create it with groupadd"


def _device_verdict(host: HostSpec, facts: ServiceUserFacts) -> CheckResult:
    groups = effective_groups(host, facts)
    gids = {gid for name, gid in facts.groups.items() if gid is not None and name in groups}
    uid = facts.user.uid
    who = f"user {host.run_as} (uid {uid}, groups {', '.join(sorted(groups))})"
    evidence = [who, *(_mode_line(node) for node in facts.devices)]
    blocked = [node for node in facts.devices if not allowed(node, uid, groups, gids, READ | WRITE)]
    if blocked:
        owners = sorted({node.group or str(node.gid) for node in blocked if node.gid != 0})
        fix = (
            f"add {', '.join(owners)} to {host_key(host, 'run_as_groups')} (the groups that own these nodes)"
            if owners
            else "give the nodes a group the user is in (a udev rule, or NVreg_DeviceFileGID/Mode for nvidia)"
        )
        return failed(CHECK_ID, f"{host.run_as} cannot open {listing([n.path for n in blocked])}: the engine would "
                      "see no GPU", fix, evidence)  # fmt: skip
    unreachable = _unreachable_paths(host, facts, uid, groups, gids)
    if unreachable:
        lines = [line for line, _ in unreachable]
        return failed(CHECK_ID, f"{host.run_as} cannot {listing(lines, 2)}", " ".join(h for _, h in unreachable),
                      evidence)  # fmt: skip
    if not facts.devices:
        return passed(CHECK_ID, f"user {host.run_as} exists (no GPU device nodes under /dev to open)", evidence)
    return passed(CHECK_ID, f"user {host.run_as} exists and can open the {len(facts.devices)} GPU device nodes",
                  evidence)  # fmt: skip


def _unreachable_paths(
    host: HostSpec, facts: ServiceUserFacts, uid: int | None, groups: set[str], gids: set[int]
) -> list[tuple[str, str]]:
    """(what fails, the fix) for the interpreter and models the user cannot reach: the first folder it may not
    walk through, or the file itself it may not run or read."""
    found = []
    for label, chain in facts.paths.items():
        want, verb = NEEDS.get(label, (READ, "read"))
        for node in chain.chain:
            final = node.path == chain.target
            if not final and not node.is_dir:
                continue
            need = (want | (SEARCH if node.is_dir else 0)) if final else SEARCH
            if not allowed(node, uid, groups, gids, need):
                owner = f"uid {node.uid}, group {node.group or node.gid}, mode {node.mode:04o}"
                bits = "x" if not final else ("rx" if want & SEARCH or node.is_dir else "r")
                fix = f"`chmod o+{bits} {node.path}` on the host, or put it where {host.run_as} can reach it"
                found.append((f"{verb} {chain.path} ({node.path}: {owner})", fix))
                break
    return found
