# shellcheck shell=bash
# bench/apps/bind.sh - sourced by the application build scripts: libtopocoll
# in place of SMPI's collectives in an unmodified application.
#
# Under SMPI the MPI is SimGrid itself and defines MPI_* (no PMPI layer to
# preload into), so the library is compiled with -DTOPOCOLL_SMPI, which names
# its entry points topocoll_MPI_*, and the application's own objects are
# bound to them: `objcopy --redefine-sym MPI_X=topocoll_MPI_X` on every
# object (or archive) of the application, for exactly the entry points the
# library defines (read from its objects, so the list follows coll/wrap.c).
# The library's own calls (PMPI_*, MPI_* inside coll/) stay SMPI's.

APPS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# coll_smpi_objs DIR: coll/*.c built for SMPI into DIR/*.o; prints the
# objects. An object newer than its source and every header is kept, so that
# the applications' builds can share one DIR (APPS_COLL_DIR).
coll_smpi_objs() {
	local dir=$1 f o
	mkdir -p "$dir"
	for f in "$APPS_ROOT"/coll/*.c; do
		o=$dir/$(basename "${f%.c}").o
		# an.c includes the analyses' sources: they are its dependencies too
		if [ -s "$o" ] && [ -z "$(find "$f" "$APPS_ROOT"/coll/*.h "$APPS_ROOT"/common/*.h "$APPS_ROOT"/analysis/*.[ch] \
			"$APPS_ROOT"/snapshot/*.h -newer "$o" 2>/dev/null)" ]; then
			echo "$o"
			continue
		fi
		smpicc -std=c11 -O2 -Wall -Wextra -Werror -DTOPOCOLL_SMPI -I"$APPS_ROOT/coll" -I"$APPS_ROOT/common" -I"$APPS_ROOT/analysis" -I"$APPS_ROOT/snapshot" \
			-c -o "$o" "$f" || return 1
		echo "$o"
	done
}

# bind_args OBJ...: the objcopy arguments for the library's entry points
bind_args() {
	nm -g --defined-only "$@" | awk '$3 ~ /^topocoll_MPI_/ { s = substr($3, 10); print "--redefine-sym " s "=" $3 }' |
		sort -u
}

# bind_topocoll "ARGS" FILE...: rename in place (objects or archives)
bind_topocoll() {
	local args=$1 f
	shift
	[ -n "$args" ] || { echo "bind: no topocoll_MPI_* entry points in the library's objects" >&2; return 1; }
	for f in "$@"; do
		# shellcheck disable=SC2086
		objcopy $args "$f" || return 1
	done
}
