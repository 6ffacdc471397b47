"""A host's environment in a few KB: what a release ran on, recorded so a later failure can be compared with it.

Why a separate, versioned model and not the whole HostFacts: facts carry per-check detail (model shapes, port
holders, free disk) that changes every minute and says nothing about "what is this host made of". The
fingerprint keeps only what makes a build work or break (interpreter, packages, driver, native libraries, unit),
is written into every release's manifest (`facts`) and the local state, and is read back by `diagnose` and
`diff` years later: `schema` says how to read it.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field

from specops.probe.facts import HostFacts, NativeLib

FINGERPRINT_SCHEMA = 1
# display name -> distribution names that carry it (the first one installed wins)
KEY_PACKAGES: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "torchcodec": ("torchcodec",),
    "sgl_kernel": ("sgl-kernel", "sgl_kernel"),
    "flashinfer": ("flashinfer-python", "flashinfer"),
    "triton": ("triton", "pytorch-triton"),
    "transformers": ("transformers",),
    "numpy": ("numpy",),
}
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|KEY|CREDENTIAL|AUTH|COOKIE", re.IGNORECASE)
REDACTED = "***"
CORE_RE = re.compile(r"libtorchcodec_core(\d+)\.so")


class Fingerprint(BaseModel):
    """What the host is made of; None / empty means "not observed" (an older probe, no GPU, no unit)."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    schema_version: int = Field(default=FINGERPRINT_SCHEMA, alias="schema")
    host: str = ""
    taken_at: str = ""
    release: str | None = None  # the release the fingerprint belongs to (a deploy's candidate), if any
    python_version: str = ""
    python_executable: str = ""
    packages: dict[str, str | None] = {}  # KEY_PACKAGES display name -> version ("2.13.0+cu130")
    torch_cuda: str | None = None  # torch's CUDA tag ("13.0"); None for a CPU build
    torchcodec_core: str | None = None  # "core5": the FFmpeg core that can load; None: none can
    torchcodec_core_problems: dict[str, str] = {}  # "core5" -> "missing libavutil.so.57"
    installed_count: int = 0
    installed_sha256: str | None = None
    installed: dict[str, str] = {}  # every distribution: name -> version
    driver: str | None = None
    driver_cuda: str | None = None  # the newest CUDA the driver supports
    gpus: list[str] = []  # names, by index
    ffmpeg_libs: list[str] = []  # sonames the loader resolves ("libavutil.so.57")
    cuda_libs: list[str] = []  # CUDA user-space sonames reachable ("libcudart.so.12")
    kernel: str = ""
    glibc: str = ""
    os: str = ""
    unit_env: dict[str, str] = {}  # the unit's Environment=, secrets redacted
    unit_sha256: str | None = None
    tree_hash: str | None = None

    def to_json(self) -> dict[str, object]:
        return self.model_dump(mode="json", by_alias=True)


def redact(environment: dict[str, str]) -> dict[str, str]:
    """Values of names that look like secrets become ***: a fingerprint is printed and kept in plain files."""
    return {key: REDACTED if SECRET_NAME.search(key) else value for key, value in sorted(environment.items())}


def unit_environment(unit_text: str) -> dict[str, str]:
    """The `Environment=` assignments of a unit file (systemd quoting is shell-like enough for these)."""
    found: dict[str, str] = {}
    for line in unit_text.splitlines():
        if not line.startswith("Environment="):
            continue
        try:
            words = shlex.split(line[len("Environment=") :])
        except ValueError:
            words = line[len("Environment=") :].split()
        for word in words:
            key, sep, value = word.partition("=")
            if sep:
                found[key] = value
    return found


def _core_problem(lib: NativeLib) -> str | None:
    """Why one torchcodec core cannot load, or None when the loader would satisfy it."""
    if lib.error:
        return lib.error
    if lib.missing_libs:
        return "missing " + ", ".join(lib.missing_libs)
    if lib.missing_torch_symbols:
        return f"undefined torch symbol {lib.missing_torch_symbols[0]} (torch/torchcodec ABI)"
    return None


