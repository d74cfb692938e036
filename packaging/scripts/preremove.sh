#!/bin/sh
# Stop the service when the package goes away, not when it is upgraded.
# dpkg says "upgrade", rpm "1" on an upgrade.
set -e

case "$1" in
upgrade | 1) exit 0 ;;
esac
if [ -d /run/systemd/system ]; then
	systemctl disable --now comb.service >/dev/null 2>&1 || true
fi
