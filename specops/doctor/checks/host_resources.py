"""Checks of what the service will need at start: free GPU memory, disk, its port, its unit, its limits.

SGLang sizes its KV cache from the GPU memory that is free when it starts (mem_fraction_static), so a
foreign process holding memory turns into a smaller cache or an out-of-memory crash, not a clear error.
"""

from __future__ import annotations

from specops.doctor.checks._helpers import gib, host_key, listing
from specops.doctor.model import CheckContext, CheckResult, failed, passed, skipped, warned
from specops.doctor.registry import check
from specops.probe.facts import GpuFacts, GpuProcess

DISK_WARN_BYTES = 10 * 2**30  # a release (a copy of the sglang build) plus logs needs a few GiB
DISK_FAIL_BYTES = 1 * 2**30  # below this a deploy's copy or the engine's JIT cache will fail
NOFILE_MIN = 65536
UNSEEN_USED_MIB = 1024  # memory used with no process listed (another container) above this is reported


def _selected_gpus(ctx: CheckContext) -> tuple[list[GpuFacts], list[int]]:
    """The GPUs the service would use (hosts.NAME.gpus, else CUDA_VISIBLE_DEVICES, else all), and unknown indices."""
    gpus = ctx.facts.nvidia.gpus
    wanted = ctx.host.gpus if ctx.host else ctx.facts.env.get("CUDA_VISIBLE_DEVICES")
    if not wanted:
        return list(gpus), []
    indices = [int(part) for part in wanted.split(",") if part.strip().isdigit()]
    by_index = {gpu.index: gpu for gpu in gpus}
    return [by_index[i] for i in indices if i in by_index], [i for i in indices if i not in by_index]


def _holder_line(process: GpuProcess, index: int | None) -> str:
    memory = f" holds {process.used_memory_mib} MiB" if process.used_memory_mib is not None else " holds memory"
    where = f" on GPU {index}" if index is not None else ""
    return f"pid {process.pid} {process.process_name}{memory}{where}"


@check("gpu.memory_free", "no other process holds memory on the service's GPUs")
def gpu_memory_free(ctx: CheckContext) -> CheckResult:
    if not ctx.gpu_host or not ctx.facts.nvidia.gpus:
        return skipped("gpu.memory_free", "no GPUs seen (see gpu.driver)")
    gpus, unknown = _selected_gpus(ctx)
    if unknown:  # one FAIL for one cause: gpu.count names the missing GPU (lost, or not on this host at all)
        named = ", ".join(map(str, unknown))
        return skipped(
            "gpu.memory_free",
            f"{host_key(ctx.host, 'gpus')} names GPU {named}, which nvidia-smi does not list: see gpu.count",
        )
    index_of = {gpu.uuid: gpu.index for gpu in ctx.facts.nvidia.gpus if gpu.uuid}
    chosen = {gpu.index for gpu in gpus}
    holders = [(p, index_of.get(p.gpu_uuid or "")) for p in ctx.facts.nvidia.processes]
    holders = [(p, i) for p, i in holders if i is None or i in chosen]
    lines = [_holder_line(process, index) for process, index in holders]
    held = {index for _, index in holders}
    lines += [f"GPU {gpu.index}: {gpu.memory_used_mib} MiB used by processes nvidia-smi cannot see (another container?)"
              for gpu in gpus if gpu.index not in held and (gpu.memory_used_mib or 0) > UNSEEN_USED_MIB]  # fmt: skip
    evidence = [f"GPU {g.index}: {g.memory_used_mib} of {g.memory_total_mib} MiB used" for g in gpus]
    unit = ctx.facts.unit
    if lines and unit is not None and unit.active_state == "active":
        return passed("gpu.memory_free", f"memory is held while {unit.name} runs (expected: it is the server)",
                      evidence + lines)  # fmt: skip
    if lines:
        return warned(
            "gpu.memory_free",
            f"GPU memory is in use: {listing(lines, 2)}",
            "SGLang sizes its KV cache from free memory: stop these processes or choose other GPUs in "
            f"{host_key(ctx.host, 'gpus')}; `nvidia-smi --query-compute-apps=pid,used_memory --format=csv` lists them",
            evidence + lines,
        )
    names = ",".join(str(gpu.index) for gpu in gpus)
    return passed("gpu.memory_free", f"GPU {names}: no other process holds memory", evidence)


@check("disk.free", f"base_dir and model folders have ≥{gib(DISK_WARN_BYTES)} free (FAIL below {gib(DISK_FAIL_BYTES)})")
def disk_free(ctx: CheckContext) -> CheckResult:
    disks = ctx.facts.disks
    if not disks:
        return skipped("disk.free", "no disk facts (the probe measured no path)")
    evidence = [f"{d.path} (measured at {d.checked}): {gib(d.free_bytes)} free of {gib(d.total_bytes)}" for d in disks]
    lowest = min(disks, key=lambda disk: disk.free_bytes)
    hint = (
        f"free space on the filesystem of {lowest.checked} (`du -xsh {lowest.checked}/*` shows what uses it); "
        f"old releases beyond {host_key(ctx.host, 'keep_releases')} are removed on deploy"
    )
    summary = f"{lowest.path}: only {gib(lowest.free_bytes)} free"
    if lowest.free_bytes < DISK_FAIL_BYTES:
        return failed("disk.free", f"{summary} (below {gib(DISK_FAIL_BYTES)})", hint, evidence)
    if lowest.free_bytes < DISK_WARN_BYTES:
        return warned("disk.free", f"{summary} (below {gib(DISK_WARN_BYTES)})", hint, evidence)
    return passed("disk.free", f"{gib(lowest.free_bytes)} free or more on every path", evidence)


