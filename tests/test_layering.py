"""The import rules of docs/ARCHITECTURE.md, enforced: the layer order of the package tree, transport and
presentation in their own modules, host-side code that stays stdlib-only and is reached through its bundler.

Every import counts: module level, inside functions (lazy imports are still dependencies) and under
TYPE_CHECKING (a type is knowledge of the module that defines it)."""

from __future__ import annotations

import ast
import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "specops"

# module prefix -> the only places allowed to import it
ALLOWED = {
    "typer": ("specops/cli/",),
    "rich": ("specops/cli/",),
    "paramiko": ("specops/host/ssh/connection.py", "specops/host/ssh/auth.py", "specops/host/ssh/channels.py"),
    "httpx": ("specops/engine/client.py", "specops/engine/http_transport.py"),
    "click": (),
    "torch": (),
    "torchcodec": (),
}

# The layer order, top first: a part of specops imports only from itself and from parts in LOWER layers;
# parts that share a layer are independent of each other. "__init__" is specops/__init__.py (the version).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("__main__",),
    ("cli",),
    ("deploy",),
    ("doctor", "ops"),
    ("diagnose",),
    ("engine", "probe"),
    ("build", "commands"),
    ("host", "remote"),
    ("config",),
    ("errors", "events", "localdirs", "__init__"),
)

# Imports that break the order today, each with why it exists. The rule stays strict for everything else;
# an entry that no longer matches a real import fails test_every_known_exception_is_still_real, so the list
# can only shrink.
KNOWN_UPWARD = {
    ("specops/errors.py", "specops.host.base"): "CommandFailed carries the host's Result (TYPE_CHECKING only)",
    ("specops/engine/gates.py", "specops.ops.unit"): "restart-to-verdict restarts the unit (orchestration)",
}
KNOWN_INTO_REMOTE = {
    ("specops/build/stage.py", "specops.remote.release.script"): "one tree-hash function for stage and host",
    ("specops/build/hashes.py", "specops.remote.release.script"): "one file hasher for stage and host",
    ("specops/commands/release.py", "specops.remote.release.script"): "the host script's MANIFEST name, release order",
    ("specops/ops/push_stream.py", "specops.remote.release.stream"): "one widen_pipe and PIPE_BYTES for both ends",
    ("specops/ops/release.py", "specops.remote.release.script"): "the host script's MANIFEST name",
    ("specops/commands/hostdata.py", "specops.remote.release.hostdata"): "one table of versions, one id rule",
    ("specops/ops/audit.py", "specops.remote.release.hostdata"): "one audit-line writer for both ends",
    ("specops/ops/notify.py", "specops.remote.release.notify"): "one webhook poster for both ends",
}
REMOTE_ENTRY = "specops.remote.bundle"  # the one door into host-side code from the rest of specops


def _source_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _relative(path: Path) -> str:
    return path.relative_to(PACKAGE.parent).as_posix()


def _imports(path: Path) -> set[str]:
    return {name.split(".")[0] for name in _full_imports(path)}


@functools.cache  # every rule reads the same files: parse each once
def _full_imports(path: Path) -> frozenset[str]:
    """Every absolute module name imported anywhere in the file; `from specops.x import y` counts as
    specops.x.y when y is a module of its own, else as specops.x."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if _is_specops_module(submodule) else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return frozenset(found)


def _is_specops_module(module: str) -> bool:
    location = PACKAGE.parent.joinpath(*module.split("."))
    return module.startswith("specops.") and (location.is_dir() or location.with_suffix(".py").is_file())


def _is_part(name: str) -> bool:
    return _is_specops_module(f"specops.{name}")


def _part_of_file(path: Path) -> str:
    """The layer member a source file belongs to: its top-level folder, or the top-level module's name."""
    first = path.relative_to(PACKAGE).parts[0]
    return first.removesuffix(".py")


