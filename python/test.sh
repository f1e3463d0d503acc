#!/usr/bin/env bash
# Builds and installs the package with plain pip into a fresh virtual environment, then runs
# its pytest suite. Usage: bash python/test.sh [pytest arguments]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$here" pytest
# From outside the source folder, so that the installed package is the one imported.
cd "$venv"
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$here/tests" "$@"