def torchcodec_cores(facts: HostFacts) -> tuple[str | None, dict[str, str]]:
    """(the newest core that loads, why each other core cannot), from the probe's ELF reading."""
    loads: list[int] = []
    problems: dict[str, str] = {}
    for name, lib in facts.torchcodec.libs.items():
        found = CORE_RE.search(name)
        if not found:
            continue
        problem = _core_problem(lib)
        if problem is None:
            loads.append(int(found.group(1)))
        else:
            problems[f"core{found.group(1)}"] = problem
    return (f"core{max(loads)}" if loads else None), problems


def _package_versions(facts: HostFacts) -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for display, names in KEY_PACKAGES.items():
        versions[display] = next((facts.dists.versions[n] for n in names if n in facts.dists.versions), None)
    versions["torch"] = facts.torch.version or versions["torch"]
    versions["torchcodec"] = facts.torchcodec.version or versions["torchcodec"]
    for display, ext in (("sgl_kernel", "sgl_kernel"), ("flashinfer", "flashinfer")):
        native = facts.native_ext.get(ext)
        if native is not None and native.found and native.version:
            versions[display] = native.version
    return versions


def _sonames(paths: dict[str, list[str]]) -> list[str]:
    return sorted({path.rsplit("/", 1)[-1] for found in paths.values() for path in found})


def fingerprint_from_facts(
    facts: HostFacts,
    *,
    host: str = "",
    unit_text: str | None = None,
    tree_hash: str | None = None,
    release: str | None = None,
    now: datetime | None = None,
) -> Fingerprint:
    """The fingerprint of a probe. `unit_text`: the unit a deploy is about to install (its hash and environment
    replace what the installed unit says); `tree_hash`/`release`: the build it belongs to."""
    core, problems = torchcodec_cores(facts) if facts.torchcodec.found else (None, {})
    unit_sha: str | None
    if unit_text is not None:
        env, unit_sha = unit_environment(unit_text), hashlib.sha256(unit_text.encode("utf-8")).hexdigest()
    else:
        env = facts.unit.environment if facts.unit else {}
        unit_sha = facts.unit.fragment_sha256 if facts.unit else None
    return Fingerprint(
        host=host or facts.system.hostname,
        taken_at=(now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        release=release,
        python_version=facts.python.version,
        python_executable=facts.python.executable,
        packages=_package_versions(facts),
        torch_cuda=facts.torch.cuda if facts.torch.found else None,
        torchcodec_core=core,
        torchcodec_core_problems=problems,
        installed_count=facts.dists.count,
        installed_sha256=facts.dists.sha256,
        installed=dict(sorted(facts.dists.versions.items())),
        driver=facts.nvidia.driver_version,
        driver_cuda=facts.nvidia.cuda_version,
        gpus=[gpu.name for gpu in sorted(facts.nvidia.gpus, key=lambda gpu: gpu.index)],
        ffmpeg_libs=sorted(facts.ffmpeg.libs),
        cuda_libs=_sonames(facts.cuda_userspace.libs),
        kernel=facts.system.kernel,
        glibc=facts.system.glibc,
        os=facts.system.os_release,
        unit_env=redact(env),
        unit_sha256=unit_sha,
        tree_hash=tree_hash,
    )


def read_fingerprint(data: object) -> Fingerprint | None:
    """A manifest's `facts` (or a stored fingerprint) back as a Fingerprint; None when absent or unreadable
    (a release deployed before fingerprints existed has `facts: {}`)."""
    if not isinstance(data, dict) or not data or "schema" not in data:
        return None
    if not isinstance(data.get("schema"), int) or int(data["schema"]) > FINGERPRINT_SCHEMA:
        return None
    try:
        return Fingerprint.model_validate(data)
    except ValueError:
        return None
