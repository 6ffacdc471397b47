"""The kernel journal's Xid lines: every recorded shape parses to the right code, GPU and time; the probe's
section becomes facts (the GPU index from nvidia-smi's bus ids, journalctl's own permission text)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specops.commands.kernel_log import GPU_FAULT_SCRIPT, bus_key, kernel_log_argv, parse_gpu_bus_ids, parse_kernel_log
from specops.commands.xid_catalog import APPLICATION, HOST, INFORMATIONAL, host_codes, xid_info
from specops.config.inventory import HostSpec
from specops.engine.gpu_fault import engine_gpus
from specops.probe.facts_kernel import parse_kernel_log_facts
from specops.remote.probe.kernel import _nvrm_entries
from specops.remote.release import hostblame
from specops.remote.release.hostblame import HOST_XIDS, kernel_fault_line

RECORDED = (Path(__file__).parent / "data" / "xid_recorded.txt").read_text(encoding="utf-8")
# journalctl's own words to a user outside root, adm and systemd-journal: systemd 252 on a test host (verbatim),
# and an older systemd (systemd/python-systemd#57)
DENIED = (
    "Hint: You are currently not seeing messages from other users and the system.\n"
    "      Users in groups 'adm', 'systemd-journal' can see all messages.\n"
    "      Pass -q to turn off this notice.\n"
    "No journal files were opened due to insufficient permissions.\n"
)
DENIED_OLDER = (
    "Hint: You are currently not seeing messages from other users and the system.\n"
    "      Users in the 'systemd-journal' group can see all messages. Pass -q to\n"
    "      turn off this notice.\n"
    "No journal files were opened due to insufficient permissions.\n"
)
JOURNAL = (
    "2026-12-03T13:52:46.118000+0000 gpu-one kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
    "name=<unknown>, GPU has fallen off the bus.\n"
    "2026-12-03T13:52:46.120000+0000 gpu-one kernel: NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n"
)
SMI_BUS_IDS = "0, 00000000:18:00.0, No, No\n1, 00000000:3B:00.0, No, No\n"


def test_every_recorded_shape_parses_to_its_code_and_gpu() -> None:
    found = [(event.code, event.bus_id) for event in parse_kernel_log(RECORDED)]
    assert found == [
        (14, "0000:03:00"),  # old format, no PCI: prefix
        (13, "0000:cb:00"),
        (119, "0000:9b:00"),
        (94, "0000:9b:00"),
        (149, "0019:01:00"),  # a domain other than 0
        (79, "0000:b3:00"),  # the multi-line free text, no Xid line
        (79, "0000:44:00"),
        (79, "0000:01:00"),  # its free-text twin on the next line is the same fault: dropped
        (79, None),  # an older driver names no GPU
        (45, "0000:dc:00"),
    ]


def test_the_new_format_keeps_the_drivers_words_and_journalctl_the_time() -> None:
    events = parse_kernel_log(JOURNAL)
    assert len(events) == 1
    assert events[0].time == "2026-12-03T13:52:46.118000+0000"
    assert events[0].text == "pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
    assert events[0].line.startswith("NVRM: Xid (PCI:0000:3b:00): 79")


@pytest.mark.parametrize(
    ("text", "key"),
    [("00000000:3B:00.0", "0000:3b:00"), ("PCI:0000:9b:00", "0000:9b:00"), ("0000:01:00", "0000:01:00"),
     ("00000019:01:00.0", "0019:01:00"), ("garbage", None), ("zz:01:00", None)],
)  # fmt: skip
def test_bus_ids_compare_on_domain_bus_device_whatever_the_case(text: str, key: str | None) -> None:
    assert bus_key(text) == key


def test_nvidia_smis_table_names_each_gpu_by_bus_id() -> None:
    assert parse_gpu_bus_ids(SMI_BUS_IDS) == {"0000:18:00": 0, "0000:3b:00": 1}


def test_the_catalogue_classes_host_application_and_informational_codes() -> None:
    assert (xid_info(79).kind, xid_info(79).name) == (HOST, "GPU has fallen off the bus")
    assert "reboot" in xid_info(79).action
    assert [xid_info(code).kind for code in (13, 31, 43, 94)] == [APPLICATION] * 4
    assert [xid_info(code).kind for code in (45, 63, 92, 154)] == [INFORMATIONAL] * 4
    assert {48, 62, 64, 74, 79, 95, 109, 119, 120, 140, 143} <= host_codes()
    unknown = xid_info(999)
    assert (unknown.kind, unknown.name) == (INFORMATIONAL, "Xid 999") and "catalogue" in unknown.action


def test_the_guard_knows_the_same_host_class_codes_as_the_catalogue() -> None:
    assert host_codes() == HOST_XIDS
    assert kernel_fault_line(["NVRM: Xid (PCI:0000:9b:00): 119, pid=1, name=x, Timeout"]) is not None
    assert kernel_fault_line(["NVRM: Xid (PCI:0000:9b:00): 31, pid=1, name=python3, MMU Fault"]) is None


def test_doctor_reads_the_boot_and_a_failed_start_reads_after_its_cursor() -> None:
    assert kernel_log_argv()[:3] == ["journalctl", "-k", "-o"] and "-b" in kernel_log_argv()
    cursor = "s=f1f15e30;i=49;b=a2622f8f;m=633c0b188;t=661bb2fb3fd01;x=62ac36d0"
    after = kernel_log_argv(since=cursor)
    assert "-b" not in after and after[after.index("--since") + 1] == "@1796306447.367425"
    assert after[-2:] == ["--grep", r"NVRM: (Xid|.*fallen off the bus)"]
    without_time = kernel_log_argv(since="s=abc;i=1")
    assert without_time[without_time.index("--after-cursor") + 1] == "s=abc;i=1"


def test_the_newest_first_order_of_a_grep_read_is_put_back_in_time_order() -> None:
    first, second = JOURNAL.splitlines()[0], JOURNAL.splitlines()[0].replace("3b:00", "18:00").replace(".118", ".900")
    assert [e.bus_id for e in parse_kernel_log(f"{second}\n{first}\n")] == ["0000:3b:00", "0000:18:00"]


def _raw(out: str = "", err: str = "", rc: int = 0, found: bool = True) -> dict[str, object]:
    journal = {"found": found, "rc": rc, "out": out, "err": err, "timed_out": False}
    return {"journal": journal, "method": "grep", "euid": 1000, "user": "alice"}


def test_facts_name_each_gpu_by_its_index_from_the_health_query() -> None:
    nvidia = {"query_health": {"rc": 0, "out": SMI_BUS_IDS}}
    facts = parse_kernel_log_facts(_raw(JOURNAL), nvidia)
    assert facts is not None and facts.readable and not facts.denied
    assert [(e.code, e.gpu_index, e.bus_id) for e in facts.events] == [(79, 1, "0000:3b:00")]


@pytest.mark.parametrize("words", [DENIED, DENIED_OLDER])
def test_journalctls_permission_text_is_a_denial_not_an_empty_journal(words: str) -> None:
    facts = parse_kernel_log_facts(_raw(err=words, rc=1), {})
    assert facts is not None and facts.denied and not facts.readable and facts.user == "alice"


def test_no_match_is_a_readable_empty_journal_and_a_missing_journalctl_an_error() -> None:
    empty = parse_kernel_log_facts(_raw(rc=1), {})
    assert empty is not None and empty.readable and empty.events == []
    missing = parse_kernel_log_facts(_raw(found=False), {})
    assert missing is not None and not missing.readable and "not found" in (missing.error or "")
    assert parse_kernel_log_facts(None, {}) is None  # an older probe


def test_without_grep_the_probe_keeps_only_the_nvrm_fault_entries() -> None:
    plain = (
        "2026-12-03T13:50:00.000000+0000 h kernel: usb 1-1: new device\n"
        "2026-12-03T13:52:46.000000+0000 h kernel: NVRM: The NVIDIA GPU 0000:b3:00.0\n"
        "                                          NVRM: fallen off the bus and is not responding to commands.\n"
        "2026-12-03T13:53:00.000000+0000 h kernel: NVRM: loading NVIDIA UNIX Open Kernel Module\n"
        "                                          continued\n"
    )
    kept = _nvrm_entries(plain)
    assert "usb" not in kept and "loading" not in kept and "continued" not in kept
    assert [(e.code, e.bus_id) for e in parse_kernel_log(kept)] == [(79, "0000:b3:00")]


# the testbed's recorded driver logs (tests/testbed/gpu/recorded/, each file names its source), file -> faults
RECORDINGS = Path(__file__).resolve().parents[2] / "testbed" / "gpu" / "recorded"
RECORDED_FAULTS = {
    "xid-119-gsp-timeout.log": [(119, "0000:9b:00")],  # the GSP's other NVRM lines around it are not faults
    "xid-79-fallen-off-bus.log": [(79, "0000:b3:00"), (79, "0000:44:00")],  # not the "probe routine failed" line
    "xid-old-and-new-format.log": [(14, "0000:03:00"), (79, "0000:05:00"), (79, "0000:91:00")],
}


@pytest.mark.parametrize("name", sorted(RECORDED_FAULTS))
def test_the_testbeds_recorded_driver_logs_parse_to_their_faults(name: str) -> None:
    path = RECORDINGS / name
    if not RECORDINGS.is_dir():  # the recordings come with the testbed's GPU recordings; until then nothing to read
        pytest.skip(f"{RECORDINGS} is not in this checkout")
    assert [(e.code, e.bus_id) for e in parse_kernel_log(path.read_text(encoding="utf-8"))] == RECORDED_FAULTS[name]


def test_the_guard_counts_a_gpu_fault_on_the_engines_gpus_or_on_one_it_cannot_place() -> None:
    asked: list[int] = []

    def bus_table() -> dict[str, int]:
        asked.append(1)
        return {"0000:3a:00": 2, "0000:9b:00": 5}

    on_gpu_2 = "NVRM: Xid (PCI:0000:3a:00): 79, pid=0, name=, GPU has fallen off the bus."
    assert kernel_fault_line([on_gpu_2], {0, 1}, bus_table) is None  # another engine's GPU
    assert kernel_fault_line([on_gpu_2], {2, 3}, bus_table) == "a GPU failed (kernel journal): " + on_gpu_2
    assert kernel_fault_line([on_gpu_2], None, bus_table) is not None and asked == [1, 1]  # every GPU: no table
    assert kernel_fault_line(["NVRM: GPU 0000:44:00.0: GPU has fallen off the bus."], {0}, bus_table) is not None
    assert kernel_fault_line(["NVRM: GPU has fallen off the bus."], {0}, bus_table) is not None  # no bus id
    assert kernel_fault_line([on_gpu_2, "NVRM: Xid (PCI:0000:9b:00): 119, pid=1, name=x, Timeout"], {5},
                             bus_table) is not None  # fmt: skip
    assert kernel_fault_line(["NVRM: Xid (PCI:0000:9b:00): 31, pid=1, name=x, MMU Fault"], {0}, bus_table) is None


def test_the_guard_reads_bus_ids_gpu_tables_and_gpus_as_the_client_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard's stdlib twins (remote/release/hostblame.py cannot import the client): the same bus id from every
    recorded driver line, the same nvidia-smi query and table, the same reading of `gpus`."""
    guard_keys = {hostblame.bus_key(line[line.index("NVRM:") :]) for line in RECORDED.splitlines() if "NVRM:" in line}
    assert guard_keys - {None} == {event.bus_id for event in parse_kernel_log(RECORDED)} - {None}
    assert " ".join(hostblame.BUS_TABLE_ARGV) in GPU_FAULT_SCRIPT
    monkeypatch.setattr(hostblame, "_lines", lambda argv: SMI_BUS_IDS.splitlines())
    assert hostblame.gpu_bus_table() == parse_gpu_bus_ids(SMI_BUS_IDS)
    for setting in ("0,1", "3", "0,1,2,3"):  # what specops.toml's `gpus` accepts
        spec = HostSpec(name="h", ssh="h", python="/usr/bin/python3", model_path="/m", gpus=setting)
        assert hostblame.engine_gpus(setting) == engine_gpus(spec), setting
    assert hostblame.engine_gpus("") is None
