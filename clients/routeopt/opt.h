/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * opt.h - pattern-specific routes on an XGFT: one integer linear program per
 * tree layer (seed 001, section 4), combined layer by layer (the dynamic
 * programming of section 4.1), solved by GLPK.
 *
 * InfiniBand forwards by destination, so the unit the ILP assigns is not a
 * message but a (switch, destination) pair: all of a layer's messages on one
 * switch bound for one destination take one up port.  A pair's weight is the
 * sum of its messages' weights; for permutations every weight is 1 and the
 * formulation is exactly the seed's.
 *
 * Error convention: 0, or -1 with a reason in err[OPT_ERR_LEN]; on a time
 * limit or an infeasible layer the result is left empty.
 */
#ifndef ROUTEOPT_OPT_H
#define ROUTEOPT_OPT_H

#include <stdint.h>
#include "xgft.h"
#include "pattern.h"

#define OPT_ERR_LEN 512
#define OPT_NOCHOICE 0xFF

struct opt_params {
	int strong;          /* 1: the seed's strong restrictions (6), (8); 0: relaxation (11), (12) + elimination */
	double time_limit;   /* seconds for the whole phase; <= 0: none */
	int verbose;
};

struct opt_result {
	/* choice[l][id * nhosts + d]: up link w at level-l node id towards
	 * destination host d, OPT_NOCHOICE where the pattern does not pass */
	uint8_t *choice[XGFT_HMAX + 1];
	uint32_t nhosts;
	int proven;          /* 1: every layer met the seed's optimality bounds */
	uint64_t maxload;    /* max directed link load of the pattern on these routes */
	double solve_ms;     /* wall time in GLPK and the formulation */
	unsigned ilps;       /* layers that needed a solver run */
	uint64_t rows, cols; /* of the largest layer ILP */
};

/* flows use host indices in XGFT (MT) order. */
int opt_solve(const struct xgft *x, const struct flow *flows, size_t nflows,
	      const struct opt_params *par, struct opt_result *res, char err[OPT_ERR_LEN]);
void opt_result_free(struct opt_result *r);

/* Can a message at level l on up-node (mu, wt) reach its down-node (md, wt)
 * and descend to delta with every link present?  Always 1 without failures. */
int opt_path_exists(const struct xgft *x, int l, uint32_t mu, uint32_t md, uint32_t wt, int delta);

#endif
