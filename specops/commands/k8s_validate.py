"""Strict offline validation of rendered objects against the Kubernetes schemas (kubernetes-validate).

Why strict and per object: a typo in a probe (`timeoutSecond`) is silently dropped by a lenient check and by
some clusters, leaving the 1 s default that makes SGLang's pods flap. kubernetes-validate's own CLI only
warns (and exits 0) on a kind it has no schema for; here that is an error, so nothing passes unchecked.
The library is an optional extra (`pip install 'specops[k8s]'`): rendering never needs it.
"""

from __future__ import annotations

from typing import Any

from specops.commands.k8s_lws import LWS_API_VERSION
from specops.errors import UsageError

SUPPORTED_VERSIONS = ("1.30", "1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37")
INSTALL_HINT = "pip install 'specops[k8s]' (or: pip install kubernetes-validate), then run it again"


def validate_objects(objects: list[dict[str, Any]], versions: tuple[str, ...] = SUPPORTED_VERSIONS) -> list[str]:
    """One line per problem: 'Kind/name (k8s 1.30): message'; empty when every object passes every version."""
    try:
        import kubernetes_validate  # type: ignore[import-untyped]
    except ImportError:
        raise UsageError("--check needs the kubernetes-validate package", hint=INSTALL_HINT) from None
    problems: list[str] = []
    for obj in objects:
        where = f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"
        for version in versions:
            try:
                if obj.get("apiVersion") == LWS_API_VERSION and obj.get("kind") == "LeaderWorkerSet":
                    _validate_lws(obj, version)
                else:
                    kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.SchemaNotFoundError:
                problems.append(f"{where} (k8s {version}): no schema for {obj.get('apiVersion')} {obj.get('kind')}")
            except kubernetes_validate.ValidationError as exc:
                path = ".".join(str(part) for part in exc.path) or "(top)"
                problems.append(f"{where} (k8s {version}): {path}: {exc.message}")
    return problems


def _validate_lws(obj: dict[str, Any], version: str) -> None:
    """LeaderWorkerSet, a CRD kubernetes-validate has no schema for: specops's strict schema of it, whose pod
    templates resolve to the Kubernetes version's own (strict) definitions."""
    import jsonschema
    import kubernetes_validate
    from kubernetes_validate import utils
    from referencing import Registry, Resource

    from specops.commands.k8s_lws_schema import LWS_SCHEMA

    full = [v for v in utils.all_versions() if utils.major_minor(v) <= utils.major_minor(version)][-1]
    definitions = utils.schema_contents(f"kubernetes-json-schema/v{full}-local-strict/_definitions.json", version)
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(LWS_SCHEMA) @ Registry())
    try:
        jsonschema.Draft202012Validator(LWS_SCHEMA, registry=registry).validate(obj)
    except jsonschema.ValidationError as exc:
        raise kubernetes_validate.ValidationError(exc, version=version) from None


def summary(objects: list[dict[str, Any]]) -> str:
    """The one-line verdict when every object passed."""
    kinds = ", ".join(f"{obj['kind']}/{obj['metadata']['name']}" for obj in objects)
    return f"valid (strict) for Kubernetes {SUPPORTED_VERSIONS[0]}-{SUPPORTED_VERSIONS[-1]}: {kinds}"
