"""service.user: the run_as user exists, the unit's groups exist, and it can open the GPU device nodes."""

from __future__ import annotations

import grp
import os
import pwd

from specops.config.inventory import HostSpec
from specops.doctor.model import CheckResult, Status
from specops.probe.facts import AccountFacts, DeviceNode, PathChain, ServiceUserFacts
from specops.remote.probe.account import gather_service_user
from tests.unit.doctor.factory import HOST, context, healthy_facts, replace, run

SERVED = replace(HOST, run_as="sglang", run_as_groups=["video"])
USER = AccountFacts(name="sglang", exists=True, uid=998, gid=998, primary_group="sglang", member_of=[])
NVIDIA0 = DeviceNode(path="/dev/nvidia0", uid=0, gid=44, group="video", mode=0o660)
CTL = DeviceNode(path="/dev/nvidiactl", uid=0, gid=0, group="root", mode=0o666)
RENDER = DeviceNode(path="/dev/dri/renderD128", uid=0, gid=105, group="render", mode=0o660)


def _facts(user: AccountFacts = USER, groups: dict[str, int | None] | None = None, devices: list[DeviceNode] | None = None) -> ServiceUserFacts:  # fmt: skip
    return ServiceUserFacts(
        user=user, groups={"sglang": 998, "video": 44} if groups is None else groups, devices=devices or [NVIDIA0, CTL]
    )


def _check(facts: ServiceUserFacts | None, host: HostSpec = SERVED) -> CheckResult:
    return run("service.user", context(healthy_facts(service_user=facts), host=host))


def test_a_root_engine_has_nothing_to_check() -> None:
    result = run("service.user", context(healthy_facts(), host=HOST))
    assert (result.status, result.summary) == (Status.SKIP, "the engine runs as root (no run_as)")


def test_the_user_with_the_device_group_passes() -> None:
    result = _check(_facts())
    assert (result.status, result.summary) == (Status.PASS, "user sglang exists and can open the 2 GPU device nodes")
    assert "/dev/nvidia0: mode 0660, owner uid 0, group video" in result.evidence


def test_a_missing_user_fails_with_the_useradd_line() -> None:
    result = _check(_facts(user=AccountFacts(name="sglang")))
    assert result.status is Status.FAIL
    assert result.summary.startswith("user sglang does not exist on the host")
    assert (
        "useradd --system --user-group --no-create-home --shell /usr/sbin/nologin --groups video sglang" in result.hint
    )


def test_a_missing_supplementary_group_fails_naming_the_groups_that_own_the_nodes() -> None:
    host = replace(SERVED, run_as_groups=["render"])
    result = _check(_facts(groups={"sglang": 998, "render": None}), host)
    assert result.status is Status.FAIL
    assert result.summary.startswith("group render does not exist on the host")
    assert "hosts.gpu-one.run_as_groups" in result.hint and "belong to: video" in result.hint


def test_a_node_of_a_group_the_user_lacks_fails_and_names_the_group_to_add() -> None:
    host = replace(SERVED, run_as_groups=[])
    result = _check(_facts(groups={"sglang": 998}, devices=[NVIDIA0, CTL, RENDER]), host)
    assert result.status is Status.FAIL
    assert result.summary == "sglang cannot open /dev/nvidia0, /dev/dri/renderD128: the engine would see no GPU"
    assert result.hint.startswith("add render, video to hosts.gpu-one.run_as_groups")


def test_membership_in_etc_group_is_enough_without_supplementary_groups() -> None:
    host = replace(SERVED, run_as_groups=[])
    user = USER.model_copy(update={"member_of": ["video"]})
    result = _check(_facts(user=user, groups={"sglang": 998}), host)
    assert result.status is Status.PASS


def test_the_probe_section_reports_a_real_account_and_the_device_nodes() -> None:
    me = pwd.getpwuid(os.getuid())
    primary = grp.getgrgid(me.pw_gid).gr_name
    answer = gather_service_user({"run_as": me.pw_name, "run_as_groups": ["no-such-group-x"]})
    assert answer is not None
    assert answer["user"]["exists"] and answer["user"]["uid"] == me.pw_uid
    assert answer["user"]["primary_group"] == primary
    assert answer["groups"]["no-such-group-x"] is None
    assert ServiceUserFacts.model_validate(answer).user.name == me.pw_name
    assert gather_service_user({"run_as": None}) is None
    assert gather_service_user({"run_as": "no-such-user-x"})["user"] == {"name": "no-such-user-x", "exists": False}  # type: ignore[index]


def _chain(*nodes: tuple[str, int, bool]) -> PathChain:
    chain = [DeviceNode(path=p, uid=0, gid=0, group="root", mode=mode, is_dir=is_dir) for p, mode, is_dir in nodes]
    return PathChain(path="/opt/venv/bin/python", target=chain[-1].path, exists=True, chain=chain)


def test_an_interpreter_behind_a_closed_home_folder_fails_naming_the_folder() -> None:
    python = _chain(
        ("/", 0o755, True), ("/opt", 0o755, True), ("/root", 0o700, True), ("/root/py/python3", 0o755, False)
    )
    result = _check(_facts().model_copy(update={"paths": {"python": python}}))
    assert result.status is Status.FAIL
    assert result.summary == "sglang cannot run /opt/venv/bin/python (/root: uid 0, group root, mode 0700)"
    assert result.hint.startswith("`chmod o+x /root` on the host")


def test_a_model_file_only_root_may_read_fails() -> None:
    model = _chain(("/", 0o755, True), ("/models", 0o755, True), ("/models/m", 0o700, True))
    result = _check(_facts().model_copy(update={"paths": {"target": model}}))
    assert result.status is Status.FAIL and result.hint.startswith("`chmod o+rx /models/m`")


def test_reachable_paths_pass() -> None:
    python = _chain(("/", 0o755, True), ("/usr", 0o755, True), ("/usr/bin/python3", 0o755, False))
    result = _check(_facts().model_copy(update={"paths": {"python": python}}))
    assert result.status is Status.PASS
