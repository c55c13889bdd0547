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

# Shell completions and the man page come from the binary itself (clap), so they always match
# its flags; cargo-deb then packs them with the binary it was built with.
# Where cargo puts the binary: CARGO_TARGET_DIR when set (cargo-deb finds it there itself).
built=${CARGO_TARGET_DIR:-target}
if [ "$profile" = dev ]; then
  cargo build --quiet --bin hookscope
  bin=$built/debug/hookscope
else
  cargo build --release --quiet --bin hookscope
  bin=$built/release/hookscope
fi
mkdir -p target/package
"$bin" completions bash > target/package/hookscope.bash
"$bin" completions zsh > target/package/_hookscope
"$bin" completions fish > target/package/hookscope.fish
"$bin" manpage | gzip -9n > target/package/hookscope.1.gz
if [ "$profile" = dev ]; then
  deb=$(cargo deb --profile dev --no-strip --no-build 2>/dev/null | tail -n 1)
else
  deb=$(cargo deb --no-build 2>/dev/null | tail -n 1)
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
  ./usr/share/icons/hicolor/48x48/apps/dev.hookscope.hookscope.png \
  ./usr/share/bash-completion/completions/hookscope \
  ./usr/share/zsh/vendor-completions/_hookscope \
  ./usr/share/fish/vendor_completions.d/hookscope.fish \
  ./usr/share/man/man1/hookscope.1.gz; do
  grep -qx "$expected" <<<"$files" || fail "$expected is not in the package"
done
grep -Eq '^\./(usr/)?lib/systemd/system/hookscope-relay\.service$' <<<"$files" || fail "the relay's systemd unit is not in the package"
echo "files: ok ($(wc -l <<<"$files") entries)"
# The relay's service is installed, its user made, and nothing enabled or started.
control=$(mktemp -d)
dpkg-deb -e "$deb" "$control"
grep -q "adduser --system" "$control/postinst" || fail "postinst does not make the relay's user"
# debhelper's snippet re-enables the unit on upgrade only when the admin had enabled it.
if grep -Eq "systemctl (--[a-z-]+ )*(enable|start)|deb-systemd-invoke start" "$control/postinst" ||
  [ "$(grep -c "deb-systemd-helper enable" "$control/postinst")" != "$(grep -c "was-enabled" "$control/postinst")" ]; then
  fail "postinst enables or starts the relay"
fi
rm -rf "$control"
echo "relay service: installed, disabled"

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
bash -n "$root/usr/share/bash-completion/completions/hookscope" || fail "the bash completion does not parse"
grep -q "listen" "$root/usr/share/bash-completion/completions/hookscope" || fail "the bash completion lacks the commands"
zcat "$root/usr/share/man/man1/hookscope.1.gz" | grep -q '^\.TH hookscope' || fail "the man page has no .TH header"
if command -v man >/dev/null; then
  MANWIDTH=100 man -l "$root/usr/share/man/man1/hookscope.1.gz" 2>/dev/null | grep -q "listen" || fail "man cannot render the page"
fi
echo "completions and man page: ok"
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
