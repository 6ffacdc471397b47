"""root.owned: what root runs on a host (the probe, the guard, the watch: base_dir, the service folder, the venv)
can be changed by root alone. Each case is a way the engine's user, or code it runs, could get root."""

from __future__ import annotations

from specops.doctor.model import CheckResult, Status
from specops.probe.facts import AccountFacts, DeviceNode, OpenEntries, RootPathsFacts, ServiceUserFacts
from tests.unit.doctor.factory import HOST, SITE, context, healthy_facts, replace, root_paths, run

SERVED = replace(HOST, run_as="sglang")
ENGINE = ServiceUserFacts(user=AccountFacts(name="sglang", exists=True, uid=998, gid=998, primary_group="sglang"),
                          groups={"sglang": 998})  # fmt: skip
VENV_FIX = "`chown -R root:root /opt/venv && chmod -R go-w /opt/venv`"


def _check(root: RootPathsFacts | None, host: object = SERVED) -> CheckResult:
    return run("root.owned", context(healthy_facts(root_paths=root, service_user=ENGINE), host=host))


def test_a_root_owned_host_passes() -> None:
    result = _check(root_paths())
    assert result.status is Status.PASS
    assert result.summary == "root alone can change base_dir, service_dir, python, venv, pyvenv.cfg, site-packages"


def test_a_venv_the_engines_user_created_warns_with_the_chown_of_the_whole_venv() -> None:
    """`python -m venv /opt/venv` and `pip install` run as sglang: it can drop a .pth or replace torch."""
    result = _check(root_paths({"/opt/venv": (998, 998, 0o755), SITE: (998, 998, 0o755)}))
    assert result.status is Status.WARN
    assert result.summary.startswith("python, venv, pyvenv.cfg, site-packages can be changed by someone besides root")
    assert "(uid 998 = the engine's user), and the probe, the guard and the watch run them as root" in result.summary
    assert "venv: /opt/venv, mode 0755, owner uid 998, group 998: writable by uid 998 = the engine's user" in (
        result.evidence
    )
    assert result.hint == f"{VENV_FIX} on the host; from then on, pip install as root only"


def test_a_group_writable_base_dir_warns() -> None:
    """The guard file lives in the service folder: a writable base_dir lets its group swap the folder."""
    result = _check(root_paths({"/opt/specops": (0, 998, 0o2775)}))
    assert result.status is Status.WARN
    assert result.summary.startswith("base_dir, service_dir can be changed by someone besides root (group 998)")
    assert result.hint == "`chown root:root /opt/specops && chmod go-w /opt/specops` on the host"


def test_a_world_writable_site_packages_warns_without_run_as_too() -> None:
    result = _check(root_paths({SITE: (0, 0, 0o777)}), host=HOST)
    assert result.status is Status.WARN
    assert "(everyone)" in result.summary
    assert result.hint == f"{VENV_FIX} on the host; from then on, pip install as root only"


def test_a_package_pip_installed_by_the_engines_user_warns() -> None:
    """The folders are root's, but `torch/` in site-packages is sglang's: replacing torch runs as root."""
    torch = DeviceNode(path=f"{SITE}/torch", uid=998, gid=998, group="sglang", mode=0o755, is_dir=True)
    root = root_paths().model_copy(update={"entries": {SITE: OpenEntries(count=41, entries=[torch])}})
    result = _check(root)
    assert result.status is Status.WARN
    assert f"{SITE}: 41 entries root does not own alone: torch (uid 998 = the engine's user)" in result.evidence
    assert result.hint == f"{VENV_FIX} on the host; from then on, pip install as root only"


def test_a_sticky_world_writable_folder_above_is_fine() -> None:
    """/tmp (1777): others may create entries there, not rename root's."""
    result = _check(root_paths({"/opt": (0, 0, 0o1777)}))
    assert result.status is Status.PASS


def test_local_and_an_older_probe_are_skipped() -> None:
    assert run("root.owned", context(healthy_facts(), host=None)).status is Status.SKIP
    result = _check(None)
    assert (result.status, result.summary) == (
        Status.SKIP, "could not look at the owners of base_dir and the venv: the probe did not report it"
    )  # fmt: skip
