#!/usr/bin/env bash
# Install (or upgrade) specops from this checkout into a private virtual environment and put `specops` on
# the PATH, without touching the system Python: a distribution's Python is "externally managed" (PEP 668)
# and refuses `pip install`, and a stock Debian/Ubuntu has no `venv` module until python3-venv is installed.
#
#   ./install.sh                 install or upgrade, then run `specops doctor --local`
#
# Environment:
#   PYTHON            the interpreter to build the venv from (default: python3; needs 3.11 or newer)
#   SPECOPS_HOME      where the venv lives (default: ~/.local/share/specops; the venv is $SPECOPS_HOME/venv)
#   SPECOPS_BIN_DIR   where the `specops` link goes (default: ~/.local/bin, or /usr/local/bin as root)
#   SPECOPS_NO_DOCTOR set to 1 to skip the final `specops doctor --local`
#
# How the venv is made, first that works: `python3 -m venv`; else `uv`; else `pipx`; else, as root on a
# Debian-like system, apt-get installs the venv package and `python3 -m venv` runs. Re-running upgrades.
set -euo pipefail

SOURCE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYTHON=${PYTHON:-python3}
SPECOPS_HOME=${SPECOPS_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/specops}
VENV=$SPECOPS_HOME/venv
if [ "$(id -u)" -eq 0 ]; then DEFAULT_BIN=/usr/local/bin; else DEFAULT_BIN=$HOME/.local/bin; fi
BIN_DIR=${SPECOPS_BIN_DIR:-$DEFAULT_BIN}

say() { printf 'install.sh: %s\n' "$*" >&2; }
fail() { printf 'install.sh: error: %s\n' "$1" >&2; [ -n "${2:-}" ] && printf 'install.sh: hint: %s\n' "$2" >&2; exit 1; }

check_python() {
    command -v "$PYTHON" >/dev/null 2>&1 || fail "no $PYTHON on PATH" "install Python 3.11 or newer, or set PYTHON=/path/to/python3"
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
        || fail "$("$PYTHON" -V 2>&1) is too old: specops needs Python 3.11 or newer" "set PYTHON=/path/to/python3.11+"
    [ -f "$SOURCE/pyproject.toml" ] || fail "$SOURCE is not a specops checkout (no pyproject.toml)"
}

has_venv() { "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1; }

# The distribution's package that provides venv + ensurepip for this Python (python3.11-venv, python3-venv).
venv_package() { "$PYTHON" -c 'import sys; print("python%d.%d-venv" % sys.version_info[:2])'; }

install_venv_package() {
    local versioned
    versioned=$(venv_package)
    say "no venv module for $PYTHON: installing $versioned with apt-get (running as root)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends "$versioned" >/dev/null \
        || apt-get install -y -q --no-install-recommends python3-venv >/dev/null
}

with_venv() {
    if [ -x "$VENV/bin/python" ] && ! "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
        say "the venv in $VENV is broken (its Python moved?): recreating it"
        rm -rf "$VENV"
    fi
    if [ -x "$VENV/bin/python" ]; then say "upgrading specops in $VENV"; else
        say "creating $VENV with $("$PYTHON" -V 2>&1)"
        mkdir -p "$SPECOPS_HOME"
        "$PYTHON" -m venv "$VENV" >&2
    fi
    "$VENV/bin/python" -m pip install -q --upgrade pip >&2
    "$VENV/bin/python" -m pip install -q --upgrade "$SOURCE" >&2
    "$VENV/bin/python" -m pip install -q --force-reinstall --no-deps "$SOURCE" >&2  # same version: still this code
    echo "$VENV/bin/specops"
}

with_uv() {
    [ -x "$VENV/bin/python" ] && say "upgrading specops in $VENV (uv)" || {
        say "creating $VENV with uv"
        mkdir -p "$SPECOPS_HOME"
        uv venv -q --python "$PYTHON" "$VENV" >&2
    }
    uv pip install -q --python "$VENV/bin/python" --upgrade --reinstall-package specops "$SOURCE" >&2
    echo "$VENV/bin/specops"
}

with_pipx() {
    say "installing with pipx (PIPX_HOME=$SPECOPS_HOME/pipx)"
    PIPX_HOME=$SPECOPS_HOME/pipx PIPX_BIN_DIR=$SPECOPS_HOME/pipx/bin pipx install --force --python "$PYTHON" "$SOURCE" >&2
    echo "$SPECOPS_HOME/pipx/bin/specops"
}

install_specops() {
    if has_venv; then with_venv; return; fi
    if command -v uv >/dev/null 2>&1; then with_uv; return; fi
    if command -v pipx >/dev/null 2>&1; then with_pipx; return; fi
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        install_venv_package
        has_venv || fail "installed $(venv_package) but $PYTHON still has no venv module"
        with_venv
        return
    fi
    fail "$PYTHON has no venv module, and neither uv nor pipx is installed" \
        "ask an administrator for: apt-get install $(venv_package)   (or install uv or pipx, then re-run)"
}

link_into_path() {
    local target=$1
    mkdir -p "$BIN_DIR"
    ln -sfn "$target" "$BIN_DIR/specops"
    say "linked $BIN_DIR/specops -> $target ($("$BIN_DIR/specops" --version))"
    case ":$PATH:" in
        *":$BIN_DIR:"*) ;;
        *) say "note: $BIN_DIR is not on your PATH; add it: export PATH=\"$BIN_DIR:\$PATH\"" ;;
    esac
}

main() {
    check_python
    local installed
    installed=$(install_specops)
    link_into_path "$installed"
    if [ "${SPECOPS_NO_DOCTOR:-0}" = 1 ]; then return 0; fi
    say "checking this machine: specops doctor --local"
    "$BIN_DIR/specops" doctor --local
}

main "$@"
