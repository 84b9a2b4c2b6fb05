/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nativecoll_impl.h - what the files of the MPIs' own collectives share
 * and nobody else sees: one rank's operations as SMPI's Request calls make
 * them, the communicators over a subset and per host that the MPICH
 * selector builds, the in-order binomial tree, and the selected Bcast,
 * which Allreduce calls. nativecoll.c holds Bcast, Gather, Scatter and
 * Allgather; nativecoll_reduce.c Reduce and Allreduce (docs/cost-model.md
 * "Every collective").
 */
#ifndef AN_NATIVECOLL_IMPL_H
#define AN_NATIVECOLL_IMPL_H

#include "nativecoll.h"

#include <stdio.h>

#define NC_NONE UINT32_MAX
#define NC_DEPTH 4  /* collectives calling collectives (a remainder, reduce + bcast) */

struct ncx {
	enum native_model md;
	struct mprog *p;
	char *err;
	int depth;
};

/* ---- one rank's operations --------------------------------------------------------- */

static inline void S(struct ncx *x, const struct nc_comm *c, uint32_t i, uint32_t j, double b)
{
	if (i != j)
		mp_send(x->p, c->m[i], c->m[j], b);
}

static inline void R(struct ncx *x, const struct nc_comm *c, uint32_t i, uint32_t j, double b)
{
	if (i != j)
		mp_recv(x->p, c->m[i], c->m[j], b);
}

static inline uint32_t IS(struct ncx *x, const struct nc_comm *c, uint32_t i, uint32_t j, double b)
{
	return i != j ? mp_isend(x->p, c->m[i], c->m[j], b) : NC_NONE;
}

static inline uint32_t IR(struct ncx *x, const struct nc_comm *c, uint32_t i, uint32_t j, double b)
{
	return i != j ? mp_irecv(x->p, c->m[i], c->m[j], b) : NC_NONE;
}

static inline void W(struct ncx *x, const struct nc_comm *c, uint32_t i, uint32_t req)
{
	if (req != NC_NONE)
		mp_wait(x->p, c->m[i], req);
}

/* Request::sendrecv: both to oneself is a copy; else both posted, both waited for. */
static inline void SR(struct ncx *x, const struct nc_comm *c, uint32_t i, uint32_t to, double sb, uint32_t from, double rb)
{
	if (to == i && from == i)
		return;
	uint32_t a = IS(x, c, i, to, sb), b = IR(x, c, i, from, rb);
	W(x, c, i, a);
	W(x, c, i, b);
}

/* COLL_TUNED_COMPUTED_SEGCOUNT */
static inline uint64_t segcount(uint64_t segsize, uint64_t typelng, uint64_t count)
{
	if (segsize >= typelng && segsize < typelng * count) {
		uint64_t n = segsize / typelng, residual = segsize - n * typelng;
		return n + (residual > typelng / 2);
	}
	return count;
}

static inline uint32_t pof2_le(uint32_t k)
{
	uint32_t p = 1;
	while (p <= k / 2)
		p <<= 1;
	return p;
}

static inline int unmodelled(struct ncx *x, const char *what, uint32_t k)
{
	snprintf(x->err, AN_ERR_LEN, "%s on %u ranks is not modelled", what, k);
	return AN_E_NOTAPPLIC;
}

/* Open MPI 4.1's fixed decisions (coll_tuned_decision_fixed.c, as SMPI's
 * Open MPI selector copies them) are each a list of rank bands, and each
 * band a list of byte steps: below `ranks` ranks, the first step whose
 * `bytes` the message is below gives the algorithm, numbered as the
 * selector numbers it. Every collective's rules are data in this one
 * form, read by nc_rule_alg, so that a row can be checked against the
 * source line by line. A band's last step, and the last band, are NC_ANY. */
#define NC_ANY UINT64_MAX
#define NC_STEPS 10   /* the most steps of a band (Bcast below 4 ranks) */

struct nc_band {
	uint64_t ranks;
	struct {
		uint64_t bytes;
		int alg;
	} step[NC_STEPS];
};

static inline int nc_below(uint64_t v, uint64_t bound)
{
	return bound == NC_ANY || v < bound;
}

/* The algorithm of rules for k ranks and t bytes. */
static inline int nc_rule_alg(const struct nc_band *rules, uint32_t k, uint64_t t)
{
	const struct nc_band *b = rules;
	while (!nc_below(k, b->ranks))
		b++;
	int s = 0;
	while (!nc_below(t, b->step[s].bytes))
		s++;
	return b->step[s].alg;
}

static inline int smpi_mpich(const struct ncx *x)
{
	return x->md == NATIVE_SMPI_MPICH || x->md == NATIVE_MPICH;
}

/* ompi_coll_tuned_topo_build_in_order_bmtree: vrank's children vrank ^ 1,
 * ^ 2, ... while above it (smallest subtree first), its parent where the
 * first bit is set. */
static inline uint32_t bm_children(uint32_t vrank, uint32_t k, uint32_t *kids, uint32_t *parent)
{
	uint32_t n = 0;
	*parent = NC_NONE;
	for (uint32_t mask = 1; mask < k; mask <<= 1) {
		uint32_t remote = vrank ^ mask;
		if (remote < vrank) {
			*parent = remote;
			break;
		}
		if (remote < k)
			kids[n++] = remote;
	}
	return n;
}

/* A communicator over a subset: ranks sub[n] of c. */
struct subc {
	struct nc_comm c;
	uint32_t *m, *host;
};
int nc_sub_make(struct subc *s, const struct nc_comm *c, const uint32_t *sub, uint32_t n);
void nc_sub_free(struct subc *s);

/* SMPI's init_smp, as MPICH's selector uses it: each host's ranks in
 * communicator order (the intra-node communicator, its first rank the
 * leader), the leaders in order (the leaders' communicator), and whether
 * every host holds as many ranks. */
struct smp {
	uint32_t nh;          /* hosts */
	uint32_t *hof;        /* [k] host index of each rank, hosts numbered by their leader's order */
	uint32_t *first;      /* [nh + 1] offsets into order */
	uint32_t *order;      /* [k] ranks host by host */
	uint32_t *leaders;    /* [nh] */
	int uniform;
};

/* 0 or AN_E_NOMEM. */
int nc_smp_make(struct smp *s, const struct nc_comm *c);
void nc_smp_free(struct smp *s);

/* The selected Bcast (smpcomm: c is a host's own communicator). */
int nc_bcast_sel(struct ncx *x, const struct nc_comm *c, uint32_t root, uint64_t count, uint32_t ts, int smpcomm);

#endif