def _part_of_module(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and _is_part(parts[1]) else "__init__"


def _rank(part: str) -> int:
    for index, layer in enumerate(LAYERS):
        if part in layer:
            return index
    raise AssertionError(f"specops/{part} has no place in LAYERS (tests/test_layering.py): add it to the order")


def _specops_imports() -> list[tuple[str, str, str, str]]:
    """(file, imported module, the file's part, the module's part) for every import of specops by specops."""
    found = []
    for path in _source_files():
        for module in sorted(_full_imports(path)):
            if module == "specops" or module.startswith("specops."):
                found.append((_relative(path), module, _part_of_file(path), _part_of_module(module)))
    return found


@pytest.mark.parametrize("module", sorted(ALLOWED))
def test_module_is_imported_only_where_allowed(module: str) -> None:
    offenders = []
    for path in _source_files():
        relative = _relative(path)
        if module in _imports(path) and not relative.startswith(ALLOWED[module]):
            offenders.append(relative)
    assert offenders == [], f"{module} may only be imported in {ALLOWED[module] or 'no module'}"


def test_paramiko_is_imported_only_through_the_lean_import() -> None:
    """Every `import paramiko` sits in `with lean_paramiko_import():` (specops/host/ssh/paramiko_import.py), so
    whichever SSH module loads first, paramiko never pays for invoke and importlib.metadata (~70 ms a command)."""
    offenders = []
    for path in _source_files():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        lean = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.With)
            and any(_calls(item.context_expr, "lean_paramiko_import") for item in node.items)
            for inner in ast.walk(node)
        }
        for node in ast.walk(tree):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            if any(name.split(".")[0] == "paramiko" for name in names) and id(node) not in lean:
                offenders.append(f"{_relative(path)}:{node.lineno}")
    assert offenders == []


def _calls(expression: ast.expr, name: str) -> bool:
    return isinstance(expression, ast.Call) and isinstance(expression.func, ast.Name) and expression.func.id == name


def test_core_never_imports_the_cli() -> None:
    offenders = [
        _relative(path)
        for path in _source_files()
        if "cli" not in path.relative_to(PACKAGE).parts
        and path.name != "__main__.py"
        and any(name.startswith("specops.cli") for name in _full_imports(path))
    ]
    assert offenders == []


def test_every_part_of_the_package_has_a_layer() -> None:
    parts = {_part_of_file(path) for path in _source_files()}
    for part in parts:
        _rank(part)  # raises with the part's name
    assert sorted(part for layer in LAYERS for part in layer if part not in parts) == []  # no stale names


def test_imports_only_point_down_the_layers() -> None:
    offenders = [
        f"{relative} imports {module} ({source} may not depend on {target})"
        for relative, module, source, target in _specops_imports()
        if source != target and _rank(target) <= _rank(source) and (relative, module) not in KNOWN_UPWARD
    ]
    assert offenders == []


def test_host_side_code_is_reached_only_through_its_bundler() -> None:
    offenders = [
        f"{relative} imports {module}"
        for relative, module, source, target in _specops_imports()
        if target == "remote" and source != "remote" and module != REMOTE_ENTRY
        and (relative, module) not in KNOWN_INTO_REMOTE
    ]  # fmt: skip
    assert offenders == [], f"outside specops/remote/, import only {REMOTE_ENTRY}"


def test_every_known_exception_is_still_real() -> None:
    real = {(relative, module) for relative, module, _, _ in _specops_imports()}
    assert sorted(set(KNOWN_UPWARD) - real) == []
    assert sorted(set(KNOWN_INTO_REMOTE) - real) == []


@pytest.mark.parametrize("script", ["probe", "release", "runner.py", "preflight.py", "distport.py", "codecache.py"])
def test_host_side_scripts_are_stdlib_only_python_3_8_and_self_contained(script: str) -> None:
    """What runs on the host imports the standard library and its own script's modules only (the bundler
    concatenates one folder into one text; the command conversation's runner is one file), in syntax Python
    3.8 can parse. The runner is bundled after the compiled-code cache it uses (bundle.runner_script)."""
    joined = {"runner.py": "specops.remote.codecache"}
    offenders = []
    where = PACKAGE / "remote" / script
    for path in [where] if where.suffix == ".py" else sorted(where.rglob("*.py")):
        ast.parse(path.read_text(encoding="utf-8"), filename=str(path), feature_version=(3, 8))
        for module in _full_imports(path):
            top = module.split(".")[0]
            own = module.startswith(f"specops.remote.{script.removesuffix('.py')}") or module == joined.get(script)
            if not own and top != "__future__" and top not in sys.stdlib_module_names:
                offenders.append(f"{_relative(path)} imports {module}")
    assert offenders == []


STDLIB = {*sys.stdlib_module_names, "__future__"}


