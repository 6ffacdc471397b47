"""`specops render HOST --target k8s`: the host's Kubernetes objects, printed, written or checked.

Parsing and presentation only: the objects come from specops/commands/k8s_objects.py (pure), the
preflight's files from specops/probe/preflight.py, the validation from specops/commands/k8s_validate.py.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from specops.cli.output import print_json, print_raw, stderr_console
from specops.config.loader import Config, Target
from specops.errors import ChecksFailed, ConfigError, UsageError

TARGETS = ("systemd", "k8s")


def checked_target(value: str) -> str:
    if value not in TARGETS:
        raise UsageError(f"--target: {value!r} is not a render target", hint=f"one of: {', '.join(TARGETS)}")
    return value


def _option(name: str, value: str, check: Any) -> str:
    try:
        return str(check(value))
    except ValueError as exc:
        raise UsageError(f"{name}: {exc}") from None


def render_k8s(config: Config, target: Target, image: str | None, namespace: str | None,
               output: Path | None, check: bool, as_json: bool) -> None:  # fmt: skip
    """Build the objects (config problems exit 3, like any other), then print, write or check them."""
    from specops.commands.k8s import K8sConfigProblem, K8sRequest
    from specops.commands.k8s_objects import render_objects
    from specops.config.k8s import dns_label, image_ref
    from specops.probe.preflight import preflight_files

    chosen_image = _option("--image", image, image_ref) if image is not None else target.host.k8s.image
    if chosen_image is None:
        raise UsageError("--image: required (the engine image)",
                         hint=f"pass --image REF or set hosts.{target.host.name}.k8s.image")  # fmt: skip
    chosen_ns = _option("--namespace", namespace, dns_label) if namespace is not None else target.host.k8s.namespace
    try:
        request = K8sRequest(image=chosen_image, namespace=chosen_ns, preflight=preflight_files(target))
        objects = render_objects(target, request)
    except K8sConfigProblem as problem:
        raise ConfigError([f"{config.display}: {problem}"], hint=problem.hint) from None
    if check:
        _check(objects, as_json)
    elif output is not None:
        _write(objects, output, as_json)
    elif as_json:
        print_json({"host": target.host.name, "profile": target.profile.name, "kind": "k8s", "objects": objects})
    else:
        from specops.commands.k8s_objects import to_text

        print_raw(to_text(objects))


def _check(objects: list[dict[str, Any]], as_json: bool) -> None:
    from specops.commands.k8s_validate import summary, validate_objects

    problems = validate_objects(objects)
    if problems:
        raise ChecksFailed("\n".join(problems), hint="these objects would be refused by the API server")
    if as_json:
        print_json({"valid": True, "objects": [f"{o['kind']}/{o['metadata']['name']}" for o in objects]})
    else:
        stderr_console().print(summary(objects), markup=False, highlight=False)


def _write(objects: list[dict[str, Any]], folder: Path, as_json: bool) -> None:
    """One file per object, named in apply order (a file of the same name is replaced); a link is not followed."""
    from specops.commands.k8s_objects import file_name, to_text

    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--output: {folder} exists and is not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for index, obj in enumerate(objects, start=1):
        path = folder / file_name(index, obj)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(to_text([obj]).removeprefix("---\n"))
        written.append(str(path))
    if as_json:
        print_json({"written": written})
    else:
        for path_text in written:
            print_raw(path_text + "\n")
