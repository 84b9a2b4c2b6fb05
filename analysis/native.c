/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * native.c - the MPIs' own MPI_Alltoall (native.h).
 */
#include "native.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const model_names[NATIVE_NMODELS] = { "smpi-ompi", "smpi-mpich", "ompi", "mpich" };
static const char *const algo_names[NATIVE_NALGOS] = { "linear", "pair", "shift", "bruck", "scatter" };

const char *native_model_name(enum native_model m)
{
	return (unsigned)m < NATIVE_NMODELS ? model_names[m] : "?";
}

int native_model_parse(const char *s, enum native_model *m)
{
	for (int i = 0; i < NATIVE_NMODELS; i++)
		if (!strcmp(s, model_names[i])) {
			*m = (enum native_model)i;
			return AN_OK;
		}
	return AN_E_INVAL;
}

const char *native_algo_name(enum native_algo a)
{
	return (unsigned)a < NATIVE_NALGOS ? algo_names[a] : "?";
}

/* Open MPI 4.1's fixed decision (coll_tuned_decision_fixed.c), as SMPI
 * 3.32's alltoall__ompi carries it: a row per communicator sizes below
 * `below`, then per block below lim[i] the algorithm alg[i] (the last for
 * every larger block): 1 linear, 2 pairwise, 3 modified Bruck, 4
 * linear_sync, 5 two_proc. */
#define OMPI_ANY UINT64_MAX
static const struct {
	uint32_t below;
	uint64_t lim[10];
	unsigned char alg[10];
} ompi_rows[] = {
	{ 3, { 2, 4, 16, 64, 256, 4096, 32768, 262144, 1048576, OMPI_ANY }, { 2, 5, 2, 5, 2, 5, 2, 4, 5, 2 } },
	{ 8, { 8192, 16384, 65536, 524288, 1048576, OMPI_ANY }, { 4, 1, 4, 1, 2, 1 } },
	{ 16, { 262144, OMPI_ANY }, { 4, 1 } },
	{ 32, { 4, 512, 8192, 32768, 262144, 524288, OMPI_ANY }, { 4, 3, 4, 1, 4, 1, 4 } },
	{ 64, { 512, 524288, OMPI_ANY }, { 3, 1, 4 } },
	{ 128, { 1024, 2048, 4096, 262144, OMPI_ANY }, { 3, 1, 4, 1, 2 } },
	{ 256, { 1024, 2048, 262144, OMPI_ANY }, { 3, 4, 1, 2 } },
	{ 512, { 1024, 8192, 32768, OMPI_ANY }, { 3, 4, 1, 2 } },
	{ 1024, { 512, 8192, 16384, 131072, 262144, OMPI_ANY }, { 3, 4, 1, 4, 1, 2 } },
	{ 2048, { 512, 1024, 2048, 16384, 262144, OMPI_ANY }, { 3, 4, 1, 4, 1, 4 } },
	{ 4096, { 1024, 4096, 8192, 131072, OMPI_ANY }, { 3, 4, 1, 4, 1 } },
	{ UINT32_MAX, { 2048, 8192, 16384, 32768, 65536, OMPI_ANY }, { 3, 4, 1, 4, 1, 4 } },
};

static unsigned ompi_rule(uint32_t P, uint64_t block)
{
	size_t r = 0;
	while (P >= ompi_rows[r].below)
		r++;
	size_t i = 0;
	while (block >= ompi_rows[r].lim[i])
		i++;
	return ompi_rows[r].alg[i];
}

static int pow2(uint32_t P)
{
	return P && !(P & (P - 1));
}

void native_alltoall(enum native_model m, uint32_t P, uint64_t block, struct native_choice *out)
{
	*out = (struct native_choice){ .algo = NATIVE_LINEAR };
	switch (m) {
	case NATIVE_SMPI_OMPI:
	case NATIVE_OMPI: {
		unsigned a = ompi_rule(P, block);
		if (a == 3)
			out->algo = NATIVE_BRUCK;
		else if (a == 2)
			/* SMPI's `pair` exchanges r XOR i (it refuses other sizes);
			 * Open MPI's pairwise shifts by i */
			out->algo = m == NATIVE_SMPI_OMPI ? NATIVE_PAIR : NATIVE_SHIFT;
		break;
	}
	case NATIVE_SMPI_MPICH:
		if (block < 256 && P >= 8)
			out->algo = NATIVE_BRUCK;
		else if (block < 32768)
			*out = (struct native_choice){ NATIVE_SCATTER, 4 };
		else
			out->algo = P % 2 ? NATIVE_PAIR : NATIVE_SHIFT;
		break;
	case NATIVE_MPICH:
	default:
		if (block <= 256 && P >= 8)
			out->algo = NATIVE_BRUCK;
		else if (block <= 32768)
			*out = (struct native_choice){ NATIVE_SCATTER, 32 };
		else
			out->algo = pow2(P) ? NATIVE_PAIR : NATIVE_SHIFT;
		break;
	}
	if (out->algo == NATIVE_SCATTER && out->throttle > P)
		out->throttle = P;
}

