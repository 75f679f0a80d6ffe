#!/bin/bash
# Builds the Debian package from the build tree (CPack's DEB generator, packaging/) into a
# temporary folder and checks it: the files and control fields it must have, and lintian with
# no error and no warning (packaging/lintian-overrides lists what does not apply, and why).
# Usage: deb_lintian.sh <build dir>
set -euo pipefail
build=$(cd "$1" && pwd)
out=$(mktemp -d /tmp/uroce-deb.XXXXXX)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

(cd "$build" && cpack -G DEB -B "$out" > "$out/cpack.log" 2>&1) ||
  { cat "$out/cpack.log"; fail "cpack -G DEB"; }
deb=$(ls "$out"/uroce_*.deb)
contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in ./usr/bin/uroce ./usr/bin/uroce-switch ./usr/bin/uroce-hostd \
         ./usr/lib/uroce/libibverbs.so.1 ./usr/lib/uroce/librdmacm.so.1 \
         ./usr/lib/uroce/roce_steer.bpf.o ./etc/uroce/uroce.toml \
         ./lib/systemd/system/uroce-exporter.service ./lib/systemd/system/uroce-hostd@.service \
         ./usr/share/doc/uroce/copyright \
         ./usr/share/man/man1/uroce.1.gz; do
  grep -qxF "$f" <<< "$contents" || fail "$f is not in $(basename "$deb")"
done
if grep -E '^\./usr/local/|/libibverbs\.so$|^\./usr/lib/x86_64-linux-gnu/libibverbs' <<< "$contents"; then
  fail "files outside the layout (above)"
fi
[ "$(dpkg-deb -f "$deb" Package)" = uroce ] || fail "Package field"
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -qx /etc/uroce/uroce.toml ||
  fail "/etc/uroce/uroce.toml is not a conffile"
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./lib/systemd/system/uroce-exporter.service |
  grep -q '^ExecStart=/usr/bin/uroce exporter' || fail "the unit does not run /usr/bin/uroce"
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./lib/systemd/system/uroce-hostd@.service |
  grep -q '^ExecStart=/usr/bin/uroce-hostd --netdev %i' ||
  fail "uroce-hostd@.service does not run /usr/bin/uroce-hostd"
lintian --fail-on error,warning "$deb" 2> >(grep -v 'running with root privileges' >&2) ||
  fail "lintian"
echo "PASS: $(basename "$deb") ($(dpkg-deb -f "$deb" Installed-Size) KiB installed), lintian clean"
