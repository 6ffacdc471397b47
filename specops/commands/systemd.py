"""Pure builders for the engine's systemd unit and env file: a Target in, file contents out.

`specops render` prints exactly what these return, and a deploy installs exactly that, so what an operator
reviews is what runs. Golden tests pin the output.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING

from specops.commands.cache import cache_environment
from specops.commands.quoting import env_file_line, environment_directive, exec_arg, systemd_specifiers
from specops.config.loader import Target

if TYPE_CHECKING:
    import jinja2

UNIT_TEMPLATE = "sglang.service.j2"
SECRET_MASK = "***"
_SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# flags SGLang renamed between releases: the name specops renders -> older names a build may know instead
RENAMED_FLAGS: dict[str, tuple[str, ...]] = {
    "--speculative-draft-window-size": ("--speculative-dflash-draft-window-size",),  # new name since 0.5.12
}


class EnvReference(str):
    """An ExecStart word that systemd fills in from the unit's environment (the 0600 EnvironmentFile=) when it
    starts the engine: the unit, `render` and the dry run's diff hold `${NAME}`, never the value."""

    def word(self) -> str:
        return "${" + self + "}"


def flag_spellings(known: Collection[str]) -> dict[str, str]:
    """For a build whose parser knows `known` flags: each renamed flag it knows only by an older name.

    `known` is what the probe's parser check reports (SpecInfoFacts.server_args.speculative_flags); the
    result goes to `launch_argv(..., spellings=)` so the unit uses the name that build knows.
    """
    found: dict[str, str] = {}
    for current, older in RENAMED_FLAGS.items():
        known_older = [name for name in older if name in known]
        if current not in known and known_older:
            found[current] = known_older[0]
    return found


def launch_argv(target: Target, spellings: Mapping[str, str] | None = None) -> list[str]:
    """`python -m sglang.launch_server ...` with the host's model/port/tp and the profile's flags.

    `spellings` (from `flag_spellings`) renames flags for a build that knows an older name only.
    """
    host, rank = target.host, target.rank
    argv = [host.python, "-m", "sglang.launch_server", "--model-path", host.model_path]
    if host.served_model_name:
        argv += ["--served-model-name", host.served_model_name]
    tp_size = rank.tp_size if rank is not None else host.tp_size
    argv += ["--host", host.listen, "--port", str(host.port), "--tp-size", str(tp_size)]
    argv += _server_flags(target)
    argv += [(spellings or {}).get(word, word) for word in _speculative_flags(target)]
    if host.api_key_secret is not None:
        argv += ["--api-key", EnvReference(host.api_key_secret)]
    if rank is not None:  # every rank runs the same command; rank 0 serves HTTP, the others schedulers only
        argv += ["--nnodes", str(rank.nnodes), "--node-rank", str(rank.rank), "--dist-init-addr", rank.dist_init_addr]
    return argv + list(host.extra_args)


def _server_flags(target: Target) -> list[str]:
    server = target.profile.server
    flags: list[str] = []
    if server.dp_size != 1:
        flags += ["--dp-size", str(server.dp_size)]
    pp_size = target.rank.pp_size if target.rank is not None else server.pp_size  # an engine's pp is its own
    if pp_size != 1:
        flags += ["--pp-size", str(pp_size)]
    page_size = (
        server.page_size if server.page_size is not None else (1 if target.profile.algorithm == "DDTREE" else None)
    )
    for flag, value in (
        ("--page-size", page_size),
        ("--mem-fraction-static", server.mem_fraction_static),
        ("--context-length", server.context_length),
        ("--max-running-requests", server.max_running_requests),
        ("--attention-backend", server.attention_backend),
    ):
        if value is not None:
            flags += [flag, str(value)]
    for flag, enabled in (
        ("--enable-dp-attention", server.enable_dp_attention),
        ("--enable-metrics", server.enable_metrics),
        ("--trust-remote-code", server.trust_remote_code),
    ):
        if enabled:
            flags.append(flag)
    return flags


