#!/bin/sh
# On purge, remove what comb left empty. The database in /var/lib/comb and
# the comb user are kept: a message broker's data is never deleted by a
# package manager (docs/install.md says how to remove them by hand).
set -e

if [ "$1" = purge ]; then
	rmdir /etc/comb 2>/dev/null || true
	rmdir /var/lib/comb 2>/dev/null || true
fi
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
fi
