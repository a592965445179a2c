#!/usr/bin/env bash
# Regenerate the Python stubs of proto/middleend.proto into middleend/wire/v1/.
# The stubs are checked in (so installing needs no protoc); tests/test_wire_stubs.py fails
# when they are stale. Needs grpcio-tools (in the [test] extra).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
OUT="${1:-$ROOT}"
cd "$ROOT"
# The virtual include path makes the generated modules import each other as
# middleend.wire.v1.*, so they work inside the package.
"$PY" -m grpc_tools.protoc -Imiddleend/wire/v1=proto \
    --python_out="$OUT" --pyi_out="$OUT" --grpc_python_out="$OUT" \
    proto/middleend.proto
