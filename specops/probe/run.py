"""Run the probe on a host: build the request, send the bundled script over ONE `run`, parse the answer.

Why `python -I -S -`: the host's configured interpreter (its venv) is what SGLang runs with, so the probe sees
the same packages; `-I` keeps the user's PYTHONPATH/PYTHONSTARTUP out, `-S` the venv's `.pth` code (it runs as
root; the probe puts site-packages on sys.path itself), and `-` reads the script from stdin,
so nothing is written on the host and each probe costs one SSH round trip (`--deep`: one more).

`prepare_probe` (request + script) needs no host and `send_probe` parses nothing: a caller can prepare before
it connects, and the pydantic models of the answer (facts.py, parse.py) load only once an answer is parsed,
so a doctor's connection does not wait for them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from specops.commands.planned import HostCommand, run
from specops.commands.probe import probe_argv
from specops.errors import SpecopsError
from specops.host.base import Result
from specops.remote.bundle import build_script

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.config.profile import Profile
    from specops.probe.facts import DeepFacts, HostFacts

PROBE_TIMEOUT_S = 60.0
DEEP_IMPORT_TIMEOUT_S = 120.0
PROC_DRIVER_VERSION = "/proc/driver/nvidia/version"
COMMAND_NOT_FOUND = (126, 127)


class ProbeError(SpecopsError):
    """The probe could not run on a host, or did not answer with its JSON document."""


class CommandRunner(Protocol):
    """The part of specops.host.base.Host the probe needs (SshHost, LocalHost and RecordingHost have it)."""

    name: str

    def run(
        self,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        timeout: float = 60,
        check: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> Result: ...


def _local_path(path: str | None) -> str | None:
    """A model path the probe can look at; a Hugging Face repo id is not a folder on the host."""
    return path if path and path.startswith("/") else None


def _server_argv(host: HostSpec, profile: Profile | None) -> list[str] | None:
    """The unit's `launch_server` arguments, for the build's own parser on the host (sglang.server_args)."""
    if profile is None:
        return None
    from specops.commands.systemd import launch_argv
    from specops.config.loader import Target

    return launch_argv(Target(host, profile))[3:]


def build_request(
    host: HostSpec, profile: Profile | None, extra_roots: dict[str, str] | None = None, deep: bool = False
) -> dict[str, Any]:
    """The JSON request the host-side `main()` reads (see the module docstring of specops/probe/remote/main.py)."""
    draft = profile.draft_for(host.draft_model_path) if profile else host.draft_model_path
    models = {role: path for role, path in (("target", host.model_path), ("draft", draft)) if path}
    local_models = {role: p for role, path in models.items() if (p := _local_path(path))}
    return {
        "python": host.python,
        "base_dir": host.base_dir,
        "service": host.service,
        "unit": host.unit_name,
        "listen": host.listen,
        "ports": [host.port],
        "cuda_home": host.cuda_home,
        "models": local_models,
        "disk_paths": [host.base_dir, *local_models.values()],
        "sglang_roots": dict(extra_roots or {}),
        "profile": profile.name if profile else None,
        "server_argv": _server_argv(host, profile),
        "proc_driver_version_path": PROC_DRIVER_VERSION,
        "run_as": host.run_as,
        "run_as_groups": list(host.run_as_groups),
        "deep": deep,
        "deep_timeout_s": DEEP_IMPORT_TIMEOUT_S,
    }


def local_request(python: str, profile: Profile | None, extra_roots: dict[str, str] | None = None) -> dict[str, Any]:
    """The request for `doctor --local`: this machine's interpreter, no inventory (no models, unit or port)."""
    return {
        "python": python,
        "models": {},
        "ports": [],
        "disk_paths": [],
        "sglang_roots": dict(extra_roots or {}),
        "profile": profile.name if profile else None,
        "proc_driver_version_path": PROC_DRIVER_VERSION,
        "deep": False,
        "deep_timeout_s": DEEP_IMPORT_TIMEOUT_S,
    }


def run_request(
    host_obj: CommandRunner, spec: HostSpec | None, python: str, request: dict[str, Any], timeout: float
) -> dict[str, Any]:
    """Send the script for `request` to `python` on the host; the parsed JSON document it printed."""
    return _run_script(host_obj, spec, python, planless_command(python), build_script(request).encode(), timeout)


def planless_command(python: str) -> HostCommand:
    """The probe's command for a caller without a plan (`specops doctor`, `--deep`); a deploy's preflight runs
    the one its plan holds (specops/deploy/step_commands.py), the same line."""
    return run(probe_argv(python))


def _run_script(
    host_obj: CommandRunner, spec: HostSpec | None, python: str, command: HostCommand, script: bytes, timeout: float
) -> dict[str, Any]:
    name = spec.name if spec else host_obj.name
    result = host_obj.run(command.argv, input=script, timeout=timeout, check=False)  # exits explained below
    if result.exit_code in COMMAND_NOT_FOUND:
        raise ProbeError(
            f"{name}: the interpreter {python} cannot be run on the host ({_last_line(result)})",
            hint=f"set hosts.{name}.python in specops.toml to the python of the venv that runs SGLang",
        )
    if result.exit_code != 0:
        raise ProbeError(
            f"{name}: the probe failed with exit {result.exit_code}:\n{_indent(result.err_tail(15))}",
            hint=f"run `{python} -V` on the host; the probe needs Python >= 3.8",
        )
    return _document(name, result)


