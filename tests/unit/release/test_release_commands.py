"""The pure builders and parsers of specops/commands/release.py: argv words, what is sent, how replies parse."""

from __future__ import annotations

import subprocess
import sys

import pytest

from specops.commands import release as cmd
from specops.commands.release import ReleaseInfo, ReplyError
from specops.config.inventory import HostSpec
from specops.remote.bundle import release_script

SPEC = HostSpec(name="llm-two", ssh="llm-two", python="/opt/venv/bin/python", model_path="/m", base_dir="/srv/o+p")


def test_every_op_runs_the_remote_script_isolated_with_plain_argv_words() -> None:
    argv = cmd.receive_argv(SPEC, "20260102T030405Z-abcdefabcdef", "20260101T000000Z-0123456789ab", "f" * 64)
    assert argv[:3] == ["/opt/venv/bin/python", "-IS", "-c"]
    assert argv[3] == release_script() and "def op_receive" in argv[3]
    assert argv[4:] == [
        "receive",
        "/srv/o+p/sglang",
        "20260102T030405Z-abcdefabcdef",
        "20260101T000000Z-0123456789ab",
        "f" * 64,
        "auto",
    ]
    assert cmd.receive_argv(SPEC, "r2", None, "h")[-3] == ""  # no base: a full push
    assert cmd.switch_argv(SPEC, "r2")[4:] == ["switch", "/srv/o+p/sglang", "r2"]
    assert cmd.prune_argv(SPEC, 5, {"b", "a"})[4:] == ["prune", "/srv/o+p/sglang", "5", "a,b"]
    assert cmd.update_manifest_argv(SPEC, "r2")[4:] == ["update-manifest", "/srv/o+p/sglang", "r2"]
    assert cmd.list_argv(SPEC)[4:] == ["list", "/srv/o+p/sglang"]
    assert cmd.manifest_path(SPEC, "r2") == "/srv/o+p/sglang/releases/r2/manifest.json"


@pytest.mark.parametrize("bad", ["", "../etc", "a/b", ".hidden", "-rf", "x" * 200, "a b"])
def test_release_ids_that_could_escape_or_confuse_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="not a release id"):
        cmd.switch_argv(SPEC, bad)


def test_remote_script_stays_well_under_the_kernels_single_argument_limit() -> None:
    assert len(release_script().encode()) < 40 * 1024  # MAX_ARG_STRLEN is 128 KiB; sh -c carries it whole


def test_the_release_script_starts_without_what_only_a_receive_needs() -> None:
    """A deploy waits for the push session's listing right after it takes the lock: the script's start imports
    none of the receive's modules (the session imports them once its listing is out)."""
    probe = (
        "import sys\n"
        "exec(compile(sys.argv[1], 'release', 'exec'), {'__name__': 'library'})\n"
        "print(sorted({'hashlib', 'tarfile', 'subprocess', 'tempfile'} & set(sys.modules)))\n"
    )
    argv = [sys.executable, "-IS", "-c", probe, release_script()]
    assert subprocess.run(argv, capture_output=True, text=True, check=True).stdout == "[]\n"


def test_files_to_send_is_the_manifest_plus_what_differs_from_the_base() -> None:
    files = {
        "same.py": {"size": 3, "mode": 0o644, "sha256": "a"},
        "edited.py": {"size": 3, "mode": 0o644, "sha256": "new"},
        "now_exec.py": {"size": 3, "mode": 0o755, "sha256": "c"},
        "added.py": {"size": 1, "mode": 0o644, "sha256": "d"},
        "link.py": {"link": "same.py"},
    }
    base = {
        "same.py": {"size": 3, "mode": 0o644, "sha256": "a"},
        "edited.py": {"size": 3, "mode": 0o644, "sha256": "old"},
        "now_exec.py": {"size": 3, "mode": 0o644, "sha256": "c"},
        "link.py": {"link": "same.py"},
        "removed.py": {"size": 1, "mode": 0o644, "sha256": "e"},
    }
    assert cmd.files_to_send(files, base) == ["manifest.json", "added.py", "edited.py", "link.py", "now_exec.py"]
    assert cmd.files_to_send(files, None) == ["manifest.json", *sorted(files)]


def test_local_tar_reads_a_nul_separated_list_and_stores_root_owned_entries() -> None:
    argv = cmd.tar_argv("/tmp/stage dir")
    assert argv[0] == "tar" and "--directory=/tmp/stage dir" in argv and "--null" in argv
    assert argv.index("--verbatim-files-from") < argv.index("--files-from=-") and "--no-recursion" in argv
    assert {"--numeric-owner", "--owner=0", "--group=0"} <= set(argv)


def test_reply_is_the_last_json_line_and_anything_else_is_a_reply_error() -> None:
    assert cmd.parse_reply('warning: noise\n{"ok": true, "id": "r1"}\n') == {"ok": True, "id": "r1"}
    for bad in ["", "Traceback (most recent call last):", '["ok"]', '{"id": 1}']:
        with pytest.raises(ReplyError, match="unexpected reply"):
            cmd.parse_reply(bad)


def test_listing_parses_sorts_and_marks_rollback_targets() -> None:
    reply = {
        "ok": True,
        "current": "20260103T000000Z-cccccccccccc",
        "releases": [
            {"id": "20260103T000000Z-cccccccccccc", "complete": True, "verified": False, "error": None},
            {"id": "20260101T000000Z-aaaaaaaaaaaa", "complete": True, "verified": True, "error": None,
             "profile": "ddtree", "gates": {"smoke": {"passed": True, "figures": {"tokens_per_s": 40.0}}}, "created_at": "2026-01-01T00:00:00Z"},
            {"id": "20260102T000000Z-bbbbbbbbbbbb", "complete": True, "verified": True, "error": "Expecting value"},
            {"id": "20260104T000000Z-dddddddddddd", "complete": False, "verified": True, "error": None},
        ],
    }  # fmt: skip
    listing = cmd.parse_listing(reply)
    assert listing.current == "20260103T000000Z-cccccccccccc"
    assert [r.id[:8] for r in listing.releases] == ["20260101", "20260102", "20260103", "20260104"]
    assert [r.rollback_target for r in listing.releases] == [True, False, False, False]
    assert [r.is_current for r in listing.releases] == [False, False, True, False]
    assert listing.releases[0].gates.figures == {"tokens_per_s": 40.0} and listing.releases[0].profile == "ddtree"
    newest = cmd.newest_complete(listing.releases)
    assert newest is not None and newest.id.startswith("20260103")
    target = cmd.newest_verified(listing.releases, exclude=listing.current)
    assert target is not None and target.id.startswith("20260101")
    assert cmd.newest_verified([ReleaseInfo(id="x", complete=True, verified=True)], exclude="x") is None
