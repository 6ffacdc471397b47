"""The objects of one single-host engine: ConfigMap (the preflight), Deployment, Service. Pure, deterministic.

Why `strategy: Recreate`: the engine holds every GPU of its node; a second pod beside it (RollingUpdate's
surge) would wait for GPUs that only the old pod's exit frees. The preflight runs as an init container in
the engine's own image, so a wrong image or node stops the pod in Init:Error before a model load starts,
with the failing check's id and fix as its termination message.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from specops.commands.k8s import (
    CONTAINER,
    PREFLIGHT_MOUNT,
    PROGRESS_MARGIN_S,
    ROLE_LABEL,
    STARTUP_PERIOD_S,
    K8sRequest,
    container_argv,
    dist_init_argv,
    environment,
    gpu_count,
    labels,
    object_name,
    probes,
    startup_failures,
    volumes,
)
from specops.commands.systemd import stop_timeout_s
from specops.config.loader import Target

PREFLIGHT_ENTRY = "preflight.py"


def preflight_command(python: str) -> list[str]:
    """The init container's argv: the image's interpreter, isolated (-I), running the ConfigMap's entry."""
    return [python, "-I", f"{PREFLIGHT_MOUNT}/{PREFLIGHT_ENTRY}"]


def render_objects(target: Target, request: K8sRequest) -> list[dict[str, Any]]:
    """Every object `kubectl apply -f` needs for this host, in apply order."""
    objects: list[dict[str, Any]] = []
    configmap = preflight_configmap(target, request) if request.preflight else None
    if configmap is not None:
        objects.append(configmap)
    preflight = configmap["metadata"]["name"] if configmap else None
    if target.host.k8s.nodes > 1:
        from specops.commands.k8s_lws import leaderworkerset

        objects.append(leaderworkerset(target, request, preflight))
    else:
        objects.append(deployment(target, request, preflight))
    objects.append(service(target, request))
    return objects


def metadata(name: str, target: Target, request: K8sRequest) -> dict[str, Any]:
    return {"name": name, "namespace": request.namespace, "labels": labels(target)}


def preflight_configmap(target: Target, request: K8sRequest) -> dict[str, Any]:
    """Immutable, named by its content's hash: a new preflight is a new ConfigMap and so a new pod template."""
    digest = hashlib.sha256(json.dumps(request.preflight, sort_keys=True).encode()).hexdigest()[:10]
    name = f"{object_name(target)}-preflight-{digest}"
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata(name, target, request),
            "immutable": True, "data": dict(sorted(request.preflight.items()))}  # fmt: skip


def _gpus(target: Target) -> dict[str, Any]:
    count = str(gpu_count(target))
    return {"limits": {"nvidia.com/gpu": count}, "requests": {"nvidia.com/gpu": count}}


def engine_container(target: Target, request: K8sRequest, role: str = "single") -> dict[str, Any]:
    """The engine: the unit's argv (plus, in an engine of several pods, LWS's rank variables); probes only where
    SGLang serves HTTP (a single pod, or an LWS leader: rank 0)."""
    _vols, mounts = volumes(target)
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": request.image,
        "command": container_argv(target) + (dist_init_argv(target) if role != "single" else []),
        "env": environment(target),
        "resources": _gpus(target),
        "volumeMounts": mounts,
    }
    if role != "worker":
        container["ports"] = [{"name": "http", "containerPort": target.host.port, "protocol": "TCP"}]
        container.update(probes(target))
    return container


def preflight_container(target: Target, request: K8sRequest) -> dict[str, Any]:
    """The doctor's probe in the engine's image, on the same GPUs (the kubelet hands them on to the engine)."""
    _vols, mounts = volumes(target)
    return {
        "name": "preflight",
        "image": request.image,
        "command": preflight_command(target.host.k8s.python),
        "resources": _gpus(target),
        "volumeMounts": [*mounts, {"name": "preflight", "mountPath": PREFLIGHT_MOUNT, "readOnly": True}],
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }


def pod_template(target: Target, request: K8sRequest, preflight: str | None, role: str = "single") -> dict[str, Any]:
    """The pod of one rank (or of the single-host engine): preflight first, then the engine."""
    vols, _mounts = volumes(target)
    pod: dict[str, Any] = {"terminationGracePeriodSeconds": stop_timeout_s(target)}
    if target.host.k8s.runtime_class:
        pod["runtimeClassName"] = target.host.k8s.runtime_class
    if preflight is not None:
        pod["initContainers"] = [preflight_container(target, request)]
        vols = [*vols, {"name": "preflight", "configMap": {"name": preflight}}]
    pod["containers"] = [engine_container(target, request, role)]
    pod["volumes"] = vols
    pod_labels = labels(target) | ({ROLE_LABEL: role} if role != "single" else {})
    annotations = {"specops.io/profile": target.profile.name, "specops.io/algorithm": target.profile.algorithm}
    return {"metadata": {"labels": pod_labels, "annotations": annotations}, "spec": pod}


def selector(target: Target) -> dict[str, str]:
    return {key: value for key, value in labels(target).items() if key != "app.kubernetes.io/managed-by"}


def deployment(target: Target, request: K8sRequest, preflight: str | None) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(object_name(target), target, request),
        "spec": {
            "replicas": 1,
            "revisionHistoryLimit": target.host.keep_releases,
            "progressDeadlineSeconds": STARTUP_PERIOD_S * startup_failures(target) + PROGRESS_MARGIN_S,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": selector(target)},
            "template": pod_template(target, request, preflight),
        },
    }


def service(target: Target, request: K8sRequest) -> dict[str, Any]:
    """ClusterIP only: an inference port is an unauthenticated GPU, so it is not exposed outside the cluster. In an
    engine of several pods only the leader (rank 0) serves HTTP."""
    chosen = selector(target) | ({ROLE_LABEL: "leader"} if target.host.k8s.nodes > 1 else {})
    port = target.host.port
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(object_name(target), target, request),
        "spec": {"type": "ClusterIP", "selector": chosen,
                 "ports": [{"name": "http", "port": port, "targetPort": "http", "protocol": "TCP"}]},
    }  # fmt: skip


def to_text(objects: list[dict[str, Any]]) -> str:
    """A YAML stream of JSON documents (JSON is YAML): `kubectl apply -f -` reads it, no YAML library needed."""
    return "".join(f"---\n{json.dumps(obj, indent=2)}\n" for obj in objects)


def file_name(index: int, obj: dict[str, Any]) -> str:
    """One file per object for --output DIR, numbered in apply order."""
    return f"{index:02d}-{obj['kind'].lower()}-{obj['metadata']['name']}.json"
