"""Turn what was read from a host (releases, manifests, unit, journal, a fresh probe) into the Case the verdict
ranks: which release is judged, which verified one it is compared with, and the three diffs.

Pure: the reads happen in specops/ops/forensics.py; here only values are combined, so every verdict can be
reproduced from recorded material.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specops.commands.config_change import env_differences
from specops.commands.journal import UnitState
from specops.commands.manifest import GatesRecord, Manifest
from specops.diagnose.diff import Change, FilesDiff, FingerprintDiff, diff_files, diff_fingerprints
from specops.diagnose.failure import GPU_AREA, Failure, from_gates, from_journal, from_kernel_log, from_preflight
from specops.diagnose.fingerprint import Fingerprint, fingerprint_from_facts, read_fingerprint
from specops.diagnose.verdict import Case
from specops.probe.facts import HostFacts


@dataclass(frozen=True)
class Material:
    """The raw material for one host's diagnosis (see specops/ops/forensics.py:HostEvidence)."""

    host: str
    current: str | None
    subject: str | None
    reference: str | None
    subject_verified: bool = False
    manifests: dict[str, Manifest] = field(default_factory=dict)
    unit: UnitState | None = None
    journal: list[str] = field(default_factory=list)
    facts: HostFacts | None = None
    file_stats: dict[str, tuple[int, int]] = field(default_factory=dict)
    envs: dict[str, str] = field(default_factory=dict)  # release -> its own env file (secrets: never shown)
    secrets: tuple[str, ...] = ()  # the names whose values are secret: shown as ***
    gpus: set[int] | None = None  # the GPUs the engine uses (its `gpus`); None: every GPU


def manifest_of(material: Material, release: str | None) -> Manifest | None:
    """The manifest read for `release`, None when there is none (no release, or it could not be read)."""
    return material.manifests.get(release) if release else None


def now_fingerprint(material: Material) -> Fingerprint | None:
    """The host as it is now, labelled with the release `current` names."""
    if material.facts is None:
        return None
    current = manifest_of(material, material.current)
    tree = current.tree_hash if current else None
    return fingerprint_from_facts(material.facts, host=material.host, tree_hash=tree, release=material.current)


def recorded(material: Material, release: str | None) -> Fingerprint | None:
    manifest = manifest_of(material, release)
    return read_fingerprint(manifest.facts) if manifest else None


def failure_of(material: Material) -> Failure:
    """The journal speaks for the release that runs now; a release that is no longer current speaks through the
    gates its deploy recorded; one the doctor's checks stopped before it ran, through its preflight record."""
    subject = manifest_of(material, material.subject)
    preflight = from_preflight(subject.preflight if subject else None)
    if preflight.present and not material.subject_verified:
        return preflight
    if material.subject is not None and material.subject != material.current:
        return from_gates(subject.gates if subject else GatesRecord())
    unit = material.unit or UnitState()
    exit_status = unit.exec_main_status if unit.exec_main_status else None
    failure = from_journal(material.journal, unit_failed=unit.failed, exit_status=exit_status,
                           restarts=unit.n_restarts)  # fmt: skip
    if failure.present and failure.area != GPU_AREA:  # a GPU awaiting its reset explains any failure on it
        kernel_log = material.facts.kernel_log if material.facts is not None else None
        gpu = from_kernel_log(kernel_log, material.gpus, exit_status=exit_status, restarts=unit.n_restarts)
        failure = gpu if gpu.present else failure
    if not failure.present and not material.subject_verified and material.subject:
        return from_gates(subject.gates if subject else GatesRecord())
    return failure


def _files(material: Material) -> FilesDiff:
    if not material.subject or not material.reference or material.subject == material.reference:
        return FilesDiff()
    reference, subject = manifest_of(material, material.reference), manifest_of(material, material.subject)
    before, after = reference.files if reference else None, subject.files if subject else None
    if before is None or after is None:
        return FilesDiff()
    return diff_files(before, after).with_stats(material.file_stats)


def _env_config(material: Material) -> list[Change]:
    """Each env key whose value differs between the reference's and the subject's own env files (both recorded),
    a secret's values as ***."""
    ref, sub = material.envs.get(material.reference or ""), material.envs.get(material.subject or "")
    if ref is None or sub is None or material.subject == material.reference:
        return []
    changes = []
    for line in env_differences(ref, sub, material.secrets):
        name, _, values = line.partition(": ")
        before, _, after = values.partition(" -> ")
        changes.append(Change("configuration", f"env {name}", before, after))
    return changes


def _manifest_config(material: Material, environment: FingerprintDiff | None) -> list[Change]:
    """Env, profile and unit differences the releases record, plus the fingerprint's unit and flags group."""
    changes = [*_env_config(material), *(environment.group("unit and flags") if environment else [])]
    ref, sub = manifest_of(material, material.reference), manifest_of(material, material.subject)
    if ref and sub and material.subject != material.reference:
        for label, old, new in (("profile", ref.profile, sub.profile),
                                ("unit file sha256", ref.unit_sha256, sub.unit_sha256)):  # fmt: skip
            if old and new and old != new and not any(c.key == label for c in changes):
                changes.append(Change("unit and flags", label, str(old)[:12], str(new)[:12]))
    return changes


def environment_diff(material: Material) -> FingerprintDiff | None:
    """The reference's recorded fingerprint against the environment the failure happened in: now, when the
    judged release is current; else the fingerprint recorded when it was deployed (now when it has none)."""
    before = recorded(material, material.reference)
    if before is None:
        return None
    judged_now = material.subject in (None, material.current)
    after = (
        now_fingerprint(material) if judged_now else (recorded(material, material.subject) or now_fingerprint(material))
    )
    return diff_fingerprints(before, after) if after is not None else None


def build_case(material: Material) -> Case:
    environment = environment_diff(material)
    return Case(
        host=material.host,
        failure=failure_of(material),
        subject=material.subject,
        reference=material.reference,
        environment=environment,
        files=_files(material),
        config=_manifest_config(material, environment),
        facts=material.facts,
        serving=verified_serving(material),
    )


def verified_serving(material: Material) -> str | None:
    """`current` when it is verified and its engine runs (then no advice may move the host off it), else None."""
    manifest = manifest_of(material, material.current)
    if material.current is None or manifest is None or not manifest.verified:
        return None
    return material.current if material.unit is not None and material.unit.running else None
