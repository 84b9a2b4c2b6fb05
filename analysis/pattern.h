/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pattern.h - a job (ranks placed on hosts) and its communication pattern,
 * as flows (source rank, destination rank, bytes). No I/O, no route tables:
 * load.c turns flows into link loads, the schedules reuse the job and the
 * rank lists.
 *
 * The job: nranks ranks, rank r on host host[r] (a host index of route.h's
 * route_tab, resolved by the caller; several ranks may share a host). At
 * most TOPO_RANKS_MAX ranks on TOPO_MATRIX_MAX distinct hosts
 * (common/topo_limits.h).
 *
 * Pattern text syntax (pattern_parse), case-sensitive, no spaces:
 *   alltoall              every ordered pair (r, s), r != s
 *   allgather             the same flows as alltoall (each rank's block goes
 *                         to every other rank); named apart for reports
 *   shift:K               r -> (r + K) mod n, K a decimal integer, may be
 *                         negative, |K| < TOPO_RANKS_MAX; K = 0 mod n: none
 *   xor:K                 r -> r XOR K, 0 <= K < n, n a power of two (phase K
 *                         of the XOR all-to-all exchange); K = 0: none
 *   bitrev                r -> r with its log2(n) bits reversed, n a power of
 *                         two (fixed points, e.g. 0, send nothing)
 *   random:SEED           r -> perm(r), a permutation of 0..n-1 fixed by SEED
 *                         (0..2^32-1) and n: a 4-round Feistel network on
 *                         the next even number of bits, cycle-walked into
 *                         0..n-1, so no table is stored and any thread can
 *                         compute perm(r); fixed points send nothing
 *   ring                  r -> r - 1 and r -> r + 1 (mod n): the halo of a
 *                         1-D periodic decomposition (n = 2: one flow each
 *                         way; for a one-way ring use shift:1)
 *   stencil2d:X,Y[:periodic]
 *   stencil3d:X,Y,Z[:periodic]
 *                         ranks on an X x Y (x Z) grid, x fastest:
 *                         r = x + X*(y + Y*z); each rank sends to its face
 *                         neighbours (+-1 in every dimension: 4 resp. 6).
 *                         Without :periodic, neighbours outside the grid are
 *                         absent; with it, coordinates wrap, and a dimension
 *                         of size 2 gives one neighbour (both wraps reach the
 *                         same rank: one flow), size 1 none. X*Y(*Z) must
 *                         equal the number of ranks.
 *   matrix                explicit (src, dst, bytes) triples (pattern_set_
 *                         matrix); a pair listed twice adds up; src == dst
 *                         is allowed (intra-rank, reported as intra-host).
 * Every regular flow carries msg_bytes bytes (default 1).
 *
 * One module for every pattern name: topod's `load` and topo-routeopt
 * (clients/routeopt/pattern.c, which adds the phase sequences alltoall and
 * alltoall:xor and flow files) both parse here, so a name means the same
 * flows to both.
 *
 * Flow order (pattern_flows_from, pattern_for_each): by source rank, then
 * for a source: alltoall/allgather by ascending destination; shift, xor,
 * bitrev, random one flow;
 * ring r-1 then r+1; stencils -x, +x, -y, +y, -z, +z; matrix ascending
 * destination (duplicates merged). Regular patterns are generated, never
 * materialised: memory O(1) for them, O(triples) for a matrix.
 *
 * Error convention: functions returning int return AN_OK (0) or a negative
 * AN_E_*; those taking err[AN_ERR_LEN] say why there. Nothing prints,
 * exits or aborts. A pattern is read-only after set-up: any thread may
 * generate from it.
 */
#ifndef AN_PATTERN_H
#define AN_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#include "an_err.h"
#include "topo_limits.h"

#define PAT_SPEC_MAX 64          /* a spec longer than this is malformed */
#define PAT_TRIPLES_MAX (1u << 22) /* explicit matrix entries: 4M (a dense 2,048-rank matrix) */

enum pat_kind {
	PAT_ALLTOALL,
	PAT_ALLGATHER,
	PAT_SHIFT,
	PAT_XOR,
	PAT_BITREV,
	PAT_RANDOM,
	PAT_RING,
	PAT_STENCIL2D,
	PAT_STENCIL3D,
	PAT_MATRIX,
};

struct pat_triple {
	uint32_t src, dst;
	uint64_t bytes;
};

