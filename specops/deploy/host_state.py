"""Read what a deploy's plan is decided from: the host's releases and its installed unit, read-only.

Both `specops deploy` (under the lock) and `--dry-run` (without it) read them the same way, on the push
conversation (the host's listing is its first line), so the dry run shows the commands the deploy then runs.
A dry run ends the conversation without a push: the host script exits having changed nothing.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from specops.build.stage import StagedBuild, build_id
from specops.commands.release import Listing
from specops.config.secrets import Secret
from specops.deploy import engine_commands as ecmds
from specops.deploy import step_commands as cmds
from specops.deploy.engine_start import engine_answers, read_engine_state
from specops.deploy.plan import DeployOptions, HostPlan, HostState, choose, plan_steps, read_step
from specops.deploy.steps import Action, HostSteps, Step
from specops.errors import CommandFailed
from specops.host.base import Host
from specops.ops.lock import local_who
from specops.ops.release import PushSession, open_push

READ_TIMEOUT_S = 60.0
DRY_RUN_TOKEN = Secret("dryrun")  # shown as ***, like the real token in a deploy's plan


def manifest_fields(host_plan: HostPlan) -> dict[str, Any]:
    """What a pushed release's manifest records beside its files: the profile and the unit it runs with."""
    return {
        "profile": host_plan.target.profile.name,
        "unit_sha256": host_plan.unit_sha256,
        "deployed_by": local_who(),
        "unit": host_plan.unit_text,
        "flag_spellings": dict(host_plan.flag_spellings),  # renamed flags rendered in this build's older names
    }


def read_host_files(host: Host, read: Step) -> tuple[str | None, str | None]:
    """The installed unit's text and the env file the current release runs with (its own, else the live one;
    read as root over the deploy's own conversation and compared on this machine, never printed); None for a
    file the host does not have. One request: the read step's planned command."""
    (command,) = read.part(cmds.HOST_FILES)
    result = host.run(command.argv, timeout=READ_TIMEOUT_S)
    try:
        document = json.loads(result.stdout)
        unit, env = document["unit"], document["env"]
    except (ValueError, TypeError, KeyError):
        raise CommandFailed(result, host=host.name) from None  # what it printed instead is shown
    return (unit if isinstance(unit, str) else None), (env if isinstance(env, str) else None)


def read_state(host: Host, session: PushSession, staged: StagedBuild, host_plan: HostPlan) -> HostState:
    """The release id a push would create (prepared while the host starts its shell), the listing, the unit,
    whether its engine is active, and, when the plan pushes on top of a base release, that base's files (to count
    what must be sent)."""
    profile = host_plan.target.profile.name
    new_id = host_plan.release_id or staged.release_id(profile, host_plan.unit_text, host_plan.env_shown)
    session.prepare(staged, release_id=new_id, manifest_fields=manifest_fields(host_plan))
    listing = session.listing
    spec = host_plan.target.host
    read = read_step(spec, listing.current)  # the plan's read step: these very commands read the host
    unit_text, env_text = read_host_files(host, read)
    engine = read_engine_state(host, spec, ask_http=False,
                               planned=(*read.part(ecmds.ENGINE_READ), *read.part(ecmds.LAST_ENTRY)))  # fmt: skip
    choice = choose(staged, host_plan, listing, unit_text, new_id, engine, env_text)
    if choice.action is Action.UNCHANGED and _serves_http(host_plan):  # only then does answering matter: ask now
        engine = replace(engine, answering=engine_answers(host, spec))
        choice = choose(staged, host_plan, listing, unit_text, new_id, engine, env_text)
    pushes = choice.action is Action.DEPLOY and choice.reuse is None and choice.base is not None
    base_files = session.base_files(choice.base) if pushes and choice.base is not None else None
    return HostState(listing, unit_text, new_id, base_files, engine, env_text, read)


def _serves_http(host_plan: HostPlan) -> bool:
    """A worker rank of a multi-node engine serves no HTTP (rank 0 does): its active unit is all it shows, so
    asking it would plan a start of an engine that runs (and the ranks would then disagree on the plan)."""
    rank = host_plan.target.rank
    return rank is None or rank.serves_http


def preview(host: Host, staged: StagedBuild, host_plan: HostPlan, options: DeployOptions) -> HostSteps:
    """The plan a deploy would make now, read without the lock and changing nothing (`deploy --dry-run`): the
    conversation is ended before any push, and the lock's token, unknown until a deploy takes the lock, is
    shown masked as in a deploy's own plan."""
    with open_push(host, host_plan.target.host) as session:
        state = read_state(host, session, staged, host_plan)
    return plan_steps(staged, host_plan, state, options, DRY_RUN_TOKEN)


def bad_build_warnings(listing: Listing, tree_hash: str, profile: str, host: str) -> list[str]:
    """ "build X is marked bad on host Y: reason", for each release of this build (its tree, under this profile)
    that this host marked bad: a redeploy of it goes on (the operator may know better), but never unsaid."""
    build = build_id(tree_hash, profile)
    return [f"build {build} is marked bad on host {host}: {r.bad_reason} (release {r.id})" for r in listing.releases
            if r.bad is not None and r.tree_hash == tree_hash and r.profile in (profile, None, "")]  # fmt: skip
