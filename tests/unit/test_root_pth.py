"""The attack: the engine's user (or code it was tricked into running) drops a `.pth` file into the venv's
site-packages. Python executes a `.pth` line that starts with `import` at every interpreter start, and the
probe, the rollback guard, its boot op and the watch run as root with that venv's interpreter. Each command
here is the one specops builds (taken from what the executor sent), run for real against a real venv: the
`.pth` must never run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from specops.commands.boot import boot_argv
from specops.commands.guard import WatchSettings
from specops.config.inventory import HostSpec
from specops.deploy.step_commands import guard_commands, watch_commands
from specops.host.local import LocalHost
from specops.host.recording import RecordingHost, reply
from specops.ops import guard
from specops.probe.run import probe, probe_deep
from specops.remote.probe.sglang import SPEC_INFO_REL
from tests.unit.guard_here import arm_here
from tests.unit.needs import need_root


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real venv (no pip: seconds) with a package of its own, `venvmark` 1.0, in its site-packages."""
    root = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = _site_packages(root)
    (site / "venvmark").mkdir()
    (site / "venvmark" / "__init__.py").write_text("")
    (site / "venvmark-1.0.dist-info").mkdir()
    (site / "venvmark-1.0.dist-info" / "METADATA").write_text("Name: venvmark\nVersion: 1.0\n")
    return root


def _site_packages(root: Path) -> Path:
    return next(root.glob("lib/python3.*/site-packages"))


@pytest.fixture
def marker(venv: Path, tmp_path: Path) -> Path:
    """The attacker's evil.pth: every interpreter start that processes it appends a line to `marker`."""
    marker = tmp_path / "pth-ran"
    evil = _site_packages(venv) / "evil.pth"
    evil.write_text(f"import os; open({str(marker)!r}, 'a').write('ran as %d\\n' % os.getpid())\n")
    yield marker
    evil.unlink()


def _spec(venv: Path, tmp_path: Path) -> HostSpec:
    return HostSpec.model_validate({"name": "gpu-a", "ssh": "gpu-a", "python": str(venv / "bin" / "python"),
                                    "model_path": "/models/none", "base_dir": str(tmp_path / "opt")})  # fmt: skip


def test_the_evil_pth_works_on_a_plain_start(venv: Path, marker: Path) -> None:
    """The attack is real: a plain start of this interpreter runs it (else the tests below prove nothing)."""
    subprocess.run([str(venv / "bin" / "python"), "-I", "-c", "pass"], check=True)
    assert marker.read_text().startswith("ran as ")


def test_the_probe_does_not_run_it_and_still_sees_the_venv(venv: Path, marker: Path, tmp_path: Path) -> None:
    """The facts probe, with a build root to parse (a subprocess import) and the venv's own packages."""
    root = tmp_path / "build"
    (root / SPEC_INFO_REL).parent.mkdir(parents=True)
    (root / SPEC_INFO_REL).write_text("raise SystemExit('not a real build')\n")
    facts = probe(LocalHost("gpu-a"), _spec(venv, tmp_path), extra_roots={"candidate": str(root)})
    assert not marker.exists(), marker.read_text()
    assert facts.python.prefix == str(venv)
    assert str(_site_packages(venv)) in facts.python.site_packages
    assert facts.dists.versions.get("venvmark") == "1.0"
    assert [info.label for info in facts.sglang] == ["candidate"]  # the parse ran (and fell back to the AST)


def test_the_folders_a_pth_names_are_still_seen(venv: Path, marker: Path, tmp_path: Path) -> None:
    """An editable sglang (`pip install -e`, a `.pth` naming its folder) is still the venv's sglang to the probe:
    only `import` lines are skipped."""
    editable = tmp_path / "checkout" / "python"
    (editable / SPEC_INFO_REL).parent.mkdir(parents=True)
    (editable / "sglang" / "__init__.py").write_text("")
    (editable / SPEC_INFO_REL).write_text("raise SystemExit('not a real build')\n")
    link = _site_packages(venv) / "__editable__.sglang.pth"
    link.write_text(f"{editable}\n")
    try:
        facts = probe(LocalHost("gpu-a"), _spec(venv, tmp_path))
    finally:
        link.unlink()
    assert not marker.exists(), marker.read_text()
    assert [(info.label, info.root) for info in facts.sglang] == [("venv", str(editable))]


