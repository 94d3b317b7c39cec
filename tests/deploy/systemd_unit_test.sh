#!/bin/sh
# deploy/irontuned.service: `systemd-analyze verify` passes and
# `systemd-analyze security --offline=true` rates its exposure at most 3.0.
# Skips (exit 77) where systemd-analyze is missing.
# Usage: systemd_unit_test.sh UNIT IRONTUNED
set -u
unit=$1
irontuned=$2

if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "SKIP: systemd-analyze not found (Debian package systemd)"
  exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# verify checks that ExecStart's binary exists: point it at the one built.
sed "s#^ExecStart=/usr/bin/irontuned#ExecStart=$irontuned#" "$unit" \
  >"$tmp/irontuned.service"
grep -q "^ExecStart=$irontuned " "$tmp/irontuned.service" || {
  echo "FAIL: $unit has no ExecStart=/usr/bin/irontuned line"
  exit 1
}

status=0
if ! out=$(systemd-analyze verify "$tmp/irontuned.service" 2>&1) ||
  [ -n "$out" ]; then
  echo "FAIL: systemd-analyze verify $unit:"
  echo "$out"
  status=1
fi

out=$(systemd-analyze security --offline=true --threshold=30 \
  "$tmp/irontuned.service" 2>&1)
rc=$?
score=$(echo "$out" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' | head -n1)
echo "exposure (systemd-analyze security --offline=true): ${score:-none}"
if [ "$rc" -ne 0 ] || [ -z "$score" ] ||
  ! awk -v s="$score" 'BEGIN { exit !(s <= 3.0) }'; then
  echo "FAIL: exposure ${score:-unknown} (exit $rc), want at most 3.0:"
  echo "$out" | grep '✗'
  status=1
fi

# What the hardening is made of: a change that drops one of these fails here
# even if the figure stays under 3.0.
for line in 'Type=notify' 'WatchdogSec=' 'DevicePolicy=closed' \
  'DeviceAllow=/dev/accel/accel0 rw' 'CapabilityBoundingSet=$' \
  'SystemCallArchitectures=native' 'NoNewPrivileges=yes' \
  'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6$'; do
  if ! grep -q "^$line" "$unit"; then
    echo "FAIL: $unit lacks $line"
    status=1
  fi
done
exit $status
