#!/usr/bin/env bash
# Builds hookscope's .deb with cargo-deb, unpacks it into a temporary root and checks it: the
# files it installs, the runtime libraries it depends on, the desktop entry and metainfo, and
# that the packaged binary runs. None of that needs root.
#
#   packaging/build-deb.sh            release build (the package to ship)
#   packaging/build-deb.sh --dev      dev-profile build (fast; what CI checks)
#   packaging/build-deb.sh --install  also installs it with dpkg -i (root) and runs it from /usr/bin
set -euo pipefail
cd "$(dirname "$0")/.."

profile=release
install=no
for arg in "$@"; do
  case "$arg" in
    --dev) profile=dev ;;
    --install) install=yes ;;
    *) echo "usage: $0 [--dev] [--install]" >&2; exit 2 ;;
  esac
done

command -v cargo-deb >/dev/null || cargo install cargo-deb --locked --quiet

if [ "$profile" = dev ]; then
  deb=$(cargo deb --profile dev --no-strip 2>/dev/null | tail -n 1)
else
  deb=$(cargo deb 2>/dev/null | tail -n 1)
fi
[ -f "$deb" ] || { echo "cargo deb produced no package" >&2; exit 1; }
echo "built $deb"

fail() { echo "FAIL: $*" >&2; exit 1; }

files=$(dpkg-deb -c "$deb" | awk '{print $6}')
for expected in \
  ./usr/bin/hookscope \
  ./usr/share/applications/dev.hookscope.hookscope.desktop \
  ./usr/share/metainfo/dev.hookscope.hookscope.metainfo.xml \
  ./usr/share/icons/hicolor/scalable/apps/dev.hookscope.hookscope.svg \
  ./usr/share/icons/hicolor/256x256/apps/dev.hookscope.hookscope.png \
  ./usr/share/icons/hicolor/48x48/apps/dev.hookscope.hookscope.png; do
  grep -qx "$expected" <<<"$files" || fail "$expected is not in the package"
done
echo "files: ok ($(wc -l <<<"$files") entries)"

depends=$(dpkg-deb -f "$deb" Depends)
for lib in libc6 libgl1 libegl1 libx11-6 libwayland-client0 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1; do
  grep -q "\b$lib\b" <<<"$depends" || fail "Depends lacks $lib: $depends"
done
echo "depends: ok ($depends)"

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
dpkg-deb -x "$deb" "$root"
version=$("$root/usr/bin/hookscope" --version)
[ "$version" = "hookscope $(dpkg-deb -f "$deb" Version | cut -d- -f1)" ] || fail "the packaged binary says: $version"
echo "unpacked binary: $version"
if command -v desktop-file-validate >/dev/null; then
  desktop-file-validate "$root/usr/share/applications/dev.hookscope.hookscope.desktop"
  echo "desktop entry: valid"
fi
if command -v appstreamcli >/dev/null; then
  appstreamcli validate --no-net --pedantic "$root/usr/share/metainfo/dev.hookscope.hookscope.metainfo.xml" >/dev/null ||
    appstreamcli validate --no-net "$root/usr/share/metainfo/dev.hookscope.hookscope.metainfo.xml"
  echo "metainfo: valid"
fi

if [ "$install" = yes ]; then
  # dpkg does not fetch dependencies; apt-get install -f does, and finishes the install.
  dpkg -i "$deb" >/dev/null 2>&1 || apt-get install -f -y -qq >/dev/null 2>&1
  echo "installed: $(command -v hookscope) says $(/usr/bin/hookscope --version)"
fi
echo "package check passed"
