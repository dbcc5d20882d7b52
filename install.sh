#!/bin/sh
# Installs crab's release binary: picks the asset for this OS and CPU, checks its
# SHA-256 against the release's SHA256SUMS, and installs it as PREFIX/bin/crab.
#
#   curl -fsSL https://github.com/OWNER/REPO/releases/latest/download/install.sh | sh
#   sh install.sh [--prefix DIR] [--version vX.Y.Z] [--base-url URL]
#
# --prefix DIR     install into DIR/bin (default: $CRAB_PREFIX, else ~/.local)
# --version TAG    a release tag instead of the latest release ($CRAB_VERSION)
# --base-url URL   the folder holding the assets and SHA256SUMS ($CRAB_BASE_URL);
#                  replaces the GitHub release address
#
# The release workflow writes its repository into the copy of this script that
# it publishes; a copy from the source tree needs CRAB_REPO=OWNER/REPO or a base URL.
set -eu

RELEASE_REPO="@CRAB_RELEASE_REPO@"
SUPPORTED="x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-apple-darwin aarch64-apple-darwin"

fail() {
  echo "install.sh: error: $*" >&2
  exit 1
}

prefix="${CRAB_PREFIX:-${HOME:-}/.local}"
version="${CRAB_VERSION:-latest}"
base="${CRAB_BASE_URL:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || fail "--prefix needs a directory"; prefix="$2"; shift 2 ;;
    --version) [ $# -ge 2 ] || fail "--version needs a tag"; version="$2"; shift 2 ;;
    --base-url) [ $# -ge 2 ] || fail "--base-url needs a URL"; base="$2"; shift 2 ;;
    -h | --help) sed -n '2,15p' "$0" 2>/dev/null | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) fail "unknown argument \"$1\" (see --help)" ;;
  esac
done
[ -n "$prefix" ] || fail "no install prefix: set HOME or pass --prefix DIR"

# The asset name is crab-<Rust target triple>, as `deno compile --target` names them.
os=$(uname -s)
arch=$(uname -m)
case "$os" in
  Linux) os_part=unknown-linux-gnu ;;
  Darwin) os_part=apple-darwin ;;
  *) fail "no crab release for OS \"$os\" (releases: $SUPPORTED)" ;;
esac
case "$arch" in
  x86_64 | amd64) arch_part=x86_64 ;;
  aarch64 | arm64) arch_part=aarch64 ;;
  *) fail "no crab release for CPU \"$arch\" on $os (releases: $SUPPORTED)" ;;
esac
# A shell under Rosetta reports x86_64 on an Apple silicon Mac: take the native build.
if [ "$os_part" = apple-darwin ] && [ "$arch_part" = x86_64 ] &&
  [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || true)" = 1 ]; then
  arch_part=aarch64
fi
asset="crab-$arch_part-$os_part"

if [ -z "$base" ]; then
  repo="${CRAB_REPO:-$RELEASE_REPO}"
  case "$repo" in
    */*) ;;
    *) fail "no release repository: set CRAB_REPO=OWNER/REPO or pass --base-url URL" ;;
  esac
  if [ "$version" = latest ]; then
    base="https://github.com/$repo/releases/latest/download"
  else
    base="https://github.com/$repo/releases/download/$version"
  fi
fi
base="${base%/}"

download() { # URL FILE
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 2 --connect-timeout 20 -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -T 60 -O "$2" "$1"
  else
    fail "neither curl nor wget is installed"
  fi
}

sha256() { # FILE
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d ' ' -f 1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d ' ' -f 1
  else
    fail "neither sha256sum nor shasum is installed, so the download cannot be checked"
  fi
}

tmp=$(mktemp -d 2>/dev/null || mktemp -d -t crab-install)
trap 'rm -rf "$tmp"' EXIT
trap 'rm -rf "$tmp"; exit 130' INT TERM

echo "install.sh: downloading $asset from $base"
download "$base/SHA256SUMS" "$tmp/SHA256SUMS" || fail "cannot download $base/SHA256SUMS"
# sha256sum writes "HASH  NAME" (or "HASH *NAME" in binary mode).
expected=$(awk -v a="$asset" '$2 == a || $2 == "*" a { print $1; exit }' "$tmp/SHA256SUMS")
[ -n "$expected" ] || fail "$base/SHA256SUMS has no entry for $asset"
download "$base/$asset" "$tmp/$asset" || fail "cannot download $base/$asset"
actual=$(sha256 "$tmp/$asset")
if [ "$actual" != "$expected" ]; then
  fail "checksum mismatch for $asset: SHA256SUMS says $expected, the download is $actual; nothing was installed"
fi

mkdir -p "$prefix/bin" || fail "cannot create $prefix/bin"
chmod 755 "$tmp/$asset"
# A temp name in the same folder, then a rename: a running crab is never half-overwritten.
staged="$prefix/bin/.crab.install.$$"
cp "$tmp/$asset" "$staged" || fail "cannot write to $prefix/bin"
if ! installed=$("$staged" --version 2>&1); then
  rm -f "$staged"
  fail "$asset does not run on this machine: $installed; nothing was installed"
fi
mv -f "$staged" "$prefix/bin/crab"
echo "install.sh: installed $prefix/bin/crab ($installed)"
case ":${PATH:-}:" in
  *":$prefix/bin:"*) ;;
  *) echo "install.sh: add it to PATH: export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