def test_the_bundler_imports_nothing_of_specops_but_the_cache_folder_rule() -> None:
    """The bundler stands alone (it reads host-side sources as text); its one import is the stdlib-only bottom
    module that says where every cache lives, so the bundles' cache follows the same XDG rule as the others."""
    bundler = PACKAGE / "remote" / "bundle.py"
    assert sorted(name for name in _full_imports(bundler) if name.startswith("specops")) == ["specops.localdirs"]
    outside = [name for name in _full_imports(PACKAGE / "localdirs.py") if name.split(".")[0] not in STDLIB]
    assert outside == []


# The modules that run a deploy step whose commands the plan fixes (the unit, the guard, the switch, the records,
# the watch): they run the plan's HostCommand objects (Step.commands), the ones `--dry-run` prints, so they
# import no builder of a command line (a specops.commands name ending in _argv or _argvs, or the ops functions
# that build their own release-script command). Each exception says why; like KNOWN_UPWARD, the list can only
# shrink (test_every_fixed_step_exception_is_still_real).
FIXED_STEP_RUNNERS = (
    "specops/deploy/execute.py",
    "specops/deploy/fixed_steps.py",
    "specops/deploy/preflight_step.py",
    "specops/ops/guard.py",
    "specops/ops/planned.py",
    "specops/ops/unit.py",
)
SELF_BUILDING_OPS = {"specops.ops.release_changes": ("switch_current", "update_manifest", "prune")}
KNOWN_BUILDERS = {
    ("specops/ops/unit.py", "deliberate_restart_argvs"): "the restart after a failed or interrupted rollback, "
    "not a step of any plan (a planned restart runs its gates step's commands)",
}


