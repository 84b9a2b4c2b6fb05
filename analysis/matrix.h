/*
 * matrix.h - the all-pairs answers over a job's hosts: the hop matrix, and
 * the source groups a path matrix (share.h) is reported by
 * (docs/protocol.md, "hopsmatrix" and "pathmatrix").
 *
 * Both rest on one fact of LFT routing, which is by destination: end ports
 * whose cable to the same leaf switch is up take the same route to any
 * destination after that cable.
 *
 * Errors: AN_E_NOMEM. Nothing here keeps a pointer to its inputs.
 */
#ifndef AN_MATRIX_H
#define AN_MATRIX_H

#include <stddef.h>
#include <stdint.h>

#include "an_err.h"
#include "route.h"
#include "share.h"

/*
 * out[i * n + j] = route_hops(rt, eps[i], dlids[j]) for i != j, -1 where
 * that walk fails (or exceeds INT16_MAX switches), and 0 for i == j (so 0
 * too where a host is listed twice: a port to itself, route.h). Hosts
 * (end ports with a host, an up cable and a leaf) on one leaf share one
 * walked row, so the cost is O(rows * n * hops) with rows = distinct leaves
 * plus the other ports. out holds n * n entries.
 */
int matrix_hops(const struct route_tab *rt, const uint32_t *eps, const uint16_t *dlids, size_t n, int16_t *out);

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
