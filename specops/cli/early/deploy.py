"""A deploy's connections, opened by the console script while the rest of specops loads and the build is staged.

Why: a deploy connects only after typer, pydantic and the config's models have loaded, the config is validated
and the build is staged (patches applied, the tree hashed): 0.2-0.5 s of the operator's machine, and, on a real
network, every round trip of TCP, key exchange and authentication came after it, and then the host's login
shells for the deploy's two execs. The plan of the last run of the same command line (each host's name, `ssh`,
`jump`, sudo user, `python`, service folder and last push size, kept by specops/cli/early/plan.py under a key
made of the config's bytes, the profiles, the names and specops's own code) lets the console script connect
first, in threads, and start the command conversation and the push session at once (host/ssh/prestart.py), so the
host starts them while this process imports and stages.

Nothing changes for the operator: the parsed command validates the config and stages the build as always, and
takes the early connections (`EarlyConnections.claim`, through specops/cli/early/start.py: `HeadStart`) only
when the hosts it selected give exactly the plan that connected. Otherwise they are closed and the deploy
connects as it always did; the same happens to connections nobody claimed (a planning error, `--dry-run`).
Neither a connection nor the two commands, which wait for their first request, change anything on a host; they
start the plan's interpreter as its sudo user, so a plan is used only when it is this user's own and its values
pass specops.toml's rules (plan.py: recall). A command line this module is unsure of (an option the grammar
leaves to the parser, a sudo password to ask for: command_line.py) starts nothing. The build is not part of the
plan: a deploy without `--build` (the build named in specops.toml) starts from the same plan, and one with no
build anywhere closes its early connections unused.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from specops.cli.early.command_line import PlainRun, plain_run

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.config.loader import Config
    from specops.deploy.connections import Opened

COMMAND = "deploy"
PUSH_ALLOWANCE = 1.25  # the push session started early allows this much more than the last push's bytes...
PUSH_SLACK_BYTES = 16 * 2**20  # ...and this much: the next one-line change fits, a build twice as big starts anew
WAIT_STARTED_S = 1.0  # a silent host is not waited for before the config is validated and the build staged


@dataclass
class EarlyConnections:
    """A plain deploy's early connections (none when no plan is remembered: the parsed command then keeps one),
    until the parsed command claims them or they are discarded."""

    key: str
    names: list[str]
    plan: list[dict[str, Any]] | None
    lock_wait_s: float = 0.0  # --lock-wait: sizes the early push session's time limit
    opened: dict[str, Opened] = field(default_factory=dict)
    threads: list[threading.Thread] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    abandoned: bool = False  # nobody will claim these: a connection made from now on is closed by its thread

    def connect(self) -> None:
        """Connect to every host of the plan, each in its own thread."""
        for record in self.plan or []:
            thread = threading.Thread(target=self._connect, args=(record,),
                                      name=f"specops-early-{record['name']}", daemon=True)  # fmt: skip
            thread.start()
            self.threads.append(thread)

    def wait_started(self, limit_s: float | None = None) -> None:
        """Wait until every early host is connected and its two commands are sent (alone on the CPU, that takes
        the connection time; the rest of specops then loads while the hosts start those commands), or `limit_s`
        (default WAIT_STARTED_S)."""
        until = time.monotonic() + (WAIT_STARTED_S if limit_s is None else limit_s)
        for thread in self.threads:
            thread.join(max(0.0, until - time.monotonic()))

    def _connect(self, record: dict[str, Any]) -> None:
        """One host's connection (or why it failed, a SpecopsError, as the deploy would report it) and, once
        connected, the deploy's conversation and push session started on it. Anything else leaves the host out:
        the parsed command connects it again and meets the problem itself."""
        try:
            from specops.deploy.connections import connect_one
            from specops.host import plain_opener

            opened = connect_one(plain_opener(record["name"], record["ssh"], record["jump"], record["sudo_as"]))
            with self.lock:  # a claim or a discard waits for the commands to be sent, or closes what comes late
                if self.abandoned:
                    _close_one(opened)
                    return
                self.opened[record["name"]] = opened
                prestart = getattr(opened.host, "prestart", None)
                if prestart is not None:
                    for argv, timeout in _first_commands(record, self.lock_wait_s):
                        prestart(argv, timeout=timeout)
        except BaseException:  # a thread's exception would print a traceback; the parsed command meets it itself
            return

    def claim(self, specs: list[HostSpec], asks_password: bool, push_bytes: int, config: Config) -> dict[str, Opened]:
        """The connections opened early for exactly these hosts (empty when there are none or they do not
        match; those are closed). Keeps this run's plan, with this push's size, for the next run: under the key
        of the config bytes that were validated (`config`), which differs from the early key when the file was
        saved in between."""
        fresh = records(specs, push_bytes)
        matches = self.plan is not None and _settings(self.plan) == _settings(fresh) and not asks_password
        if matches:
            for thread in self.threads:
                thread.join()
        else:
            self.discard()
        if not asks_password:  # a run that asks for a sudo password never starts early
            from specops.cli.early.plan import plan_key, remember

            key = plan_key(config.path, self.names, COMMAND, config.digest)
            if key is not None and (key != self.key or fresh != self.plan):
                remember(key, fresh)
        return self.opened if matches else {}

    def discard(self) -> None:
        """Close what is connected (nobody claimed it: a planning error, --dry-run, Ctrl-C); a host still
        connecting is not waited for (its thread closes it when done)."""
        with self.lock:
            self.abandoned = True
            left, self.opened = self.opened, {}
        for opened in left.values():
            _close_one(opened)


def plain_deploy(args: list[str]) -> PlainRun | None:
    """The deploy `args` ask for, when they hold nothing but names and options a plain run may carry."""
    return plain_run(args, COMMAND)


def prepare(args: list[str]) -> EarlyConnections | None:
    """A plain deploy's early connections, not yet connecting (`connect`): from its remembered plan, or
    without one (the parsed command then keeps the plan for the next run); None for any other command line."""
    wanted = plain_deploy(args)
    if wanted is None:
        return None
    from specops.cli.early import plan as early_plan
    from specops.cli.early.checks import deploy_record

    key = early_plan.plan_key(wanted.config_path, wanted.names, command=COMMAND)
    if key is None:
        return None
    plan = early_plan.recall(key, check=deploy_record)  # checked by specops.toml's rules before any connection
    lock_wait_s = float(wanted.values.get("lock_wait", "0"))  # within the option's limits (command_line.py)
    return EarlyConnections(key, wanted.names, plan, lock_wait_s)


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


def _close_one(opened: Opened) -> None:
    if opened.manager is not None:
        with contextlib.suppress(Exception):
            opened.manager.__exit__(None, None, None)