@check("port.free", "the engine port is free or held by this service")
def port_free(ctx: CheckContext) -> CheckResult:
    host = ctx.host
    if host is None:
        return skipped("port.free", "no host config (--local): no engine port to check")
    port = next((facts for facts in ctx.facts.ports if facts.port == host.port), None)
    if port is None:
        return skipped("port.free", f"port {host.port} was not probed")
    if not port.in_use:
        return passed("port.free", f"port {host.port} is free")
    holder = port.holder or "an unknown process"
    unit = ctx.facts.unit
    if unit is not None and unit.active_state == "active":
        return passed("port.free", f"port {host.port} is served by {unit.name} itself (running)", [f"holder: {holder}"])
    return failed(
        "port.free",
        f"port {host.port} is in use by {holder}, not by {host.unit_name}",
        f"stop it (`ss -ltnp 'sport = :{host.port}'` shows it) or set {host_key(host, 'port')} to a free port",
        [f"holder: {holder}", f"{host.unit_name}: {unit.active_state if unit else 'not installed'}"],
    )


@check("unit.managed", "the service name is specops's own unit (never a system unit such as ssh)")
def unit_managed(ctx: CheckContext) -> CheckResult:
    from specops.commands.unit import unmanaged_reason

    host, unit = ctx.host, ctx.facts.unit
    if host is None:
        return skipped("unit.managed", "no host config (--local): no unit")
    if unit is None or not unit.exists:
        return passed("unit.managed", f"{host.unit_name} does not exist yet: a deploy creates it")
    head = unit.fragment_head
    reason = unmanaged_reason(host.unit_name, "loaded", unit.fragment_path or "", None if head is None else head)
    evidence = [f"FragmentPath: {unit.fragment_path or '-'}", f"first line: {head if head is not None else '-'}"]
    if reason is None:
        return passed("unit.managed", f"{host.unit_name} is specops's own unit", evidence)
    return failed(
        "unit.managed",
        reason,
        f"name the engine's own unit with {host_key(host, 'service')} (e.g. 'sglang'): specops never overwrites "
        "or restarts a unit it does not manage, even with --force",
        evidence,
    )


@check("unit.environment", "CUDA_HOME and $CUDA_HOME/bin on PATH reach the installed unit (FlashInfer JIT)")
def unit_environment(ctx: CheckContext) -> CheckResult:
    host, unit = ctx.host, ctx.facts.unit
    if host is None:
        return skipped("unit.environment", "no host config (--local): no unit")
    if unit is None or not unit.exists:
        return skipped("unit.environment", f"{host.unit_name} is not installed yet (a deploy installs it)")
    cuda_home = unit.environment.get("CUDA_HOME")
    path = unit.environment.get("PATH", "").split(":")
    evidence = [f"Environment: CUDA_HOME={cuda_home}", f"Environment: PATH={':'.join(path)}"]
    problems = []
    if not cuda_home:
        problems.append(f"CUDA_HOME is not set in {unit.name}'s environment")
    elif f"{cuda_home.rstrip('/')}/bin" not in path:
        problems.append(f"PATH in {unit.name} lacks $CUDA_HOME/bin ({cuda_home.rstrip('/')}/bin)")
    elif cuda_home != host.cuda_home:
        problems.append(f"{unit.name} has CUDA_HOME={cuda_home} but {host_key(host, 'cuda_home')} is {host.cuda_home}")
    if unit.need_daemon_reload:
        problems.append(f"{unit.name} changed on disk but systemd was not reloaded (systemctl daemon-reload)")
    if problems:
        return warned(
            "unit.environment",
            problems[0],
            f"FlashInfer JIT-compiles kernels at start and needs nvcc: set {host_key(host, 'cuda_home')} and "
            "deploy again (specops writes CUDA_HOME, PATH and LD_LIBRARY_PATH into the unit)",
            evidence + problems[1:],
        )
    return passed("unit.environment", f"CUDA_HOME={cuda_home} and its bin/ on PATH reach {unit.name}", evidence)


@check("limits", f"open files ≥{NOFILE_MIN} and unlimited locked memory (the unit sets its own)")
def limits(ctx: CheckContext) -> CheckResult:
    limit = ctx.facts.limits
    if limit.nofile_soft is None and limit.memlock_soft is None:
        return skipped("limits", "limits were not probed")
    memlock = "unlimited" if limit.memlock_soft == -1 else f"{limit.memlock_soft} bytes"
    evidence = [f"login shell: nofile soft {limit.nofile_soft} (hard {limit.nofile_hard}), memlock soft {memlock}"]
    problems = []
    if limit.nofile_soft is not None and limit.nofile_soft < NOFILE_MIN:
        problems.append(f"open files soft limit {limit.nofile_soft} < {NOFILE_MIN}")
    if limit.memlock_soft is not None and limit.memlock_soft != -1:
        problems.append(f"locked memory is limited to {memlock}")
    if ctx.host is not None and ctx.host.limit_nofile < NOFILE_MIN:
        problems.append(f"{host_key(ctx.host, 'limit_nofile')} = {ctx.host.limit_nofile} < {NOFILE_MIN}")
    note = (
        f"the unit sets LimitNOFILE={ctx.host.limit_nofile} and LimitMEMLOCK=infinity itself; the login limits "
        "matter for manual launches"
        if ctx.host
        else "a manual launch inherits these limits"
    )
    if problems:
        return warned(
            "limits",
            "; ".join(problems),
            f"raise them in /etc/security/limits.conf (`* soft nofile {NOFILE_MIN}`, `* soft memlock unlimited`); "
            + note,
            evidence,
        )
    return passed("limits", f"nofile {limit.nofile_soft}, memlock {memlock}", [*evidence, note])
