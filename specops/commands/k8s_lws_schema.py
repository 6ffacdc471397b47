"""A strict JSON Schema for LeaderWorkerSet (leaderworkerset.x-k8s.io/v1), for offline validation.

Written for specops from the API types of kubernetes-sigs/lws (api/leaderworkerset/v1/
leaderworkerset_types.go: field names, enums and defaults); the pod templates and claims are Kubernetes'
own definitions (`_definitions.json` of kubernetes-validate), so a typo inside a worker's pod is caught as
strictly as in a Deployment. Unknown keys are errors at every level, as in kubernetes-validate's strict mode.
"""

from __future__ import annotations

from typing import Any

DEFS = "https://kubernetes.io/api/_definitions.json#/$defs/"
_INT_OR_STRING = {"oneOf": [{"type": "integer"}, {"type": "string"}]}


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "properties": properties, "required": list(required)}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": DEFS + name}


_TEMPLATE = _object(
    {
        "leaderTemplate": _ref("io.k8s.api.core.v1.PodTemplateSpec"),
        "workerTemplate": _ref("io.k8s.api.core.v1.PodTemplateSpec"),
        "size": {"type": "integer", "minimum": 1},
        "restartPolicy": {"enum": ["Default", "RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "None"]},
        "subGroupPolicy": _object(
            {
                "subGroupPolicyType": {"enum": ["LeaderWorker", "LeaderExcluded"]},
                "subGroupSize": {"type": "integer", "minimum": 1},
            }
        ),
        "volumeClaimTemplates": {"type": "array", "items": _ref("io.k8s.api.core.v1.PersistentVolumeClaim")},
        "persistentVolumeClaimRetentionPolicy": _ref(
            "io.k8s.api.apps.v1.StatefulSetPersistentVolumeClaimRetentionPolicy"
        ),
    },
    required=("workerTemplate",),
)
_ROLLOUT = _object(
    {
        "type": {"enum": ["RollingUpdate"]},
        "rollingUpdateConfiguration": _object(
            {
                "partition": {"type": "integer", "minimum": 0},
                "maxUnavailable": _INT_OR_STRING,
                "maxSurge": _INT_OR_STRING,
            }
        ),
    },
    required=("type",),
)
LWS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://specops.invalid/schemas/leaderworkerset-v1.json",
    **_object(
        {
            "apiVersion": {"enum": ["leaderworkerset.x-k8s.io/v1"]},
            "kind": {"enum": ["LeaderWorkerSet"]},
            "metadata": _ref("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"),
            "spec": _object(
                {
                    "replicas": {"type": "integer", "minimum": 0},
                    "leaderWorkerTemplate": _TEMPLATE,
                    "rolloutStrategy": _ROLLOUT,
                    "startupPolicy": {"enum": ["LeaderCreated", "LeaderReady"]},
                    "networkConfig": _object({"subdomainPolicy": {"enum": ["Shared", "UniquePerReplica"]}}),
                },
                required=("leaderWorkerTemplate",),
            ),
            "status": {"type": "object"},
        },
        required=("apiVersion", "kind", "metadata", "spec"),
    ),
}
