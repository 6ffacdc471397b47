"""What root runs on the host must be root's alone: base_dir, the service folder, the interpreter (through its
symlinks), the venv, its pyvenv.cfg and site-packages, and every folder above them.

Why: the probe (every doctor and deploy), the rollback guard (every 15 s during a deploy), its boot op and the
watch run as root with `hosts.NAME.python`, and the guard file lives in the service folder. Whoever can change
the interpreter, `pyvenv.cfg` (`home=`), a package in site-packages, or rename a folder on the way, runs code
as root at the next tick. That is commonly the engine's own user (`run_as`), when it created or pip-installed
the venv, or whatever code the engine was tricked into running. A WARN, not a FAIL: the host still works.
"""

from __future__ import annotations

from specops.config.inventory import HostSpec
from specops.doctor.checks._helpers import listing
from specops.doctor.model import CheckContext, CheckResult, passed, skipped, warned
from specops.doctor.registry import check
from specops.probe.facts import DeviceNode, HostFacts, RootPathsFacts

CHECK_ID = "root.owned"
STICKY, GROUP_WRITE, OTHER_WRITE = 0o1000, 0o020, 0o002


def writers(node: DeviceNode, final: bool, engine_uid: int | None, engine_groups: set[str]) -> list[str]:
    """Who besides root may change `node`: its owner, a group that may write it, everyone. A sticky folder above
    (/tmp) lets nobody else rename root's entries, so only its owner counts there."""
    found = []
    if node.uid != 0:
        found.append(f"uid {node.uid}" + (" = the engine's user" if node.uid == engine_uid else ""))
    if node.mode & GROUP_WRITE and node.gid != 0:
        group = node.group or str(node.gid)
        found.append(f"group {group}" + (" = the engine's" if group in engine_groups else ""))
    if node.mode & OTHER_WRITE and (final or not (node.is_dir and node.mode & STICKY)):
        found.append("everyone")
    return found


def _engine(host: HostSpec, facts: HostFacts) -> tuple[int | None, set[str]]:
    """The engine user's uid and groups when it runs as `run_as` (the probe's account facts), else none."""
    account = facts.service_user
    if host.run_as is None or account is None:
        return None, set()
    return account.user.uid, {host.run_as, *account.user.member_of, *host.run_as_groups}


Open = dict[str, tuple[DeviceNode, list[str]]]  # node path -> (the node, who besides root may change it)


def _open_nodes(root: RootPathsFacts, uid: int | None, groups: set[str]) -> tuple[Open, list[str]]:
    """Each node someone besides root may change, once, and the labels whose path it puts at risk (on the way
    to it, or the path itself)."""
    found: Open = {}
    labels = []
    for label, chain in root.paths.items():
        for node in chain.chain:
            who = writers(node, node.path == chain.target, uid, groups)
            if who:
                found.setdefault(node.path, (node, who))
                labels += [label]
    return found, list(dict.fromkeys(labels))


def _fixes(root: RootPathsFacts, open_nodes: Open, entries: int) -> list[str]:
    """`chown`/`chmod` lines: the whole venv at once (its packages too), one line for each other path."""
    venv = root.paths.get("venv")
    fixes = []
    for path in open_nodes:
        if venv is not None and path.startswith(venv.target + "/"):
            path = venv.target
        recursive = "-R " if venv is not None and path == venv.target else ""
        fixes.append(f"`chown {recursive}root:root {path} && chmod {recursive}go-w {path}`")
    if entries and venv is not None:
        fixes.append(f"`chown -R root:root {venv.target} && chmod -R go-w {venv.target}`")
    return list(dict.fromkeys(fixes))


def _entry_lines(root: RootPathsFacts, uid: int | None, groups: set[str]) -> tuple[int, list[str]]:
    """How many site-packages entries someone else may change, and a line for each folder that has some."""
    total, lines = 0, []
    for folder, found in root.entries.items():
        if found.count:
            total += found.count
            names = [f"{node.path.rsplit('/', 1)[-1]} ({', '.join(writers(node, True, uid, groups))})"
                     for node in found.entries]  # fmt: skip
            lines.append(f"{folder}: {found.count} entries root does not own alone: {listing(names, 3)}")
    return total, lines


def _line(root: RootPathsFacts, node: DeviceNode, who: list[str]) -> str:
    named = [label for label, chain in root.paths.items() if chain.target == node.path]
    return (f"{named[0] + ': ' if named else ''}{node.path}, mode {node.mode:04o}, owner uid {node.uid}, group "
            f"{node.group or node.gid}: writable by {', '.join(who)}")  # fmt: skip


@check(CHECK_ID, "base_dir, the service folder and the venv root runs (probe, guard, watch) are root's alone")
def root_owned(ctx: CheckContext) -> CheckResult:
    host, root = ctx.host, ctx.facts.root_paths
    if host is None:
        return skipped(CHECK_ID, "nothing runs as root here (--local)")
    if root is None:
        why = ctx.facts.errors.get("root_paths", "the probe did not report it")
        return skipped(CHECK_ID, f"could not look at the owners of base_dir and the venv: {why}")
    uid, groups = _engine(host, ctx.facts)
    open_nodes, labels = _open_nodes(root, uid, groups)
    count, entry_lines = _entry_lines(root, uid, groups)
    evidence = [_line(root, node, who) for node, who in open_nodes.values()] + entry_lines
    if not evidence:
        return passed(CHECK_ID, f"root alone can change {listing(list(root.paths), 6)}",
                      [f"{label}: {chain.target}" for label, chain in root.paths.items()])  # fmt: skip
    labels += ["site-packages"] if count and "site-packages" not in labels else []
    who = sorted({name for _node, names in open_nodes.values() for name in names})
    summary = (f"{listing(labels)} can be changed by someone besides root ({listing(who, 3) or 'package owners'}), "
               "and the probe, the guard and the watch run them as root")  # fmt: skip
    fixes = _fixes(root, open_nodes, count)
    venv = root.paths.get("venv")
    after = "; from then on, pip install as root only" if venv and any(venv.target in fix for fix in fixes) else ""
    hint = " and ".join(fixes[:3]) + " on the host" + after
    return warned(CHECK_ID, summary, hint, evidence)
