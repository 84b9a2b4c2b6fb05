#!/usr/bin/env bash
# test: serial - installs the packages system-wide (dpkg: /usr, /etc/topod, the topod user, ldconfig) and runs
# the installed topod on the default port 7878, which t_topoquery_cli and t_versions expect free/untouched
# t_deb.sh - the Debian packages (debian/, make deb) as an administrator
# gets them (docs/admin-guide.md, "Installing from the Debian packages"):
#   - make deb builds every package of debian/control (incrementally, in
#     build/deb/topod/); lintian reports no error, and every warning it
#     reports is named in the guide;
#   - in private mount and network namespaces (unshare), /usr, /etc and /var
#     overlays whose writes vanish with the test and a fresh /run, so the
#     machine's / is never changed: dpkg -i installs all of them; every file
#     of each package is one the guide's table lists for it, and every path
#     of the table is installed by that package;
#   - the installed topod --version, topoquery --help, the unit passes
#     systemd-analyze verify, is not enabled; the topod user, the state
#     directory, the conffile; OpenSM's bare-name dlopen finds the plugin;
#   - topod started as the installed unit starts it (its ExecStart, user,
#     directories and umask) answers the installed topoquery, takes a
#     snapshot from the installed topo-snap and saves it; a program built with
#     pkg-config against libtii-dev links the installed libtii.so.1 and
#     gets the same generation;
#   - an upgrade (the same packages at a higher version) keeps the state
#     and the administrator's topod.conf, and topod serves the saved
#     fabric at once; dpkg -r keeps configuration and state; dpkg -P leaves
#     no file of any package, no /etc/topod, no state, no topod user.
# Prints "ok - " / "not ok - " / "skip - " lines; cleans up on any exit.
# T_DEB_NOBUILD=1 tests the packages already in build/deb (no make deb).
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
V=$(cat VERSION)
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }
check() { if [ "$1" -eq 0 ]; then ok "$2"; else nok "$2"; fi; }

for t in dpkg-buildpackage dh lintian unshare setpriv cc pkg-config systemd-analyze python3; do
	command -v "$t" >/dev/null 2>&1 || { echo "skip - $t not installed (make deps)"; exit 0; }
done
[ "$(id -u)" = 0 ] || { echo "skip - needs root (dpkg in a private mount namespace)"; exit 0; }
ARCH=$(dpkg --print-architecture)
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)