def _builders_imported(path: Path) -> set[str]:
    """The command-line builders a file imports by name (module-level, lazy or TYPE_CHECKING alike)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        for alias in node.names:
            if node.module.startswith("specops.commands") and node.module != "specops.commands.planned":
                if alias.name.endswith(("_argv", "_argvs")) or _is_specops_module(f"{node.module}.{alias.name}"):
                    found.add(alias.name)  # a builder, or a builders' module (`from specops.commands import unit`)
            elif alias.name in SELF_BUILDING_OPS.get(node.module, ()):
                found.add(alias.name)
    return found


@pytest.mark.parametrize("runner", FIXED_STEP_RUNNERS)
def test_a_step_with_fixed_commands_runs_the_plans_commands_and_builds_none(runner: str) -> None:
    found = _builders_imported(PACKAGE.parent / runner)
    offenders = sorted(name for name in found if (runner, name) not in KNOWN_BUILDERS)
    assert offenders == [], (
        f"{runner} builds command lines ({', '.join(offenders)}): run the Step's HostCommand objects instead, "
        "built once in specops/deploy/step_commands.py (the dry run prints the same objects)"
    )


def test_every_fixed_step_exception_is_still_real() -> None:
    stale = [key for key in KNOWN_BUILDERS if key[1] not in _builders_imported(PACKAGE.parent / key[0])]
    assert stale == [], f"remove these from KNOWN_BUILDERS: {stale}"


# One definition per deploy step: the argv builders of specops/commands/ (its functions named *_argv or *_argvs:
# lock_argv, session_argv, list_argv, read_unit_argv, probe_argv, the engine stop's stop/state/kill/inspect/reap
# argvs, the journal's cursor/clock/poll/invocation argvs, the release script's switch/rollback/update-manifest/
# prune argvs...) are called only where a plan is built: specops/deploy/step_commands.py and engine_commands.py
# (and the builders
# themselves). Every step of a deploy, a restart and a rollback runs those objects, a run-time word filled into
# its slot (HostCommand.filled), so the dry run shows what runs and no command line is written twice.
# Commands that print no plan call builders directly. A module that serves only such commands is listed whole;
# one whose functions also run deploy steps is listed by function (its fallback for callers without a plan), so
# a new call anywhere else in it, or anywhere in specops/deploy/, fails. Each entry says why; like KNOWN_UPWARD
# the lists can only shrink (test_every_planless_builder_call_is_still_real).
PLAN_BUILDERS = ("specops/commands/", "specops/deploy/step_commands.py", "specops/deploy/engine_commands.py")
NOT_HOST_COMMANDS = {
    "tar_argv": "runs on this machine: its output is the push's stream",
    "launch_argv": "the engine's command line the unit runs; the probe checks its flags, nothing runs it",
    "container_argv": "the engine's command line in a pod's manifest (and checked by the pod's preflight); no "
    "host command",
}
PLANLESS_MODULES = {
    "specops/cli/early/deploy.py": "a remembered deploy starts its two execs before the config loads (no plan "
    "yet); test_the_same_deploy_again_connects_before_typer... checks they are the plan's lock step's",
    "specops/ops/status.py": "`specops status`: reads the unit and its journal; no plan",
    "specops/ops/forensics.py": "`specops diagnose`: reads the unit and its journal; no plan",
    "specops/ops/journal.py": "`specops logs`: no plan",
    "specops/ops/bad_releases.py": "`specops release mark-bad|unmark-bad`: no plan",
    "specops/deploy/trial.py": "`specops trial`: a transient unit beside production, no deploy plan (nothing to "
    "--dry-run); its probe, push and readiness reuse the deploy's executors",
}
PLANLESS_FUNCTIONS = {
    ("specops/ops/lock.py", "run_lock"): "`specops lock status|release`: an operator's lock command, no plan",
    ("specops/ops/lock.py", "LockCommands.built"): "`specops rollback` and `release prune` take the lock; no plan",
    ("specops/ops/release.py", "read_listing"): "`specops status|rollback|release`, the dry run: no plan",
    ("specops/ops/release.py", "open_push"): "the dry run's listing and `push_release`: no plan",
    (
        "specops/ops/release_changes.py",
        "switch_current",
    ): "the release script's own tests; a deploy runs its switch step",
    ("specops/ops/release_changes.py", "prune"): "`specops release prune`: no plan",
    ("specops/ops/release_changes.py", "update_manifest"): "a rollback whose host chose another release than planned",
    ("specops/ops/release_changes.py", "rollback_release"): "the release script's own tests; a rollback runs its step",
    ("specops/ops/release_changes.py", "restore_config"): "the restore after a failed rollback: not a step of any plan",
    ("specops/ops/stop_commands.py", "StopCommands.built"): "a stop without a plan (its own tests)",
    ("specops/ops/engine_stop.py", "_state"): "what serves, read by `specops rollback`: no plan",
    ("specops/ops/unit.py", "restart"): "the restart after a failed or interrupted rollback: not a planned step",
    ("specops/ops/cache.py", "measure"): "`specops status`: the compile cache's size, no plan",
    ("specops/probe/run.py", "planless_command"): "`specops doctor` (and its `--deep`): the probe without a plan; "
    "a deploy's preflight runs its planned command",
    ("specops/probe/dist_port.py", "planless_command"): "`specops doctor ENGINE`'s dist port test: no plan; a "
    "deploy's dist-port step runs its planned command",
    (
        "specops/engine/readiness_commands.py",
        "ReadinessCommands.built",
    ): "`specops smoke` and the restore after a failed rollback: no plan",
    ("specops/engine/readiness_commands.py", "position_reads"): "the same, for the journal's position",
}
# Second call sites that remain in a deploy step: each builds again what the plan already shows.
KNOWN_SECOND_CALLS: dict[tuple[str, str], str] = {}


def _defined_argv_builders() -> set[str]:
    names = set()
    for path in sorted((PACKAGE / "commands").glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and node.name.endswith(("_argv", "_argvs")):
                names.add(node.name)
    return names


def _argv_builders() -> set[str]:
    """The builders of host commands: every *_argv and *_argvs of specops/commands/ but NOT_HOST_COMMANDS."""
    return _defined_argv_builders() - set(NOT_HOST_COMMANDS)


class _BuilderCalls(ast.NodeVisitor):
    """(enclosing function as Class.method, builder) for each call of a builder by name or attribute."""

    def __init__(self, builders: set[str]) -> None:
        self.builders, self.scope, self.found = builders, list[str](), list[tuple[str, str]]()

    def _nested(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _nested

    def visit_Call(self, node: ast.Call) -> None:
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
        if name in self.builders:
            self.found.append((".".join(self.scope) or "<module>", name))
        self.generic_visit(node)


@functools.cache
def _builder_calls() -> tuple[tuple[str, str, str], ...]:
    """(file, enclosing function, builder) for every builder call outside the plan's builders."""
    builders, found = _argv_builders(), []
    for path in _source_files():
        relative = _relative(path)
        if relative.startswith(PLAN_BUILDERS) or relative.startswith("specops/remote/"):
            continue
        visitor = _BuilderCalls(builders)
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        found += [(relative, function, builder) for function, builder in visitor.found]
    return tuple(found)


