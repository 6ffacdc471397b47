"""The inventory: hosts, groups and defaults from specops.toml (pydantic v2, unknown keys forbidden)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from specops.config.engine_spec import EngineSpec
from specops.config.fields import (
    AbsPath,
    EnvName,
    GpuList,
    JumpHosts,
    ListenAddress,
    LocalPath,
    ModelRef,
    Name,
    PlainText,
    PosixName,
    ServiceName,
    SshTarget,
)  # fmt: skip
from specops.config.k8s import K8sSettings
from specops.config.waivers import Waiver, unique_checks

_HOST_SETTINGS_DOC = {
    "jump": "jump hosts (ProxyJump syntax): 'bastion', 'user@bastion:2222,inner', or 'none'; replaces the "
    "ProxyJump/ProxyCommand of ~/.ssh/config for this host",
    "python": "the interpreter of the host's venv that runs SGLang (and the doctor's probe)",
    "service": "systemd unit name, without .service",
    "base_dir": "where releases live on the host: <base_dir>/<service>/releases/<id>",
    "listen": "address the engine binds (--host); SGLang's default is 127.0.0.1",
    "port": "engine HTTP port (--port)",
    "gpus": "CUDA_VISIBLE_DEVICES for the unit, e.g. '0,1'",
    "model_path": "target model: an absolute path on the host or a Hugging Face repo id",
    "draft_model_path": "the DFlash draft, used by DFLASH/DDTREE profiles (others set their own draft_model_path)",
    "served_model_name": "name served by /v1/models",
    "tp_size": "tensor parallel size (--tp-size)",
    "profile": "default profile for this host",
    "build": "the build `specops deploy` stages when no --build is given: sglang's python/ folder, a folder "
    "holding sglang, or a .whl, on THIS machine; relative to specops.toml's folder, '~' expanded",
    "patches": "patches applied to the configured build, in order (same path rules as build); a --patch on the "
    "command line replaces this list, a --build replaces the build and its patches",
    "env": "plain environment variables for the engine (written to the host's env file)",
    "secrets": "names of variables read from the operator's environment or secrets_file; never printed",
    "api_key_secret": "name of a secret (listed in secrets) that SGLang requires as its API key (--api-key); "
    "specops sends it in readiness and smoke",
    "extra_args": "further sglang.launch_server arguments, each one list item",
    "cuda_home": "CUDA toolkit root; CUDA_HOME, PATH and LD_LIBRARY_PATH in the unit are built from it",
    "limit_nofile": "LimitNOFILE= of the unit",
    "keep_releases": "how many releases to keep on the host (current and last verified are never deleted)",
    "become": "'sudo': run every command on the host through sudo (log in as a user, act as become_user); "
    "'none': the login user acts itself (root)",
    "become_user": "the user sudo runs the commands as (with become = 'sudo'); specops needs root",
    "run_as": "system user the engine runs as (User=, Group= of the same name); unset: root",
    "run_as_groups": "supplementary groups of the engine when run_as is set (SupplementaryGroups=), for GPU "
    "device access: the groups that own /dev/nvidia* and /dev/dri/* on the host, e.g. ['video', 'render']",
    "overrides": "per-profile overrides: [hosts.NAME.overrides.PROFILE] with profile fields",
    "pre_stop": "command run on THIS machine (argv list, no shell) before a deploy or rollback stops the engine, "
    "e.g. to take the host out of a load balancer; SPECOPS_HOST, SPECOPS_RELEASE, SPECOPS_PHASE in its "
    "environment; failing, it stops the deploy before anything on the host changes",
    "post_start": "command run on THIS machine (argv list, no shell) once the new (or restored) engine passed "
    "its gates, e.g. to put the host back into a load balancer",
    "waive": 'doctor checks this host may fail, each with its reason, e.g. [{ check = "gpu.driver", reason = '
    '"CPU staging box" }]: a waived FAIL is shown with the reason but stops no deploy and fails no doctor; '
    "a host's list replaces the one in [defaults]",
    "k8s": "what `specops render --target k8s` needs beyond the SSH fields: image, namespace, python, models, "
    "models_mount, cache, secret, shm_size, runtime_class (docs/kubernetes.md); a host's keys replace the "
    "defaults' key by key",
}


def _hook_argv(words: list[str] | None) -> list[str] | None:
    """A hook is an argv run without a shell: at least a program, and that program named."""
    if words is not None and (not words or not words[0].strip()):
        raise ValueError('a hook is a command as a list of words, e.g. ["/usr/local/bin/lb", "drain"]')
    return words


class HostSettings(BaseModel):
    """Everything a host can set; also the shape of [defaults], where every field is optional."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    python: AbsPath | None = Field(default=None, description=_HOST_SETTINGS_DOC["python"])
    jump: JumpHosts | None = Field(default=None, description=_HOST_SETTINGS_DOC["jump"])
    service: ServiceName | None = Field(default=None, description=_HOST_SETTINGS_DOC["service"])
    base_dir: AbsPath | None = Field(default=None, description=_HOST_SETTINGS_DOC["base_dir"])
    listen: ListenAddress | None = Field(default=None, description=_HOST_SETTINGS_DOC["listen"])
    port: int | None = Field(default=None, ge=1, le=65535, description=_HOST_SETTINGS_DOC["port"])
    gpus: GpuList | None = Field(default=None, description=_HOST_SETTINGS_DOC["gpus"])
    model_path: ModelRef | None = Field(default=None, description=_HOST_SETTINGS_DOC["model_path"])
    draft_model_path: ModelRef | None = Field(default=None, description=_HOST_SETTINGS_DOC["draft_model_path"])
    served_model_name: Name | None = Field(default=None, description=_HOST_SETTINGS_DOC["served_model_name"])
    tp_size: int | None = Field(default=None, ge=1, le=64, description=_HOST_SETTINGS_DOC["tp_size"])
    profile: Name | None = Field(default=None, description=_HOST_SETTINGS_DOC["profile"])
    build: LocalPath | None = Field(default=None, description=_HOST_SETTINGS_DOC["build"])
    patches: list[LocalPath] | None = Field(default=None, description=_HOST_SETTINGS_DOC["patches"])
    env: dict[EnvName, PlainText] = Field(default_factory=dict, description=_HOST_SETTINGS_DOC["env"])
    secrets: list[EnvName] = Field(default_factory=list, description=_HOST_SETTINGS_DOC["secrets"])
    api_key_secret: EnvName | None = Field(default=None, description=_HOST_SETTINGS_DOC["api_key_secret"])
    extra_args: list[PlainText] = Field(default_factory=list, description=_HOST_SETTINGS_DOC["extra_args"])
    cuda_home: AbsPath | None = Field(default=None, description=_HOST_SETTINGS_DOC["cuda_home"])
    limit_nofile: int | None = Field(default=None, ge=1024, le=1048576, description=_HOST_SETTINGS_DOC["limit_nofile"])
    keep_releases: int | None = Field(default=None, ge=2, le=100, description=_HOST_SETTINGS_DOC["keep_releases"])
    become: Literal["sudo", "none"] | None = Field(default=None, description=_HOST_SETTINGS_DOC["become"])
    become_user: PosixName | None = Field(default=None, description=_HOST_SETTINGS_DOC["become_user"])
    run_as: PosixName | None = Field(default=None, description=_HOST_SETTINGS_DOC["run_as"])
    run_as_groups: list[PosixName] | None = Field(default=None, description=_HOST_SETTINGS_DOC["run_as_groups"])
    overrides: dict[Name, dict[str, Any]] = Field(default_factory=dict, description=_HOST_SETTINGS_DOC["overrides"])
    pre_stop: list[PlainText] | None = Field(default=None, description=_HOST_SETTINGS_DOC["pre_stop"])
    post_start: list[PlainText] | None = Field(default=None, description=_HOST_SETTINGS_DOC["post_start"])
    waive: list[Waiver] | None = Field(default=None, description=_HOST_SETTINGS_DOC["waive"])
    k8s: K8sSettings | None = Field(default=None, description=_HOST_SETTINGS_DOC["k8s"])

    _check_hooks = field_validator("pre_stop", "post_start")(_hook_argv)
    _check_waivers = field_validator("waive")(unique_checks)