def _speculative_flags(target: Target) -> list[str]:
    spec, profile = target.profile.speculative, target.profile
    flags = ["--speculative-algorithm", profile.algorithm]
    draft = profile.draft_for(target.host.draft_model_path)
    if draft:
        flags += ["--speculative-draft-model-path", draft]
    for flag, value in (
        ("--speculative-num-steps", spec.num_steps),
        ("--speculative-eagle-topk", spec.eagle_topk),
        ("--speculative-num-draft-tokens", spec.num_draft_tokens),
        ("--speculative-dflash-block-size", spec.dflash_block_size),
        ("--speculative-draft-window-size", spec.draft_window_size),
        ("--speculative-draft-attention-backend", spec.draft_attention_backend),
        ("--speculative-ddtree-budget", spec.ddtree_budget),
    ):
        if value is not None:
            flags += [flag, str(value)]
    if spec.use_rejection_sampling:
        flags.append("--speculative-use-rejection-sampling")
    return flags


def exec_start(argv: list[str]) -> str:
    """ExecStart= value, one flag (with its value) per continued line so that diffs stay readable."""
    words = [arg.word() if isinstance(arg, EnvReference) else exec_arg(arg) for arg in argv]
    lines: list[str] = [" ".join(words[:3])]
    current: list[str] = []
    for word, arg in zip(words[3:], argv[3:], strict=True):
        if arg.startswith("--") and current:
            lines.append(" ".join(current))
            current = []
        current.append(word)
    if current:
        lines.append(" ".join(current))
    return " \\\n    ".join(lines)


def unit_environment(target: Target) -> dict[str, str]:
    """Variables systemd's near-empty environment lacks: FlashInfer's JIT needs CUDA_HOME and nvcc on PATH; the
    compile caches live in a folder that outlives releases (specops/commands/cache.py)."""
    host = target.host
    venv_bin = posixpath.dirname(host.python)
    env = {
        "PYTHONPATH": host.current_dir,
        "PYTHONUNBUFFERED": "1",
        "CUDA_HOME": host.cuda_home,
        "PATH": f"{venv_bin}:{host.cuda_home}/bin:{_SYSTEM_PATH}",
        "LD_LIBRARY_PATH": f"{host.cuda_home}/lib64",
    }
    if host.gpus is not None:
        env["CUDA_VISIBLE_DEVICES"] = host.gpus
    if target.rank is not None:  # NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME of a multi-node engine
        env |= target.rank.env
    return env | cache_environment(host)


def operator_environment(target: Target) -> dict[str, str]:
    """The profile's variables overlaid with the host's: these go into the env file."""
    return {**target.profile.env, **target.host.env}


def render_unit(target: Target, spellings: Mapping[str, str] | None = None) -> str:
    """The unit file a deploy installs for this host and profile (`spellings`: see launch_argv)."""
    host, profile = target.host, target.profile
    readiness = profile.readiness
    rank = "" if target.rank is None else f", engine {target.rank.engine} rank {target.rank.rank}/{target.rank.nnodes}"
    context = {
        "description": systemd_specifiers(
            f"SGLang {profile.algorithm} server ({host.service}, profile {profile.name}{rank}) managed by specops"
        ),
        "working_directory": host.current_dir,
        "environment": [environment_directive(k, v) for k, v in unit_environment(target).items()],
        "env_file": host.env_file,
        "exec_start": exec_start(launch_argv(target, spellings)),
        "readiness": readiness,
        "stop_timeout_s": stop_timeout_s(target),
        "limit_nofile": host.limit_nofile,
        "syslog_identifier": host.service,
        "run_as": host.run_as,  # None: no User=/Group= (root)
        "run_as_groups": host.run_as_groups,
    }
    return _template().render(**context)


DRAIN_MARGIN_S = 30  # after the drain budget: time for the engine to exit before systemd kills what is left


def stop_timeout_s(target: Target) -> int:
    """TimeoutStopSec=: never shorter than the drain budget (plus a margin), or systemd would SIGKILL a draining
    engine before specops stops waiting for it."""
    return max(target.profile.readiness.stop_timeout_s, target.profile.drain.timeout_s + DRAIN_MARGIN_S)


def render_env_file(target: Target, secrets: Mapping[str, str] | None = None) -> str:
    """The 0600 env file; with `secrets=None` every secret is shown as *** (for `render --env`)."""
    lines = ["# Managed by specops: the engine's environment (secrets included). Mode 0600, owner root."]
    for name, value in operator_environment(target).items():
        lines.append(env_file_line(name, value))
    for name in target.host.secrets:
        lines.append(f"{name}={SECRET_MASK}" if secrets is None else env_file_line(name, secrets[name]))
    return "\n".join(lines) + "\n"


@lru_cache(maxsize=1)
def _template() -> jinja2.Template:
    import jinja2

    from specops.config.shipped import data_dir

    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(data_dir("units"))),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return environment.get_template(UNIT_TEMPLATE)
