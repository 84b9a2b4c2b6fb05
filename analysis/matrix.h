/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * matrix.h - the all-pairs answers over a job's hosts: the hop matrix, and
 * the source groups a path matrix (share.h) is reported by
 * (docs/protocol.md, "hopsmatrix" and "pathmatrix").
 *
 * Both rest on one fact of LFT routing, which is by destination: end ports
 * whose cable to the same leaf switch is up take the same route to any
 * destination after that cable.
 *
 * The delay matrix (docs/protocol.md, "delaymatrix") is seed 004 chapter 4's
 * Bcast closeness, hops and link rates in one figure: the predicted time of
 * one message on the pair's real route, by the one cost model (cost.h).
 *
 * Errors: AN_E_NOMEM, and for the delay matrix AN_E_INVAL and AN_E_RANGE.
 * Nothing here keeps a pointer to its inputs.
 */
#ifndef AN_MATRIX_H
#define AN_MATRIX_H

#include <stddef.h>
#include <stdint.h>

#include "an_err.h"
#include "route.h"
#include "share.h"
#include "topo_limits.h"

/*
 * out[i * n + j] = route_hops(rt, eps[i], dlids[j]) for i != j, -1 where
 * that walk fails (or exceeds INT16_MAX switches), and 0 for i == j (so 0
 * too where a host is listed twice: a port to itself, route.h). Hosts
 * (end ports with a host, an up cable and a leaf) on one leaf share one
 * walked row, so the cost is O(rows * n * hops) with rows = distinct leaves
 * plus the other ports. out holds n * n entries.
 */
int matrix_hops(const struct route_tab *rt, const uint32_t *eps, const uint16_t *dlids, size_t n, int16_t *out);

/* Most bytes of one message in a delay matrix (as a schedule's bytes=B,
 * topo_limits.h): 2^53 bytes over a 1x SDR cable (2 Gb/s of data, the
 * slowest rate) is ~3.6e16 ns, inside an int64_t of ns and a double. */
#define MATRIX_DELAY_BYTES_MAX TOPO_MSG_BYTES_MAX

/*
 * out[i * n + j] = the predicted time in nanoseconds of a message of bytes
 * bytes from eps[i] to dlids[j] alone on its route (the route of
 * matrix_hops):
 *     cost_route_latency(hops) + bytes / (the slowest cable of the route),
 * rounded to the nearest ns; the slowest cable is the least rate_cable_bps()
 * of the source's cable (unless the source is a switch) and of every switch
 * out port of the walk. 0 for i == j, -1 where the walk fails (as
 * matrix_hops). One message, no contention: a phase of many flows is
 * cost_load_time()'s. Leaf-mates share one walk per destination, as in
 * matrix_hops, so the cost is O(rows * n * hops).
 * AN_E_INVAL: bytes > MATRIX_DELAY_BYTES_MAX. AN_E_RANGE: bytes > 0 and a
 * route crosses a cable of unknown rate (err names the pair). AN_E_NOMEM.
 * On error out may have been partly written.
 */
int matrix_delay(const struct route_tab *rt, const uint32_t *eps, const uint16_t *dlids, size_t n, uint64_t bytes,
		 int64_t *out, char err[AN_ERR_LEN]);

/* The source groups of a share built with SHARE_KEEP_PATHS, as member
 * lists: group g's hosts are members[start[g] .. start[g + 1]), ascending
 * positions in the share's host list. */
struct matrix_groups {
	uint32_t G;
	uint32_t *start;    /* [G + 1] */
	uint32_t *members;  /* [n] */
};

/* On success *mg is filled (free with matrix_groups_free); on error it is
 * zeroed. O(n + G). */
int matrix_groups_build(const struct share *sh, struct matrix_groups *mg);
void matrix_groups_free(struct matrix_groups *mg);  /* frees the arrays, not mg */

/* The member whose route to host j stands for group g's: any member other
 * than j does (see the top). 0 when j is g's only member (no pair), else 1
 * with *rep set. */
static inline int matrix_group_rep(const struct matrix_groups *mg, uint32_t g, size_t j, uint32_t *rep)
{
	uint32_t first = mg->start[g];
	if (mg->members[first] != j) {
		*rep = mg->members[first];
		return 1;
	}
	if (mg->start[g + 1] - first == 1)
		return 0;
	*rep = mg->members[first + 1];
	return 1;
}

#endif
