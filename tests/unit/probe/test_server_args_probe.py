"""The unit's argv through a build's parser (one import per build), the source fallback, versions, capture rules."""

from __future__ import annotations

from pathlib import Path

from specops.remote.probe.server_args import read_server_args_source
from specops.remote.probe.sglang import inspect_spec_info, read_spec_info_ast
from tests.testbed.engine import BUILD_PYTHON, copy_build

NEXTN = ["--model-path", "/m", "--speculative-algorithm", "NEXTN"]
EAGLE_TRIPLE = ["--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]


def test_the_builds_parser_names_an_unknown_flag() -> None:
    facts = inspect_spec_info("candidate", str(BUILD_PYTHON), [*NEXTN, *EAGLE_TRIPLE, "--speculative-tree-width", "4"])
    report = facts["server_args"]
    assert (report["method"], report["unknown_flags"], report["validation"]) == (
        "parser",
        ["--speculative-tree-width"],
        None,
    )
    assert "--speculative-ddtree-budget" in report["speculative_flags"]


def test_the_builds_validation_runs_when_the_argv_parses() -> None:
    passed = inspect_spec_info("candidate", str(BUILD_PYTHON), [*NEXTN, *EAGLE_TRIPLE])["server_args"]
    assert (passed["validation"], passed["validation_error"]) == ("passed", None)
    refused = inspect_spec_info("candidate", str(BUILD_PYTHON), [*NEXTN, "--speculative-num-steps", "3"])
    assert refused["server_args"]["validation"] == "failed"
    assert refused["server_args"]["validation_error"].startswith("AssertionError: --speculative-num-steps")


def test_without_argv_no_parser_runs() -> None:
    assert "server_args" not in inspect_spec_info("venv", str(BUILD_PYTHON))


def test_an_unimportable_parser_falls_back_to_the_source(tmp_path: Path) -> None:
    build = copy_build(tmp_path / "build")
    server_args = build / "sglang" / "srt" / "server_args.py"
    server_args.write_text(server_args.read_text() + "\nimport module_only_a_gpu_host_has\n")
    report = inspect_spec_info("candidate", str(build), [*NEXTN, "--speculative-ddtree-budget", "7", "--nope"])
    found = report["server_args"]
    assert found["method"] == "source"
    assert found["unknown_flags"] == ["--nope"]
    assert "module_only_a_gpu_host_has" in found["parser_error"]
    assert report["method"] == "import"  # spec_info itself still imported


def test_source_reading_knows_declared_fields_aliases_and_choices(tmp_path: Path) -> None:
    fields = tmp_path / "sglang" / "srt" / "arg_groups" / "fields"
    fields.mkdir(parents=True)
    (fields / "spec.py").write_text(
        "class Spec:\n"
        "    speculative_algorithm: A[str | None, Arg(choices=['EAGLE', 'NEXTN'])] = None\n"
        "    speculative_draft_model_path: A[str | None, Arg(aliases=['--speculative-draft-model'])] = None\n"
        "    tp_size: A[int, Arg(cli_name='--tensor-parallel-size', aliases=['--tp-size'])] = 1\n"
        "    stat_loggers: A[list, Arg(no_cli=True)] = None\n"
    )
    (tmp_path / "sglang" / "srt" / "server_args.py").write_text(
        "def add_cli_args(parser):\n    parser.add_argument('--model-path', '--model', required=True)\n"
    )
    argv = ["--model", "/m", "--tp-size", "2", "--speculative-algorithm", "DDTREE", "--speculative-draft-model", "/d"]
    report = read_server_args_source(str(tmp_path), [*argv, "--stat-loggers", "x"])
    assert report["unknown_flags"] == ["--stat-loggers"]
    assert report["errors"] == [
        "argument --speculative-algorithm: invalid choice: 'DDTREE' (choose from 'EAGLE', 'NEXTN')"
    ]


def test_version_of_a_released_wheel_comes_from_version_py_or_dist_info(tmp_path: Path) -> None:
    wheel = copy_build(tmp_path / "wheel")
    (wheel / "sglang" / "version.py").unlink()
    (wheel / "sglang" / "_version.py").write_text("__version__ = version = '0.5.23'\n")
    assert inspect_spec_info("current", str(wheel))["version"] == "0.5.23"
    (wheel / "sglang" / "_version.py").unlink()
    (wheel / "sglang-0.5.22.dist-info").mkdir()
    (wheel / "sglang-0.5.22.dist-info" / "METADATA").write_text("Name: sglang\nVersion: 0.5.22\n")
    assert inspect_spec_info("current", str(wheel))["version"] == "0.5.22"


FAMILY_ERA = """
from enum import Enum, auto
class SpeculativeAlgorithm(Enum):
    DFLASH = auto()
    DDTREE = auto()
    DSPARK = auto()
    EAGLE = auto()
    def is_dflash(self):
        return self == SpeculativeAlgorithm.DFLASH
    def is_dspark(self):
        return self == SpeculativeAlgorithm.DSPARK
    def is_ddtree(self):
        return self == SpeculativeAlgorithm.DDTREE
    def is_dflash_family(self):
        return self.is_dflash() or self.is_dspark(){extra}
"""


def test_the_capture_rule_of_the_is_dflash_family_era_read_statically(tmp_path: Path) -> None:
    path = tmp_path / "spec_info.py"
    path.write_text(FAMILY_ERA.format(extra=""))
    facts = read_spec_info_ast(str(path))
    assert facts["capture_rule"] == "is_dflash_family"
    assert facts["is_dflash_family"] == {"DFLASH": True, "DDTREE": False, "DSPARK": True, "EAGLE": False}
    path.write_text(FAMILY_ERA.format(extra=" or self.is_ddtree()"))
    assert read_spec_info_ast(str(path))["is_dflash_family"]["DDTREE"] is True


def test_the_capture_rule_by_import_reports_both_predicates(tmp_path: Path) -> None:
    build = copy_build(tmp_path / "build")
    spec_info = build / "sglang" / "srt" / "speculative" / "spec_info.py"
    spec_info.write_text(FAMILY_ERA.format(extra=" or self.is_ddtree()"))
    facts = inspect_spec_info("candidate", str(build))
    assert facts["method"] == "import" and facts["capture_rule"] == "is_dflash_family"
    assert (facts["is_dflash"]["DDTREE"], facts["is_dflash_family"]["DDTREE"]) == (False, True)
