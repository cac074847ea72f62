#!/usr/bin/env bash
# Make sure a PostgreSQL server is installed (the tests of packages/durable-dbos start their own
# throwaway server from its binaries), then print the directory holding initdb and pg_ctl.
#
# Looks in $NOETIC_PG_BIN, then /usr/lib/postgresql/*/bin (Debian and Ubuntu), then PATH; when
# none has initdb it installs Debian's `postgresql` package (root only). The package's own
# cluster is left stopped: nothing here starts a server.
set -euo pipefail

find_bin() {
  if [ -n "${NOETIC_PG_BIN:-}" ] && [ -x "$NOETIC_PG_BIN/initdb" ]; then echo "$NOETIC_PG_BIN"; return 0; fi
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$dir" ] && [ -x "$dir/initdb" ]; then echo "$dir"; return 0; fi
  if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; return 0; fi
  return 1
}

if bin=$(find_bin); then echo "$bin"; exit 0; fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "PostgreSQL is not installed and this script can only install it as root with apt-get;" \
    "install PostgreSQL 13 or newer, or set NOETIC_PG_BIN to the directory holding initdb" >&2
  exit 1
fi
echo "installing PostgreSQL (Debian package postgresql)" >&2
export DEBIAN_FRONTEND=noninteractive
# Another apt run may hold the lock for a while: wait for it instead of failing.
apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends postgresql >&2
# Debian starts the packaged cluster where it can; the tests never use it.
if command -v pg_ctlcluster >/dev/null 2>&1; then
  for cluster in $(pg_lsclusters -h 2>/dev/null | awk '$4 == "online" {print $1 "/" $2}'); do
    pg_ctlcluster "${cluster%/*}" "${cluster#*/}" stop >&2 || true
  done
fi
find_bin
