"""The LeaderWorkerSet of an engine that spans several pods (k8s.nodes > 1): one group, `size` = the ranks.

Why these settings (LWS's own API, kubernetes-sigs/lws api/leaderworkerset/v1): `LeaderCreated` starts the
workers with the leader, because rank 0 serves HTTP (and so becomes Ready) only after every rank joined the
distributed init: `LeaderReady` would wait forever. `RecreateGroupOnPodRestart`, because a restarted rank
cannot rejoin a live NCCL group. Rolling updates replace the group whole (maxSurge 0: its GPUs are taken).
Only the leader has HTTP probes; the workers have none (they serve no HTTP).
"""

from __future__ import annotations

from typing import Any

from specops.commands.k8s import K8sRequest, object_name
from specops.commands.k8s_objects import metadata, pod_template
from specops.config.loader import Target

LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"


def leaderworkerset(target: Target, request: K8sRequest, preflight: str | None) -> dict[str, Any]:
    return {
        "apiVersion": LWS_API_VERSION,
        "kind": "LeaderWorkerSet",
        "metadata": metadata(object_name(target), target, request),
        "spec": {
            "replicas": 1,
            "startupPolicy": "LeaderCreated",
            "rolloutStrategy": {
                "type": "RollingUpdate",
                "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 0},
            },
            "leaderWorkerTemplate": {
                "size": target.host.k8s.nodes,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": pod_template(target, request, preflight, role="leader"),
                "workerTemplate": pod_template(target, request, preflight, role="worker"),
            },
        },
    }
