#!/usr/bin/env bash
# The browser the `browser` tests drive: Debian's headless Chromium at /usr/bin/chromium, which
# Playwright launches as it is (no browser download).
#
#   browser.sh install      apt-get Debian's chromium (root); nothing when it is there
set -euo pipefail

die() { echo "browser.sh: $*" >&2; exit 1; }

case "${1:-}" in
install)
    command -v chromium >/dev/null && exit 0
    [ "$(id -u)" = 0 ] || die "installing Chromium needs root: run 'sudo $0 install'"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq chromium >/dev/null  # with its recommended fonts, as a desktop has them
    ;;
*) die "usage: $0 install" ;;
esac
