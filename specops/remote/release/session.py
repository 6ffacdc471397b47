"""The host side of a push conversation (`session`), and the script's entry point; bundled last.

Why: a deploy needs the host's releases before it can push (is this tree there already? which release is the
base to hard-link from?), and every exec costs a login shell on the host (~200 ms where root's .bashrc runs
pyenv or conda init). So `session` answers both on ONE exec: it prints the listing as its first line, then
serves requests, one JSON line each, from the same stdin that then carries the tar (started as
`session DIR on-request`, it first waits for {"op": "list"}: a deploy starts it before it holds the lock):

  {"op": "files", "id": ID}       one line back: {"ok": true, "files": {...}} from releases/ID/manifest.json
  {"op": "room", "stale_after_s": S}
                                  removes unfinished leftovers untouched for S seconds, then one line back:
                                  {"ok": true, "removed": [...], "free": BYTES, "path": SERVICE_DIR}
  {"op": "receive", "args": [ID, BASE_ID, TREE_HASH, EXTRACTOR]}
                                  the rest of stdin is the tar; the last line is the receive's reply (below)
  {"op": "end"} or EOF            nothing to push: exit 0

The request's ids are checked here as well as by the client, so a malformed request can never reach a path
outside releases/.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from specops.remote.release.catalog import op_list, op_prune, op_update_manifest, room_reply
from specops.remote.release.hostdata import Refused, checked_release_id
from specops.remote.release.marks import op_mark_bad, op_unmark_bad
from specops.remote.release.receive import op_receive
from specops.remote.release.relconfig import op_restore_config
from specops.remote.release.rollback import op_rollback
from specops.remote.release.script import LAZY_IMPORTS, op_switch, read_manifest

if TYPE_CHECKING:
    import threading


def say(reply: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(reply, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def files_reply(service_dir: str, release_id: str) -> dict[str, Any]:
    """The files map of a base release; unreadable is an answer (the client then pushes the whole tree), but a
    manifest from a newer specops is refused like everywhere else."""
    try:
        files = read_manifest(os.path.join(service_dir, "releases", release_id)).get("files")
    except (OSError, ValueError) as error:
        return {"ok": False, "kind": "manifest", "error": str(error)}
    return {"ok": True, "files": files if isinstance(files, dict) else None}


def op_session(service_dir: str, when: str = "") -> dict[str, Any]:
    if when == "on-request":
        warm_up()  # while the client takes the host's lock
        if not _listing_requested():
            return {"ended": True}
        say({"ok": True, **op_list(service_dir)})
        return serve(service_dir)
    say({"ok": True, **op_list(service_dir)})
    aside = warm_up_aside()
    try:
        return serve(service_dir)
    finally:
        aside.join()  # the interpreter never ends while a module is half imported


def serve(service_dir: str) -> dict[str, Any]:
    """The session's requests after its listing, until a receive or the end."""
    while True:
        line = sys.stdin.buffer.readline()
        request = json.loads(line) if line.strip() else {"op": "end"}
        op = request.get("op") if isinstance(request, dict) else None
        if op == "files":
            say(files_reply(service_dir, checked_release_id(request.get("id"))))
        elif op == "room":
            say(room_reply(service_dir, float(request.get("stale_after_s") or 0)))
        elif op == "receive":
            args = request.get("args")
            if not isinstance(args, list) or len(args) != 4 or not all(isinstance(a, str) for a in args):
                raise Refused("request", "receive needs [id, base_id, tree_hash, extractor]")
            release_id, base_id = checked_release_id(args[0]), checked_release_id(args[1], empty_ok=True)
            return op_receive(service_dir, release_id, base_id, args[2], args[3])
        elif op == "end":
            return {"ended": True}
        else:
            raise Refused("request", "unknown request " + repr(op))


def warm_up() -> None:
    """Import what a receive needs (script.LAZY_IMPORTS, ~10 ms), not on the receive's own time: the listing
    goes out without them."""
    for name in LAZY_IMPORTS:
        __import__(name)


def warm_up_aside() -> threading.Thread:
    """warm_up in a thread, once the listing is out: a client that planned its push before the listing came (a
    guessed base) asks for room and sends the tar at once, and this loop answers beside the imports. A request
    that needs a module still loading waits for it (Python's import lock)."""
    import threading

    thread = threading.Thread(target=warm_up, name="warm-up", daemon=True)
    thread.start()
    return thread


def tar_error() -> type[Exception]:
    """tarfile's error, looked up only once an op failed: most ops never load tarfile."""
    import tarfile

    return tarfile.TarError


def _listing_requested() -> bool:
    """`session DIR on-request`: started before the client holds the host's lock (the login shell and this
    interpreter start meanwhile), the listing waits for {"op": "list"}; anything else ends the session."""
    line = sys.stdin.buffer.readline()
    request = json.loads(line) if line.strip() else {}
    return isinstance(request, dict) and request.get("op") == "list"


OPS: dict[str, Callable[..., dict[str, Any]]] = {"list": op_list, "receive": op_receive, "switch": op_switch}
OPS.update({"prune": op_prune, "update-manifest": op_update_manifest, "session": op_session})
OPS.update({"rollback": op_rollback, "mark-bad": op_mark_bad, "unmark-bad": op_unmark_bad})
OPS["restore-config"] = op_restore_config
# the guard file adds "guard" and "watch" (guard.py, watch.py): only its timer and its watch service run them


def main(argv: list[str]) -> int:
    os.umask(0o022)
    try:
        result = OPS[argv[0]](*argv[1:])
    except Refused as error:
        print(json.dumps({"ok": False, "kind": error.kind, "error": str(error), **error.details}))
        return 3
    except (OSError, ValueError, tar_error()) as error:
        print(json.dumps({"ok": False, "kind": type(error).__name__, "error": str(error)}))
        return 3
    print(json.dumps({"ok": True, **result}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
