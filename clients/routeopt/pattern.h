/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pattern.h - communication patterns as phases of weighted flows, for
 * topo-routeopt.
 *
 * The pattern names are topod's (analysis/pattern.h, pattern_parse): one module
 * parses them for both, so a name means the same flows to topod's `load`
 * and to the optimiser. What this file adds is the sequence of phases:
 *   alltoall[:shift]    N-1 phases, phase k: rank i -> (i+k) mod N (linear
 *                       shift); phase k is topod's shift:k
 *   alltoall:xor        N-1 phases, phase k: i -> i XOR k (N a power of two);
 *                       phase k is topod's xor:k
 *   file:PATH           one phase, lines "src dst [weight]" (ranks, '#' comments)
 * and every other name is one phase of topod's flows, for instance
 *   shift:K  xor:K  bitrev  random:SEED  ring  allgather (every ordered pair
 *   at once)  stencil2d:X,Y[:periodic]  stencil3d:X,Y,Z[:periodic]
 * (stencils: without :periodic the grid has edges, as in topod).
 * Ranks 0..N-1 are the hosts in the order given to the program.
 *
 * Error convention: functions returning int return 0 or -1 with a reason in
 * err[PATTERN_ERR_LEN]; nothing here prints or exits.
 */
#ifndef ROUTEOPT_PATTERN_H
#define ROUTEOPT_PATTERN_H

#include <stdint.h>
#include <stddef.h>

#define PATTERN_ERR_LEN 256
#define PATTERN_MAX_FLOWS (1u << 24)   /* bounds a hostile flow file */
#define PATTERN_MAX_WEIGHT 1000000u

struct flow { uint32_t src, dst, weight; };

struct phase { struct flow *flows; size_t n; };

struct ro_pattern {
	char name[64];
	struct phase *phases;
	size_t nphases;
};

/* Builds the pattern for n ranks; self-flows (src == dst) are dropped. */
int ro_pattern_parse(const char *spec, uint32_t n, struct ro_pattern *out, char err[PATTERN_ERR_LEN]);
void ro_pattern_free(struct ro_pattern *p);

#endif
