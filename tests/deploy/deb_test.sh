#!/bin/sh
# The .deb (CPack): its files, its dependencies from dpkg-shlibdeps, the
# config as a conffile, and a postinst that enables irontuned.service
# (deb-systemd-helper replaced by a recorder, so the system is untouched).
# Skips (exit 77) without dpkg-deb and dpkg-shlibdeps.
# Usage: deb_test.sh BUILD_DIR
set -u
build=$1
for tool in dpkg-deb dpkg-shlibdeps cpack; do
  if ! command -v $tool >/dev/null 2>&1; then
    echo "SKIP: $tool not found (Debian packages dpkg-dev, cmake)"
    exit 77
  fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() {
  echo "FAIL: $*"
  status=1
}

if ! cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/pkg" \
  >"$tmp/cpack.log" 2>&1; then
  cat "$tmp/cpack.log"
  echo "FAIL: cpack"
  exit 1
fi
deb=$(ls "$tmp"/pkg/irontune_*.deb 2>/dev/null | head -n1)
[ -n "$deb" ] || {
  ls -R "$tmp/pkg"
  echo "FAIL: no irontune_*.deb"
  exit 1
}
echo "built $(basename "$deb")"

dpkg-deb -c "$deb" | awk '{print $NF}' >"$tmp/files"
for f in ./usr/bin/irontuned ./usr/bin/irontune-client \
  ./usr/lib/systemd/system/irontuned.service \
  ./usr/lib/sysusers.d/irontune.conf ./usr/lib/tmpfiles.d/irontune.conf \
  ./etc/irontune/irontuned.conf ./usr/share/doc/irontune/operations.md; do
  grep -qx -- "$f" "$tmp/files" || fail "the .deb lacks $f"
done

depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for lib in libgrpc libprotobuf libsqlite3 systemd; do
  echo "$depends" | grep -q "$lib" || fail "Depends lacks $lib"
done

dpkg-deb -e "$deb" "$tmp/control"
grep -qx /etc/irontune/irontuned.conf "$tmp/control/conffiles" ||
  fail "the config is not a conffile"
for s in postinst prerm postrm; do
  [ -x "$tmp/control/$s" ] || fail "no executable $s"
done

# postinst configure on a fresh install: enables the unit.
mkdir "$tmp/bin"
for tool in deb-systemd-helper deb-systemd-invoke systemctl \
  systemd-sysusers systemd-tmpfiles; do
  printf '#!/bin/sh\necho "%s $*" >>"%s"\n' "$tool" "$tmp/calls" \
    >"$tmp/bin/$tool"
  chmod +x "$tmp/bin/$tool"
done
PATH="$tmp/bin:$PATH" "$tmp/control/postinst" configure ||
  fail "postinst configure failed"
cat "$tmp/calls"
grep -qx "deb-systemd-helper enable irontuned.service" "$tmp/calls" ||
  fail "postinst did not enable irontuned.service"
grep -qx "systemd-sysusers irontune.conf" "$tmp/calls" ||
  fail "postinst did not create the irontune user"

[ $status -eq 0 ] && echo "the .deb installs irontune and enables its unit"
exit $status
