"""The compile cache on a host: choose its folder from the probe's facts, prepare it, measure it.

The folder lives under `<base_dir>/shared/cache/`, outside `<base_dir>/<service>/releases/`, so pruning
releases never touches it (see specops/commands/cache.py for the why).
"""

from __future__ import annotations

from collections.abc import Sequence

from specops.commands.cache import cache_key, prepare_commands, shared_cache_dir, size_argv
from specops.commands.planned import SLOTS, HostCommand
from specops.commands.release import ReleaseInfo
from specops.config.inventory import HostSpec
from specops.host.base import Host
from specops.ops.planned import run_all
from specops.probe.facts import HostFacts

CACHE_TIMEOUT_S = 60.0


def key_from_facts(spec: HostSpec, facts: HostFacts) -> str:
    """torch, its CUDA, and the compute capability of the GPUs the unit uses (hosts.NAME.gpus, else all)."""
    wanted = {int(part) for part in spec.gpus.split(",")} if spec.gpus else None
    archs = [gpu.compute_cap or "" for gpu in facts.nvidia.gpus if wanted is None or gpu.index in wanted]
    return cache_key(facts.torch.version, facts.torch.cuda, archs)


def prepare(host: Host, spec: HostSpec, key: str, planned: Sequence[HostCommand] = ()) -> str:
    """Create the keyed folder (writable by the engine) and point `<service>/cache` at it; the folder's path.
    `planned`: the plan's cache commands (a deploy's unit step), run as they are with the key filled in."""
    slot = SLOTS["key"]  # not every one holds it: the shared cache folder's parent does not
    fill = [command.filled(key=key) if slot in command.slots else command for command in planned]
    commands = fill or prepare_commands(spec, key)
    run_all(host, commands, timeout=CACHE_TIMEOUT_S)
    return shared_cache_dir(spec, key)


def measure(host: Host, spec: HostSpec) -> dict[str, object] | None:
    """{"path": the keyed folder, "bytes": its size} or None when the host has no cache yet (never deployed)."""
    link = host.run(["readlink", f"{spec.service_dir}/cache"], timeout=CACHE_TIMEOUT_S, check=False)
    if not link.ok:
        return None  # no link: no deploy has prepared a cache on this host yet
    size = host.run(size_argv(spec), timeout=CACHE_TIMEOUT_S, check=False)  # a folder removed by hand: no size
    words = size.text.split()
    return {"path": link.text.strip(), "bytes": int(words[0]) if size.ok and words and words[0].isdigit() else None}


def expected_downtime(releases: list[ReleaseInfo], current: str | None) -> str | None:
    """ "expected downtime ~42 s (the last start of RELEASE took 42 s)": the readiness time the manifest of the
    release serving now recorded (else of the newest verified one); None when no start was ever measured."""
    ordered = sorted(releases, key=lambda r: (r.id == current, r.verified, r.created_at or ""), reverse=True)
    for release in ordered:
        readiness = release.gates.readiness
        seconds = readiness.seconds if readiness else None
        if seconds is not None and readiness is not None and readiness.ok:
            return f"expected downtime ~{seconds:.0f} s (the last start, of {release.id}, took {seconds:.1f} s)"
    return None
