"""`specops render HOST`: print exactly the unit file (or env file) a deploy would install, or with
`--target k8s` the host's Kubernetes objects (docs/kubernetes.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from specops.cli.options import JsonOpt
from specops.cli.output import print_json, print_raw
from specops.cli.state import state

if TYPE_CHECKING:
    from specops.config.loader import Config


def render(
    ctx: typer.Context,
    host_or_engine: Annotated[
        str, typer.Argument(metavar="HOST", help="Host name from specops.toml, or an engine's: every rank's unit.")
    ],
    profile: Annotated[
        str | None, typer.Option("--profile", "-p", metavar="NAME", help="Profile (default: the host's).")
    ] = None,
    env: Annotated[bool, typer.Option("--env", help="Print the env file instead (secrets as ***).")] = False,
    target: Annotated[
        str, typer.Option("--target", metavar="TARGET", help="systemd (the unit) or k8s (Kubernetes objects).")
    ] = "systemd",
    image: Annotated[
        str | None, typer.Option("--image", metavar="IMAGE", help="k8s: the engine image (default: k8s.image).")
    ] = None,
    namespace: Annotated[
        str | None, typer.Option("--namespace", metavar="NS", help="k8s: the namespace (default: k8s.namespace).")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", metavar="DIR", help="k8s: write one file per object to DIR.")
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="k8s: validate the objects strictly against the Kubernetes schemas.")
    ] = False,
    json_output: JsonOpt = False,
) -> None:
    """Print the systemd unit a deploy would install, byte for byte (pipe it to a file to inspect)."""
    from specops.cli.render_k8s import checked_target, render_k8s
    from specops.commands.systemd import render_env_file, render_unit
    from specops.errors import UsageError

    app_state = state(ctx)
    host = host_or_engine
    kind = checked_target(target)
    k8s_only = {"--image": image, "--namespace": namespace, "--output": output, "--check": check or None}
    if kind != "k8s" and (used := [name for name, value in k8s_only.items() if value is not None]):
        raise UsageError(f"{used[0]}: only with --target k8s")
    if kind == "k8s" and env:
        raise UsageError("--env: not with --target k8s (secrets are Secret references in the Deployment)")
    config = app_state.load_config()
    if host in config.inventory.engines and kind == "k8s":  # one LeaderWorkerSet, size = the engine's ranks
        from specops.config.engine_targets import k8s_target, resolve_engine

        ranks = resolve_engine(config, host, profile, lambda spec: "leader")  # the LWS gives the leader's address
        render_k8s(config, k8s_target(ranks), image, namespace, output, check, app_state.wants_json(json_output))
        return
    if host in config.inventory.engines:
        render_engine(config, host, profile, env, app_state.wants_json(json_output))
        return
    resolved = config.resolve(host, profile)
    if kind == "k8s":
        render_k8s(config, resolved, image, namespace, output, check, app_state.wants_json(json_output))
        return
    text = render_env_file(resolved) if env else render_unit(resolved)
    if app_state.wants_json(json_output):
        kind = "env_file" if env else "unit"
        path = resolved.host.env_file if env else f"/etc/systemd/system/{resolved.host.unit_name}"
        print_json({"host": host, "profile": resolved.profile.name, "kind": kind, "path": path, "content": text})
    else:
        print_raw(text)


def render_engine(config: Config, name: str, profile: str | None, env: bool, as_json: bool) -> None:
    """Every rank's unit (or env file), rank 0 first, each under a comment naming its host and rank: what a
    deploy of the engine would install on each host."""
    from specops.commands.systemd import render_env_file, render_unit
    from specops.config.engine_targets import resolve_engine
    from specops.host.ssh.resolve import resolve_ssh_target

    targets = resolve_engine(config, name, profile, lambda spec: resolve_ssh_target(spec.ssh, jump=spec.jump).hostname)
    ranks = []
    for target in targets:
        host, rank = target.host, target.rank
        assert rank is not None
        path = host.env_file if env else f"/etc/systemd/system/{host.unit_name}"
        content = render_env_file(target) if env else render_unit(target)
        ranks.append({"rank": rank.rank, "host": host.name, "serves_http": rank.serves_http, "path": path,
                      "content": content})  # fmt: skip
    if as_json:
        print_json({"engine": name, "profile": targets[0].profile.name, "kind": "env_file" if env else "unit",
                    "ranks": ranks})  # fmt: skip
        return
    parts = []
    for item in ranks:
        role = "serves HTTP" if item["serves_http"] else "schedulers only, no HTTP"
        parts.append(f"# engine {name}, rank {item['rank']} of {len(ranks)} ({role}): host {item['host']}, "
                     f"{item['path']}\n{item['content']}")  # fmt: skip
    print_raw("\n".join(parts))
