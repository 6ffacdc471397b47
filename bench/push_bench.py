"""Push benchmark: specops push vs `tar | ssh tar x` (full tree) and vs `rsync -a` (one-line patch), one run.

Run as root: `python -m bench.push_bench [--rounds 5] [--write docs/performance.md]`. It starts one test host,
mounts a tmpfs on the host's /opt/specops (like docs/reference transfer-perf: this VM's ext4 creates files so
slowly that it would hide every transport difference), generates a tree shaped like sglang-0.5.23 (5,777 files,
~126 MB; p50 5.7 KB, five large binaries), and runs every case once per round, round-robin with a rotating
first case. Ratios are taken per round (same load) before the median.
Every timed case includes its own connection setup.

Cases: full_specops (connect + push_release with no base), full_tar_ssh (`tar cf - | ssh 'tar xf -'`),
patch_specops (connect + one push session: the listing, then the push of a one-file change over the previous
release, as `specops deploy` does), patch_rsync
(`rsync -a` of the same change onto the previous state). Sources alternate tree/patched so each patch run
changes exactly one file.

`--breakdown` instead times the parts of the specops cases (medians over the rounds): connection setup, one
exec of `true` (the host's login shell per channel), the session start (exec + listing), and each push split
into the local part (manifest, file list) and the rest (the tar streamed while tar produces it, and the host's
extract, link and verify).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from bench.report import write_section
from bench.rounds import Measured
from specops.build.stage import StagedBuild, stage_build
from specops.commands.release import ReleaseInfo, newest_complete
from specops.config.inventory import HostSpec
from specops.host.ssh.channels import SshHost
from specops.host.ssh.connection import connect
from specops.ops import release as push
from tests.testbed.testhost import TestHost, start_host, stop_host
from tests.testbed.testhost.layout import cgroup_dir

PUSH_BEGIN, PUSH_END = "<!-- BEGIN push-bench -->", "<!-- END push-bench -->"
ALIAS = "push-bench"
SPEC = HostSpec(name=ALIAS, ssh=ALIAS, python="/usr/bin/python3", model_path="/m", base_dir="/opt/specops")
FULL_SPEC = SPEC.model_copy(update={"service": "full"})  # full pushes: their own releases/, never a delta base
SPEC_INFO = "sglang/srt/speculative/spec_info.py"
FILES, LARGE_FILES, LARGE_BYTES = 5_777, 5, 46_000_000


def log(message: str) -> None:
    print(f"[push-bench] {message}", file=sys.stderr, flush=True)


def generate_tree(root: Path, seed: int = 5777) -> None:
    """A deterministic tree with sglang's shape: many small .py files in ~620 folders, a few big .so files."""
    rng = random.Random(seed)
    words = [f"name_{i}" for i in range(500)]
    folders = [root / "sglang" / f"pkg{i // 40}" / f"sub{i % 40}" for i in range(620)]
    for index in range(FILES - LARGE_FILES - 2):
        size = min(int(rng.lognormvariate(8.65, 1.15)), 400_000)
        line = " ".join(rng.choice(words) for _ in range(12)) + "\n"
        path = folders[index % len(folders)] / f"module_{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text((line * (size // len(line) + 1))[:size])
    for index in range(LARGE_FILES):
        path = root / "sglang" / "lib" / f"native_{index}.so"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rng.randbytes(LARGE_BYTES // LARGE_FILES))
        path.chmod(0o755)
    (root / "sglang" / "__init__.py").write_text("__version__ = '0.5.23'\n")
    (root / SPEC_INFO).parent.mkdir(parents=True, exist_ok=True)
    (root / SPEC_INFO).write_text("class SpeculativeAlgorithm:\n    pass\n" * 200)


def _ssh_cmd(host: TestHost) -> str:
    return " ".join(["ssh", *host.ssh_options()])


def _record(phases: dict[str, list[float]], key: str, started: float) -> float:
    """Add the time since `started` to phases[key]; returns now (the next part's start)."""
    now = time.monotonic()
    phases.setdefault(key, []).append(now - started)
    return now


def _timed(action: Callable[[], object]) -> float:
    started = time.monotonic()
    action()
    return time.monotonic() - started


class Bench:
    def __init__(self, host: TestHost, scratch: Path) -> None:
        self.host, self.scratch = host, scratch
        self.config = scratch / "ssh_config"
        self.config.write_text(host.ssh_config_block(ALIAS))
        self.trees = [scratch / "tree", scratch / "patched"]
        self.staged: list[StagedBuild] = []
        self.turn = 0
        self.counter = 0

    def prepare(self) -> None:
        generate_tree(self.trees[0])
        subprocess.run(["cp", "-a", str(self.trees[0]), str(self.trees[1])], check=True)
        with open(self.trees[1] / SPEC_INFO, "r+") as handle:
            text = handle.read()
            handle.seek(0)
            handle.write("  # perf-test one-line patch\n" + text)
        for index, tree in enumerate(self.trees):
            self.staged.append(stage_build(tree, [], self.scratch / f"work{index}"))
        self.host.exec(["mkdir", "-p", "/opt/specops"])
        self.host.exec(["mount", "-t", "tmpfs", "-o", "size=4g", "tmpfs", "/opt/specops"])
        self.host.exec(["mkdir", "-p", "/opt/specops/plain"])
        self.reset_delta_targets()

    def reset_delta_targets(self) -> None:
        """Untimed: a base release for specops and the same tree for rsync (both the current `turn`'s tree)."""
        self.host.exec(["sh", "-c", "rm -rf /opt/specops/sglang /opt/specops/rsync /opt/specops/full"])
        with self._ssh() as ssh:
            push.push_release(ssh, SPEC, self.staged[self.turn], base=None, release_id=self._next_id())
        self._rsync(self.trees[self.turn])

    def _next_id(self) -> str:
        self.counter += 1
        return f"bench-{self.counter:04d}"

    def _ssh(self) -> SshHost:
        return connect(SPEC, ssh_config=self.config, known_hosts=[])

    def _rsync(self, tree: Path) -> None:
        argv = ["rsync", "-a", "-e", _ssh_cmd(self.host), f"{tree}/", f"root@{self.host.ip}:/opt/specops/rsync/"]
        subprocess.run(argv, check=True, capture_output=True)

    def full_specops(self) -> None:
        with self._ssh() as ssh:
            result = push.push_release(ssh, FULL_SPEC, self.staged[0], base=None, release_id=self._next_id())
        assert result.sent_files == len(self.staged[0].files)

    def full_tar_ssh(self) -> None:
        target = f"/opt/specops/plain/t{self.counter}"
        self.counter += 1
        tar = subprocess.Popen(["tar", "cf", "-", "-C", str(self.trees[0]), "."], stdout=subprocess.PIPE)
        remote = f"mkdir -p {target} && tar xf - -C {target}"
        subprocess.run(self.host.ssh_argv(remote), stdin=tar.stdout, check=True, capture_output=True)
        assert tar.wait() == 0

    def patch_specops(self) -> None:
        staged = self.staged[1 - self.turn]
        with self._ssh() as ssh, push.open_push(ssh, SPEC, max_bytes=staged.total_bytes) as session:
            session.prepare(staged, release_id=self._next_id())  # as the deploy does: while the host's shell starts,
            base = newest_complete(session.listing.releases)  # then the listing and the push on the same exec
            result = session.push(staged, base=base)
        assert result.sent_files == 1, result

    def patch_rsync(self) -> None:
        self._rsync(self.trees[1 - self.turn])

    def breakdown_round(self, phases: dict[str, list[float]]) -> None:
        """One round of the specops cases, timed part by part (see the module docstring)."""
        self.cleanup_untimed()
        started = time.monotonic()
        with self._ssh() as ssh:
            started = _record(phases, "connect", started)
            ssh.run(["true"])
            started = _record(phases, "exec `true` (the host's shell per channel)", started)
            staged = self.staged[1 - self.turn]
            with push.open_push(ssh, SPEC, max_bytes=staged.total_bytes) as session:
                base = newest_complete(session.listing.releases)  # not overlapped with `prepare` here: timed alone
                _record(phases, "patch: session start (exec + listing)", started)
                self._split_push(phases, "patch", session, staged, base)
            started = time.monotonic()
            with push.open_push(ssh, FULL_SPEC, max_bytes=self.staged[0].total_bytes) as session:
                _ = session.listing
                _record(phases, "full: session start (exec + listing)", started)
                self._split_push(phases, "full", session, self.staged[0], None)
        self.turn = 1 - self.turn

    def _split_push(self, phases: dict[str, list[float]], case: str, session: push.PushSession,
                    staged: StagedBuild, base: ReleaseInfo | None) -> None:  # fmt: skip
        """The push reports progress once its request is about to go: local preparation before that mark, the
        streamed tar and the host's work (extract, link, verify) after it."""
        marks = [time.monotonic()]
        session.push(staged, base=base, release_id=self._next_id(),
                     progress=lambda _message: marks.append(time.monotonic()))  # fmt: skip
        marks.append(time.monotonic())
        phases.setdefault(f"{case}: push, local (manifest, file list)", []).append(marks[1] - marks[0])
        phases.setdefault(f"{case}: push, tar stream + host work", []).append(marks[-1] - marks[1])

    def cleanup_untimed(self) -> None:
        self.host.exec(["sh", "-c", "rm -rf /opt/specops/plain/* /opt/specops/full"])


def run_rounds(bench: Bench, rounds: int) -> Measured:
    cases = {"full_specops": bench.full_specops, "full_tar_ssh": bench.full_tar_ssh}
    delta_cases = {"patch_specops": bench.patch_specops, "patch_rsync": bench.patch_rsync}
    measured = Measured(cgroup_dir(bench.host.name))
    for round_index in range(rounds):
        order = list(cases)[round_index % 2 :] + list(cases)[: round_index % 2]
        for name in order:
            bench.cleanup_untimed()
            subprocess.run(["sync"], check=True)
            measured.run(name, partial(_timed, cases[name]))
        delta_order = list(delta_cases)[round_index % 2 :] + list(delta_cases)[: round_index % 2]
        for name in delta_order:
            subprocess.run(["sync"], check=True)
            measured.run(name, partial(_timed, delta_cases[name]))
        bench.turn = 1 - bench.turn  # both targets now hold the other tree
        log(f"round {round_index + 1}/{rounds}: " + ", ".join(f"{n} {t[-1]:.3f}s" for n, t in measured.wall.items()))
    return measured


def report(measured: Measured, bench: Bench, load_before: tuple[float, ...]) -> str:
    times, staged, cores = measured.wall, bench.staged[0], os.cpu_count() or 1
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    loads = " / ".join(f"{value:.2f}" for value in load_before), " / ".join(f"{v:.2f}" for v in os.getloadavg())
    lines = [
        f"Run `python -m bench.push_bench --rounds {len(times['full_specops'])}` on {when}; load average "
        f"(1/5/15 min) {loads[0]} before, {loads[1]} after, on {cores} cores.",
        "",
        f"Tree: {len(staged.files):,} files, {staged.total_bytes:,} B; {len(times['full_specops'])} rounds, "
        "destination tmpfs inside one test host, loopback veth, every case with its own connection setup. CPU: the "
        f"operator's (this process, rsync, ssh, tar) and the test host's, together; floor: that CPU over the {cores} "
        "cores they share.",
        "",
        "| case | median s | min–max s | CPU-s (operator + host) | floor s |",
        "|---|---|---|---|---|",
    ]
    for name, values in times.items():
        cpu = statistics.median(measured.cpu[name])
        lines.append(f"| {name} | {statistics.median(values):.3f} | {min(values):.3f}–{max(values):.3f} | "
                     f"{cpu:.3f} | {cpu / cores:.3f} |")  # fmt: skip
    lines += ["", "| ratio (per round, median) | value | CPU ratio | goal |", "|---|---|---|---|"]
    for case, baseline, goal in (("patch_specops", "patch_rsync", 0.75), ("full_specops", "full_tar_ssh", 0.8)):
        ratio = _median_ratio(times[case], times[baseline])
        cpu_ratio = _median_ratio(measured.cpu[case], measured.cpu[baseline])
        verdict = "met" if ratio <= goal else "NOT met"
        lines.append(f"| {case} / {baseline} | {ratio:.2f}× | {cpu_ratio:.2f}× | ≤ {goal}× ({verdict}) |")
    return "\n".join(lines)


def _median_ratio(tops: list[float], bottoms: list[float]) -> float:
    return statistics.median(a / b for a, b in zip(tops, bottoms, strict=True))


def run_breakdown(bench: Bench, rounds: int) -> str:
    phases: dict[str, list[float]] = {}
    for round_index in range(rounds):
        bench.breakdown_round(phases)
        log(f"breakdown round {round_index + 1}/{rounds}")
    lines = ["| part | median ms | min–max ms |", "|---|---|---|"]
    for name, values in phases.items():
        lines.append(
            f"| {name} | {statistics.median(values) * 1000:.0f} | {min(values) * 1000:.0f}–{max(values) * 1000:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.push_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--breakdown", action="store_true", help="time the parts of the specops cases instead")
    parser.add_argument("--write", type=Path, help="also put the report between the push-bench markers here")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="push-bench-") as scratch:
        host = start_host("pushbench")
        try:
            bench = Bench(host, Path(scratch))
            log("generating the tree and staging it")
            bench.prepare()
            text = (
                run_breakdown(bench, args.rounds)
                if args.breakdown
                else report(run_rounds(bench, args.rounds), bench, load_before)
            )
            print(text)
            if args.write and not args.breakdown:
                write_section(args.write, text + "\n", PUSH_BEGIN, PUSH_END, heading="Push")
        finally:
            stop_host(host)
    return 0


if __name__ == "__main__":
    sys.exit(main())
