"""Injection properties: no config value, host name, journal cursor, patch name or release id can change the argv
of a remote command or reach a shell as code.

Each property draws hostile text (shell and systemd metacharacters, quotes, newlines, NUL, unicode) and checks
that a value is either refused where it is loaded or stays exactly the argv word(s) it was meant to be: the
command line the Host sends (`wire_command`) splits back into the same words, the argv has the same length
as with a harmless value, and every `sh -c` script is the same constant text whatever the values (values are
`$1`.. arguments). Example counts stay modest: CI time. `EXAMPLES` counts what ran (docs/reliability.md).
"""

from __future__ import annotations

import shlex
import subprocess
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from specops.commands import journal, lock, release
from specops.commands.guard import WatchSettings, arm_argv, disarm_argvs, watch_argv
from specops.commands.probe import probe_argv
from specops.config.inventory import HostSpec
from specops.host.base import checked_argv, wire_command
from specops.ops import audit, forensics

pytestmark = pytest.mark.corpus  # the whole-product sweeps: outside the fast suite (pytest -m "not corpus"), run by CI

EXAMPLES: Counter[str] = Counter()
# derandomize: the same examples on every run (CI stays deterministic); database=None: no .hypothesis/ folder
PROPERTY = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip

METACHARS = [*" \t\n\r\x00\x07\x1b$`;|&<>(){}[]*?!#~'\"\\%=:,+@-./_", "$(id)", "`id`", "${IFS}", "\\n", "%n"]
ATTACKS = ["$(touch /tmp/pwned)", "`reboot`", "a; rm -rf /", "x\nExecStartPre=/bin/sh", "--host=0.0.0.0",
           "-oProxyCommand=id", "' || true '", '"; id; "', "%h/%n", "$HOME", "a\x00b", "..", "../../etc", "-", ""]  # fmt: skip
HOSTILE = st.one_of(
    st.sampled_from(ATTACKS),
    st.from_regex(r"/?[A-Za-z0-9._+@=,:%$/ -]{1,16}", fullmatch=True),  # near-valid: what the load may accept
    st.lists(st.one_of(st.sampled_from(METACHARS), st.sampled_from(list("abcXYZ019"))), max_size=12).map("".join),
    st.text(max_size=20),
)
NO_NUL = HOSTILE.filter(lambda text: "\x00" not in text)

BASE: dict[str, Any] = {"name": "llm-two", "ssh": "root@llm-two", "python": "/opt/venv/bin/python",
                        "model_path": "/models/target", "draft_model_path": "/models/draft", "profile": "ddtree"}  # fmt: skip
STRING_FIELDS = ["python", "service", "base_dir", "listen", "model_path", "draft_model_path", "served_model_name",
                 "cuda_home", "profile", "ssh"]  # fmt: skip
HARMLESS = {"python": "/usr/bin/python3", "service": "engine", "base_dir": "/srv/x", "listen": "127.0.0.2",
            "model_path": "/m/t", "draft_model_path": "/m/d", "served_model_name": "qwen", "cuda_home": "/usr/cuda",
            "profile": "nextn", "ssh": "root@host"}  # fmt: skip


def spec_with(field: str, value: object) -> HostSpec | None:
    """The host as specops.toml would load it with `field = value`, or None when the load refuses it."""
    try:
        return HostSpec.model_validate({**BASE, field: value})
    except ValidationError:
        return None


def remote_argvs(spec: HostSpec) -> dict[str, list[str]]:
    """Every remote command whose words come from the host's settings."""
    commands = {
        "release list": release.list_argv(spec),
        "release switch": release.switch_argv(spec, "20261130T021407Z-3f9c2a1b7d4e"),
        "release rollback": release.rollback_argv(spec, None, "manual"),
        "release prune": release.prune_argv(spec, spec.keep_releases, set()),
        "journal poll": journal.poll_argv(spec.unit_name, "s=1;i=2"),
        "journal invocation": journal.invocation_journal_argv(spec.unit_name),
        "journal": journal.journal_argv(spec.unit_name, "@1764400000", 50),
        "show": journal.show_argv(spec.unit_name),
        "probe": probe_argv(spec.python),
        "guard arm": arm_argv(spec, f"{spec.service_dir}/lock", 90, 1),
        "guard watch": watch_argv(
            spec,
            "20261130T021407Z-3f9c2a1b7d4e",
            f"{spec.service_dir}/lock",
            WatchSettings(300, 30, 3, f"http://{spec.listen}:{spec.port}/health_generate"),
            "20261129T021407Z-0a1b2c3d4e5f",
        ),
        "release mark bad": release.mark_bad_argv(spec, "20261130T021407Z-3f9c2a1b7d4e", "a reason", "who@where"),
        "lock": lock.lock_argv("acquire", f"{spec.service_dir}/lock", "token", 90),
        "audit read": ["sh", "-c", audit.READ_SCRIPT, "specops-audit", audit.host_audit_path(spec), "20"],
    }
    for index, argv in enumerate(disarm_argvs(spec)):
        commands[f"guard disarm {index}"] = argv
    return commands


