"""Where a receive starts: the new release's folder, claimed under the deploy lock (bundled after script.py).

Why a leftover may be replaced: release ids name the second and the content, so a deploy killed mid-push and
the next deploy of the same build within that second ask for the same id. The folder the killed push left is
`unfinished` (or has neither the marker nor a manifest: stopped between its mkdir and the marker); it never
served and can never be switched to, and the receive runs under the lock that the killed deploy lost. A
complete release with that id is never replaced: it may be current or a rollback target.
"""

from __future__ import annotations

import errno
import os
import shutil

from specops.remote.release.hostdata import Refused
from specops.remote.release.script import MANIFEST, UNFINISHED

PRIVATE = 0o700  # a release folder until it verified (root only)


def claim_release_dir(releases: str, release_id: str) -> bool:
    """Create `releases/<id>` (0700: private until verified) with its `unfinished` marker; True when it replaced
    an unfinished leftover.

    Why 0700: until the receive has normalised every mode and the tree hash verified, the folder may hold what
    the build had (a 0666 file, a 0777 folder); no local user of the host may open, watch or keep an fd on any
    of it. The receive makes it 0755 (what the engine's run_as user needs) only once it verified."""
    root = os.path.join(releases, release_id)
    replaced = False
    try:
        os.mkdir(root, PRIVATE)
    except FileExistsError:
        if not is_unfinished_leftover(root):
            raise Refused("exists", "release " + release_id + " already exists on the host") from None
        trash = os.path.join(releases, ".trash-" + release_id + "-" + str(os.getpid()))
        os.rename(root, trash)  # gone from listings at once, even if rmtree fails below
        shutil.rmtree(trash, ignore_errors=True)
        os.mkdir(root, PRIVATE)
        replaced = True
    open(os.path.join(root, UNFINISHED), "w").close()
    return replaced


def is_unfinished_leftover(root: str) -> bool:
    """A real folder (not a symlink) that a receive began and never verified."""
    if os.path.islink(root) or not os.path.isdir(root):
        return False
    return os.path.lexists(os.path.join(root, UNFINISHED)) or not os.path.lexists(os.path.join(root, MANIFEST))


def is_disk_full(error: BaseException) -> bool:
    """ENOSPC/EDQUOT from Python, or GNU tar's words for them ("Wrote only N of M bytes" is its short write)."""
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(error)
    return "No space left on device" in text or "Disk quota exceeded" in text or "Wrote only" in text
