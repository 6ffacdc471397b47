"""The files of a pod's preflight ConfigMap: the doctor's probe, its request for this host, the verdict entry.

Why the probe's own request: the image's sglang is checked with its own parser against the container's argv
(the unit's, bound to 0.0.0.0), and the model paths are the ones the pod mounts, exactly as the doctor checks
a host over SSH. Host-only parts of the request (the unit, the port, the service user) find nothing in a pod
and are not judged there.
"""

from __future__ import annotations

import json

from specops.config.loader import Target
from specops.probe.run import build_request
from specops.remote.bundle import preflight_source, probe_source

ENTRY, PROBE, REQUEST = "preflight.py", "probe.py", "request.json"


def preflight_request(target: Target) -> dict[str, object]:
    """build_request for the host and profile, with the pod's interpreter, argv and no host-only parts."""
    from specops.commands.k8s import BIND_ALL, DIST_INIT_PORT, container_argv

    request = build_request(target.host, target.profile)
    argv = [word.replace("$$", "$") for word in container_argv(target)]
    argv[argv.index("--host") + 1] = BIND_ALL
    nodes = target.host.k8s.nodes
    if nodes > 1:  # what LWS's variables hold in the leader's pod, so the build's parser sees real values
        argv += ["--dist-init-addr", f"127.0.0.1:{DIST_INIT_PORT}", "--nnodes", str(nodes), "--node-rank", "0"]
    request.update(python=target.host.k8s.python, server_argv=argv[3:], ports=[], run_as=None, run_as_groups=[])
    request.update(listen=BIND_ALL, unit=None)
    return request


def preflight_files(target: Target) -> dict[str, str]:
    """ConfigMap data: name -> text (the entry runs probe.py with request.json)."""
    return {
        ENTRY: preflight_source(),
        PROBE: probe_source(),
        REQUEST: json.dumps(preflight_request(target), indent=2, sort_keys=True) + "\n",
    }
