#!/bin/sh
# Create the comb system group and user before the files are unpacked.
# Idempotent: an existing user or group is kept as it is.
set -e

nologin=/usr/sbin/nologin
[ -x "$nologin" ] || nologin=/sbin/nologin

if ! grep -q '^comb:' /etc/group; then
	if command -v groupadd >/dev/null 2>&1; then
		groupadd --system comb
	else
		addgroup -S comb # BusyBox (Alpine)
	fi
fi
if ! id -u comb >/dev/null 2>&1; then
	if command -v useradd >/dev/null 2>&1; then
		useradd --system --gid comb --home-dir /var/lib/comb --no-create-home \
			--shell "$nologin" --comment "comb message broker" comb
	else
		adduser -S -D -H -h /var/lib/comb -s "$nologin" -G comb -g "comb message broker" comb
	fi
fi
