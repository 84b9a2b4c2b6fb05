/*
 * pattern.h - communication patterns as phases of weighted flows.
 *
 * Spelling (shared with topod's pattern analysis so the two can be unified):
 *   alltoall            N-1 phases, phase k: rank i -> (i+k) mod N (linear shift)
 *   alltoall:xor        phases k = 1..P-1: i -> i XOR k (N must be a power of two)
 *   shift:K             one phase, i -> (i+K) mod N
 *   xor:K               one phase, i -> i XOR K (N a power of two)
 *   bitrev              one phase, i -> bit reversal of i (N a power of two)
 *   stencil2d:X,Y       one phase, 4 neighbours on an X x Y torus of ranks (X*Y = N)
 *   stencil3d:X,Y,Z     one phase, 6 neighbours on an X x Y x Z torus
 *   random:SEED         one phase, a random permutation (deterministic per SEED)
 *   file:PATH           one phase, lines "src dst [weight]" (ranks, '#' comments)
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

struct pattern {
	char name[64];
	struct phase *phases;
	size_t nphases;
};

/* Builds the pattern for n ranks; self-flows (src == dst) are dropped. */
int pattern_parse(const char *spec, uint32_t n, struct pattern *out, char err[PATTERN_ERR_LEN]);
void pattern_free(struct pattern *p);

#endif