class HostSpec(BaseModel):
    """One host after [defaults] are applied: every field has its final value."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    name: Name
    ssh: SshTarget = Field(description="an alias from ~/.ssh/config, or [user@]host[:port]")
    python: AbsPath = Field(description=_HOST_SETTINGS_DOC["python"])
    jump: JumpHosts | None = Field(default=None, description=_HOST_SETTINGS_DOC["jump"])
    service: ServiceName = Field(default="sglang", description=_HOST_SETTINGS_DOC["service"])
    base_dir: AbsPath = Field(default="/opt/specops", description=_HOST_SETTINGS_DOC["base_dir"])
    listen: ListenAddress = Field(default="127.0.0.1", description=_HOST_SETTINGS_DOC["listen"])
    port: int = Field(default=30000, ge=1, le=65535, description=_HOST_SETTINGS_DOC["port"])
    gpus: GpuList | None = Field(default=None, description=_HOST_SETTINGS_DOC["gpus"])
    model_path: ModelRef = Field(description=_HOST_SETTINGS_DOC["model_path"])
    draft_model_path: ModelRef | None = Field(default=None, description=_HOST_SETTINGS_DOC["draft_model_path"])
    served_model_name: Name | None = Field(default=None, description=_HOST_SETTINGS_DOC["served_model_name"])
    tp_size: int = Field(default=1, ge=1, le=64, description=_HOST_SETTINGS_DOC["tp_size"])
    profile: Name | None = Field(default=None, description=_HOST_SETTINGS_DOC["profile"])
    build: LocalPath | None = Field(default=None, description=_HOST_SETTINGS_DOC["build"])
    patches: list[LocalPath] = Field(default=[], description=_HOST_SETTINGS_DOC["patches"])
    env: dict[EnvName, PlainText] = Field(default={}, description=_HOST_SETTINGS_DOC["env"])
    secrets: list[EnvName] = Field(default=[], description=_HOST_SETTINGS_DOC["secrets"])
    api_key_secret: EnvName | None = Field(default=None, description=_HOST_SETTINGS_DOC["api_key_secret"])
    extra_args: list[PlainText] = Field(default=[], description=_HOST_SETTINGS_DOC["extra_args"])
    cuda_home: AbsPath = Field(default="/usr/local/cuda", description=_HOST_SETTINGS_DOC["cuda_home"])
    limit_nofile: int = Field(default=65536, ge=1024, le=1048576, description=_HOST_SETTINGS_DOC["limit_nofile"])
    keep_releases: int = Field(default=5, ge=2, le=100, description=_HOST_SETTINGS_DOC["keep_releases"])
    become: Literal["sudo", "none"] = Field(default="none", description=_HOST_SETTINGS_DOC["become"])
    become_user: PosixName = Field(default="root", description=_HOST_SETTINGS_DOC["become_user"])
    run_as: PosixName | None = Field(default=None, description=_HOST_SETTINGS_DOC["run_as"])
    run_as_groups: list[PosixName] = Field(default=[], description=_HOST_SETTINGS_DOC["run_as_groups"])
    overrides: dict[Name, dict[str, Any]] = Field(default={}, description=_HOST_SETTINGS_DOC["overrides"])
    pre_stop: list[PlainText] | None = Field(default=None, description=_HOST_SETTINGS_DOC["pre_stop"])
    post_start: list[PlainText] | None = Field(default=None, description=_HOST_SETTINGS_DOC["post_start"])
    waive: list[Waiver] = Field(default=[], description=_HOST_SETTINGS_DOC["waive"])
    k8s: K8sSettings = Field(default=K8sSettings(), description=_HOST_SETTINGS_DOC["k8s"])

    _check_hooks = field_validator("pre_stop", "post_start")(_hook_argv)
    _check_waivers = field_validator("waive")(unique_checks)

    @property
    def service_dir(self) -> str:
        return f"{self.base_dir}/{self.service}"

    @property
    def current_dir(self) -> str:
        return f"{self.service_dir}/current"

    @property
    def uses_sudo(self) -> bool:
        return self.become == "sudo"

    @property
    def env_file(self) -> str:
        return f"{self.service_dir}/env"

    @property
    def unit_name(self) -> str:
        return f"{self.service}.service"


class Inventory(BaseModel):
    """The whole specops.toml after validation."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    hosts: dict[Name, HostSpec] = {}
    groups: dict[Name, list[Name]] = {}
    engines: dict[Name, EngineSpec] = {}
    secrets_file: str | None = None

    def select(self, names: list[str]) -> list[HostSpec]:
        """Hosts for HOST|GROUP arguments, in inventory order, each once. A multi-node engine, named or in a
        group, is refused: acting on its hosts one by one would start single-host engines in its place."""
        from specops.errors import UsageError

        wanted: set[str] = set()
        for name in names:
            if name in self.hosts or name in self.engines:
                wanted.add(name)
            elif name in self.groups:
                wanted.update(self.members(name))
            else:
                known = ", ".join([*self.hosts, *self.groups, *self.engines]) or "none"
                raise UsageError(f"unknown host or group {name!r}", hint=f"known: {known}")
        for engine in (name for name in self.engines if name in wanted):
            from specops.config.engine_spec import engine_unsupported

            raise UsageError(engine_unsupported(engine, self.engines[engine]), hint="see docs/multinode.md")
        return [spec for key, spec in self.hosts.items() if key in wanted]

    def opened(self, names: Sequence[str]) -> list[str]:
        """The names with each group replaced by its members (hosts and engines, by name, through the groups it
        holds), each once: how the commands that take engines open a group."""
        found: list[str] = []
        for name in names:
            found += sorted(self.members(name)) if name in self.groups else [name]
        return list(dict.fromkeys(found))

    def engine_of(self, host: str) -> str | None:
        """The multi-node engine whose rank `host` is (the loader lets a host be a rank of one engine at most)."""
        return next((name for name, engine in self.engines.items() if host in engine.hosts), None)

    def members(self, group: str) -> set[str]:
        """The hosts of a group, through the groups it contains (the loader has refused cycles)."""
        hosts: set[str] = set()
        pending, seen = [group], set[str]()
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            for member in self.groups.get(name, []):
                if member in self.groups:
                    pending.append(member)
                else:
                    hosts.add(member)
        return hosts