# The overlays' upper directories must not lie inside /var (the overlay's
# lower directory): a temp dir in /tmp, which stays visible inside.
TMP=$(mktemp -d /tmp/t_deb.XXXXXX) || exit 1
INNER=
cleanup() {
	if [ -n "$INNER" ]; then
		kill -TERM "$INNER" 2>/dev/null
		wait "$INNER" 2>/dev/null
		INNER=
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'cleanup; exit 143' TERM
trap 'cleanup; exit 130' INT

# ---- build ----------------------------------------------------------------------
if [ -z "${T_DEB_NOBUILD:-}" ]; then
	start=$SECONDS
	make -s deb DEB_JOBS=2 >"$TMP/build.log" 2>&1
	rc=$?
	check $rc "make deb ($((SECONDS - start)) s)"
	[ $rc -eq 0 ] || { tail -20 "$TMP/build.log" | sed 's/^/# /'; exit 1; }
fi
PKGS=$(sed -n 's/^Package: *//p' debian/control)
mkdir -p "$TMP/v1" "$TMP/v2"
missing=
for p in $PKGS; do
	a=$ARCH
	grep -A2 "^Package: $p\$" debian/control | grep -q '^Architecture: all' && a=all
	f=build/deb/${p}_${V}_$a.deb
	if [ -f "$f" ]; then cp "$f" "$TMP/v1/"; else missing="$missing $f"; fi
done
n=$(echo $PKGS | wc -w)
[ -z "$missing" ] && [ "$n" -ge 8 ]
check $? "make deb: all $n packages of debian/control, version $V${missing:+ (missing:$missing)}"
[ -z "$missing" ] || exit 1

# ---- lintian ------------------------------------------------------------------------
lintian --tag-display-limit 0 "build/deb/topod_${V}_$ARCH.changes" >"$TMP/lintian.out" 2>"$TMP/lintian.err"
errors=$(grep '^E: ' "$TMP/lintian.out")
[ -z "$errors" ]
check $? "lintian: no error${errors:+ ($(echo $errors | cut -c1-300))}"
SECTION=$(awk '/^### Installing from the Debian packages/ { f = 1; next } f && /^##/ { exit } f' docs/admin-guide.md)
undoc=
for tag in $(sed -n 's/^W: [^:]*: \([a-z0-9.-]*\).*/\1/p' "$TMP/lintian.out" | sort -u); do
	grep -q "\`$tag\`" <<<"$SECTION" || undoc="$undoc $tag"
done
[ -n "$SECTION" ] && [ -z "$undoc" ]
check $? "every lintian warning is named in the guide ($(sed -n 's/^W: [^:]*: \([a-z0-9.-]*\).*/\1/p' "$TMP/lintian.out" | sort -u | tr '\n' ' '))${undoc:+ (not named:$undoc)}"

# The guide's table: package, then the paths (patterns) it installs.
awk -F'|' '/^\| `[a-z0-9.+-]*` \|/ { gsub(/[` ]/, "", $2); n = split($4, a, "`");
	for (i = 2; i <= n; i += 2) if (a[i] ~ /^\//) print $2 "\t" a[i] }' <<<"$SECTION" |
	sed "s/x86_64-linux-gnu/$MA/g; s/1\.1\.0/$V/g" >"$TMP/table"
for p in $PKGS; do
	grep -q "^$p	" "$TMP/table" || nok "the guide's table lists package $p"
done

# ---- the upgrade: the same packages at a higher version ------------------------------
V2=$V+t1
for f in "$TMP"/v1/*.deb; do
	d=$TMP/x.$(basename "$f" .deb)
	dpkg-deb -R "$f" "$d" &&
		sed -i -e "s/^Version: .*/Version: $V2/" -e "s/(= $V)/(= $V2)/g" "$d/DEBIAN/control" &&
		dpkg-deb -b "$d" "$TMP/v2/$(basename "$f" | sed "s/_${V}_/_${V2}_/")" >/dev/null ||
		{ nok "repack $(basename "$f") as $V2"; exit 1; }
	rm -rf "$d"
done
for f in "$TMP"/v1/*.deb; do dpkg-deb -c "$f"; done | awk '$1 !~ /^d/ { print substr($6, 2) }' | sort -u >"$TMP/allfiles"

# What this machine has of them, before: the namespaces must leave it so.
host_state() {
	for p in $PKGS; do dpkg-query -W -f='${Package} ${Status}\n' "$p" 2>/dev/null; done
	getent passwd topod
	ls -d /etc/topod /var/lib/topod /usr/sbin/topod /lib/systemd/system/topod.service 2>/dev/null
}
host_state >"$TMP/host.before"

# ---- in the namespaces ------------------------------------------------------------------
mkdir -p "$TMP/ov"
cat >"$TMP/inner.sh" <<'EOF'
set -u
T=$1 ROOT=$2 V=$3 V2=$4 MA=$5 PKGS=$6
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }
check() { if [ "$1" -eq 0 ]; then ok "$2"; else nok "$2"; fi; }
for d in usr etc var; do
	mkdir -p "$T/ov/$d.u" "$T/ov/$d.w"
	mount -t overlay overlay -o "lowerdir=/$d,upperdir=$T/ov/$d.u,workdir=$T/ov/$d.w" "/$d" ||
		{ nok "overlay on /$d"; exit 1; }
done
mount -t tmpfs none /run || { nok "tmpfs on /run"; exit 1; }
ip link set lo up || { nok "loopback up"; exit 1; }
export DEBIAN_FRONTEND=noninteractive
unset TII_SERVERS

TOPOD=
stop_topod() {
	[ -n "$TOPOD" ] || return 0
	kill -TERM "$TOPOD" 2>/dev/null
	wait "$TOPOD"
	local rc=$?
	TOPOD=
	return $rc
}
trap 'stop_topod' EXIT
trap 'exit 143' TERM INT
unit() { sed -n "s/^$1=//p" /lib/systemd/system/topod.service | tail -1; }
# topod as the installed unit starts it: its directories (modes), user,
# umask and command line (systemd is not running here).
start_topod() {
	install -d -m "$(unit RuntimeDirectoryMode)" -o topod -g topod "/run/$(unit RuntimeDirectory)"
	: >"$T/topod.out"
	(umask "$(unit UMask)"; exec setpriv --reuid="$(unit User)" --regid="$(unit Group)" --init-groups \
		--no-new-privs $(unit ExecStart)) >"$T/topod.out" 2>>"$T/topod.log" &
	TOPOD=$!
	for _ in $(seq 300); do
		grep -q '^ready port=' "$T/topod.out" && return 0
		kill -0 "$TOPOD" 2>/dev/null || break
		sleep 0.1
	done
	sed 's/^/# /' "$T/topod.log" | tail -5
	return 1
}
served() { /usr/bin/topoquery info 2>/dev/null | sed -n 's/^generation //p'; }
pkgstate() { dpkg-query -W -f='${Status} ${Version}' "$1" 2>/dev/null; }

# ---- install ------------------------------------------------------------------
# The plugin and the preload libraries first, alone: OpenSM and LD_PRELOAD
# find them by bare name with nothing else of ours installed (no ldconfig
# run for them: /usr/lib/MULTIARCH is on the loader's built-in path).
dpkg -i "$T"/v1/opensm-osmtopo_*.deb "$T"/v1/topod-mpi-common_*.deb "$T"/v1/topod-mpi-openmpi_*.deb \
	>"$T/dpkg0.log" 2>&1
check $? "dpkg -i opensm-osmtopo topod-mpi-openmpi (alone)"
python3 -c 'import ctypes; ctypes.CDLL("libosmtopo.so").osm_event_plugin' 2>"$T/dl.err"
check $? "dlopen(\"libosmtopo.so\") by bare name, as OpenSM does, finds the plugin and osm_event_plugin$(head -c 200 "$T/dl.err")"
err=$(LD_PRELOAD=libtopoprof.so:libtopocoll.so /bin/true 2>&1)
[ -z "$err" ]
check $? "LD_PRELOAD=libtopoprof.so:libtopocoll.so loads both by bare name${err:+ ($err)}"
dpkg -i "$T"/v1/*.deb >"$T/dpkg1.log" 2>&1
rc=$?
check $rc "dpkg -i of the $(ls "$T"/v1/*.deb | wc -l) packages"
[ $rc -eq 0 ] || { tail -15 "$T/dpkg1.log" | sed 's/^/# /'; exit 1; }
bad=
for p in $PKGS; do
	[ "$(pkgstate "$p")" = "install ok installed $V" ] || bad="$bad $p"
done
[ -z "$bad" ]
check $? "all installed at $V${bad:+ (not:$bad)}"

# Files against the guide's table, both ways.
unlisted= unused=
for p in $PKGS; do
	pats=$(awk -F'\t' -v p="$p" '$1 == p { print $2 }' "$T/table")
	files=$(dpkg -L "$p" | while read -r f; do [ -d "$f" ] || echo "$f"; done |
		grep -v -x -e "/usr/share/doc/$p/copyright" -e "/usr/share/doc/$p/changelog.gz" -e "/usr/share/lintian/overrides/$p")
	for f in $files; do
		hit=
		for pat in $pats; do
			# shellcheck disable=SC2254
			case "$f" in $pat) hit=1; break ;; esac
		done
		[ -n "$hit" ] || unlisted="$unlisted $p:$f"
	done
	for pat in $pats; do
		hit=
		for f in $files; do
			# shellcheck disable=SC2254
			case "$f" in $pat) [ -e "$f" ] && hit=1 && break ;; esac
		done
		[ -n "$hit" ] || unused="$unused $p:$pat"
	done
done
[ -z "$unlisted" ]
check $? "every installed file is in the guide's table under its package${unlisted:+ (not listed:$unlisted)}"
[ -z "$unused" ]
check $? "every path of the guide's table ($(wc -l <"$T/table") rows) is installed by its package${unused:+ (not installed:$unused)}"

out=$(/usr/sbin/topod --version 2>&1)
grep -q "$V" <<<"$out"
check $? "/usr/sbin/topod --version: $out"
out=$(/usr/bin/topoquery --help 2>&1)
rc=$?
[ $rc -eq 0 ] && grep -qi usage <<<"$out"
check $? "/usr/bin/topoquery --help (exit $rc, $(wc -l <<<"$out") lines)"
out=$(systemd-analyze verify /lib/systemd/system/topod.service 2>&1)
rc=$?
[ $rc -eq 0 ] && [ -z "$out" ]
check $? "systemd-analyze verify /lib/systemd/system/topod.service: no error, no warning${out:+ ($(echo $out | cut -c1-300))}"
[ "$(unit ExecStart)" = "/usr/sbin/topod --foreground --config /etc/topod/topod.conf" ]
check $? "unit: ExecStart=$(unit ExecStart)"
[ ! -e /etc/systemd/system/multi-user.target.wants/topod.service ]
check $? "the unit is installed but not enabled (no ingest until OpenSM is configured)"
pw=$(getent passwd topod)
[ -n "$pw" ] && [ "${pw##*:}" = /usr/sbin/nologin ] && getent group topod >/dev/null
check $? "system user and group topod (${pw:-none})"
[ "$(stat -c '%a %U' /var/lib/topod 2>/dev/null)" = "700 topod" ]
check $? "state directory /var/lib/topod, mode 0700, owned by topod"
dpkg-query -W -f='${Conffiles}' topod | grep -q '^ /etc/topod/topod.conf '
check $? "/etc/topod/topod.conf is a conffile"
# ---- the service from the unit ---------------------------------------------------
start_topod
check $? "topod starts as the unit starts it ($(unit ExecStart), user $(unit User))"
/usr/bin/topoquery info >/dev/null 2>"$T/noinfo.err"
rc=$?
[ $rc -eq 4 ] && grep -q 'no fabric yet' "$T/noinfo.err"
check $? "the installed topoquery asks it: no fabric yet, exit $rc (nothing delivered yet)"
/usr/bin/topo-snap from-text "$ROOT/tests/fixtures/2sw4hca.topo" "$ROOT/tests/fixtures/2sw4hca.lfts" "$T/fx.snap" 2>/dev/null
GEN=$(/usr/bin/topo-snap info "$T/fx.snap" 2>/dev/null | sed -n 's/^generation //p')
/usr/bin/topo-snap send sink=unix:/run/topod/ingest.sock "$T/fx.snap" >/dev/null 2>"$T/send.err"
rc=$?
for _ in $(seq 100); do [ "$(served)" = "$GEN" ] && break; sleep 0.1; done
g=$(served)
[ $rc -eq 0 ] && [ -n "$GEN" ] && [ "$g" = "$GEN" ] && [ -s /var/lib/topod/fabric.snap ]
check $? "topo-snap send to /run/topod/ingest.sock: served generation ${g:-none} (sent ${GEN:-none}), saved in /var/lib/topod/fabric.snap$(head -c 200 "$T/send.err")"
cat >"$T/gen.c" <<'C'
#include <inttypes.h>
#include <stdio.h>
#include <tii.h>

int main(void)
{
	tii_t *t;
	uint64_t gen;
	int rc;

	if (tii_open(&t, NULL) != TII_OK)
		return 1;
	rc = tii_get_generation(t, &gen);
	if (rc == TII_OK)
		printf("%" PRIu64 "\n", gen);
	else
		fprintf(stderr, "%s\n", tii_strerror(rc));
	tii_close(t);
	return rc == TII_OK ? 0 : 1;
}
C
flags=$(pkg-config --cflags --libs tii 2>&1)
if cc -std=c11 -Wall -Wextra -Werror -o "$T/gen" "$T/gen.c" $flags 2>"$T/cc.log"; then
	lib=$(ldd "$T/gen" | sed -n 's/.*libtii\.so\.1 => \([^ ]*\).*/\1/p')
	g=$("$T/gen" 2>&1)
	[ "$(readlink -f "$lib")" = "/usr/lib/$MA/libtii.so.$V" ] && [ "$g" = "$GEN" ]
	check $? "cc gen.c \$(pkg-config --cflags --libs tii) [$flags]: links ${lib:-no libtii.so.1}, prints generation $g"
else
	nok "cc gen.c \$(pkg-config --cflags --libs tii) [$flags]"
	sed 's/^/# /' "$T/cc.log" | head -5
fi
stop_topod
check $? "SIGTERM: topod exits 0"

# ---- upgrade -------------------------------------------------------------------------
sed -i 's/^#threads = 4$/threads = 2/' /etc/topod/topod.conf
sum=$(md5sum </var/lib/topod/fabric.snap)
uid=$(id -u topod)
dpkg -i "$T"/v2/*.deb >"$T/dpkg2.log" 2>&1
rc=$?
bad=
for p in $PKGS; do
	[ "$(pkgstate "$p")" = "install ok installed $V2" ] || bad="$bad $p"
done
[ $rc -eq 0 ] && [ -z "$bad" ]
check $? "dpkg -i upgrades all to $V2${bad:+ (not:$bad)}"
[ $rc -eq 0 ] || tail -10 "$T/dpkg2.log" | sed 's/^/# /'
grep -qx 'threads = 2' /etc/topod/topod.conf && ! ls /etc/topod/*.dpkg-* >/dev/null 2>&1
check $? "the administrator's topod.conf is kept, no .dpkg-dist/.dpkg-old beside it"
[ "$(md5sum </var/lib/topod/fabric.snap 2>/dev/null)" = "$sum" ] && [ "$(id -u topod)" = "$uid" ]
check $? "the state (fabric.snap) and the topod user ($uid) are kept"
start_topod && g=$(served)
[ "${g:-}" = "$GEN" ]
check $? "after the upgrade topod serves the saved fabric at once: generation ${g:-none}"
stop_topod

# ---- remove, purge ------------------------------------------------------------------
dpkg -r $PKGS >"$T/dpkg3.log" 2>&1
rc=$?
[ $rc -eq 0 ] && [ ! -e /usr/sbin/topod ] && [ ! -e "/usr/lib/$MA/libtii.so.1" ] &&
	[ "$(pkgstate topod)" = "deinstall ok config-files $V2" ] &&
	[ -f /etc/topod/topod.conf ] && [ -s /var/lib/topod/fabric.snap ]
check $? "dpkg -r: programs and libraries gone, /etc/topod/topod.conf and /var/lib/topod/fabric.snap kept"
[ $rc -eq 0 ] || tail -10 "$T/dpkg3.log" | sed 's/^/# /'
dpkg -P $PKGS >"$T/dpkg4.log" 2>&1
rc=$?
left=
while read -r f; do
	[ -e "$f" ] || [ -L "$f" ] && left="$left $f"
done <"$T/allfiles"
known=
for p in $PKGS; do
	[ -n "$(pkgstate "$p")" ] && [ "$(pkgstate "$p")" != "unknown ok not-installed " ] && known="$known $p"
done
[ $rc -eq 0 ] && [ -z "$left" ] && [ -z "$known" ]
check $? "dpkg -P: none of the $(wc -l <"$T/allfiles") files is left, dpkg knows none of the packages${left:+ (left:$left)}${known:+ (known:$known)}"
[ $rc -eq 0 ] || tail -10 "$T/dpkg4.log" | sed 's/^/# /'
[ ! -e /etc/topod ] && [ ! -e /var/lib/topod ] && [ ! -e /var/lib/private/topod ] &&
	! getent passwd topod >/dev/null && ! getent group topod >/dev/null &&
	! grep -rqs topod /var/lib/systemd/deb-systemd-helper-enabled /var/lib/systemd/deb-systemd-helper-masked
check $? "dpkg -P: no /etc/topod, no state directory, no topod user or group, no unit state"
ldconfig -p | grep -q -e libtii -e libosmtopo -e libtopoprof
[ $? -ne 0 ]
check $? "the loader's cache no longer lists libtii, libosmtopo or libtopoprof"
[ "$failed" -eq 0 ]
EOF
unshare --mount --net --propagation private bash "$TMP/inner.sh" "$TMP" "$ROOT" "$V" "$V2" "$MA" "$(echo $PKGS)" \
	>"$TMP/inner.out" 2>"$TMP/inner.err" &
INNER=$!
wait "$INNER"
rc=$?
INNER=
cat "$TMP/inner.out"
if [ $rc -ne 0 ] && ! grep -q '^not ok' "$TMP/inner.out"; then
	nok "the test in the namespaces exited with $rc"
	tail -10 "$TMP/inner.err" | sed 's/^/# /'
fi
failed=$((failed + $(grep -c '^not ok' "$TMP/inner.out")))
host_state >"$TMP/host.after"
cmp -s "$TMP/host.before" "$TMP/host.after"
check $? "this machine's packages, users and files are as before the test"
[ "$failed" -eq 0 ]
