#!/usr/bin/env bash
# Lint and run the test suite. Extra arguments are passed to pytest.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

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

set +e
"$ROOT/.venv/bin/python" -m pytest ${PYTEST_ARGS[@]+"${PYTEST_ARGS[@]}"} "$@"
rc=$?
set -e

if [ "$rc" -eq 5 ]; then
    echo "ERROR: no tests were collected" >&2
    exit 1
fi
exit "$rc"
