"""Pure builders for the Kubernetes objects of one host: a Target in, plain dicts (JSON-ready) out.

Why from `launch_argv`: the container runs the unit's own argv (one definition of the flags), with only the
interpreter (the image's) and the bind address (0.0.0.0: the kubelet probes the pod IP) changed. Why these
probes: SGLang's `/health_generate` answers only after a real one-token generation (so it is the readiness
signal, as on SSH), may take up to its own 20 s timeout, and returns 503 while the model loads; `/health` is
the cheap liveness signal. A startup probe holds the other two off for the whole readiness budget.
"""

from __future__ import annotations

import math
import posixpath
from dataclasses import dataclass
from typing import Any

from specops.commands.cache import cache_environment, cache_link
from specops.commands.systemd import EnvReference, launch_argv, operator_environment
from specops.config.loader import Target

BIND_ALL = "0.0.0.0"
CONTAINER = "sglang"
PREFLIGHT_MOUNT = "/specops/preflight"
STARTUP_PERIOD_S = 10
HEALTH_GENERATE_TIMEOUT_S = 30  # above SGLang's own 20 s SGLANG_HEALTH_CHECK_TIMEOUT, so its 503 is what we see
READINESS_PERIOD_S, READINESS_FAILURES = 30, 3
LIVENESS_PERIOD_S, LIVENESS_TIMEOUT_S, LIVENESS_FAILURES = 60, 30, 5
PROGRESS_MARGIN_S = 600  # image pull and the preflight, on top of the startup budget
LABEL_NAME = "app.kubernetes.io/name"
LABEL_INSTANCE = "app.kubernetes.io/instance"
ROLE_LABEL = "specops.io/role"  # leader or worker, in an engine of several pods
DIST_INIT_PORT = 20000  # rank 0's torch.distributed rendezvous port (--dist-init-addr), as in SGLang's LWS examples


class K8sConfigProblem(ValueError):
    """A host's settings cannot become a manifest: `path` (dotted, under the config) and why; the CLI names the
    config file, as for every other configuration error (exit 3)."""

    def __init__(self, path: str, message: str, hint: str = "") -> None:
        super().__init__(f"{path}: {message}")
        self.path, self.message, self.hint = path, message, hint


@dataclass(frozen=True)
class K8sRequest:
    """What the command line adds to the config: the image and namespace (each replaces the config's)."""

    image: str
    namespace: str
    preflight: dict[str, str]  # the preflight ConfigMap's files: name -> text


def object_name(target: Target) -> str:
    """The Deployment's and Service's name: the host's service, which must also be a Kubernetes name."""
    from specops.config.k8s import dns_label

    try:
        return dns_label(target.host.service)
    except ValueError as exc:
        raise K8sConfigProblem(f"hosts.{target.host.name}.service", str(exc)) from None


def container_argv(target: Target) -> list[str]:
    """The unit's argv with the image's interpreter and --host 0.0.0.0; `$(NAME)` where the unit has `${NAME}`."""
    argv = launch_argv(target)
    argv[0] = target.host.k8s.python
    argv[argv.index("--host") + 1] = BIND_ALL
    return [f"$({word})" if isinstance(word, EnvReference) else literal(str(word)) for word in argv]


def literal(text: str) -> str:
    """Text the kubelet passes on as written: it expands `$(NAME)` in command words and env values (a secret's
    too) and reads `$$` as one `$`, so every `$` is doubled; only specops's own references stay `$(NAME)`."""
    return text.replace("$", "$$")


def dist_init_argv(target: Target) -> list[str]:
    """An engine of several pods: LWS puts the leader's address, the group size and the pod's index in every
    container's environment; the kubelet expands `$(NAME)` in the argv, no shell needed."""
    return ["--dist-init-addr", f"$(LWS_LEADER_ADDRESS):{DIST_INIT_PORT}", "--nnodes", "$(LWS_GROUP_SIZE)",
            "--node-rank", "$(LWS_WORKER_INDEX)"]  # fmt: skip


def gpu_count(target: Target) -> int:
    """GPUs per pod. One pod: the host's `gpus` list when set, else what SGLang uses: tp x pp (x dp without DP
    attention). Several pods (k8s.nodes): that total shared evenly, as SGLang splits its ranks over --nnodes."""
    server, nodes = target.profile.server, target.host.k8s.nodes
    if target.host.gpus is not None and nodes == 1:
        return len(target.host.gpus.split(","))
    total = target.host.tp_size * server.pp_size * (1 if server.enable_dp_attention else server.dp_size)
    if total % nodes:
        product = "tp x pp" if server.enable_dp_attention else "tp x pp x dp"
        message = f"{nodes} pods cannot share {total} GPUs ({product}) evenly"
        raise K8sConfigProblem(f"hosts.{target.host.name}.k8s.nodes", message)
    return total // nodes