struct pattern {
	enum pat_kind kind;
	int32_t shift;          /* PAT_SHIFT: K; PAT_XOR: K (>= 0) */
	uint32_t seed;          /* PAT_RANDOM */
	uint32_t dim[3];        /* stencils: X, Y, Z (Z = 1 for 2-D) */
	int periodic;           /* stencils */
	uint64_t msg_bytes;     /* bytes per flow of a regular pattern */
	/* PAT_MATRIX: owned, sorted by (src, dst), duplicates merged; row[r] ..
	 * row[r+1] index the triples of source r (row has nranks + 1 entries). */
	struct pat_triple *tri;
	size_t ntri;
	uint32_t *row;
	uint32_t nranks_row;    /* nranks the rows were built for */
};

struct pat_job {
	uint32_t nranks;
	uint32_t *host;         /* [nranks] host index per rank */
};


/* Parses a spec (not "matrix": that comes from pattern_set_matrix). Sets
 * msg_bytes to 1. */
int pattern_parse(const char *spec, struct pattern *p, char err[AN_ERR_LEN]);

/* Makes p an explicit matrix from n triples (copied; sorted and merged
 * here). Ranks must be < nranks. Triples with 0 bytes are dropped. */
int pattern_set_matrix(struct pattern *p, const struct pat_triple *t, size_t n, uint32_t nranks,
		       char err[AN_ERR_LEN]);

/* Frees a matrix's arrays (a regular pattern owns nothing); NULL is a no-op. */
void pattern_clear(struct pattern *p);

/* Checks that p fits nranks ranks (limits, stencil dims, matrix ranks,
 * xor/bitrev: a power of two, xor: K < nranks). */
int pattern_check(const struct pattern *p, uint32_t nranks, char err[AN_ERR_LEN]);

/* Canonical text of p ("stencil2d:4,4:periodic", "matrix"). */
void pattern_name(const struct pattern *p, char *buf, size_t n);

/* 1 if p is every ordered pair with msg_bytes each (alltoall, allgather):
 * load.c aggregates those by host counts instead of enumerating flows. */
static inline int pattern_is_dense(const struct pattern *p)
{
	return p->kind == PAT_ALLTOALL || p->kind == PAT_ALLGATHER;
}

/* Called per flow; a nonzero return stops the enumeration and is returned. */
typedef int pat_flow_fn(void *arg, uint32_t src, uint32_t dst, uint64_t bytes);

/* The flows of source rank r (r < nranks; p checked for nranks). */
int pattern_flows_from(const struct pattern *p, uint32_t nranks, uint32_t r, pat_flow_fn *fn,
		       void *arg);
/* All flows, source by source. */
int pattern_for_each(const struct pattern *p, uint32_t nranks, pat_flow_fn *fn, void *arg);

/* Number of flows (matrix: distinct pairs). */
uint64_t pattern_nflows(const struct pattern *p, uint32_t nranks);

/* The bytes of all flows of p on nranks ranks (p checked for them): a
 * regular pattern's flows times msg_bytes, a matrix's entries summed;
 * AN_E_RANGE, err saying so, when they pass TOPO_BYTES_TOTAL_MAX. Every
 * load of the pattern (a link's, a level's, the whole) is then exact:
 * load.c checks it first. */
int pattern_total_bytes(const struct pattern *p, uint32_t nranks, uint64_t *total, char err[AN_ERR_LEN]);

/* ---- rank lists -------------------------------------------------------------
 * A rank list token is "NAME" (one rank) or "NAME*COUNT" (COUNT consecutive
 * ranks on that host, 1 <= COUNT <= TOPO_RANKS_MAX), so that 16,384 ranks on
 * 4,096 hosts fit one request line. Splits a token; name gets at most
 * TOPO_QUERY_NAME_MAX bytes + NUL. */
int pattern_rank_token(const char *tok, char name[TOPO_QUERY_NAME_MAX + 1], uint32_t *count,
		       char err[AN_ERR_LEN]);

/* Checks a job against the limits: nranks in 1..TOPO_RANKS_MAX, host indices
 * < nhosts_fabric, at most TOPO_MATRIX_MAX distinct hosts. */
int pattern_job_check(const struct pat_job *j, uint32_t nhosts_fabric, char err[AN_ERR_LEN]);

#endif
