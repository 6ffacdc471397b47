"""Strict offline validation of rendered objects against the Kubernetes schemas (kubernetes-validate).

Why strict and per object: a typo in a probe (`timeoutSecond`) is silently dropped by a lenient check and by
some clusters, leaving the 1 s default that makes SGLang's pods flap. kubernetes-validate's own CLI only
warns (and exits 0) on a kind it has no schema for; here that is an error, so nothing passes unchecked.
The library is an optional extra (`pip install 'specops[k8s]'`): rendering never needs it.
"""

from __future__ import annotations

from typing import Any

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
                kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.SchemaNotFoundError:
                problems.append(f"{where} (k8s {version}): no schema for {obj.get('apiVersion')} {obj.get('kind')}")
            except kubernetes_validate.ValidationError as exc:
                path = ".".join(str(part) for part in exc.path) or "(top)"
                problems.append(f"{where} (k8s {version}): {path}: {exc.message}")
    return problems


def summary(objects: list[dict[str, Any]]) -> str:
    """The one-line verdict when every object passed."""
    kinds = ", ".join(f"{obj['kind']}/{obj['metadata']['name']}" for obj in objects)
    return f"valid (strict) for Kubernetes {SUPPORTED_VERSIONS[0]}-{SUPPORTED_VERSIONS[-1]}: {kinds}"
