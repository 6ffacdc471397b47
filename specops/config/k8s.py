"""The `k8s` table of a host (or of [defaults]): what `specops render --target k8s` needs beyond the SSH fields.

Why a separate table: the engine's flags stay the profile's and the host's (one definition for the unit and
the container); only what has no meaning over SSH lives here: the image, the namespace, where the model and
compile-cache volumes come from, the Secret that holds the host's secrets, the size of /dev/shm.
Every value here ends up in a manifest, so each is checked against Kubernetes' own syntax when loaded.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from specops.config.fields import AbsPath
from specops.config.values import no_control

# RFC 1123 label (namespaces, Services, container names) and subdomain (Secrets, ConfigMaps, PVCs)
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# an OCI image reference: [registry[:port]/]path[:tag][@algo:digest], nothing a shell or YAML could read twice
_IMAGE = re.compile(
    r"(?:[a-zA-Z0-9.-]+(?::[0-9]{1,5})?/)?[a-z0-9]+(?:[._-]{1,2}[a-z0-9]+)*(?:/[a-z0-9]+(?:[._-]{1,2}[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?"
)
_QUANTITY = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?")
_PYTHON = re.compile(r"[A-Za-z0-9_./+-]{1,200}")


def _matching(value: str, pattern: re.Pattern[str], what: str, max_len: int = 253) -> str:
    """`value` when the whole of it matches; else a ValueError that names what was expected."""
    no_control(value)
    if len(value) > max_len or not pattern.fullmatch(value) or value.startswith("-"):
        raise ValueError(f"{value!r} is not {what}")
    return value


def dns_label(value: str) -> str:
    """A namespace or another one-label name: lower-case letters, digits and '-', at most 63."""
    return _matching(value, _DNS_LABEL, "a Kubernetes name (RFC 1123 label): lower-case letters, digits and "
                     "'-', starting and ending with a letter or digit, at most 63 characters", 63)  # fmt: skip


def dns_subdomain(value: str) -> str:
    """A Secret, PVC or ConfigMap name: RFC 1123 labels joined by '.', at most 253 characters."""
    return _matching(value, _DNS_SUBDOMAIN, "a Kubernetes object name (RFC 1123 subdomain): lower-case letters, "
                     "digits, '-' and '.', starting and ending with a letter or digit")  # fmt: skip


def image_ref(value: str) -> str:
    """An image reference like registry.example/sglang:v0.5.18 or ...@sha256:<64 hex>."""
    return _matching(value, _IMAGE, "an image reference: [registry[:port]/]name[:tag][@sha256:<64 hex>], "
                     "e.g. lmsysorg/sglang:v0.5.18", 512)  # fmt: skip


def quantity(value: str) -> str:
    return _matching(value, _QUANTITY, "a Kubernetes quantity: a number with an optional unit, e.g. '16Gi'", 32)


def image_python(value: str) -> str:
    """The image's interpreter: a command name (python3) or a path, one argv word."""
    return _matching(value, _PYTHON, "an interpreter: a command such as 'python3' or an absolute path", 200)


K8sName = Annotated[str, AfterValidator(dns_label)]
K8sObjectName = Annotated[str, AfterValidator(dns_subdomain)]
ImageRef = Annotated[str, AfterValidator(image_ref)]
Quantity = Annotated[str, AfterValidator(quantity)]
ImagePython = Annotated[str, AfterValidator(image_python)]


class Volume(BaseModel):
    """Where a folder comes from in the pod: a PersistentVolumeClaim or a node folder (hostPath), one of them."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    pvc: K8sObjectName | None = Field(default=None, description="name of an existing PersistentVolumeClaim")
    host_path: AbsPath | None = Field(default=None, description="a folder on the node (hostPath)")

    @model_validator(mode="after")
    def _one_source(self) -> Volume:
        if (self.pvc is None) == (self.host_path is None):
            raise ValueError('set exactly one of pvc or host_path, e.g. { pvc = "models" }')
        return self


class K8sSettings(BaseModel):
    """[defaults.k8s] / [hosts.NAME.k8s]: a host's keys replace the defaults' key by key."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    image: ImageRef | None = Field(default=None, description="the engine image (--image replaces it)")
    namespace: K8sName = Field(default="default", description="the namespace of every object (--namespace)")
    python: ImagePython = Field(default="python3", description="the image's interpreter that runs SGLang")
    models: Volume | None = Field(default=None, description="the volume holding the models, mounted read-only")
    models_mount: AbsPath = Field(
        default="/models", description="where the models volume is mounted; model paths must lie under it"
    )
    cache: Volume | None = Field(
        default=None, description="the compile caches' volume (unset: an emptyDir, rebuilt by every new pod)"
    )
    secret: K8sObjectName | None = Field(
        default=None, description="the Secret whose keys are the host's secrets (required when secrets is set)"
    )
    shm_size: Quantity = Field(default="16Gi", description="size of the memory-backed /dev/shm")
    runtime_class: K8sObjectName | None = Field(default=None, description="runtimeClassName, e.g. 'nvidia'")
    nodes: int = Field(
        default=1, ge=1, le=64,
        description="pods (nodes) the engine spans: above 1, a LeaderWorkerSet of that size instead of a Deployment",
    )  # fmt: skip
