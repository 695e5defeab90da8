#!/usr/bin/env bash
# The Debian package, checked without installing it on this machine
# (docs/deploy.md): CPack builds it from BUILD_DIR (default build/release),
# then its control data (Depends computed by dpkg-shlibdeps, the conffile,
# the postinst), its files (binary, systemd unit, example configuration,
# README), the unit by `systemd-analyze verify` where systemd is there, and
# the packaged binary, unpacked into a scratch root, serving the packaged
# example configuration: /-/ready and the built-in dashboard answer 200.
#
#   scripts/test-package.sh [BUILD_DIR]
#
# Exit status non-zero on the first check that fails. A real `dpkg -i` was
# run by hand (docs/deploy.md says what it did).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
TMP=$(mktemp -d -t gc-pkg.XXXXXX)
SERVE=
cleanup() {
  [[ -n $SERVE ]] && kill "$SERVE" 2>/dev/null && wait "$SERVE" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "test-package: $*" >&2; exit 1; }

(cd "$BUILD" && cpack -G DEB -B "$TMP/out" >"$TMP/cpack.log" 2>&1) || { cat "$TMP/cpack.log"; fail "cpack failed"; }
DEB=$(ls "$TMP"/out/gpucanary_*.deb)
echo "test-package: built $(basename "$DEB")"

control=$(dpkg-deb -f "$DEB")
grep -q '^Package: gpucanary$' <<<"$control" || fail "no Package field"
grep -q '^Depends: .*adduser' <<<"$control" || fail "Depends lacks adduser"
grep -q '^Depends: .*libyaml-cpp' <<<"$control" || fail "Depends lacks the shared libraries (dpkg-shlibdeps)"
dpkg-deb --ctrl-tarfile "$DEB" | tar -x -C "$TMP" ./conffiles ./postinst
grep -qx '/etc/gpucanary/serve.yaml' "$TMP/conffiles" || fail "serve.yaml is not a conffile"
sh -n "$TMP/postinst" || fail "postinst does not parse"

files=$(dpkg-deb -c "$DEB" | awk '{print $NF}')
for f in ./usr/bin/gpucanary ./usr/lib/systemd/system/gpucanary.service \
  ./etc/gpucanary/serve.yaml ./usr/share/doc/gpucanary/README.md; do
  grep -qx -- "$f" <<<"$files" || fail "$f is not in the package"
done

ROOT=$TMP/root
dpkg-deb -x "$DEB" "$ROOT"
if command -v systemd-analyze >/dev/null; then
  # Verified against the packaged binary's path as the unit names it.
  unit=$TMP/gpucanary.service
  sed "s|/usr/bin/gpucanary|$ROOT/usr/bin/gpucanary|" \
    "$ROOT/usr/lib/systemd/system/gpucanary.service" >"$unit"
  out=$(systemd-analyze verify "$unit" 2>&1 || true)
  # Only findings about this unit count (the host's own units may be odd).
  findings=$(grep -i "gpucanary.service" <<<"$out" | grep -vci "user.*gpucanary\|group.*gpucanary" || true)
  if ((findings > 0)); then
    echo "$out" >&2
    fail "systemd-analyze verify found problems in the unit"
  fi
fi

# The packaged example configuration, its paths moved into the scratch root.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sed -e "s|127.0.0.1:9464|127.0.0.1:$port|" -e "s|/var/lib/gpucanary|$TMP/var|" \
  -e "s|/etc/gpucanary|$ROOT/etc/gpucanary|" "$ROOT/etc/gpucanary/serve.yaml" >"$TMP/serve.yaml"
echo '[]' >"$ROOT/etc/gpucanary/targets.json"
mkdir -p "$TMP/var"
"$ROOT/usr/bin/gpucanary" serve --config "$TMP/serve.yaml" >"$TMP/serve.log" 2>&1 &
SERVE=$!
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null || { cat "$TMP/serve.log"; fail "/-/ready"; }
# Into a file first: `curl | grep -q` fails under pipefail when grep stops
# reading early (curl gets SIGPIPE).
curl -sf "http://127.0.0.1:$port/" -o "$TMP/index.html" || fail "GET / failed"
grep -qi '<!doctype html>' "$TMP/index.html" || fail "no dashboard at /"
[[ -e $TMP/var/data/meta.sqlite ]] || fail "no data directory where the example configuration says"
echo "test-package: the packaged binary serves the packaged configuration (/-/ready, /)"
