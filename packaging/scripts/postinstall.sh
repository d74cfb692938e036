#!/bin/sh
# State directory and config permissions; tell systemd about the unit.
# Idempotent, and run again on every upgrade.
set -e

install -d -o comb -g comb -m 0750 /var/lib/comb
for f in /etc/comb/comb.toml /etc/comb/comb.env; do
	if [ -f "$f" ]; then
		chown root:comb "$f"
		chmod 0640 "$f"
	fi
done

if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
	# An upgrade restarts a running service on the new binary; a first
	# install leaves it to the administrator: systemctl enable --now comb
	systemctl try-restart comb.service >/dev/null 2>&1 || true
fi