def test_argv_builders_are_called_only_where_plans_are_built() -> None:
    offenders = sorted(
        f"{relative}: {function} calls {builder}"
        for relative, function, builder in _builder_calls()
        if relative not in PLANLESS_MODULES and (relative, function) not in {**PLANLESS_FUNCTIONS, **KNOWN_SECOND_CALLS}
    )
    assert offenders == [], (
        "a command line built a second time: add it to the step's commands in specops/deploy/step_commands.py and "
        "run that planned HostCommand (its run-time words filled with HostCommand.filled)"
    )


def test_every_planless_builder_call_is_still_real() -> None:
    real_files = {relative for relative, _function, _builder in _builder_calls()}
    real = {(relative, function) for relative, function, _builder in _builder_calls()}
    assert sorted(set(PLANLESS_MODULES) - real_files) == []
    assert sorted(set(PLANLESS_FUNCTIONS) - real) == []
    assert sorted(set(KNOWN_SECOND_CALLS) - real) == []
    assert sorted(set(NOT_HOST_COMMANDS) - _defined_argv_builders()) == []


def test_fewer_than_six_modules_sit_at_the_top_of_the_package() -> None:
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) < 6, f"specops/ holds {top}: put new modules in the subpackage of their layer"


def test_help_imports_nothing_heavy() -> None:
    """`specops --help` must start fast: pydantic, jinja2, paramiko, httpx and rich load only when used."""
    code = (
        "import sys\n"
        "from specops.cli.main import main\n"
        "main(['--help'])\n"
        "heavy = sorted(m for m in ('pydantic', 'jinja2', 'paramiko', 'httpx', 'rich', 'torch') if m in sys.modules)\n"
        "print('HEAVY=' + ','.join(heavy))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == "HEAVY="


# What a doctor must not have loaded when it connects (everything here can load while the host runs the probe),
# and what it must not load at all for --json output.
NOT_BEFORE_CONNECT = ("typer", "rich", "specops.doctor.checks", "specops.probe.facts", "specops.cli.main")
NEVER_FOR_DOCTOR_JSON = ("rich", "httpx", "jinja2", "invoke", "specops.deploy", "specops.engine", "specops.ops")
DOCTOR_RUN = """\
import atexit
import sys
import specops.host.ssh.connection
from specops.errors import ConnectError

def loaded(names):
    return ",".join(name for name in names if name in sys.modules)

def refuse(spec, **kwargs):
    print("AT_CONNECT=" + loaded({at_connect}))
    print("REACH=" + type(spec).__name__)
    raise ConnectError("refused by the test")

specops.host.ssh.connection.connect = refuse
atexit.register(lambda: print("AFTER=" + loaded({after})))  # exit handlers still run on a doctor's quick exit
sys.argv = ["specops", "--config", {config!r}, "doctor", "llm-two", *{extra!r}]
from specops.cli.entry import entry
entry()
"""


def _doctor_imports(tmp_path: Path, extra: list[str], at_connect: tuple[str, ...], after: tuple[str, ...]) -> list[str]:
    """`specops doctor llm-two EXTRA` as the console script runs it, in a fresh interpreter, the host refusing
    the connection: the lines AT_CONNECT= and AFTER= (the watched modules loaded then), EXIT= (its exit code)
    and whether stdout held the whole report."""
    config = tmp_path / "specops.toml"
    config.write_text(
        '[hosts.llm-two]\nssh = "llm-two"\npython = "/opt/venv/bin/python"\nmodel_path = "/models/target"\n'
        'draft_model_path = "/models/draft"\nprofile = "ddtree"\n'
    )
    code = DOCTOR_RUN.format(config=str(config), extra=extra, at_connect=at_connect, after=after)
    environ = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}  # its own doctor plans
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, env=environ)
    marks = [line for line in result.stdout.splitlines() if line.startswith(("AT_CONNECT=", "AFTER=", "REACH="))]
    report = "refused by the test" in result.stdout and "refused by the test" not in marks[0]
    return [*marks, f"EXIT={result.returncode}", f"REPORT={report}"]


