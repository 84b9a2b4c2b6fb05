/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sched_kprefix.c - seed 002's kPrefix all-to-all multicast (schedule.h
 * SCHED_ALLGATHER, "allgather"): partitions of k ranks exchange by XOR,
 * then a ring step carries the same block on. The partition size is chosen
 * here once, for the rank-level form, the compact form and the expansion.
 */
#include "sched_impl.h"

/* s->k: k asked or (0) the largest power of two <= 8 dividing the P ranks. */
static int kprefix_k(struct sched *s, uint32_t P, unsigned k, char err[AN_ERR_LEN])
{
	if (!k) {
		k = 8;
		while (k > 1 && (P % k || k > P))
			k /= 2;
	}
	if (!k || (k & (k - 1)) || P % k)
		return sched_fail(err, AN_E_NOTAPPLIC,
				  "kPrefix needs a partition size k that is a power of two dividing the %u ranks (k=%u)",
				  P, k);
	s->k = k;
	return AN_OK;
}

static int kprefix_steps(struct sbuild *b, uint32_t P, uint32_t k)
{
	for (uint32_t t = 0; t < P / k; t++) {
		for (uint32_t i = 1; i < k; i++) {
			for (uint32_t r = 0; r < P; r++)
				if (sb_flow(b, r, r ^ i, (uint32_t)((r + (uint64_t)P * k - (uint64_t)t * k) % P)))
					return AN_E_NOMEM;
			if (sb_step(b))
				return AN_E_NOMEM;
		}
		if (t + 1 == P / k)
			break;
		for (uint32_t r = 0; r < P; r++)
			if (sb_flow(b, r, (r + k) % P, (uint32_t)((r + (uint64_t)P * k - (uint64_t)t * k) % P)))
				return AN_E_NOMEM;
		if (sb_step(b))
			return AN_E_NOMEM;
	}
	return AN_OK;
}

int sched_build_kprefix(struct sbuild *b, const struct job *j, const struct hier *h, const struct sched_req *req,
			char err[AN_ERR_LEN])
{
	int rc = kprefix_k(b->s, j->P, req->k, err);
	if (rc)
		return rc;
	if (b->pl) {
		b->s->nsteps = j->P - 1;
		return AN_OK;
	}
	return kprefix_steps(b, j->P, b->s->k);
}

int sched_expand_kprefix(struct sbuild *b, const struct sched *c)
{
	char err[AN_ERR_LEN];
	int rc = kprefix_k(b->s, c->nranks, c->k, err);
	return rc ? rc : kprefix_steps(b, c->nranks, b->s->k);
}
