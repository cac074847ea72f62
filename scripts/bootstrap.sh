#!/usr/bin/env bash
# Make the workspace environment ready on a machine that has only python3.
#
# 1. Find uv on PATH, or in .tools/ from an earlier run, or install it there from PyPI.
# 2. With uv: `uv sync --all-packages --locked --inexact` on the machine's python3 (never a
#    downloaded Python). A second run is a no-op check that takes well under a second.
#    `--inexact` keeps packages the user installed into .venv on top of the lock (a plugin or a
#    layer under development): the sync adds and updates the workspace, it never removes them.
# 3. Without uv (PyPI has no wheel for this platform): a plain venv and pip editable installs.
# Then runs the given command inside the environment: `scripts/bootstrap.sh pytest -q`.
# `scripts/bootstrap.sh uv pip install -e ../my-plugin` runs uv itself against .venv (which
# has no pip of its own), wherever uv was found.
set -euo pipefail
cd "$(dirname "$0")/.."
export UV_PYTHON_DOWNLOADS=never
PYTHON=${PYTHON:-python3}

find_uv() {
  if command -v uv >/dev/null 2>&1; then command -v uv; return; fi
  if [ -x .tools/bin/uv ]; then echo .tools/bin/uv; return; fi
  "$PYTHON" -m venv .tools >&2 && .tools/bin/python -m pip install --quiet --disable-pip-version-check uv >&2 \
    && echo .tools/bin/uv
}

if UV=$(find_uv) && [ -n "$UV" ]; then
  "$UV" sync --all-packages --locked --inexact --python "$PYTHON" --quiet >&2
  if [ "${1:-}" = uv ]; then
    shift
    VIRTUAL_ENV="$PWD/.venv" exec "$UV" "$@"
  fi
  exec "$UV" run --locked --no-sync "$@"
else
  echo "uv is unavailable; falling back to pip (versions not locked)" >&2
  [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv >&2
  if [ ! -f .venv/.noetic-installed ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check \
      -e packages/core -e packages/adapters-openrouter -e packages/layers-scratchpad -e packages/fs-fsspec \
      -e packages/durable-dbos \
      pytest 'anyio[trio]' hypothesis ruff mypy pyyaml types-pyyaml mkdocs mkdocs-material pytest-examples pyte >&2
    touch .venv/.noetic-installed
  fi
  if [ "${1:-}" = uv ]; then
    echo "uv is unavailable here; use .venv/bin/python -m pip instead" >&2
    exit 2
  fi
  PATH="$PWD/.venv/bin:$PATH" exec "$@"
fi
