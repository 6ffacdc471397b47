"""The checks only a multi-node engine needs, over every rank's facts at once (pure: facts in, results out).

Why: the ranks of one engine run one program together. Ranks started from different builds or environments
hang at init or produce garbage, and nothing on one host alone shows it; a dist port that a worker cannot
reach makes rank 0 wait out its timeout after the model load. Each check names the ranks that differ.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from specops.doctor.checks._helpers import would_run
from specops.doctor.model import CheckResult, failed, passed, skipped
from specops.probe.dist_port import DistPortReport
from specops.probe.facts import HostFacts


@dataclass(frozen=True)
class RankFacts:
    rank: int
    host: str
    facts: HostFacts | None  # None: the rank could not be probed


@dataclass(frozen=True)
class EngineFacts:
    """What the engine checks read: every rank's probe, the engine's parallelism, the dist port test."""

    name: str
    ranks: list[RankFacts]
    tp_size: int
    pp_size: int
    dist: DistPortReport | None = None


Reader = Callable[[HostFacts], str]


def _build(facts: HostFacts) -> str:
    build = would_run(facts)
    release = facts.releases.current_id or "no release"
    return f"{release}, sglang {build.version if build and build.version else '?'}"


def _torch(facts: HostFacts) -> str:
    torch = facts.torch
    return f"torch {torch.version} (CUDA {torch.cuda or 'none'})" if torch.found else "no torch"


def _cuda(facts: HostFacts) -> str:
    libs = facts.cuda_userspace.libs.get("libcudart", [])
    return f"nvcc {facts.cuda_userspace.nvcc_version or '-'}, libcudart {', '.join(sorted(libs)) or '-'}"


def _nccl(facts: HostFacts) -> str:
    found = sorted(f"{name} {version}" for name, version in facts.dists.versions.items() if "nccl" in name)
    return ", ".join(found) or "no nccl wheel"


def _driver(facts: HostFacts) -> str:
    return f"driver {facts.nvidia.driver_version or '?'}"


def _models(facts: HostFacts) -> str:
    parts = []
    for model in sorted(facts.models, key=lambda found: found.role):
        if not model.exists:
            parts.append(f"{model.role}: {model.path} missing")
            continue
        shapes = ";".join(f"{name}={shape}" for name, shape in sorted(model.tensors.items()))
        config = ";".join(f"{key}={value}" for key, value in sorted(model.config.items()))
        parts.append(f"{model.role}: {model.path} [{config}] [{shapes}]")
    return " | ".join(parts) or "no local model folders"


SAME: tuple[tuple[str, str, Reader, str], ...] = (
    ("engine.same_build", "release and SGLang build", _build,
     "deploy the engine as one (`specops deploy ENGINE`): every rank must run the same release"),
    ("engine.same_torch", "torch and its CUDA", _torch,
     "install the same torch wheel on every rank (the release's venv, or the hosts' python)"),
    ("engine.same_cuda", "CUDA runtime", _cuda, "install the same CUDA toolkit/runtime on every rank"),
    ("engine.same_nccl", "NCCL", _nccl, "install the same nvidia-nccl wheel on every rank: NCCL versions must match"),
    ("engine.same_driver", "NVIDIA driver", _driver, "install the same NVIDIA driver on every rank"),
    ("engine.same_models", "model files", _models,
     "copy the same model folders to every rank (the same path, config.json and weights)"),
)  # fmt: skip


def same_on_every_rank(engine: EngineFacts, check_id: str, what: str, read: Reader, hint: str) -> CheckResult:
    """Pass when every probed rank reads the same; else name each rank with its value."""
    seen = [(rank, read(rank.facts)) for rank in engine.ranks if rank.facts is not None]
    evidence = [f"rank {rank.rank} ({rank.host}): {value}" for rank, value in seen]
    if len(seen) < 2:
        return skipped(check_id, f"{what}: fewer than two ranks could be probed")
    reference = seen[0][1]
    differ = [rank for rank, value in seen if value != reference]
    if not differ:
        return passed(check_id, f"{what}: the same on all {len(seen)} ranks", evidence)
    names = ", ".join(f"rank {rank.rank} ({rank.host})" for rank in differ)
    verb = "differs" if len(differ) == 1 else "differ"
    return failed(check_id, f"{what}: {names} {verb} from rank {seen[0][0].rank} ({seen[0][0].host})", hint, evidence)


def gpu_count(engine: EngineFacts) -> CheckResult:
    """SGLang runs tp × pp / nnodes GPUs on every node: each rank needs that many, all ranks the same."""
    need_total = engine.tp_size * engine.pp_size
    per_rank = need_total // len(engine.ranks)
    seen = [(rank, len(rank.facts.nvidia.gpus)) for rank in engine.ranks if rank.facts is not None]
    evidence = [f"rank {rank.rank} ({rank.host}): {count} GPU(s)" for rank, count in seen]
    evidence.append(
        f"tp_size {engine.tp_size} × pp_size {engine.pp_size} = {need_total} over {len(engine.ranks)} ranks"
    )
    short = [rank for rank, count in seen if count < per_rank]
    uneven = len({count for _, count in seen}) > 1
    if short or uneven or len(seen) * per_rank != need_total:
        which = ", ".join(f"rank {rank.rank} ({rank.host})" for rank in short) or "the ranks"
        return failed("engine.gpu_count", f"{which}: not {per_rank} GPU(s) per rank × {len(engine.ranks)} ranks "
                      f"= {need_total} (the engine's parallelism)",
                      f"set engines.{engine.name}.tp_size/pp_size to what the hosts have, or fix the GPUs",
                      evidence)  # fmt: skip
    return passed("engine.gpu_count", f"{per_rank} GPU(s) per rank × {len(engine.ranks)} ranks = {need_total}",
                  evidence)  # fmt: skip


def dist_port_free(engine: EngineFacts) -> CheckResult:
    dist = engine.dist
    if dist is None:
        return skipped("engine.dist_port", "the dist port was not tested")
    first = dist.ranks[0]
    evidence = [f"rank 0 ({first.host}): " + ("bound it" if first.ok else f"{first.error}; holder {first.holder}")]
    problem = dist.port_problem()
    if problem is None:
        how = "held by the engine itself" if dist.held_by_engine else "free"
        return passed("engine.dist_port", f"dist port {dist.port} on rank 0 ({first.host}) is {how}", evidence)
    return failed("engine.dist_port", problem,
                  f"stop what holds it (`ss -ltnp 'sport = :{dist.port}'` on {first.host}) or set "
                  f"engines.{engine.name}.dist_port to a free port", evidence)  # fmt: skip


def dist_port_reach(engine: EngineFacts) -> CheckResult:
    dist = engine.dist
    if dist is None:
        return skipped("engine.dist_reach", "the dist port was not tested")
    evidence = [f"rank {answer.rank} ({answer.host}) → {dist.address}:{dist.port}: "
                + ("connected" if answer.ok else answer.error or "no answer") for answer in dist.ranks[1:]]  # fmt: skip
    lost = dist.unreachable()
    if not lost:
        return passed("engine.dist_reach", f"every rank connects to rank 0 at {dist.address}:{dist.port}", evidence)
    names = ", ".join(f"rank {answer.rank} ({answer.host})" for answer in lost)
    return failed("engine.dist_reach",
                  f"{names} cannot connect to rank 0 ({dist.ranks[0].host}) at {dist.address}:{dist.port}",
                  f"open TCP port {dist.port} on {dist.ranks[0].host} to the other ranks (firewall, route), or set "
                  f"engines.{engine.name}.dist_addr to an address they reach", evidence)  # fmt: skip


def infiniband(engine: EngineFacts) -> CheckResult:
    """An engine whose ranks have RDMA devices uses them (NCCL picks IB): every rank needs the devices and
    `nvidia_peermem` for GPUDirect RDMA, or NCCL falls back or fails at init."""
    dist = engine.dist
    if dist is None or not any(answer.rdma for answer in dist.ranks):
        return skipped("engine.infiniband", "no rank has RDMA devices: not an InfiniBand engine")
    evidence = [f"rank {a.rank} ({a.host}): RDMA {', '.join(a.rdma) or 'none'}; nvidia_peermem "
                f"{'loaded' if a.peermem else 'not loaded'}" for a in dist.ranks]  # fmt: skip
    missing = [a for a in dist.ranks if not a.rdma or not a.peermem]
    if not missing:
        return passed("engine.infiniband", "every rank has RDMA devices and nvidia_peermem", evidence)
    names = ", ".join(f"rank {a.rank} ({a.host})" for a in missing)
    return failed(
        "engine.infiniband",
        f"{names}: RDMA devices or nvidia_peermem missing",
        "`modprobe nvidia_peermem` (and load it at boot), and check the HCA with `ibv_devinfo`",
        evidence,
    )


ENGINE_CHECK_IDS = (*(entry[0] for entry in SAME), "engine.gpu_count", "engine.dist_port", "engine.dist_reach",
                    "engine.infiniband")  # fmt: skip

# what `specops doctor --list` says of each (run by `specops doctor ENGINE`, over all its ranks at once)
ENGINE_CHECK_DESCRIPTIONS = {
    **{check_id: f"a multi-node engine: {what} the same on every rank" for check_id, what, _read, _hint in SAME},
    "engine.gpu_count": "a multi-node engine: GPUs per rank × ranks = the engine's tp_size × pp_size",
    "engine.dist_port": "a multi-node engine: the dist port free on rank 0, or held by the engine itself "
    "(also before any stop in `deploy`/`restart ENGINE`)",
    "engine.dist_reach": "a multi-node engine: every other rank connects to rank 0's dist port (a real TCP "
    "connect; also before any stop in `deploy`/`restart ENGINE`)",
    "engine.infiniband": "a multi-node engine with RDMA devices: every rank has them and nvidia_peermem",
}


def engine_checks(engine: EngineFacts, only: Collection[str] | None = None) -> list[CheckResult]:
    """Every engine check (or those `only` names: ids, or `engine` for all), in the order the doctor shows them."""
    results = [same_on_every_rank(engine, *entry) for entry in SAME]
    results += [gpu_count(engine), dist_port_free(engine), dist_port_reach(engine), infiniband(engine)]
    return [result for result in results if only is None or "engine" in only or result.id in only]
