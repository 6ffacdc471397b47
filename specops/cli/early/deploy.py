"""A deploy's connections, opened by the console script while the rest of specops loads and the build is staged.

Why: a deploy connects only after typer, pydantic and the config's models have loaded, the config is validated
and the build is staged (patches applied, the tree hashed): 0.2-0.5 s of the operator's machine, and, on a real
network, every round trip of TCP, key exchange and authentication came after it, and then the host's login
shells for the deploy's two execs. The plan of the last run of the same command line (each host's name, `ssh`,
`jump`, sudo user, `python`, service folder and last push size, kept by specops/cli/early/plan.py under a key
made of the config's bytes, the profiles, the names and specops's own code) lets the console script connect
first, in threads, and start the command conversation and the push session at once (host/prestart.py), so the
host starts them while this process imports and stages.

Nothing changes for the operator: the parsed command validates the config and stages the build as always, and
takes the early connections (`claim`) only when the hosts it selected give exactly the plan that connected.
Otherwise they are closed and the deploy connects as it always did; the same happens to connections nobody
claimed (a planning error, `--dry-run`). Neither a connection nor the two commands, which wait for their first
request, change anything on a host; they start the plan's interpreter as its sudo user, so a plan is used only
when it is this user's own and its values pass specops.toml's rules (early_plan.recall). A command line this
module is unsure of (another option, a sudo password to ask for) starts nothing. The build is not part of the
plan: a deploy without `--build` (the build named in specops.toml) starts from the same plan, and one with no
build anywhere closes its early connections unused.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specops.cli.early.doctor import split_root

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.config.loader import Config
    from specops.deploy.connections import Opened

COMMAND = "deploy"
VALUE_OPTIONS = frozenset({"--build", "--patch", "--profile", "-p", "--lock-wait", "--canary", "--parallel",
                           "--max-fail-percent"})  # fmt: skip
FLAG_OPTIONS = frozenset({"--json", "--force", "--no-rollback", "--reap"})  # not --dry-run: it connects its own way
PUSH_ALLOWANCE = 1.25  # the push session started early allows this much more than the last push's bytes...
PUSH_SLACK_BYTES = 16 * 2**20  # ...and this much: the next one-line change fits, a build twice as big starts anew
MAX_LOCK_WAIT_S = 86400.0  # --lock-wait's own limit
WAIT_STARTED_S = 1.0  # a silent host is not waited for before the config is validated and the build staged


@dataclass(frozen=True)
class EarlyDeploy:
    """A plain `specops [ROOT FLAGS] [--config PATH] deploy NAME... [OPTIONS]`."""

    config_path: Path | None
    names: list[str]
    lock_wait_s: float = 0.0


@dataclass
class _Started:
    key: str
    names: list[str]
    plan: list[dict[str, Any]] | None  # None: nothing remembered, nothing started (the parsed command keeps one)
    opened: dict[str, Opened] = field(default_factory=dict)
    threads: list[threading.Thread] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    abandoned: bool = False  # nobody will claim these: a connection made from now on is closed by its thread


_started: list[_Started] = []


def plain_deploy(args: list[str]) -> EarlyDeploy | None:
    """The deploy `args` ask for, when they hold nothing but names, the options above and root flags (else None)."""
    split = split_root(args, COMMAND)
    options = _options(split[1]) if split is not None else None
    if split is None or options is None or not options[0]:
        return None
    config_path = split[0]
    names, values = options
    try:
        lock_wait_s = float(values.get("--lock-wait", "0"))
    except ValueError:  # the parsed command says why
        return None
    if not 0 <= lock_wait_s <= MAX_LOCK_WAIT_S:  # nan, inf, out of range: the parsed command says why
        return None
    return EarlyDeploy(config_path, names, lock_wait_s)


def _options(words: list[str]) -> tuple[list[str], dict[str, str]] | None:
    """The names and the options' values (the last of each), or None for anything this module does not know."""
    names: list[str] = []
    values: dict[str, str] = {}
    rest = list(words)
    while rest:
        word = rest.pop(0)
        option, equals, value = word.partition("=")
        if word in VALUE_OPTIONS:
            if not rest:
                return None
            values[word] = rest.pop(0)
        elif equals and option in VALUE_OPTIONS:
            values[option] = value
        elif word.startswith("-"):
            if word not in FLAG_OPTIONS:
                return None
        else:
            names.append(word)
    return names, values


def start(args: list[str]) -> bool:
    """Connect to the hosts of a plain deploy now when its plan is remembered; whether anything was started."""
    wanted = plain_deploy(args)
    if wanted is None:
        return False
    from specops.cli.early import plan as early_plan
    from specops.cli.early.checks import deploy_record

    key = early_plan.plan_key(wanted.config_path, wanted.names, command=COMMAND)
    if key is None:
        return False
    plan = early_plan.recall(key, check=deploy_record)  # checked by specops.toml's rules before any connection
    started = _Started(key, wanted.names, plan)
    _started.append(started)
    if plan is None:
        return False
    for record in plan:
        thread = threading.Thread(target=_connect, args=(started, record, wanted.lock_wait_s),
                                  name=f"specops-early-{record['name']}", daemon=True)  # fmt: skip
        thread.start()
        started.threads.append(thread)
    return True


