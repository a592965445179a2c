#!/usr/bin/env bash
# Create/refresh the project's virtual environment (.venv) and check the C toolchain.
# Idempotent: safe to run repeatedly; reinstalls only when pyproject.toml changed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="$ROOT/.venv"
PY="$VENV/bin/python"

log() { echo "[setup_env] $*" >&2; }
die() { echo "[setup_env] ERROR: $*" >&2; exit 1; }

# --- Python -----------------------------------------------------------------
SYS_PY="$(command -v python3 || true)"
[ -n "$SYS_PY" ] || die "python3 not found on PATH; install Python >= 3.10 (e.g. 'apt-get install python3 python3-venv')."
if ! "$SYS_PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'; then
    die "Python >= 3.10 is required, but $SYS_PY is $("$SYS_PY" -c 'import sys; print(sys.version.split()[0])'). Put a newer python3 first on PATH."
fi

if [ ! -x "$PY" ]; then
    log "creating virtual environment in .venv with $SYS_PY"
    rm -rf "$VENV"
    "$SYS_PY" -m venv "$VENV" || die "could not create .venv (on Debian/Ubuntu: 'apt-get install python3-venv')."
fi

# --- Python dependencies (only when pyproject.toml changed) -------------------
HASH="$("$SYS_PY" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$ROOT/pyproject.toml")"
STAMP="$VENV/.installed-$HASH"

# Also reinstall if a package gained its __init__.py after the last install (an editable
# install made before that maps nothing, so the package would not import from another cwd).
needs_install=0
[ -f "$STAMP" ] || needs_install=1
for pkg in middleend backends frontends; do
    if [ "$needs_install" -eq 0 ] && [ -f "$ROOT/$pkg/__init__.py" ] \
        && ! (cd / && "$PY" -I -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$pkg') is None)"); then
        needs_install=1
    fi
done

if [ "$needs_install" -eq 1 ]; then
    log "installing middleend and its dependencies into .venv (pip install -e '.[test,gpu,mpi]' and hls4ml)"
    "$PY" -m pip install --quiet --upgrade pip
    "$PY" -m pip install --quiet -e '.[test,gpu,mpi]'
    # the fpga target's C-simulation headers (Xilinx's open-source ap_int.h/hls_stream.h)
    # ship in the hls4ml wheel; --no-deps: only the headers are used, not its ML stack
    "$PY" -m pip install --quiet --no-deps 'hls4ml==1.3.0'
    rm -f "$VENV"/.installed-*
    touch "$STAMP"
fi

# --- C compiler with OpenMP -----------------------------------------------------
CC_BIN="${CC:-cc}"
if ! command -v "$CC_BIN" >/dev/null 2>&1; then
    die "C compiler '$CC_BIN' not found. Install gcc (Debian/Ubuntu: 'apt-get install gcc', Fedora: 'dnf install gcc', macOS: 'brew install gcc' and set CC=gcc-NN) or set CC to a compiler with OpenMP."
fi

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/omp_check.c" <<'C_EOF'
#include <omp.h>
#include <stdio.h>
int main(void) {
    int n = 0;
#pragma omp parallel reduction(+ : n)
    n += 1;
    printf("%d\n", n > 0 && omp_get_max_threads() > 0);
    return 0;
}
C_EOF
if ! "$CC_BIN" -O2 -fopenmp "$TMP/omp_check.c" -o "$TMP/omp_check" >"$TMP/cc.log" 2>&1 \
    || ! "$TMP/omp_check" >/dev/null 2>&1; then
    cat "$TMP/cc.log" >&2 || true
    die "C compiler '$CC_BIN' cannot build and run an OpenMP program with -fopenmp. Install gcc with libgomp (Debian/Ubuntu: 'apt-get install gcc libgomp1'; for clang also 'libomp-dev'), or set CC to such a compiler."
fi