def _document(name: str, result: Result) -> dict[str, Any]:
    lines = [line for line in result.text.splitlines() if line.startswith("{")]
    try:
        document = json.loads(lines[-1]) if lines else None
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise ProbeError(
            f"{name}: the probe did not print its JSON document:\n{_indent(result.out_tail(5) or result.err_tail(10))}",
            hint="something on the host writes to stdout before the probe (a login script?); see the text above",
        )
    return document


def _last_line(result: Result) -> str:
    tail = result.err_tail(1) or result.out_tail(1)
    return tail.strip() or f"exit {result.exit_code}"


def _indent(text: str) -> str:
    return "\n".join(f"  | {line}" for line in text.splitlines()) or "  | (no output)"


@dataclass(frozen=True)
class PreparedProbe:
    """A probe ready to send: which interpreter runs it, with which command, and the script (with its request)
    on its stdin."""

    spec: HostSpec | None
    python: str
    command: HostCommand  # a deploy's planned one, or planless_command(python)
    script: bytes
    timeout: float = PROBE_TIMEOUT_S
    request: Mapping[str, Any] | None = None  # what the script carries (a doctor's cached plan keeps it)


def prepare_probe(
    spec: HostSpec | None,
    profile: Profile | None = None,
    *,
    python: str | None = None,
    extra_roots: dict[str, str] | None = None,
    overrides: dict[str, Any] | None = None,
    timeout: float = PROBE_TIMEOUT_S,
    planned: HostCommand | None = None,
) -> PreparedProbe:
    """The request and script of `probe`, built without a host (see `probe` for the arguments)."""
    interpreter, request = probe_request(spec, profile, python=python, extra_roots=extra_roots)
    request.update(overrides or {})
    command = planned or planless_command(interpreter)
    return PreparedProbe(spec, interpreter, command, build_script(request).encode("utf-8"), timeout, request)


def probe_request(
    spec: HostSpec | None,
    profile: Profile | None = None,
    *,
    python: str | None = None,
    extra_roots: dict[str, str] | None = None,
) -> tuple[str, dict[str, Any]]:
    """The interpreter and request `prepare_probe` sends, without building the ~70 kB script around them (a
    doctor's remembered plan keeps only these)."""
    interpreter = _interpreter(spec, python)
    if spec is None:
        return interpreter, local_request(interpreter, profile, extra_roots)
    return interpreter, build_request(spec, profile, extra_roots)


def probe_from_request(python: str, request: Mapping[str, Any], timeout: float = PROBE_TIMEOUT_S) -> PreparedProbe:
    """A probe rebuilt from a request prepared earlier (a doctor's cached plan): no config models needed."""
    script = build_script(dict(request)).encode("utf-8")
    return PreparedProbe(None, python, planless_command(python), script, timeout, request)


def send_probe(host_obj: CommandRunner, prepared: PreparedProbe) -> dict[str, Any]:
    """Run a prepared probe on the host: the JSON document it printed, not parsed yet (`parse_probe`)."""
    return _run_script(host_obj, prepared.spec, prepared.python, prepared.command, prepared.script, prepared.timeout)


def parse_probe(host_obj: CommandRunner, document: dict[str, Any]) -> HostFacts:
    """The probe's document as HostFacts; a document this version cannot read is a ProbeError."""
    from pydantic import ValidationError

    try:
        return parse_host_facts(document)
    except ValidationError as error:
        raise ProbeError(
            f"{host_obj.name}: the probe's answer does not match this specops version: {error.errors()[0]['msg']}",
            hint="a bug in specops (the probe and its parser ship together): re-run with --debug and report it",
        ) from error


def parse_host_facts(document: dict[str, Any]) -> HostFacts:
    """specops.probe.parse's parser, imported on first use: sending a probe does not need its models."""
    from specops.probe.parse import parse_host_facts as parse

    return parse(document)


def probe(
    host_obj: CommandRunner,
    spec: HostSpec | None,
    profile: Profile | None = None,
    *,
    python: str | None = None,
    extra_roots: dict[str, str] | None = None,
    overrides: dict[str, Any] | None = None,
    timeout: float = PROBE_TIMEOUT_S,
    planned: HostCommand | None = None,
) -> HostFacts:
    """Facts about one host in ONE round trip; `overrides` replace request keys (tests point at fake files).

    `spec=None` probes without an inventory (`doctor --local`) with the interpreter `python`. `planned`: the
    command a deploy's plan holds for its preflight (printed by its dry run); without one, planless_command.
    """
    prepared = prepare_probe(
        spec, profile, python=python, extra_roots=extra_roots, overrides=overrides, timeout=timeout, planned=planned
    )
    return parse_probe(host_obj, send_probe(host_obj, prepared))


def probe_deep(
    host_obj: CommandRunner,
    spec: HostSpec | None,
    *,
    python: str | None = None,
    import_timeout: float = DEEP_IMPORT_TIMEOUT_S,
) -> DeepFacts:
    """`--deep`: really import torch, then torchcodec, each in a subprocess with a timeout; what went wrong."""
    from specops.probe.parse import parse_deep

    request = {"deep": True, "deep_timeout_s": import_timeout}
    document = run_request(host_obj, spec, _interpreter(spec, python), request, timeout=2 * import_timeout + 30)
    return parse_deep(document)


def _interpreter(spec: HostSpec | None, python: str | None) -> str:
    """The host's configured interpreter, or the one given for a probe without inventory."""
    if python is not None:
        return python
    if spec is None:
        raise ValueError("probe without a HostSpec needs python=")
    return spec.python
