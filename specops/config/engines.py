"""Engines that span hosts: one SGLang engine run over several nodes (`--nnodes`), declared as [engines.NAME].

Every rank runs the same `sglang.launch_server` command plus `--nnodes N --node-rank R --dist-init-addr
ADDR:PORT`; rank 0 hosts torch.distributed's store and the HTTP server, the others run schedulers only. The
engine, not its hosts, owns the parallelism (tp_size, pp_size), because SGLang spreads tp_size × pp_size GPUs
evenly over the nodes: a mistake here would otherwise surface as a hang at NCCL init after a model load.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from specops.config.engine_spec import EngineSpec
from specops.config.errorfmt import validation_lines
from specops.config.inventory import HostSpec

# what every rank must share: the ranks run one engine, so one launch command
SHARED_FIELDS = ("model_path", "draft_model_path", "served_model_name", "port", "extra_args", "api_key_secret")


def gpu_count(host: HostSpec) -> int | None:
    return len(host.gpus.split(",")) if host.gpus is not None else None


def engine_tp(engine: EngineSpec, hosts: list[HostSpec]) -> int | None:
    """The engine's tp_size: its own, or all its hosts' GPUs over pp_size (None when a host lists no gpus)."""
    if engine.tp_size is not None:
        return engine.tp_size
    counts = [gpu_count(host) for host in hosts]
    return None if None in counts else sum(c or 0 for c in counts) // engine.pp_size


def validate_engines(
    raw: Any, hosts: Mapping[str, HostSpec], groups: Any, own_keys: Mapping[str, frozenset[str]], display: str
) -> tuple[dict[str, EngineSpec], list[str]]:
    """[engines.*] checked against the hosts: every mistake as a `file: path: message` line."""
    if not isinstance(raw, dict):
        return {}, [f'{display}: engines: expected a table of engines like [engines.ds] with hosts = ["a", "b"]']
    engines: dict[str, EngineSpec] = {}
    lines: list[str] = []
    for name, settings in raw.items():
        where = f"{display}: engines.{name}"
        if not isinstance(settings, dict):
            lines.append(f"{where}: expected a table with hosts = [rank 0's host, ...]")
            continue
        if "name" in settings:
            lines.append(f"{where}.name: unknown key (an engine's name is its table's: [engines.{name}])")
            continue
        if name in hosts or (isinstance(groups, dict) and name in groups):
            lines.append(f"{where}: an engine cannot have the same name as a host or group")
        try:
            engine = EngineSpec.model_validate({**settings, "name": name})
        except ValidationError as exc:
            lines += validation_lines(display, ["engines", name], exc, EngineSpec)
            continue
        host_lines = _host_lines(engine, hosts, engines, where)
        lines += host_lines
        if not host_lines:
            members = [hosts[host] for host in engine.hosts]
            lines += _own_tp_lines(engine, own_keys, display) + _shared_lines(engine, members, where)
            lines += _gpu_lines(engine, members, where)
        engines[name] = engine
    return engines, lines


def _host_lines(
    engine: EngineSpec, hosts: Mapping[str, HostSpec], seen: Mapping[str, EngineSpec], where: str
) -> list[str]:
    """Known hosts, at least two, each once, each in one engine only."""
    if len(engine.hosts) < 2:
        return [f"{where}.hosts: an engine spans at least 2 hosts (one host alone is a [hosts.NAME])"]
    lines = [f"{where}.hosts: unknown host {host!r}" for host in engine.hosts if host not in hosts]
    lines += [f"{where}.hosts: host {host!r} is listed twice" for host in sorted(set(engine.hosts))
              if engine.hosts.count(host) > 1]  # fmt: skip
    for other in seen.values():
        lines += [f"{where}.hosts: host {host!r} is already a rank of engine {other.name!r}"
                  for host in engine.hosts if host in other.hosts]  # fmt: skip
    return lines


def _own_tp_lines(engine: EngineSpec, own_keys: Mapping[str, frozenset[str]], display: str) -> list[str]:
    """A rank's own tp_size would be silently replaced by the engine's: say where it belongs."""
    return [
        f"{display}: hosts.{host}.tp_size: host {host!r} is a rank of engine {engine.name!r}, whose parallelism "
        f"is the engine's: set engines.{engine.name}.tp_size instead"
        for host in engine.hosts
        if "tp_size" in own_keys.get(host, frozenset())
    ]


def _shared_lines(engine: EngineSpec, members: list[HostSpec], where: str) -> list[str]:
    """Every rank runs one engine: the fields of its launch command must agree."""
    lines = []
    for key in SHARED_FIELDS:
        values = [getattr(host, key) for host in members]
        if any(value != values[0] for value in values):
            got = ", ".join(f"{host.name}: {value!r}" for host, value in zip(members, values, strict=True))
            lines.append(f"{where}.hosts: the ranks differ in {key} ({got}); every rank runs the same engine")
    return lines


def _gpu_lines(engine: EngineSpec, members: list[HostSpec], where: str) -> list[str]:
    """SGLang puts tp_size × pp_size / nnodes GPUs on every node: equal counts that add up."""
    counts = [gpu_count(host) for host in members]
    listed = ", ".join(f"{host.name}: {count}" for host, count in zip(members, counts, strict=True))
    tp = engine_tp(engine, members)
    if tp is None:
        unlisted = ", ".join(host.name for host, count in zip(members, counts, strict=True) if count is None)
        return [f"{where}.tp_size: not set, and {unlisted} list no gpus: set tp_size, or gpus on every host"]
    total = tp * engine.pp_size
    if total % engine.nnodes:
        return [f"{where}.tp_size: tp_size {tp} × pp_size {engine.pp_size} = {total} GPUs do not divide evenly over "
                f"{engine.nnodes} hosts (SGLang runs the same number of GPUs on every node)"]  # fmt: skip
    if None in counts:
        return []
    if len(set(counts)) > 1:
        return [f"{where}.hosts: every rank needs the same number of GPUs; gpus lists {listed}"]
    if total != sum(c or 0 for c in counts):
        return [f"{where}.tp_size: tp_size {tp} × pp_size {engine.pp_size} = {total} GPUs, but the hosts have "
                f"{sum(c or 0 for c in counts)} ({listed})"]  # fmt: skip
    return []
