#!/bin/sh
# `cmake --install` puts every file where an operator expects it, for the
# prefix /usr (config in /etc) and for another prefix (config under it),
# with the unit's paths rewritten to match, and keeps an edited config.
# Usage: install_test.sh BUILD_DIR
set -u
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

fail() {
  echo "FAIL: $*"
  status=1
}
want_file() {
  [ -f "$1" ] || fail "missing $1"
}
want_line() { # FILE LINE
  grep -qx -- "$2" "$1" 2>/dev/null || fail "$1 lacks the line: $2"
}

# Prefix /usr, as the .deb: the config goes to /etc.
if ! DESTDIR="$tmp/root" cmake --install "$build" --prefix /usr \
  >"$tmp/install.log" 2>&1; then
  cat "$tmp/install.log"
  fail "cmake --install --prefix /usr"
fi
r=$tmp/root
for f in usr/bin/irontuned usr/bin/irontune-client; do
  [ -x "$r/$f" ] || fail "$f is not an executable"
done
want_file "$r/usr/lib/systemd/system/irontuned.service"
want_line "$r/usr/lib/systemd/system/irontuned.service" \
  "ExecStart=/usr/bin/irontuned --config /etc/irontune/irontuned.conf"
want_line "$r/usr/lib/systemd/system/irontuned.service" \
  "Documentation=file:///usr/share/doc/irontune/operations.md"
want_file "$r/usr/lib/sysusers.d/irontune.conf"
want_line "$r/usr/lib/sysusers.d/irontune.conf" \
  'u irontune - "irontune NPU tuning daemon" /var/lib/irontune'
want_file "$r/usr/lib/tmpfiles.d/irontune.conf"
want_file "$r/etc/irontune/irontuned.conf"
want_line "$r/etc/irontune/irontuned.conf" 'device = "sim:npu2"'
for f in README.md deploy.md operations.md ARCHITECTURE.md \
  examples/irontuned.conf; do
  want_file "$r/usr/share/doc/irontune/$f"
done
[ -e "$r/usr/etc" ] && fail "prefix /usr put files in /usr/etc"

# An edited config survives a reinstall.
echo 'device = "sim:npu1"' >"$r/etc/irontune/irontuned.conf"
DESTDIR="$r" cmake --install "$build" --prefix /usr >/dev/null 2>&1 ||
  fail "second cmake --install"
want_line "$r/etc/irontune/irontuned.conf" 'device = "sim:npu1"'

# Another prefix: everything under it, the unit pointing there.
p=$tmp/opt/irontune
if ! cmake --install "$build" --prefix "$p" >"$tmp/install2.log" 2>&1; then
  cat "$tmp/install2.log"
  fail "cmake --install --prefix $p"
fi
[ -x "$p/bin/irontuned" ] || fail "$p/bin/irontuned missing"
want_line "$p/lib/systemd/system/irontuned.service" \
  "ExecStart=$p/bin/irontuned --config $p/etc/irontune/irontuned.conf"
want_file "$p/etc/irontune/irontuned.conf"

# The installed binary runs.
"$r/usr/bin/irontuned" --help >/dev/null 2>&1 ||
  fail "installed irontuned --help failed"

[ $status -eq 0 ] && echo "installed files are where they belong"
exit $status
