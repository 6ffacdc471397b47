"""`specops trial`: a candidate build beside the serving engine, measured against it, then gone.

The order is the guarantee: one probe decides whether the trial may run at all (specops/deploy/trial_plan.py:
GPUs, port, memory) before anything changes on the host; then the build is pushed as a release that is never
`current`, the deploy's preflight judges it, and it runs as a transient unit of its own (the managed unit's
settings, the trial's GPUs and port, `RuntimeMaxSec=` so the host stops it by itself if this machine goes
away). Production's unit, process, `current` and lock are never touched: nothing here restarts, switches or
locks. The trial unit is stopped in a `finally`, whatever ended the trial (a failure, Ctrl-C, an error).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from specops.build.stage import StagedBuild
from specops.commands import trial as trial_cmd
from specops.commands import unit as unit_cmd
from specops.commands.release import newest_complete, release_env_path
from specops.commands.systemd import EnvReference, launch_argv, render_unit, unit_environment
from specops.config.loader import Target
from specops.deploy.host_state import manifest_fields
from specops.deploy.plan import HostPlan
from specops.deploy.preflight import judge
from specops.deploy.trial_plan import TrialOptions, TrialRefused, placed, refusals
from specops.doctor.model import CheckContext
from specops.doctor.registry import all_checks, run_checks
from specops.engine.smoke import SmokeResult
from specops.engine.trial_compare import Comparison, compare, measure, verdict
from specops.errors import SpecopsError
from specops.host.base import Host
from specops.ops.interrupts import shielded
from specops.ops.release import identical_release, open_push
from specops.probe.run import probe

Say = Callable[[str], None]
STOP_TIMEOUT_S = 120.0


@dataclass
class TrialReport:
    """What a trial found; `outcome`: "agrees", "failed" (with `causes`) or "refused"."""

    host: str
    profile: str
    production_profile: str
    unit: str = ""
    release: str | None = None
    outcome: str = "failed"
    causes: list[str] = field(default_factory=list)
    preflight: list[str] = field(default_factory=list)  # the checks that failed (stopping it unless --force)
    smoke: SmokeResult | None = None
    comparison: Comparison | None = None
    removed: bool = False  # the trial unit is gone from the host
    production_runs: tuple[str, str] = ("", "")  # production's InvocationID before and after ("": not running)

    @property
    def ok(self) -> bool:
        return self.outcome == "agrees"

    def to_json(self) -> dict[str, object]:
        return {"host": self.host, "profile": self.profile, "production_profile": self.production_profile,
                "unit": self.unit, "release": self.release, "outcome": self.outcome, "causes": self.causes,
                "preflight": self.preflight, "smoke": self.smoke.to_json() if self.smoke else None,
                "comparison": self.comparison.to_json() if self.comparison else None,
                "trial_removed": self.removed,
                "production_invocation": {"before": self.production_runs[0] or None,
                                          "after": self.production_runs[1] or None}}  # fmt: skip

    @property
    def production_line(self) -> str:
        """Whether production ran the same process throughout (its unit's InvocationID), in words."""
        before, after = self.production_runs
        if before and before == after:
            return f"production served throughout (the same run, InvocationID {before[:12]})"
        runs = f"InvocationID {before or '-'} -> {after or '-'}"
        return f"production's run changed during the trial ({runs}): not by specops, which never restarts it"


def run_trial(host: Host, staged: StagedBuild, host_plan: HostPlan, production: Target, options: TrialOptions,
              say: Say) -> TrialReport:  # fmt: skip
    """The whole trial on one connected host; refusals raise TrialRefused before anything changed."""
    trial = placed(host_plan.target, options)
    report = TrialReport(host_plan.name, trial.profile.name, production.profile.name)
    say(f"probing {host_plan.name} (GPUs {options.gpu_list}, port {options.port})")
    facts = probe(host, trial.host, trial.profile)
    candidate = dataclasses.replace(host_plan, unit_text=render_unit(trial, host_plan.flag_spellings))
    release = staged.release_id(trial.profile.name, candidate.unit_text, candidate.env_shown)
    unit = trial_cmd.trial_unit_name(release)
    listed = host.run(trial_cmd.trial_units_argv(), timeout=30.0, check=False).text
    found = refusals(facts, production, trial, options, unit if unit in listed else "")
    if found:
        raise TrialRefused(f"{host_plan.name}: trial refused, nothing started: " + "; ".join(found))
    before = _invocation(host, production)
    report.release = _push(host, staged, candidate, release, say)
    release_dir = f"{trial.host.service_dir}/releases/{release}"
    report.preflight = _preflight(host, trial, release_dir, options.force)
    if report.preflight and not options.force:
        report.causes = [f"preflight: {line}" for line in report.preflight]
        report.production_runs = (before, _invocation(host, production))
        return report
    report.unit = unit
    try:
        _start(host, trial, candidate.unit_text, unit, release_dir, release, options)
        _measure(host, trial, production, report, options, say)
    finally:
        with shielded():  # a second Ctrl-C does not leave the trial running
            report.removed = _stop(host, report.unit)
    report.production_runs = (before, _invocation(host, production))
    say(f"trial unit {report.unit} stopped and removed")
    return report


def _push(host: Host, staged: StagedBuild, host_plan: HostPlan, release_id: str, say: Say) -> str:
    """The build as a release (never switched to): one with the same tree and configuration is reused."""
    spec = host_plan.target.host
    with open_push(host, spec, max_bytes=staged.total_bytes) as session:
        listing = session.listing
        if identical_release(staged, [r for r in listing.releases if r.id == release_id]) is not None:
            say(f"release {release_id} is on the host already: no push")
        else:
            say(f"pushing the candidate as release {release_id} (not made current)")
            session.push(staged, base=newest_complete(listing.releases), release_id=release_id,
                         manifest_fields=manifest_fields(host_plan), progress=say)  # fmt: skip
    # its own env file (0600, root's): systemd reads it when it starts the trial; the secrets never reach argv
    host.put(host_plan.env_text.encode("utf-8"), release_env_path(spec, release_id), 0o600)
    return release_id


def _preflight(host: Host, trial: Target, release_dir: str, force: bool) -> list[str]:
    """The deploy's checks on the candidate (its GPUs and port are the trial's): the ones that fail."""
    facts = probe(host, trial.host, trial.profile, extra_roots={"candidate": release_dir})
    results = run_checks(CheckContext(host=trial.host, facts=facts, profile=trial.profile), all_checks())
    verdict_ = judge(results, trial.host.waive, (), force)
    return [f"{result.id}: {result.summary}" for result in (*verdict_.blocking, *verdict_.overridden)]


def _start(host: Host, trial: Target, unit_text: str, unit: str, release_dir: str, release: str,
           options: TrialOptions) -> None:  # fmt: skip
    """systemd-run with the managed unit's settings, the candidate's own env file and code."""
    settings = [(key, value) for key, value in trial_cmd.service_settings(unit_text) if key != "EnvironmentFile"]
    settings.append(("EnvironmentFile", release_env_path(trial.host, release)))
    environment = unit_environment(trial) | {"PYTHONPATH": release_dir}
    command = [arg.word() if isinstance(arg, EnvReference) else arg for arg in launch_argv(trial)]
    argv = trial_cmd.trial_start_argv(unit, settings, environment, release_dir, command, options.duration_s)
    host.run(argv, timeout=60.0)


def _measure(host: Host, trial: Target, production: Target, report: TrialReport, options: TrialOptions,
             say: Say) -> None:  # fmt: skip
    """Readiness, the profile's smoke, then the same prompts on production and on the candidate."""
    from specops.engine.client import EngineClient
    from specops.engine.readiness import journal_position, unit_problems, wait_ready
    from specops.engine.smoke import run_smoke, with_cause

    unit_spec = trial.host.model_copy(update={"service": report.unit.removesuffix(".service")})
    since = journal_position(host)
    ready = wait_ready(host, unit_spec, trial.profile, since_cursor_or_time=since, on_progress=_once(say))
    if not ready.ok:
        report.causes = [f"not ready: {ready.reason}"]
        return
    say("ready; running the profile's smoke on the candidate")
    with EngineClient(host, unit_spec) as client:
        smoke = run_smoke(client, trial.profile, unit_spec, None)
        report.smoke = smoke if smoke.passed else with_cause(smoke, unit_problems(host, unit_spec))
        prompts = options.prompts or (trial.profile.smoke.prompt,)
        tokens = trial.profile.smoke.max_new_tokens
        say(f"comparing with production on {len(prompts)} prompt(s)")
        try:
            with EngineClient(host, production.host) as serving:
                base = measure(serving, prompts, tokens)
            report.comparison = compare(prompts, base, measure(client, prompts, tokens))
        except SpecopsError as error:  # an engine that stops answering mid-comparison is the report's cause
            report.causes = [f"comparison stopped: {error.message}"]
            return
    causes = [] if report.smoke.passed else [report.smoke.reason]
    causes += verdict(report.comparison, options.min_agreement, options.min_speedup)
    report.causes, report.outcome = causes, "failed" if causes else "agrees"


def _invocation(host: Host, production: Target) -> str:
    """Production's current run (systemd's InvocationID of its unit; "" when it does not run)."""
    argv = unit_cmd.show_argv(production.host.unit_name, ["InvocationID"])
    return unit_cmd.parse_show(host.run(argv, timeout=30.0, check=False).text).get("InvocationID", "").strip()


def _once(say: Say) -> Callable[[str, str], None]:
    """The readiness progress, each phase and journal line said once (the poll repeats them twice a second)."""
    said: list[str] = []

    def progress(phase: str, line: str) -> None:
        text = f"{phase}: {line}"[:160] if line else phase
        if said[-1:] != [text]:
            said.append(text)
            say(text)

    return progress


def _stop(host: Host, unit: str) -> bool:
    """Stop the trial unit and forget it; True when systemd no longer knows it."""
    host.run(trial_cmd.trial_stop_argv(unit), timeout=STOP_TIMEOUT_S, check=False)
    host.run(trial_cmd.trial_reset_argv(unit), timeout=30.0, check=False)
    listed = host.run(trial_cmd.trial_units_argv(), timeout=30.0, check=False)
    return unit not in listed.text