def test_the_deep_probe_does_not_run_it(venv: Path, marker: Path, tmp_path: Path) -> None:
    deep = probe_deep(LocalHost("gpu-a"), _spec(venv, tmp_path), import_timeout=30)
    assert not marker.exists(), marker.read_text()
    assert deep.torch_ok is False and "torch" in (deep.torch_error or "")  # the import ran, in the venv


def _executed(spec: HostSpec, argv: tuple[str, ...] | list[str]) -> list[str]:
    """What systemd-run would start: the words from the interpreter on."""
    words = list(argv)
    return words[words.index(spec.python) :]


def _armed(spec: HostSpec, lock_dir: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Arm the guard through its executor (a real sh writes the guard file here); the timer's command."""
    (command,) = guard_commands(spec, "R2", "R1", str(lock_dir))
    arm_here(spec, [command], lock_dir.parent, monkeypatch)
    return _executed(spec, command.argv)


def test_the_guard_tick_does_not_run_it(
    venv: Path, marker: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, lock_dir = _spec(venv, tmp_path), tmp_path / "lock"
    lock_dir.mkdir()
    argv = _armed(spec, lock_dir, monkeypatch)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert not marker.exists(), marker.read_text()
    assert '"action": "none"' in done.stdout, done.stderr  # the guard itself ran: no lock, nothing to do


def test_the_boot_op_does_not_run_it(venv: Path, marker: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec, lock_dir = _spec(venv, tmp_path), tmp_path / "lock"
    lock_dir.mkdir()
    _armed(spec, lock_dir, monkeypatch)
    argv = boot_argv(spec, str(lock_dir), 90)
    subprocess.run(argv[: argv.index("systemd-run")], capture_output=True, timeout=60)  # the op, no timer
    assert not marker.exists(), marker.read_text()


def test_the_watch_does_not_run_it(venv: Path, marker: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec, lock_dir = _spec(venv, tmp_path), tmp_path / "lock"
    lock_dir.mkdir()
    _armed(spec, lock_dir, monkeypatch)
    recorder = RecordingHost("gpu-a", default=reply())
    settings = WatchSettings(window_s=1, timeout_s=1, failures=1, url="http://127.0.0.1:9/health_generate")
    guard.start_watch(recorder, *watch_commands(spec, "R2", settings, "R1", str(lock_dir)))
    subprocess.run(_executed(spec, recorder.commands[-1]), capture_output=True, timeout=60)
    assert not marker.exists(), marker.read_text()


def test_the_doctor_warns_when_the_engines_user_owns_the_venv(tmp_path: Path) -> None:
    """The precondition of the attack, seen by the real probe: site-packages chowned to the engine's user."""
    import os
    import pwd

    from tests.unit.doctor.factory import context, run

    need_root("giving site-packages to another user")
    root = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    nobody = pwd.getpwnam("nobody")
    os.chown(_site_packages(root), nobody.pw_uid, nobody.pw_gid)
    spec = _spec(root, tmp_path).model_copy(update={"run_as": "nobody"})
    result = run("root.owned", context(probe(LocalHost("gpu-a"), spec), host=spec))
    assert result.status.value == "warn"
    assert f"uid {nobody.pw_uid} = the engine's user" in result.summary
    assert result.hint.startswith(f"`chown -R root:root {root} && chmod -R go-w {root}`")


@pytest.mark.parametrize("system_site", [False, True])
def test_the_probe_sees_the_sys_path_a_normal_start_sees(tmp_path: Path, system_site: bool) -> None:
    """Without running `.pth` code, the same folders in the same order, and the venv's prefix."""
    from specops.remote.probe import sitepath

    root = tmp_path / "venv"
    flags = ["--system-site-packages"] if system_site else []
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", *flags, str(root)], check=True)
    (tmp_path / "extra").mkdir()
    (_site_packages(root) / "extra.pth").write_text(f"# a comment\n{tmp_path / 'extra'}\n")
    python = str(root / "bin" / "python")
    show = "import sys; print(repr((sys.prefix, sys.path)))"
    normal = subprocess.run([python, "-I", "-c", show], capture_output=True, text=True, check=True).stdout
    source = Path(sitepath.__file__).read_text() + f"\nenable_site_packages()\n{show}\n"
    probed = subprocess.run([python, "-I", "-S", "-c", source], capture_output=True, text=True, check=True).stdout
    assert probed == normal