def test_a_doctor_connects_before_loading_its_parser_checks_or_output(tmp_path: Path) -> None:
    """`specops doctor HOST --json`: the connection starts after the config (and paramiko), before anything
    the probe's answer needs (typer, the checks, the facts' models); --json never loads rich."""
    lines = _doctor_imports(tmp_path, ["--json"], NOT_BEFORE_CONNECT, NEVER_FOR_DOCTOR_JSON)
    assert lines == ["AT_CONNECT=", "REACH=HostSpec", "AFTER=", "EXIT=4", "REPORT=True"]


def test_the_same_doctor_again_connects_before_the_config_models_load(tmp_path: Path) -> None:
    """The second identical run connects from the plan the first one validated (cli/early/plan.py): pydantic and
    the config's models load while the host runs the probe, and the report is the same."""
    watched = ("pydantic", "specops.config.inventory", "specops.config.loader", *NOT_BEFORE_CONNECT)
    first = _doctor_imports(tmp_path, ["--json"], watched, NEVER_FOR_DOCTOR_JSON)
    again = _doctor_imports(tmp_path, ["--json"], watched, NEVER_FOR_DOCTOR_JSON)
    assert first[:2] == ["AT_CONNECT=pydantic,specops.config.inventory,specops.config.loader", "REACH=HostSpec"]
    assert again == ["AT_CONNECT=", "REACH=PlainReach", "AFTER=", "EXIT=4", "REPORT=True"]


def test_a_doctor_table_loads_rich_only_after_connecting(tmp_path: Path) -> None:
    lines = _doctor_imports(tmp_path, ["--strict"], NOT_BEFORE_CONNECT, ("rich",))
    assert lines == ["AT_CONNECT=", "REACH=HostSpec", "AFTER=rich", "EXIT=4", "REPORT=True"]


def test_a_parsed_doctor_connects_before_loading_its_checks(tmp_path: Path) -> None:
    """A doctor the console script does not start early (here: --profile) still connects first."""
    watched = ("rich", "specops.doctor.checks", "specops.probe.facts")
    lines = _doctor_imports(tmp_path, ["--profile", "ddtree", "--json"], watched, NEVER_FOR_DOCTOR_JSON)
    assert lines == ["AT_CONNECT=", "REACH=HostSpec", "AFTER=", "EXIT=4", "REPORT=True"]


