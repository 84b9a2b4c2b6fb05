/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sched_xor.c - the XOR / pairwise all-to-all (schedule.h SCHED_XOR): what
 * MPICH and Open MPI run by default for large blocks, so the schedule the
 * others are judged against (advice.h) and the one TACS and route fall back
 * to. Its compact form needs no plan: c_dst (sched_compact.c) lists a step.
 */
#include "sched_impl.h"

int sched_xor_steps(struct sbuild *b, uint32_t P)
{
	int pow2 = P && !(P & (P - 1));
	uint32_t *src = b->s->src, *dst = b->s->dst;
	for (uint32_t i = 1; i < P; i++) {
		size_t o = b->n;
		if (o + P > b->cap)
			return AN_E_NOMEM;
		if (pow2)
			for (uint32_t r = 0; r < P; r++) {
				src[o + r] = r;
				dst[o + r] = r ^ i;
			}
		else
			for (uint32_t r = 0; r < P; r++) {
				src[o + r] = r;
				dst[o + r] = r + i < P ? r + i : r + i - P;
			}
		b->n = o + P;
		if (sb_step(b))
			return AN_E_NOMEM;
	}
	return AN_OK;
}

int sched_build_xor(struct sbuild *b, const struct job *j, const struct hier *h, const struct sched_req *req,
		    char err[AN_ERR_LEN])
{
	if (b->pl) {
		b->s->nsteps = j->P - 1;
		return AN_OK;
	}
	return sched_xor_steps(b, j->P);
}

int sched_expand_xor(struct sbuild *b, const struct sched *c)
{
	return sched_xor_steps(b, c->nranks);
}
