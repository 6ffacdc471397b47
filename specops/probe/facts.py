"""Typed facts about one host, built from the probe's JSON by pure parsers (specops/probe/parse.py).

The probe (specops/remote/probe/, bundled by specops/remote/bundle.py) runs on the host with the host's own
interpreter in ONE round trip and prints raw observations; everything that needs interpretation (nvidia-smi
text, version strings) is parsed here, on the operator's side, so recorded outputs can drive unit tests.
Checks read only these models.
A field is None when the probe could not observe it; `errors` says why.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from specops.probe.facts_gpu import GpuFacts, GpuHealth, GpuProcess, LostGpu, NvidiaFacts, NvidiaHealth
from specops.probe.facts_kernel import KernelLogFacts

__all__ = ["GpuFacts", "GpuHealth", "GpuProcess", "LostGpu", "NvidiaFacts", "NvidiaHealth"]  # re-exported


class _Facts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PythonFacts(_Facts):
    executable: str
    version: str  # "3.11.7"
    prefix: str
    site_packages: list[str] = []


class SystemFacts(_Facts):
    hostname: str = ""
    kernel: str = ""
    glibc: str = ""  # "glibc 2.36"
    os_release: str = ""  # PRETTY_NAME
    systemd_version: int | None = None  # 252
    systemd_version_text: str | None = None  # "systemd 252 (252.38-1~deb12u1)"
    euid: int | None = None  # the user the probe ran as (0: root); None from an older probe


class NativeLib(_Facts):
    """One ELF shared library and whether the dynamic loader could satisfy it on this host."""

    path: str
    needed: list[str] = []  # DT_NEEDED sonames
    missing_libs: list[str] = []  # DT_NEEDED entries no search path resolves
    missing_torch_symbols: list[str] = []  # undefined c10/at/torch/aoti symbols torch does not export
    error: str | None = None  # unreadable / not ELF


class TorchFacts(_Facts):
    found: bool
    path: str | None = None
    version: str | None = None  # "2.13.0+cpu"
    cuda: str | None = None  # "13.0"; None for a CPU build
    has_libc10_cuda: bool = False


class TorchcodecFacts(_Facts):
    found: bool
    path: str | None = None
    version: str | None = None  # "0.13.0+cpu"
    libs: dict[str, NativeLib] = {}  # file name -> lib, e.g. "libtorchcodec_core5.so"


class NativeExtFacts(_Facts):
    """A torch C++ extension package (sgl_kernel, flashinfer): its version and its .so files."""

    found: bool
    version: str | None = None
    libs: dict[str, NativeLib] = {}


class DistFacts(_Facts):
    """Every distribution in the interpreter's site-packages (from dist-info folder names) and one hash of the set."""

    count: int = 0
    sha256: str | None = None  # of the sorted "name==version" lines
    versions: dict[str, str] = {}  # PEP 503 name -> version


class FfmpegFacts(_Facts):
    cli_version: str | None = None  # "5.1.9-0+deb12u1", as `ffmpeg -version` says it (probe: libs.ffmpeg_cli)
    libs: dict[str, str] = {}  # soname -> resolved path, e.g. "libavutil.so.57" -> "/usr/lib/.../libavutil.so.57"
    conda_prefix: str | None = None


class CudaUserspaceFacts(_Facts):
    """Majors of CUDA user-space libraries the loader can reach (ldconfig, LD_LIBRARY_PATH, site-packages/nvidia)."""

    libs: dict[str, list[str]] = {}  # "libcudart" -> ["/usr/local/cuda-12.8/lib64/libcudart.so.12", ...]
    nvcc_version: str | None = None  # "12.8"
    # forward-compat driver libs: `*/compat/libcuda.so*` reachable via LD_LIBRARY_PATH or ld.so.conf,
    # e.g. "/usr/local/cuda-13.0/compat/libcuda.so.580.65.06" (cuda-compat: forward compatibility)
    compat_libcuda: list[str] = []


class ServerArgsFacts(_Facts):
    """What the build's own argument parser said about the unit's argv (remote/probe/server_args.py).

    method: "parser" (ServerArgs.add_cli_args, imported), "source" (add_argument calls read from the
    source because the import failed; parser_error says why) or "none" (neither worked; error says why).
    """

    method: str
    unknown_flags: list[str] = []  # "--speculative-ddtree-budget"
    errors: list[str] = []  # argparse's own messages, e.g. "argument --speculative-algorithm: invalid choice: ..."
    validation: str | None = None  # "passed" | "failed" | "not run" | None (parse failed, or source read)
    validation_error: str | None = None
    speculative_flags: list[str] = []  # every --speculative-* option the build knows
    parser_error: str | None = None
    error: str | None = None


class SpecInfoFacts(_Facts):
    """What one sglang build's `SpeculativeAlgorithm` enum says (import in a subprocess, else AST fallback)."""

    root: str  # the folder holding the sglang package
    label: str  # "current", "previous", "candidate", "venv"
    found: bool
    version: str | None = None  # sglang.__version__ / version.py
    members: dict[str, int | str] = {}  # name -> value, definition order
    is_dflash: dict[str, bool] = {}  # member -> is_dflash()
    is_dflash_family: dict[str, bool] = {}  # member -> is_dflash_family() (SGLang 0.5.16+)
    capture_rule: str = "is_dflash"  # the predicate that decides the hidden-state capture in this build
    aliases: dict[str, str] = {}  # "NEXTN" -> "EAGLE" (from_string)
    method: str = "import"  # "import" or "ast"
    error: str | None = None
    server_args: ServerArgsFacts | None = None  # the unit's argv through this build's parser

    def captures_hidden_states(self, member: str) -> bool:
        """Whether the build's capture predicate (is_dflash_family or is_dflash) is true for `member`."""
        table = self.is_dflash_family if self.capture_rule == "is_dflash_family" else self.is_dflash
        return bool(table.get(member))