def scripts(argv: list[str]) -> list[str]:
    """The code words of an argv: the text after `-c` (a shell or Python script)."""
    return [argv[i + 1] for i, word in enumerate(argv[:-1]) if word == "-c"]


def assert_same_shape(argv: list[str], baseline: list[str]) -> None:
    assert shlex.split(wire_command(checked_argv(argv))) == argv  # what the remote shell sees: these words
    assert len(argv) == len(baseline)  # no value added or removed a word
    assert scripts(argv) == scripts(baseline)  # no value is part of a script's text


def count(name: str) -> None:
    EXAMPLES[name] += 1


@PROPERTY
@given(field=st.sampled_from(STRING_FIELDS), value=HOSTILE)
def test_a_host_setting_is_refused_or_stays_its_own_argv_words(field: str, value: str) -> None:
    count("host settings keep remote argv")
    spec = spec_with(field, value)
    if spec is None:
        return
    baseline = remote_argvs(spec_with(field, HARMLESS[field]) or HostSpec.model_validate(BASE))
    for name, argv in remote_argvs(spec).items():
        assert_same_shape(argv, baseline[name])


@PROPERTY
@given(words=st.lists(NO_NUL, min_size=1, max_size=6))
def test_the_wire_command_splits_back_into_the_same_words(words: list[str]) -> None:
    count("wire command round trip")
    argv = ["prog", *words]
    assert shlex.split(wire_command(checked_argv(argv))) == argv


@PROPERTY
@given(word=HOSTILE.filter(lambda text: "\x00" in text))
def test_a_nul_byte_never_reaches_a_host(word: str) -> None:
    count("NUL refused before the wire")
    with pytest.raises(ValueError):
        checked_argv(["prog", word])


SH_BUILDERS: dict[str, Callable[[str], list[str]]] = {
    "lock root": lambda v: lock.lock_argv("acquire", v, "token", 90),
    "lock token": lambda v: lock.lock_argv("heartbeat", "/opt/specops/sglang/lock", v, 90),
    "journal unit": lambda v: journal.invocation_journal_argv(v),
    "poll unit": lambda v: journal.poll_argv(v, "s=1;i=2"),
    "poll cursor": lambda v: journal.poll_argv("sglang.service", v),
    "audit path": lambda v: ["sh", "-c", audit.READ_SCRIPT, "specops-audit", v, "20"],
    "diff path": lambda v: ["sh", "-c", forensics.DIFF_SCRIPT, forensics.DIFF_MARKER, "/a", "/b", v],
}


@PROPERTY
@given(builder=st.sampled_from(sorted(SH_BUILDERS)), value=NO_NUL)
def test_a_value_reaches_a_shell_only_as_a_positional_argument(builder: str, value: str) -> None:
    count("sh -c values are positional")
    baseline = SH_BUILDERS[builder]("harmless")
    try:
        argv = SH_BUILDERS[builder](value)
    except ValueError:  # refused by the builder (a lock token is alphanumeric)
        return
    if builder == "poll cursor" and not value:
        return  # no position: the journal from the start, one option fewer
    assert argv[:3] == baseline[:3] and argv[:2] == ["sh", "-c"]  # the script text is the constant
    assert value in argv[3:] and len(argv) == len(baseline)
    assert shlex.split(wire_command(argv)) == argv


@PROPERTY
@given(release_id=HOSTILE)
def test_a_release_id_is_refused_or_one_plain_word(release_id: str) -> None:
    count("release ids")
    spec = HostSpec.model_validate(BASE)
    try:
        argv = release.switch_argv(spec, release_id)
    except ValueError:
        return
    assert "/" not in release_id and not release_id.startswith((".", "-")) and release_id.strip() == release_id
    assert argv[-1] == release_id and argv[:-1] == release.script_argv(spec, "switch")
    assert shlex.split(wire_command(argv)) == argv


FILE_NAME = NO_NUL.filter(lambda name: name not in ("", ".", "..") and "/" not in name and len(name.encode()) < 200)


@PROPERTY
@given(name=FILE_NAME)
def test_a_patch_file_name_is_one_argument_of_patch_never_a_shell(
    name: str, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    count("patch names")
    from specops.build import patches

    folder = tmp_path_factory.mktemp("patch")
    (folder / "stage" / "sglang").mkdir(parents=True)
    patch = folder / name
    patch.write_text("--- a/sglang/x.py\n+++ b/sglang/x.py\n@@ -1 +1 @@\n-a\n+b\n", encoding="utf-8")
    seen: list[tuple[list[str], dict[str, Any]]] = []

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        seen.append((argv, kwargs))
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(patches.subprocess, "run", run)
    patches.apply_patch(folder / "stage", patch)
    argv, kwargs = seen[0]
    assert argv == ["patch", "-p1", "--forward", "--batch", "--no-backup-if-mismatch", "-i", str(patch.resolve())]
    assert not kwargs.get("shell")