def wait_started(limit_s: float | None = None) -> None:
    """Wait until every early host is connected and its two commands are sent (alone on the CPU, that takes the
    connection time; the rest of specops then loads while the hosts start those commands), or `limit_s` (default
    WAIT_STARTED_S)."""
    until = time.monotonic() + (WAIT_STARTED_S if limit_s is None else limit_s)
    for started in _started:
        for thread in started.threads:
            thread.join(max(0.0, until - time.monotonic()))


def _connect(started: _Started, record: dict[str, Any], lock_wait_s: float) -> None:
    """One host's connection (or why it failed, a SpecopsError, as the deploy would report it) and, once
    connected, the deploy's conversation and push session started on it. Anything else leaves the host out:
    the parsed command connects it again and meets the problem itself."""
    try:
        from specops.deploy.connections import connect_one
        from specops.host import plain_opener

        opened = connect_one(plain_opener(record["name"], record["ssh"], record["jump"], record["sudo_as"]))
        with started.lock:  # a claim or a discard waits for the commands to be sent, or closes what comes late
            if started.abandoned:
                _close_one(opened)
                return
            started.opened[record["name"]] = opened
            prestart = getattr(opened.host, "prestart", None)
            if prestart is not None:
                for argv, timeout in _first_commands(record, lock_wait_s):
                    prestart(argv, timeout=timeout)
    except BaseException:  # a thread's exception would print a traceback; the parsed command meets it itself
        return


def _first_commands(record: dict[str, Any], lock_wait_s: float) -> list[tuple[list[str], float]]:
    """The two execs a deploy starts first (specops/deploy/execute.py: deploy_host), as it will ask for them."""
    from specops.commands.conversation import CONVERSATION_TIMEOUT_S, conversation_argv
    from specops.commands.release import plain_session_argv, push_session_timeout

    push_bytes = int(record.get("push_bytes") or 0)
    allowance = int(push_bytes * PUSH_ALLOWANCE) + PUSH_SLACK_BYTES
    return [
        (conversation_argv(record["python"]), CONVERSATION_TIMEOUT_S),
        (
            plain_session_argv(record["python"], record["service_dir"], True),
            push_session_timeout(allowance, lock_wait_s),
        ),
    ]


def records(specs: list[HostSpec], push_bytes: int = 0) -> list[dict[str, Any]]:
    """What each validated host's connection and first two commands need, as plain JSON data (the plan)."""
    return [
        {"name": spec.name, "ssh": spec.ssh, "jump": spec.jump, "sudo_as": spec.become_user if spec.uses_sudo else None,
         "python": spec.python, "service_dir": spec.service_dir, "push_bytes": push_bytes}
        for spec in specs
    ]  # fmt: skip


def _settings(plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A plan without the last push's size (which only sizes the early push session's time limit)."""
    return [{key: value for key, value in record.items() if key != "push_bytes"} for record in plan]


def claim(specs: list[HostSpec], asks_password: bool, push_bytes: int, config: Config) -> dict[str, Opened]:
    """The connections opened early for exactly these hosts (empty when there are none or they do not match;
    those are closed). Keeps this run's plan, with this push's size, for the next run: under the key of the
    config bytes that were validated (`config`), which differs from the early key when the file was saved
    in between."""
    if not _started:
        return {}
    started = _started.pop()
    fresh = records(specs, push_bytes)
    matches = started.plan is not None and _settings(started.plan) == _settings(fresh) and not asks_password
    if matches:
        for thread in started.threads:
            thread.join()
    else:
        _close(started)
    if not asks_password:  # a run that asks for a sudo password never starts early
        from specops.cli.early.plan import plan_key, remember

        key = plan_key(config.path, started.names, COMMAND, config.digest)
        if key is not None and (key != started.key or fresh != started.plan):
            remember(key, fresh)
    return started.opened if matches else {}


def discard() -> None:
    """Close connections nobody claimed (a planning error, --dry-run, Ctrl-C)."""
    while _started:
        _close(_started.pop())


def _close(started: _Started) -> None:
    """Close what is connected; a host still connecting is not waited for (its thread closes it when done)."""
    with started.lock:
        started.abandoned = True
        left, started.opened = started.opened, {}
    for opened in left.values():
        _close_one(opened)


def _close_one(opened: Opened) -> None:
    if opened.manager is not None:
        with contextlib.suppress(Exception):
            opened.manager.__exit__(None, None, None)
