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
clang libclang-rt-14-dev
libscotch-dev
slurmd
gnuplot-nox
libglpk-dev
man-db
libsimgrid-dev
debhelper dpkg-dev lintian
prometheus chromium chromium-driver python3-selenium
"
missing=""
for p in $PKGS; do
	# dpkg-query prints "install ok installed" only for a fully installed package.
	if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
		missing="$missing $p"
	fi
done
if [ -z "$missing" ]; then
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
