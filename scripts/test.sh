#!/usr/bin/env bash
# Lint and run the test suite. Extra arguments are passed to pytest.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# checked before the set-up and the lint, which take a while (used below)
if ! [[ "${MIDDLEEND_TEST_WORKERS:-0}" =~ ^[0-9]+$ ]]; then
    echo "ERROR: MIDDLEEND_TEST_WORKERS=$MIDDLEEND_TEST_WORKERS: expected a number of" \
        "pytest workers (0 or 1: serial)" >&2
    exit 2
fi

bash "$ROOT/scripts/setup_env.sh"

# Lint (only the directories that exist: git does not keep empty ones).
LINT_DIRS=()
for d in middleend backends frontends tests benchmarks; do
    [ -d "$d" ] && LINT_DIRS+=("$d")
done
if [ "${#LINT_DIRS[@]}" -gt 0 ]; then
    "$ROOT/.venv/bin/ruff" check "${LINT_DIRS[@]}"
fi
# The layering contracts (pyproject.toml, [tool.importlinter]): arrows run one way.
"$ROOT/.venv/bin/lint-imports" --no-cache

PYTEST_ARGS=()
if [ "${CI:-}" = "true" ]; then
    PYTEST_ARGS+=(-p no:cacheprovider -q)
fi

# The whole suite (no arguments) runs on pytest-xdist workers, one per usable core (at most
# 8): serially it takes ~12 min on a fast 2-core host (the tests' summed time), too much
# of CI's 20 on a slow one. A run given arguments (one file, -k, as helpers and users run
# it) stays serial: a worker costs a few seconds to start, more
# than most single files take. $MIDDLEEND_TEST_WORKERS overrides the choice either way
# (0 or 1: serial). Why not more than one worker per core: each kernel call starts a
# thread per core and the MPI tests three ranks, so extra workers only oversubscribe; why
# at most 8: each worker holds Halide, ISL and PoCL (a few hundred MiB), and the longest
# file (test_inline_calls, ~1/6 of the suite) bounds the run anyway. Why --dist loadfile:
# a file's tests share module fixtures (a service process, libraries in the per-worker
# build cache), so they stay on one worker; the files balance well on 2 (run: ~half the
# tests' summed time).
WORKERS="${MIDDLEEND_TEST_WORKERS:-}"
if [ -z "$WORKERS" ]; then
    if [ "$#" -eq 0 ]; then
        WORKERS="$("$ROOT/.venv/bin/python" -c 'import os
n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
print(min(n or 1, 8))')"
    else
        WORKERS=0
    fi
fi
if [ "$WORKERS" -gt 1 ]; then
    PYTEST_ARGS+=(-n "$WORKERS" --dist loadfile)
fi

set +e
"$ROOT/.venv/bin/python" -m pytest ${PYTEST_ARGS[@]+"${PYTEST_ARGS[@]}"} "$@"
rc=$?
set -e

if [ "$rc" -eq 5 ]; then
    echo "ERROR: no tests were collected" >&2
    exit 1
fi
exit "$rc"
