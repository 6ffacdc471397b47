"""Planning a trial (`specops trial`): its options read, and the refusals decided from one probe of the host.

Pure: nothing here talks to a host. A trial runs beside the serving engine, so what it may take is decided
before anything starts: GPUs the serving engine uses (the host's `gpus`, and every GPU a process holds memory
on), a port something listens on, or GPUs whose free memory is smaller than what the profile's engine claims
(`--mem-fraction-static` of the GPU's memory) each refuse the trial, naming what is in the way.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

from specops.config.loader import Target
from specops.errors import ExitCode, SpecopsError, UsageError
from specops.probe.facts import HostFacts

DEFAULT_DURATION_S = 1800
MIN_DURATION_S, MAX_DURATION_S = 60, 7 * 24 * 3600
DEFAULT_MEM_FRACTION = 0.9  # SGLang's own default when the profile names none (it depends on the GPU: a bound)
DEFAULT_MIN_AGREEMENT = 0.9
_DURATION = re.compile(r"(\d+)\s*([smhd]?)")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_PROMPTS, MAX_PROMPT_CHARS = 64, 8000


class TrialRefused(SpecopsError):
    """Something on the host is in the way of the trial: nothing was started, nothing changed."""

    exit_code = ExitCode.CHECKS_FAILED
    default_hint = "choose other GPUs (--gpus) or another port (--port); `specops doctor HOST` shows the GPUs"


@dataclass(frozen=True)
class TrialOptions:
    """What the command line asked for, checked."""

    gpus: tuple[int, ...]
    port: int
    duration_s: int = DEFAULT_DURATION_S
    prompts: tuple[str, ...] = ()
    force: bool = False
    min_speedup: float | None = None
    min_agreement: float = DEFAULT_MIN_AGREEMENT

    @property
    def gpu_list(self) -> str:
        return ",".join(str(gpu) for gpu in self.gpus)


def parse_gpus(text: str) -> tuple[int, ...]:
    """`--gpus 1` or `--gpus 2,3`: physical GPU indexes, each once."""
    words = [word.strip() for word in text.split(",")]
    if not words or not all(word.isdigit() for word in words):
        raise UsageError(f"--gpus: {text!r} is not a GPU index list like '1' or '2,3'", hint="specops trial --help")
    gpus = tuple(int(word) for word in words)
    if len(set(gpus)) != len(gpus):
        raise UsageError(f"--gpus: {text!r} names a GPU more than once", hint="specops trial --help")
    return gpus


def parse_duration(text: str) -> int:
    """`--duration 30m` (s, m, h, d; a bare number is seconds): how long the host lets the trial run at most."""
    match = _DURATION.fullmatch(text.strip())
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)] if match else 0
    if not MIN_DURATION_S <= seconds <= MAX_DURATION_S:
        raise UsageError(f"--duration: {text!r} is not a duration from 60s to 7d (like 600, 30m or 2h)",
                         hint="specops trial --help")  # fmt: skip
    return seconds


def read_prompts(path: Path) -> tuple[str, ...]:
    """`--prompts FILE`: one prompt per line (blank lines and lines starting with # skipped)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else "not UTF-8 text"
        raise UsageError(f"--prompts: {path}: {reason}", hint="one prompt per line, UTF-8") from None
    prompts = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not prompts:
        raise UsageError(f"--prompts: {path}: no prompt in it", hint="one prompt per line; # starts a comment")
    if len(prompts) > MAX_PROMPTS:
        raise UsageError(f"--prompts: {path}: {len(prompts)} prompts (at most {MAX_PROMPTS})", hint="keep the "
                         "prompts that matter: each runs on production too")  # fmt: skip
    for number, prompt in enumerate(prompts, 1):
        if len(prompt) > MAX_PROMPT_CHARS or any(ord(char) < 32 for char in prompt):
            raise UsageError(f"--prompts: {path}: prompt {number}: longer than {MAX_PROMPT_CHARS} characters or "
                             "holds a control character", hint="one prompt per line, plain text")  # fmt: skip
    return tuple(prompts)


def placed(target: Target, options: TrialOptions) -> Target:
    """The trial's target: the host with the trial's GPUs and port, the trial's profile."""
    host = target.host.model_copy(update={"gpus": options.gpu_list, "port": options.port})
    return dataclasses.replace(target, host=host)


def refusals(facts: HostFacts, production: Target, trial: Target, options: TrialOptions,
             running: str = "") -> list[str]:  # fmt: skip
    """Why the trial may not start here (empty: it may); from one probe made with the trial's port and GPUs.
    `running`: the trial unit of this very release when systemd knows it already (another trial of it)."""
    found: list[str] = [f"a trial of this release runs already ({running})"] if running else []
    serving = production.host.gpus
    unit = production.host.unit_name
    if serving is not None:
        taken = sorted(set(options.gpus) & {int(gpu) for gpu in serving.split(",")})
        if taken:
            found.append(f"GPU {_names(taken)} serve{'s' if len(taken) == 1 else ''} production "
                         f"({unit}: gpus = \"{serving}\")")  # fmt: skip
    known = {gpu.index for gpu in facts.nvidia.gpus}
    if facts.nvidia.gpus:
        missing = [gpu for gpu in options.gpus if gpu not in known]
        if missing:
            found.append(f"GPU {_names(missing)}: no such GPU (the host has {_names(sorted(known))})")
    by_uuid = {gpu.uuid: gpu.index for gpu in facts.nvidia.gpus if gpu.uuid}
    for process in facts.nvidia.processes:
        index = by_uuid.get(process.gpu_uuid or "")
        if index in options.gpus:
            memory = f", {process.used_memory_mib} MiB" if process.used_memory_mib is not None else ""
            found.append(f"GPU {index} is in use by pid {process.pid} ({process.process_name}{memory})")
    found += _memory(facts, trial, options)
    port = next((entry for entry in facts.ports if entry.port == options.port), None)
    if port is not None and port.in_use:
        found.append(f"port {options.port} is taken by {port.holder or 'another process'}")
    if options.port == production.host.port:
        found.append(f"port {options.port} is production's own ({unit})")
    return list(dict.fromkeys(found))


def _memory(facts: HostFacts, trial: Target, options: TrialOptions) -> list[str]:
    """GPUs whose free memory is less than the engine's static share of their total (its KV cache and weights)."""
    fraction = trial.profile.server.mem_fraction_static or DEFAULT_MEM_FRACTION
    found = []
    for gpu in facts.nvidia.gpus:
        if gpu.index not in options.gpus or gpu.memory_total_mib is None or gpu.memory_used_mib is None:
            continue
        need = int(gpu.memory_total_mib * fraction)
        free = gpu.memory_total_mib - gpu.memory_used_mib
        if free < need:
            found.append(f"GPU {gpu.index} has {free} MiB free; profile {trial.profile.name} needs {need} MiB "
                         f"(mem_fraction_static {fraction:g} of {gpu.memory_total_mib} MiB)")  # fmt: skip
    return found


def _names(indexes: list[int]) -> str:
    return ", ".join(str(index) for index in indexes)
