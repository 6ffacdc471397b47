"""The venv's site-packages on sys.path WITHOUT running its `.pth` files: the probe runs as root (`-I -S`).

Why: Python executes every `.pth` line that starts with `import` at each interpreter start, and site-packages
is often writable by the engine's user (who pip-installed the venv). The probe must still see the venv as the
engine does (its packages, dists, the build's parser), so this does what `site` does for a venv (the prefix
from pyvenv.cfg, its site-packages, and the folders a `.pth` names) except executing the `import` lines. The
import subprocesses (the build's parser, `--deep`) start the same way: `python_argv` hands them these paths.
Stdlib only, Python 3.8+.
"""

from __future__ import annotations

import os
import sys


def _venv() -> tuple[str, bool] | None:
    """(the venv's prefix, include-system-site-packages) as site.venv() finds them, None outside a venv."""
    exe_dir = os.path.dirname(os.path.abspath(sys.executable))
    prefix = os.path.dirname(exe_dir)
    for folder in (exe_dir, prefix):
        config = os.path.join(folder, "pyvenv.cfg")
        if os.path.isfile(config):
            system_site = False
            with open(config, encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    key, _eq, value = line.partition("=")
                    if key.strip().lower() == "include-system-site-packages":
                        system_site = value.strip().lower() == "true"
            return prefix, system_site
    return None


def _prefix_site_dirs(prefix: str) -> list[str]:
    """A venv's site-packages (lib/ and the platform's lib64/ variant), computed: no `site` quirks."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    libdirs = [getattr(sys, "platlibdir", "lib"), "lib"]
    return [os.path.join(prefix, libdir, version, "site-packages") for libdir in dict.fromkeys(libdirs)]


def site_dirs() -> list[str]:
    """The site-packages folders a normal start would add, in its order (the user's own never: `-I`)."""
    import site  # under -S importing site runs nothing (site.main() is not called)

    found = _venv()
    if found is None:
        return list(site.getsitepackages([sys.prefix, sys.exec_prefix]))
    prefix, system_site = found
    folders = _prefix_site_dirs(prefix)
    if system_site:
        folders += site.getsitepackages([sys.base_prefix, sys.base_exec_prefix])
    return folders


def _pth_folders(folder: str) -> list[str]:
    """The folders the `.pth` files in `folder` name, as site.addpackage adds them; `import` lines skipped."""
    try:
        names = sorted(name for name in os.listdir(folder) if name.endswith(".pth") and not name.startswith("."))
    except OSError:
        return []
    found = []
    for name in names:
        try:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as handle:
                lines = handle.read().splitlines()
        except OSError:
            continue
        for line in lines:
            if not line.strip() or line.startswith(("#", "import ", "import\t")):
                continue
            path = os.path.abspath(os.path.join(folder, line.rstrip()))
            if os.path.isdir(path):
                found.append(path)
    return found


def enable_site_packages() -> None:
    """Under `-S`: the venv's prefix (as site.venv sets it) and its site folders on sys.path; else nothing."""
    if not sys.flags.no_site:
        return
    found = _venv()
    if found is not None:
        sys.prefix = sys.exec_prefix = found[0]
    for folder in site_dirs():
        if not os.path.isdir(folder):
            continue
        for path in [folder, *_pth_folders(folder)]:
            if path not in sys.path:
                sys.path.append(path)


def python_argv(snippet: str) -> list[str]:
    """`python -I -S -c` for a snippet that imports from the venv: it starts with this process's prefix and
    sys.path (the folders above), so it sees the venv's packages and runs no `.pth` either."""
    prelude = "import sys\nsys.prefix = sys.exec_prefix = %r\nsys.path.extend(p for p in %r if p not in sys.path)\n"
    return [sys.executable, "-I", "-S", "-c", prelude % (sys.prefix, list(sys.path)) + snippet]