def test_a_doctor_or_deploy_imports_no_test_or_async_machinery() -> None:
    """Every SSH command imports paramiko, whose `invoke` integration (for `Match exec`, which specops never
    evaluates) would pull in unittest.mock and asyncio: ~50 ms of each command's start-up."""
    code = (
        "import sys\n"
        "import specops.host.ssh.connection, specops.doctor.runner, specops.deploy.execute\n"
        "print('LOADED=' + ','.join(m for m in ('invoke', 'asyncio', 'unittest') if m in sys.modules))\n"
        "import invoke\n"  # still importable by anything else in the process
        "print('INVOKE=' + invoke.__name__)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-2:] == ["LOADED=", "INVOKE=invoke"]


def test_paramiko_imports_without_importlib_metadata_and_still_knows_its_version() -> None:
    """paramiko reads its own version through importlib.metadata (email, zipfile, csv: ~20-50 ms before every
    first connection); specops gives it the same line from the same METADATA file without that import."""
    code = (
        "import sys\n"
        "import specops.host.ssh.connection, paramiko\n"
        "print('LOADED=' + str('importlib.metadata' in sys.modules))\n"
        "import importlib.metadata\n"
        "print('SAME=' + str(importlib.metadata.version('paramiko') == paramiko.__version__ != ''))\n"
        "print('REAL=' + str(callable(importlib.metadata.distributions)))\n"
        "print('BANNER=' + paramiko.Transport._CLIENT_ID)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    import importlib.metadata

    expected = ["LOADED=False", "SAME=True", "REAL=True", f"BANNER=paramiko_{importlib.metadata.version('paramiko')}"]
    assert result.stdout.strip().splitlines()[-4:] == expected


def test_the_metadata_stand_in_hands_over_to_the_real_module() -> None:
    """Another name, or another attribute, while paramiko imports: the real importlib.metadata answers and
    replaces the stand-in for everyone after."""
    code = (
        "import sys\n"
        "from specops.host.ssh.paramiko_import import _metadata_stand_in\n"
        "with _metadata_stand_in():\n"
        "    from importlib import metadata\n"
        "    print('STAND_IN=' + type(metadata).__name__)\n"
        "    print('PIP=' + str(bool(metadata.version('pip'))))\n"
        "    print('AFTER=' + type(sys.modules['importlib.metadata']).__name__)\n"
        "print('KEPT=' + type(sys.modules['importlib.metadata']).__name__)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-4:] == ["STAND_IN=_StandIn", "PIP=True", "AFTER=module", "KEPT=module"]
    attribute_form = (  # `import importlib.metadata; importlib.metadata.X(...)`, as some libraries call it
        "from specops.host.ssh.paramiko_import import _metadata_stand_in\n"
        "with _metadata_stand_in():\n"
        "    import importlib.metadata\n"
        "    print('FIRST=' + type(importlib.metadata).__name__)\n"
        "    print('CALLABLE=' + str(callable(importlib.metadata.distributions)))\n"
        "    print('AFTER=' + type(importlib.metadata).__name__)\n"
    )
    result = subprocess.run([sys.executable, "-c", attribute_form], capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-3:] == ["FIRST=_StandIn", "CALLABLE=True", "AFTER=module"]


# What `specops --json deploy` must never load: the live view (rich) and other commands' modules.
NEVER_FOR_DEPLOY_JSON = (
    "rich",
    "invoke",
    "specops.cli.doctor_view",
    "specops.cli.cmd_status",
    "specops.cli.status_view",
    "specops.cli.cmd_diff",
)


def _deploy_files(tmp_path: Path) -> tuple[Path, Path]:
    """A config naming llm-two and a build folder holding sglang: (config, build)."""
    build = tmp_path / "build"
    (build / "sglang").mkdir(parents=True)
    (build / "sglang" / "__init__.py").write_text("__version__ = '0.0.1'\n")
    config = tmp_path / "specops.toml"
    config.write_text(
        '[hosts.llm-two]\nssh = "llm-two"\npython = "/opt/venv/bin/python"\nmodel_path = "/models/target"\n'
        'draft_model_path = "/models/draft"\nprofile = "ddtree"\n'
    )
    return config, build


def test_a_json_deploy_loads_neither_the_live_view_nor_other_commands(tmp_path: Path) -> None:
    config, build = _deploy_files(tmp_path)
    code = DOCTOR_RUN.replace('"doctor", "llm-two"', '"--json", "deploy", "llm-two", "--build", {build!r}').format(
        config=str(config), extra=[], at_connect=("rich",), after=NEVER_FOR_DEPLOY_JSON, build=str(build)
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    marks = [line for line in result.stdout.splitlines() if line.startswith(("AT_CONNECT=", "AFTER="))]
    assert (marks, result.returncode) == (["AT_CONNECT=", "AFTER="], 4), result.stdout + result.stderr
    assert '"outcome": "unreachable"' in result.stdout


def test_the_same_deploy_again_connects_before_typer_or_the_config_models_load(tmp_path: Path) -> None:
    """The second identical deploy connects from the plan the first one kept (cli/early/deploy.py): typer,
    pydantic, the config's models and the deploy's own modules load while the host starts its commands."""
    config, build = _deploy_files(tmp_path)
    watched = ("typer", "pydantic", "specops.config.inventory", "specops.deploy.execute", "specops.cli.main")
    code = DOCTOR_RUN.replace('"doctor", "llm-two"', '"--json", "deploy", "llm-two", "--build", {build!r}').format(
        config=str(config), extra=[], at_connect=watched, after=("rich",), build=str(build)
    )
    # the refused connection answers at once: wait for it in full, not 1 s, so a busy machine cannot reorder them
    code = code.replace("from specops.cli.entry import entry", "import specops.cli.early.deploy as early_deploy\n"
                        "early_deploy.WAIT_STARTED_S = 60.0\nfrom specops.cli.entry import entry")  # fmt: skip
    environ = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_STATE_HOME": str(tmp_path / "state")}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, env=environ)
            for _ in range(2)]  # fmt: skip
    marks = [[line for line in run.stdout.splitlines() if line.startswith(("AT_CONNECT=", "REACH="))] for run in runs]
    assert marks[0] == ["AT_CONNECT=" + ",".join(watched), "REACH=HostSpec"], runs[0].stdout + runs[0].stderr
    assert marks[1] == ["AT_CONNECT=", "REACH=PlainReach"], runs[1].stdout + runs[1].stderr
    assert [run.returncode for run in runs] == [4, 4]
