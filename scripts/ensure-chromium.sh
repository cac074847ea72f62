#!/usr/bin/env bash
# Make headless Chromium and its WebDriver available for the inspector's browser tests:
# installs Debian's `chromium` and `chromium-driver` packages when either is missing.
# Prints the paths of the two binaries (browser, then driver).
set -euo pipefail
browser=$(command -v chromium || true)
driver=$(command -v chromedriver || true)
if [ -z "$browser" ] || [ -z "$driver" ]; then
  if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO=sudo; else SUDO=; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >&2
  $SUDO apt-get install -y -qq chromium chromium-driver >&2
  browser=$(command -v chromium)
  driver=$(command -v chromedriver)
fi
echo "$browser"
echo "$driver"
