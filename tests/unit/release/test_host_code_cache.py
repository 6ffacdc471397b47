"""The host's compiled-code cache (remote/codecache.py), run as the host runs it: a new `python -IS -c` process.

What an operator relies on: the script that runs is the one specops sent, a cache file anyone else could have
written is never used, and no state of the cache (missing, torn, unwritable) can stop a script.
"""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specops.remote import codecache
from specops.remote.bundle import cached_script
from specops.remote.runner import CACHED_FROM_CHARS, run_inline
from tests.unit.needs import need_root

# a script long enough to be worth caching, and whose output says which text ran
TEXT = "import sys\nprint('sent text ran', sys.argv[1:])\n" + "# padding\n" * 2000


def run(cache: Path, text: str = TEXT) -> str:
    done = subprocess.run(
        [sys.executable, "-IS", "-c", cached_script(text), "a1"],
        env={**os.environ, "XDG_CACHE_HOME": str(cache)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stderr == ""
    return done.stdout


def folder(cache: Path) -> Path:
    return cache / "specops" / "host-code"


def kept_file(cache: Path, text: str = TEXT) -> Path:
    return folder(cache) / codecache.code_file_name(text, "<string>")


def forge(path: Path, text: str, code_text: str, mode: int = 0o600) -> None:
    """A cache record for `text` whose code is compiled from `code_text`."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_bytes(marshal.dumps((text, "<string>", compile(code_text, "<string>", "exec"))))
    path.chmod(mode)


FORGED = "print('forged code ran')\n"


def test_the_first_run_keeps_the_code_private_and_the_next_runs_use_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert run(cache) == "sent text ran ['a1']\n"
    kept = kept_file(cache)
    assert [p.name for p in folder(cache).iterdir()] == [kept.name]
    assert oct(folder(cache).stat().st_mode & 0o777) == "0o700"
    assert oct(kept.stat().st_mode & 0o777) == "0o600"
    before = kept.stat()
    assert run(cache) == "sent text ran ['a1']\n"
    after = kept.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # read, not written again
    # and it is really used: a record of this user's own, 0600, for this very text, is what runs
    forge(kept, TEXT, FORGED)
    assert run(cache) == "forged code ran\n"


def test_code_kept_for_another_text_never_runs(tmp_path: Path) -> None:
    """Same file name (a changed script whose length and checksum collide): the whole text is compared."""
    cache = tmp_path / "cache"
    forge(kept_file(cache), TEXT.replace("sent", "older"), FORGED)
    assert run(cache) == "sent text ran ['a1']\n"
    assert run(cache) == "sent text ran ['a1']\n"  # the wrong record was replaced by the right one


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o640])
def test_a_kept_file_others_may_write_or_read_is_not_used(tmp_path: Path, mode: int) -> None:
    cache = tmp_path / "cache"
    forge(kept_file(cache), TEXT, FORGED, mode)
    assert run(cache) == "sent text ran ['a1']\n"


def test_a_kept_file_of_another_user_is_not_used(tmp_path: Path) -> None:
    need_root("only root can give the file to another user")
    cache = tmp_path / "cache"
    forge(kept_file(cache), TEXT, FORGED)
    os.chown(kept_file(cache), 65534, 65534)
    assert run(cache) == "sent text ran ['a1']\n"


def test_a_cache_folder_others_may_write_is_neither_used_nor_written(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    forge(kept_file(cache), TEXT, FORGED)
    (cache / "specops").chmod(0o777)
    assert run(cache) == "sent text ran ['a1']\n"
    assert [p.name for p in folder(cache).iterdir()] == [kept_file(cache).name]  # nothing new was written
    assert marshal.loads(kept_file(cache).read_bytes())[0] == TEXT  # and the forged one left as it was


def test_a_symlinked_cache_folder_is_not_followed(tmp_path: Path) -> None:
    cache, elsewhere = tmp_path / "cache", tmp_path / "elsewhere"
    forge(elsewhere / kept_file(cache).name, TEXT, FORGED)
    (cache / "specops").mkdir(parents=True)
    (cache / "specops" / "host-code").symlink_to(elsewhere)
    assert run(cache) == "sent text ran ['a1']\n"
    assert [p.name for p in elsewhere.iterdir()] == [kept_file(cache).name]


def test_no_usable_cache_still_runs_the_script(tmp_path: Path) -> None:
    """A cache root that is a file, a torn record: the script runs as it would without a cache."""
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    assert run(not_a_folder) == "sent text ran ['a1']\n"
    cache = tmp_path / "cache"
    assert run(cache) == "sent text ran ['a1']\n"
    kept_file(cache).write_bytes(kept_file(cache).read_bytes()[:100])
    assert run(cache) == "sent text ran ['a1']\n"
    assert marshal.loads(kept_file(cache).read_bytes())[0] == TEXT  # rewritten whole


def test_a_python_without_zlib_runs_the_script_without_the_cache(tmp_path: Path) -> None:
    """zlib names the kept files; an interpreter built without it compiles every time, as before the cache."""
    cache = tmp_path / "cache"
    no_zlib = "import sys\nsys.modules['zlib'] = None\n" + cached_script(TEXT)
    done = subprocess.run([sys.executable, "-IS", "-c", no_zlib, "a1"], env={**os.environ, "XDG_CACHE_HOME": str(cache)},
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "sent text ran ['a1']\n", "")
    assert list(folder(cache).iterdir()) == []


def test_the_oldest_kept_files_go(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    for number in range(codecache.KEEP_CODE_FILES + 2):
        assert run(cache, TEXT + f"# version {number}\n") == "sent text ran ['a1']\n"
        os.utime(kept_file(cache, TEXT + f"# version {number}\n"), ns=(number * 10**9, number * 10**9))
    kept = sorted(p.name for p in folder(cache).iterdir())
    wanted = sorted(kept_file(cache, TEXT + f"# version {n}\n").name for n in range(2, codecache.KEEP_CODE_FILES + 2))
    assert kept == wanted


def test_the_runner_keeps_only_long_scripts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A conversation's inline scripts: the release script's code is kept, a short script (a lock's, an audit
    line's, which may carry values of this deploy) is never written down."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    short = "import sys\nprint('short', sys.argv[1:])\n"
    assert len(short) < CACHED_FROM_CHARS <= len(TEXT)
    assert run_inline(short, ["x"], None, 30.0, b"")[:2] == (0, b"short ['x']\n")
    assert not folder(tmp_path / "cache").exists()
    assert run_inline(TEXT, ["y"], None, 30.0, b"")[:2] == (0, b"sent text ran ['y']\n")
    assert [p.name for p in folder(tmp_path / "cache").iterdir()] == [kept_file(tmp_path / "cache").name]
