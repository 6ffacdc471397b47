"""Blame before marks: after a deploy's gates fail, is it the release or the host, and may a rollback help?

Why one decision: a bad mark keeps a release from ever being a rollback target again, so a mark that lands on a
good build (the host lost its FFmpeg libraries, a driver went away) takes the operator's best way back from them.
The mark therefore follows the evidence: a failure the journal names as the host's (a known environment
signature) marks nothing, and a rollback happens only when the release it puts back is known to work on this
environment, i.e. it was verified on the same environment fingerprint; otherwise it would restart into the same
fault. A deploy that changed the configuration (env file or unit) puts the evidence on that change: the build is
left unmarked, and the rollback puts back the configuration that served before. Every other failed gate blames
the build: it failed where the previous verified release passed. The operator's own word (`releases --mark-bad`,
`rollback` by hand) is not decided here: it always marks. The automatic rollback asks once, after the gates
failed and before the host-side rollback, which marks the release it leaves only when this says "build".

The host-side guard applies the same rule with what the host alone can read (remote/release/hostblame.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from specops.commands.config_change import ConfigChange
from specops.config.inventory import HostSpec
from specops.diagnose.fingerprint import read_fingerprint
from specops.engine.gates import GateResult
from specops.host.base import Host

if TYPE_CHECKING:
    from specops.diagnose.fingerprint import Fingerprint

# signature families that say "the code is fine, the host is not" (specops/engine/signatures/env.py, torchcodec;
# gpu-host: signatures/hardware.py and a GPU fault the kernel journal showed after a failed start, engine/gpu_fault.py)
ENVIRONMENT_FAMILIES = frozenset({"torchcodec", "driver", "cuda-libs", "abi", "model-files", "gpu-host"})
HOST_NOT_RELEASE = "the host, not the release"

Culprit = Literal["build", "configuration", "host"]


@dataclass(frozen=True)
class Blame:
    """Who is to blame for the failed gates, and why (with the evidence), in words for the summary and the audit
    log; and whether the plan's rollback target goes back (False: it would restart into the same fault)."""

    culprit: Culprit
    reason: str
    roll_back: bool = True

    @property
    def marks_bad(self) -> bool:
        return self.culprit == "build"


def environment_evidence(gates: GateResult) -> str | None:
    """The journal line that names the host as the cause (a known environment signature), or None."""
    cause = None if gates.readiness.ok else gates.readiness.cause
    if cause is None or cause.signature.family not in ENVIRONMENT_FAMILIES:
        return None
    return f"{cause.summary}; journal: {cause.line.strip()}"


def environment_changes(target: Fingerprint | None, now: Fingerprint | None) -> list[str] | None:
    """What differs in the host's environment since `target` was verified ([] when nothing), None when one of
    the two fingerprints was never recorded (then nothing is known about the target on this environment)."""
    if target is None or now is None:
        return None
    from specops.diagnose.diff import diff_fingerprints  # only a failed deploy compares environments

    return [change.text for change in diff_fingerprints(target, now).environment]


def host_at_fault(gates: GateResult, target: str | None, target_env: Fingerprint | None,
                  candidate_env: Fingerprint | None) -> Blame | None:  # fmt: skip
    """The host's fault when the journal names an environment fault: nothing is marked, and `target` goes back
    only when it was verified on this same environment. None when the evidence does not point at the host."""
    evidence = environment_evidence(gates)
    if evidence is None:
        return None
    why = f"{HOST_NOT_RELEASE}: {evidence}"
    if target is None:
        return Blame("host", why, roll_back=False)
    changed = environment_changes(target_env, candidate_env)
    if changed == []:
        return Blame("host", f"{why}; {target} was verified on this same environment: rolled back to it")
    known = "; ".join(changed) if changed else "no environment fingerprint to compare with"
    return Blame("host", f"{why}; not rolled back: {target} is not known to work on this environment ({known}), "
                 "it would restart into the same fault", roll_back=False)  # fmt: skip


def blame_for_failed_gates(config: ConfigChange, gates: GateResult | None = None, target: str | None = None,
                           target_env: Fingerprint | None = None,
                           candidate_env: Fingerprint | None = None) -> Blame:  # fmt: skip
    """The one decision every automatic bad mark goes through: the configuration when this deploy changed it
    (the rollback puts back the one that served before), else the host when the journal points at it (`gates`:
    None while planning, before any gate ran), else the build, as before."""
    if config.changed:
        return Blame("configuration", f"{config.summary()} in the same deploy: the build is not blamed")
    host = host_at_fault(gates, target, target_env, candidate_env) if gates is not None else None
    if host is not None:
        return host
    return Blame("build", "the gates failed with the configuration unchanged")


def failed_gates_blame(host: Host, spec: HostSpec, config: ConfigChange, gates: GateResult, target: str | None,
                       candidate_facts: dict[str, object]) -> Blame:  # fmt: skip
    """blame_for_failed_gates with the fingerprints read: the candidate's (taken by this deploy's preflight)
    and the target's (its manifest); the manifest is read only when the journal blames the host."""
    if config.changed or environment_evidence(gates) is None or target is None:
        return blame_for_failed_gates(config, gates, target, None, None)
    from specops.ops.forensics import read_manifest  # only on this path: a failed deploy blamed on the host

    manifest = read_manifest(host, spec, target)
    return blame_for_failed_gates(config, gates, target, read_fingerprint(manifest.facts if manifest else None),
                                  read_fingerprint(candidate_facts or None))  # fmt: skip


def environment_hint(host: str, gates: GateResult) -> str:
    """What to do when the host is at fault: its fix, then the same deploy again (no release was marked bad)."""
    cause = gates.readiness.cause
    fix = cause.signature.hint.replace("HOST", host) if cause else "fix the host"
    return f"{fix}; then deploy again: no release was marked bad"