class ModelFacts(_Facts):
    role: str  # "target" | "draft"
    path: str
    exists: bool
    readable: bool = False
    config: dict[str, object] = {}  # selected config.json fields
    tensors: dict[str, list[int]] = {}  # selected safetensors header shapes, e.g. {"fc.weight": [5120, 25600]}
    error: str | None = None


class PortFacts(_Facts):
    port: int
    in_use: bool
    holder: str | None = None  # "pid 1234 python3" when known


class DiskFacts(_Facts):
    path: str  # the path asked about
    checked: str  # the nearest existing ancestor that was measured
    free_bytes: int
    total_bytes: int


class LimitsFacts(_Facts):
    nofile_soft: int | None = None
    nofile_hard: int | None = None
    memlock_soft: int | None = None  # -1 = unlimited
    memlock_hard: int | None = None


class UnitFacts(_Facts):
    """`systemctl show` of the service unit (absent when not installed)."""

    name: str
    exists: bool = False
    active_state: str | None = None
    sub_state: str | None = None
    environment: dict[str, str] = {}
    need_daemon_reload: bool = False
    n_restarts: int | None = None
    fragment_path: str | None = None
    fragment_sha256: str | None = None  # sha256 of the unit file systemd loaded
    fragment_head: str | None = None  # its first line (specops's units start with "# Managed by specops.")


class ReleaseFacts(_Facts):
    """Releases under `<base_dir>/<service>`: what `current` points at, and the newest VERIFIED other one."""

    service_dir: str = ""
    current_id: str | None = None
    current_path: str | None = None
    previous_id: str | None = None  # newest release with manifest verified=true (by created_at), not current
    previous_path: str | None = None
    ids: list[str] = []


class AccountFacts(_Facts):
    """A user account as the host's account databases know it (exists=False: no such user)."""

    name: str
    exists: bool = False
    uid: int | None = None
    gid: int | None = None
    primary_group: str | None = None
    member_of: list[str] = []  # the groups that list it as a member (/etc/group), besides its primary group
    home: str | None = None
    shell: str | None = None


class DeviceNode(_Facts):
    """A file or folder with who may use it: a GPU device node (/dev/nvidia0, /dev/dri/renderD128), a folder."""

    path: str
    uid: int
    gid: int
    group: str | None = None  # the owning group's name (None: a gid with no name)
    mode: int  # permission bits, e.g. 0o660
    is_dir: bool = False


class PathChain(_Facts):
    """A path the engine must reach (its interpreter, a model folder): every folder walked and the file itself,
    through symlinks (`target` is where they lead)."""

    path: str
    target: str
    exists: bool = False
    chain: list[DeviceNode] = []


class ServiceUserFacts(_Facts):
    """The `run_as` user, the groups the unit names (gid, None where missing), the GPU device nodes and the
    paths it must reach ("python", "target", "draft")."""

    user: AccountFacts
    groups: dict[str, int | None] = {}
    devices: list[DeviceNode] = []
    paths: dict[str, PathChain] = {}


class OpenEntries(_Facts):
    """A folder's entries someone besides root may change: how many, and the first by name."""

    count: int = 0
    entries: list[DeviceNode] = []


class RootPathsFacts(_Facts):
    """What root runs or trusts (base_dir, service_dir, python, venv, pyvenv.cfg, site-packages: label -> chain)
    and, per site-packages folder, its entries someone besides root may change."""

    paths: dict[str, PathChain] = {}
    entries: dict[str, OpenEntries] = {}


class HostFacts(_Facts):
    """Everything one probe saw on one host."""

    probe_version: int
    probe_seconds: float = 0.0
    python: PythonFacts
    system: SystemFacts = SystemFacts()
    env: dict[str, str] = {}  # LD_LIBRARY_PATH, CUDA_HOME, PATH, CUDA_VISIBLE_DEVICES, CONDA_PREFIX
    torch: TorchFacts = TorchFacts(found=False)
    dists: DistFacts = DistFacts()
    torchcodec: TorchcodecFacts = TorchcodecFacts(found=False)
    native_ext: dict[str, NativeExtFacts] = {}
    nvidia: NvidiaFacts = NvidiaFacts()
    ffmpeg: FfmpegFacts = FfmpegFacts()
    cuda_userspace: CudaUserspaceFacts = CudaUserspaceFacts()
    sglang: list[SpecInfoFacts] = []
    models: list[ModelFacts] = []
    ports: list[PortFacts] = []
    disks: list[DiskFacts] = []
    limits: LimitsFacts = LimitsFacts()
    unit: UnitFacts | None = None
    releases: ReleaseFacts = ReleaseFacts()
    service_user: ServiceUserFacts | None = None  # only when the host sets run_as
    root_paths: RootPathsFacts | None = None  # None from an older probe
    kernel_log: KernelLogFacts | None = None  # GPU faults (Xid) in the kernel journal of this boot
    errors: dict[str, str] = Field(default_factory=dict)  # section -> why it could not be observed


class DeepFacts(_Facts):
    """`--deep`: what really happened when torch and torchcodec were imported (in a subprocess, with a timeout)."""

    torch_ok: bool | None = None
    torch_version: str | None = None  # torch.__version__ as imported
    torch_cuda: str | None = None  # torch.version.cuda as imported
    torch_cuda_available: bool | None = None
    torch_error: str | None = None
    torchcodec_ok: bool | None = None
    torchcodec_version: str | None = None
    torchcodec_error: str | None = None
    torchcodec_ffmpeg_major: int | None = None
    seconds: float = 0.0
