#!/usr/bin/env bash
# Run the middle-end demo (the blur example) on the CPU backend.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash "$ROOT/scripts/setup_env.sh"
exec "$ROOT/.venv/bin/python" -m middleend.api.demo "$@"