void native_free(struct native_sched *s)
{
	if (!s)
		return;
	free(s->step_off);
	free(s->src);
	free(s->dst);
	free(s->mult);
	free(s);
}

/* Flows and steps of algorithm c on P ranks (counting pass when s has no
 * arrays): returns the number of flows. */
static size_t fill(const struct native_choice *c, uint32_t P, struct native_sched *s)
{
	size_t n = 0;
	uint32_t st = 0;
#define FLOW(a, b, k)                                                                                                  \
	do {                                                                                                           \
		if (s->src) {                                                                                          \
			s->src[n] = (a);                                                                               \
			s->dst[n] = (b);                                                                               \
			s->mult[n] = (k);                                                                              \
		}                                                                                                      \
		n++;                                                                                                   \
	} while (0)
#define STEP()                                                                                                         \
	do {                                                                                                           \
		if (s->step_off)                                                                                       \
			s->step_off[st + 1] = (uint32_t)n;                                                             \
		st++;                                                                                                  \
	} while (0)
	switch (c->algo) {
	case NATIVE_LINEAR:
		for (uint32_t r = 0; r < P; r++)
			for (uint32_t i = 1; i < P; i++)
				FLOW(r, (r + i) % P, 1);
		STEP();
		break;
	case NATIVE_PAIR:
	case NATIVE_SHIFT:
		for (uint32_t i = 1; i < P; i++) {
			for (uint32_t r = 0; r < P; r++)
				FLOW(r, c->algo == NATIVE_PAIR ? r ^ i : (r + i) % P, 1);
			STEP();
		}
		break;
	case NATIVE_BRUCK:
		for (uint32_t k = 1; k < P; k *= 2) {
			uint32_t blocks = 0;
			for (uint32_t b = 1; b < P; b++)
				blocks += (b & k) != 0;
			for (uint32_t r = 0; r < P; r++)
				FLOW(r, (r + k) % P, blocks);
			STEP();
			if (k > UINT32_MAX / 2)
				break;
		}
		break;
	case NATIVE_SCATTER:
	default:
		for (uint32_t ii = 0; ii < P; ii += c->throttle) {
			uint32_t ss = P - ii < c->throttle ? P - ii : c->throttle;
			for (uint32_t r = 0; r < P; r++)
				for (uint32_t i = 0; i < ss; i++)
					FLOW(r, (r + P - (i + ii) % P) % P, 1);
			STEP();
		}
		break;
	}
#undef FLOW
#undef STEP
	s->nsteps = st;
	return n;
}

int native_build(const struct native_choice *c, uint32_t P, struct native_sched **out, char err[AN_ERR_LEN])
{
	*out = NULL;
	if (P < 1 || (uint64_t)P * P > UINT32_MAX / 2 || (unsigned)c->algo >= NATIVE_NALGOS ||
	    (c->algo == NATIVE_SCATTER && c->throttle < 1)) {
		snprintf(err, AN_ERR_LEN, "%s on %u ranks: no such exchange", native_algo_name(c->algo), P);
		return AN_E_INVAL;
	}
	if (c->algo == NATIVE_PAIR && !pow2(P)) {
		snprintf(err, AN_ERR_LEN, "pair on %u ranks: it needs a power of two (SMPI refuses it)", P);
		return AN_E_NOTAPPLIC;
	}
	struct native_sched *s = calloc(1, sizeof(*s)), count = { 0 };
	size_t n = fill(c, P, &count);
	if (s) {
		s->step_off = calloc((size_t)count.nsteps + 1, sizeof(uint32_t));
		s->src = malloc((n + 1) * sizeof(uint32_t));
		s->dst = malloc((n + 1) * sizeof(uint32_t));
		s->mult = malloc((n + 1) * sizeof(uint32_t));
	}
	if (!s || !s->step_off || !s->src || !s->dst || !s->mult) {
		native_free(s);
		snprintf(err, AN_ERR_LEN, "no memory for a %u-rank %s", P, native_algo_name(c->algo));
		return AN_E_NOMEM;
	}
	s->nranks = P;
	fill(c, P, s);
	*out = s;
	return AN_OK;
}
