"""Shell completion as a shell drives it: the installed script, COMP_WORDS/COMP_CWORD, names from the
inventory, release ids from the local audit log, and a fast path that loads nothing heavy."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.clirun import run_cli

INVENTORY = """\
[defaults]
python = "/opt/venv/bin/python"
model_path = "/models/target"

[hosts.llm-one]
ssh = "llm-one"

[hosts.llm-two]
ssh = "llm-two"

[hosts.gpu-box]
ssh = "gpu-box"

[groups]
gpu = ["llm-one", "llm-two"]
"""
BIN = Path(sys.executable).parent
BASH = shutil.which("bash") or "/bin/bash"


@pytest.fixture
def home(config_dir: Path) -> Path:
    (config_dir / "specops.toml").write_text(INVENTORY, encoding="utf-8")
    return config_dir / "home"


def _bash(script: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    return subprocess.run([BASH, "--norc", "-c", script], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=60, check=False)  # fmt: skip


def _complete_in_bash(line: str, cwd: Path, home: Path) -> list[str]:
    """Load `specops completion bash`, then press Tab after `line` the way bash does: COMP_WORDS/COMP_CWORD."""
    script = (
        'eval "$(specops completion bash)"\n'
        f"COMP_WORDS=({line})\n"
        f"COMP_CWORD={len(line.split()) - (0 if line.endswith(' ') else 1)}\n"
        "_specops_completion specops\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = _bash(script, cwd, home)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_bash_completes_host_names_from_the_inventory(config_dir: Path, home: Path) -> None:
    assert _complete_in_bash("specops render llm", config_dir, home) == ["llm-one", "llm-two"]
    assert _complete_in_bash("specops rollback ", config_dir, home) == ["llm-one", "llm-two", "gpu-box"]
    assert _complete_in_bash("specops lock status ", config_dir, home) == ["llm-one", "llm-two", "gpu-box", "gpu"]


def test_bash_completes_commands_options_groups_and_profiles(config_dir: Path, home: Path) -> None:
    assert _complete_in_bash("specops ro", config_dir, home) == ["rollback"]
    assert _complete_in_bash("specops lock ", config_dir, home) == ["release", "status"]
    assert _complete_in_bash("specops deploy g", config_dir, home) == ["gpu-box", "gpu"]
    assert _complete_in_bash("specops render llm-two --profile ", config_dir, home) == ["ddtree", "dflash", "nextn"]
    assert "--lock-wait" in _complete_in_bash("specops rollback llm-two --", config_dir, home)
    assert _complete_in_bash("specops config schema ", config_dir, home) == ["config", "profile"]


AAAA, BBBB, CCCC, DDDD, EEEE = (f"2026010{day}T000000Z-{tag * 4}" for day, tag in zip("12345", "abcde", strict=True))


def _audit_log(home: Path) -> None:
    """llm-two: A verified, B verified, C rolled back (bad, A serves), A again, D verified, E deployed
    unverified (current), A marked bad; llm-one: one release of its own."""

    def deploy(to: str, outcome: str, was: str | None = None, **more: object) -> dict[str, object]:
        return {"host": "llm-two", "action": "deploy", "from": was, "to": to, "outcome": outcome, **more}

    entries = [deploy(AAAA, "deployed"), deploy(BBBB, "deployed", AAAA),
               deploy(CCCC, "rolled-back", BBBB, rollback={"from": CCCC, "to": AAAA}),
               deploy(DDDD, "deployed", AAAA), deploy(EEEE, "failed", DDDD),
               {"host": "llm-two", "action": "mark-bad", "to": AAAA, "outcome": "marked"},
               {"host": "llm-one", "action": "deploy", "from": None, "to": "20260109T000000Z-ffff",
                "outcome": "deployed"}]  # fmt: skip
    state = home / ".local" / "state" / "specops"
    state.mkdir(parents=True)
    (state / "audit.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")


def test_each_release_option_offers_only_the_ids_its_command_accepts_newest_first(config_dir: Path, home: Path) -> None:
    _audit_log(home)
    assert _complete_in_bash("specops rollback llm-two --to ", config_dir, home) == [DDDD, BBBB]  # verified, good
    assert _complete_in_bash("specops releases llm-two --mark-bad ", config_dir, home) == [EEEE, DDDD, BBBB]
    assert _complete_in_bash("specops releases llm-two --unmark-bad ", config_dir, home) == [CCCC, AAAA]
    assert _complete_in_bash("specops diagnose llm-two --release ", config_dir, home) == [
        EEEE, DDDD, CCCC, BBBB, AAAA]  # fmt: skip
    assert _complete_in_bash("specops rollback llm-one --to ", config_dir, home) == []  # its one release serves


def test_check_ids_and_the_second_host_of_diff_complete(config_dir: Path, home: Path) -> None:
    assert _complete_in_bash("specops doctor llm-two --only torchcodec.", config_dir, home) == [
        "torchcodec.variant", "torchcodec.abi", "torchcodec.ffmpeg"]  # fmt: skip
    assert _complete_in_bash("specops doctor llm-two --only gpu.driver,cuda.", config_dir, home) == [
        "gpu.driver,cuda.driver_vs_torch", "gpu.driver,cuda.userspace_mix"]  # fmt: skip
    assert _complete_in_bash("specops deploy gpu --skip-check disk", config_dir, home) == ["disk.free"]
    assert _complete_in_bash("specops diff llm-two llm", config_dir, home) == ["llm-one", "llm-two"]


def test_install_completion_writes_a_script_bash_loads(config_dir: Path, home: Path) -> None:
    done = _bash("specops --install-completion; true", config_dir, home)
    assert "bash completion installed in" in done.stdout, done.stdout + done.stderr
    assert "source '" in (home / ".bashrc").read_text(encoding="utf-8")
    script = (home / ".bash_completions" / "specops.sh").read_text(encoding="utf-8")
    assert "_SPECOPS_COMPLETE=complete_bash" in script
    loaded = _bash(f"source {home}/.bashrc; COMP_WORDS=(specops status llm-o); COMP_CWORD=2; "
                   '_specops_completion specops; echo "${COMPREPLY[@]}"', config_dir, home)  # fmt: skip
    assert loaded.stdout.strip() == "llm-one"


@pytest.mark.parametrize(("shell", "needle"), [("bash", "complete -o default -F _specops_completion specops"),
                                               ("zsh", "#compdef specops"), ("fish", "complete --command specops")])  # fmt: skip
def test_completion_prints_each_shells_script(capsys: pytest.CaptureFixture[str], shell: str, needle: str) -> None:
    result = run_cli(capsys, "completion", shell)
    assert result.code == 0
    assert needle in result.out
    assert "_SPECOPS_COMPLETE=complete_" + shell in result.out


def test_zsh_and_fish_replies(config_dir: Path, home: Path) -> None:
    env = {**os.environ, "HOME": str(home), "_TYPER_COMPLETE_ARGS": "specops status llm-t"}
    zsh = subprocess.run([BIN / "specops"], env={**env, "_SPECOPS_COMPLETE": "complete_zsh"}, cwd=config_dir,
                         capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert zsh.stdout.strip() == """_arguments '*: :(("llm-two":"host"))'"""
    fish = subprocess.run([BIN / "specops"], env={**env, "_SPECOPS_COMPLETE": "complete_fish",
                          "_TYPER_COMPLETE_FISH_ACTION": "get-args"}, cwd=config_dir, capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert fish.stdout == "llm-two\thost\n"


def test_a_completion_call_loads_nothing_heavy_and_is_fast(config_dir: Path, home: Path) -> None:
    code = (
        "import sys, time\n"
        "start = time.perf_counter()\n"
        "from specops.cli.entry import entry\n"
        "try:\n    entry()\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in ('typer', 'click', 'rich', 'pydantic', 'paramiko', 'httpx', 'jinja2')"
        " if m in sys.modules)\n"
        "print('HEAVY=' + ','.join(heavy), 'MS=%d' % ((time.perf_counter() - start) * 1000), file=sys.stderr)\n"
    )
    env = {**os.environ, "HOME": str(home), "_SPECOPS_COMPLETE": "complete_bash",
           "COMP_WORDS": "specops status llm", "COMP_CWORD": "2"}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=config_dir, capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert done.stdout.split() == ["llm-one", "llm-two"]
    assert "HEAVY= " in done.stderr, done.stderr
    # the whole process, interpreter start included: CPU time (user + system), which a loaded machine does not
    # inflate the way it does wall time; best of five
    times = []
    for _ in range(5):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([BIN / "specops"], env=env, cwd=config_dir, capture_output=True, timeout=60, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    assert min(times) < 0.1, f"completion took {min(times) * 1000:.0f} ms of CPU"


def test_the_fast_path_table_matches_the_app() -> None:
    from specops.cli.cmd_completion import table_data
    from specops.cli.completion_table import TABLE

    assert table_data() == TABLE, "regenerate: python -m specops.cli.cmd_completion, then ruff format"