def startup_failures(target: Target) -> int:
    """Enough startup probes that period x failures covers the readiness timeout (the unit's TimeoutStartSec=)."""
    return math.ceil(target.profile.readiness.timeout_s / STARTUP_PERIOD_S)


def probes(target: Target) -> dict[str, Any]:
    port = target.host.port
    generate = {"path": "/health_generate", "port": port}
    return {
        "startupProbe": {"httpGet": generate, "periodSeconds": STARTUP_PERIOD_S,
                         "timeoutSeconds": HEALTH_GENERATE_TIMEOUT_S, "failureThreshold": startup_failures(target)},
        "readinessProbe": {"httpGet": generate, "periodSeconds": READINESS_PERIOD_S,
                           "timeoutSeconds": HEALTH_GENERATE_TIMEOUT_S, "failureThreshold": READINESS_FAILURES},
        "livenessProbe": {"httpGet": {"path": "/health", "port": port}, "periodSeconds": LIVENESS_PERIOD_S,
                          "timeoutSeconds": LIVENESS_TIMEOUT_S, "failureThreshold": LIVENESS_FAILURES},
    }  # fmt: skip


def environment(target: Target) -> list[dict[str, Any]]:
    """The profile's and host's variables, the compile caches, then each secret as a reference to the Secret."""
    host = target.host
    plain = {"PYTHONUNBUFFERED": "1", **operator_environment(target), **cache_environment(host)}
    env: list[dict[str, Any]] = [{"name": name, "value": literal(value)} for name, value in plain.items()]
    if host.secrets and host.k8s.secret is None:
        raise K8sConfigProblem(
            f"hosts.{host.name}.k8s.secret",
            f"required: hosts.{host.name}.secrets lists {', '.join(host.secrets)}",
            "name the Secret that holds them (kubectl create secret generic NAME --from-literal=KEY=...)",
        )
    for name in host.secrets:
        env.append({"name": name, "valueFrom": {"secretKeyRef": {"name": host.k8s.secret, "key": name}}})
    return env


def _check_model_paths(target: Target) -> None:
    """A model path the unit reads must exist in the pod: under the models volume's mount."""
    host, k8s = target.host, target.host.k8s
    draft = target.profile.draft_for(host.draft_model_path)
    for field, path in (("model_path", host.model_path), ("draft_model_path", draft)):
        if path and path.startswith("/") and k8s.models is None:
            raise K8sConfigProblem(f"hosts.{host.name}.k8s.models", f"required: {field} {path} is a path on the host",
                                   'e.g. models = { pvc = "models" } or { host_path = "/models" }')  # fmt: skip
        inside = posixpath.normpath(path or "").startswith(k8s.models_mount.rstrip("/") + "/")
        if path and path.startswith("/") and not inside:
            raise K8sConfigProblem(
                f"hosts.{host.name}.{field}", f"{path} is not under k8s.models_mount {k8s.models_mount}"
            )


def volumes(target: Target) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, the engine's mounts): /dev/shm in memory, the models read-only, the compile caches."""
    host, k8s = target.host, target.host.k8s
    _check_model_paths(target)
    vols: list[dict[str, Any]] = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": k8s.shm_size}}]
    mounts: list[dict[str, Any]] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    if k8s.models is not None:
        vols.append({"name": "models", **_source(k8s.models, read_only=True)})
        mounts.append({"name": "models", "mountPath": k8s.models_mount, "readOnly": True})
    vols.append({"name": "cache", **(_source(k8s.cache, read_only=False) if k8s.cache else {"emptyDir": {}})})
    mounts.append({"name": "cache", "mountPath": cache_link(host)})
    return vols, mounts


def _source(volume: Any, read_only: bool) -> dict[str, Any]:
    if volume.pvc is not None:
        return {"persistentVolumeClaim": {"claimName": volume.pvc, "readOnly": read_only}}
    return {"hostPath": {"path": volume.host_path, "type": "Directory" if read_only else "DirectoryOrCreate"}}


def labels(target: Target) -> dict[str, str]:
    return {LABEL_NAME: "sglang", LABEL_INSTANCE: object_name(target), "app.kubernetes.io/managed-by": "specops"}
