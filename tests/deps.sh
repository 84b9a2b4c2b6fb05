#!/bin/sh
# Installs the Debian packages that the build, the tests and the demo need.
# Idempotent: it asks apt only when something is missing, and runs
# `apt-get update` only then, so a second `make check` starts at once.
set -eu
PKGS="
build-essential pkg-config
libevent-dev
libsodium-dev
opensm libopensm-dev
libibumad-dev libibmad-dev libibnetdisc-dev infiniband-diags
ibsim-utils
python3
netcat-openbsd iproute2
libopenmpi-dev openmpi-bin
mpich libmpich-dev
slurmctld slurm-client munge
graphviz
libjansson-dev librsvg2-bin
clang libclang-rt-14-dev libomp-dev
libscotch-dev
slurmd
gnuplot-nox
libglpk-dev
man-db
libsimgrid-dev
debhelper dpkg-dev lintian
prometheus chromium chromium-driver python3-selenium
libblas-dev binutils
"
# bench/apps and t_apps_smpi build real applications (HPCC) from Debian's
# upstream tarballs, which `apt-get source` fetches only with a deb-src line
# for bookworm main beside the deb one.
SRC_LIST=/etc/apt/sources.list.d/topod-deb-src.sources
need_update=""
has_deb_src() {
	grep -rqsE '^(Types:.*deb-src|deb-src .*bookworm.* main)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null
}
if ! has_deb_src; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "make deps: no deb-src line for bookworm main; run as root or add one (apt-get source needs it)" >&2
		exit 1
	fi
	cat >"$SRC_LIST" <<SOURCES
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
	need_update=1
fi
missing=""
for p in $PKGS; do
	# dpkg-query prints "install ok installed" only for a fully installed package.
	if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
		missing="$missing $p"
	fi
done
if [ -z "$missing" ]; then
	if [ -n "$need_update" ]; then
		echo "make deps: added $SRC_LIST; apt-get update"
		apt-get update -qq
	fi
	exit 0
fi
echo "make deps: installing$missing"
if [ "$(id -u)" -ne 0 ]; then
	echo "make deps: these packages are missing; run as root or install them:$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# opensm's package starts a service on install; we never use it (policy-rc.d
# keeps it from starting where there is no IB hardware anyway).
apt-get install -y -qq --no-install-recommends $missing
