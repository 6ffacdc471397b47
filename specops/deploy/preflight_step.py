"""The deploy's preflight step: the probe its plan holds, the doctor's checks on the candidate release, and,
when a check stops the deploy, the environment fingerprint and the failed checks in the candidate's manifest
(`specops diagnose HOST --release ID` names them later). Its facts also give the compile cache's key."""

from __future__ import annotations

from typing import TYPE_CHECKING

from specops.deploy.fixed_steps import GATE_FAILED
from specops.deploy.outcome import HostOutcome, Outcome
from specops.deploy.preflight import judge, preflight_record
from specops.deploy.step_commands import MANIFEST, PROBE
from specops.deploy.steps import HostSteps, Step
from specops.diagnose.fingerprint import fingerprint_from_facts
from specops.doctor.model import CheckContext
from specops.doctor.registry import all_checks, run_checks
from specops.events import Event, Reporter
from specops.ops import cache as compile_cache
from specops.ops.planned import script_reply
from specops.probe.run import probe

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.config.profile import Profile
    from specops.deploy.plan import DeployOptions, DeployPlan, HostPlan
    from specops.host.base import Host


class PreflightStep:
    """The preflight's handler; mixed into the deploy of one host (specops/deploy/execute.py), whose state it
    reads and sets (the cache key, the fingerprint, whether the checks passed)."""

    host: Host
    spec: HostSpec
    profile: Profile
    plan: DeployPlan
    host_plan: HostPlan
    options: DeployOptions
    outcome: HostOutcome
    reporter: Reporter
    steps: HostSteps
    cache_key: str
    facts_record: dict[str, object]
    checks_ok: bool

    def _preflight(self, step: Step) -> None:
        candidate = f"{self.spec.service_dir}/releases/{self.steps.release}"
        (planned,) = step.part(PROBE)
        facts = probe(self.host, self.spec, self.profile, extra_roots={"candidate": candidate}, planned=planned)
        self.cache_key = compile_cache.key_from_facts(self.spec, facts)
        self.facts_record = fingerprint_from_facts(facts, host=self.spec.name, unit_text=self.host_plan.unit_text,
                                                   tree_hash=self.plan.staged.tree_hash,
                                                   release=self.steps.release).to_json()  # fmt: skip
        results = run_checks(CheckContext(host=self.spec, facts=facts, profile=self.profile), all_checks())
        verdict = judge(results, self.spec.waive, self.options.skip_checks, self.options.force)
        self.outcome.preflight, self.outcome.overridden = verdict.results, verdict.overridden
        for line in self.outcome.passed_checks():  # every failing check it goes past, by name
            self.reporter.event(Event(self.spec.name, "preflight", line, level="warn"))
        if not verdict.blocking:
            return
        self.checks_ok = False
        # what `specops diagnose HOST --release ID` reads later: the host's fingerprint, and why it stopped here
        (manifest,) = step.part(MANIFEST)
        script_reply(self.host, self.spec, manifest,
                     {"facts": self.facts_record, "preflight": preflight_record(verdict.blocking)})  # fmt: skip
        self.outcome.outcome, self.outcome.exit_code = Outcome.PREFLIGHT_FAILED, GATE_FAILED
        self.outcome.cause = "; ".join(f"{r.id}: {r.summary}" for r in verdict.blocking)
        self.outcome.hint = verdict.hint()
