#!/usr/bin/env bash
# bench/apps/fetch_src.sh PACKAGE DIR
# Debian's upstream tarball of PACKAGE (its .orig.tar.*) into DIR, as
# `apt-get source --download-only` fetches it, checked against the SHA-256
# that the signed Sources index gives (`apt-get source --print-uris`).
# Prints the tarball's path. Needs a deb-src line for bookworm main, which
# `make deps` (tests/deps.sh) adds. Nothing from upstream is kept in the
# tree: the benchmark and its test build from this tarball, unmodified.
set -eu
pkg=$1 dir=$2
mkdir -p "$dir"
cd "$dir"
# from an empty directory: apt-get leaves out the files already in the
# current one ("Skipping already downloaded file")
empty=$(mktemp -d)
uris=$(cd "$empty" && apt-get source --print-uris "$pkg" 2>/dev/null) || {
	rmdir "$empty"
	echo "fetch_src: apt-get source --print-uris $pkg failed (no deb-src line? run make deps)" >&2
	exit 1
}
rmdir "$empty"
# 'URI' NAME SIZE SHA256:HEX, the upstream tarball only
line=$(printf '%s\n' "$uris" | grep -E "^'[^']*\.orig\.tar\.[a-z0-9]+' " | head -1)
[ -n "$line" ] || { echo "fetch_src: no .orig tarball for $pkg in: $uris" >&2; exit 1; }
name=$(echo "$line" | awk '{print $2}')
sha=$(echo "$line" | sed -n 's/.*SHA256:\([0-9a-f]*\).*/\1/p')
have() { [ -f "$name" ] && [ "$(sha256sum "$name" | awk '{print $1}')" = "$sha" ]; }
if ! have; then
	rm -f "$name"
	# apt-get fetches the .dsc and the Debian part too; a mirror missing one
	# of those (bookworm's hpcc .debian.tar.xz is gone from some) does not
	# matter as long as the upstream tarball arrived intact.
	apt-get source --download-only "$pkg" >"$dir/apt-source.log" 2>&1 || true
	have || { echo "fetch_src: $name missing or not SHA256 $sha:" >&2; tail -3 "$dir/apt-source.log" >&2; exit 1; }
fi
echo "$dir/$name"
