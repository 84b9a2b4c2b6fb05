/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mprog.h - what the ranks of an MPI collective do, as programs the cost
 * model runs (cost.h cost_sim_run with prog): each rank's sends, receives
 * and waits in the order its code makes them (docs/cost-model.md "Every
 * collective").
 *
 * A collective's code is written once per rank, as the MPI's sources are:
 * rank r posts a send to d of B bytes (mp_isend), a receive from s
 * (mp_irecv), waits for one of them (mp_wait); mp_send, mp_recv and
 * mp_sendrecv are the blocking forms. mp_build then matches every send
 * with its receive as MPI does between one pair of ranks on one tag (in
 * the order they were posted) and gives the flows and programs; a send
 * without its receive, or the reverse, is an error (the code would hang).
 * A message's size is its sender's (a receive may post more, as MPI
 * allows). A rank's message to itself is a copy and must not be listed.
 *
 * Pure: no I/O, no globals.
 */
#ifndef AN_MPROG_H
#define AN_MPROG_H

#include <stdint.h>

#include "an_err.h"
#include "cost.h"

/* Operations of all ranks together, at most this many (a 1,024-rank ring
 * allgather has 2 x 1,023 x 1,024 posts and as many waits). */
#define MP_OPS_MAX (1u << 24)

struct mp_op {
	uint8_t kind;          /* 0 send posted, 1 receive posted, 2 wait, 3 synchronous send posted */
	uint32_t peer;         /* post: the other rank; wait: the rank's operation index it waits for */
	double bytes;
};

struct mprog {
	uint32_t P;
	uint32_t *n, *cap;     /* [P] operations of each rank */
	struct mp_op **op;     /* [P] */
	uint64_t total;
	int failed;            /* a rank out of range, no memory, too many operations */
};

/* The flows and programs of cost_sim (prog mode). */
struct mp_built {
	uint32_t P, F;
	uint32_t *src, *dst;   /* [F] */
	double *bytes;         /* [F] */
	uint8_t *sync;         /* [F] 1: a synchronous send (MPI_Issend); NULL: none */
	uint32_t *prog_off;    /* [P + 1] */
	uint32_t *prog;        /* flow x 4 + COST_OP_* */
	uint32_t step_off[2];  /* one step listing every flow */
};

int mp_init(struct mprog *p, uint32_t P);   /* AN_OK or AN_E_NOMEM */
void mp_free(struct mprog *p);
/* Rank r's operations; a request is the index of its post. */
uint32_t mp_isend(struct mprog *p, uint32_t r, uint32_t to, double bytes);
uint32_t mp_irecv(struct mprog *p, uint32_t r, uint32_t from, double bytes);
/* MPI_Issend: complete when its message is in, whatever its size */
uint32_t mp_issend(struct mprog *p, uint32_t r, uint32_t to, double bytes);
void mp_wait(struct mprog *p, uint32_t r, uint32_t req);
void mp_send(struct mprog *p, uint32_t r, uint32_t to, double bytes);
void mp_recv(struct mprog *p, uint32_t r, uint32_t from, double bytes);
/* MPI_Sendrecv: both posted, both waited for. */
void mp_sendrecv(struct mprog *p, uint32_t r, uint32_t to, double sbytes, uint32_t from, double rbytes);

/* Matches sends with receives. AN_E_INVAL (err says which pair) for an
 * unmatched one or a failed build, AN_E_NOMEM. */
int mp_build(const struct mprog *p, struct mp_built *out, char err[AN_ERR_LEN]);
void mp_built_free(struct mp_built *b);

/* The time in seconds the built programs take (cost_sim_run): route, ctx,
 * ncables, bps and exact as cost_sim says; msg NULL for SMPI's. */
int mp_time(const struct mp_built *b, uint32_t (*route)(const void *, uint32_t, uint32_t, uint32_t *),
	    const void *ctx, uint32_t ncables, const uint64_t *bps, const struct cost_msg *msg, double *seconds,
	    char err[AN_ERR_LEN]);

#endif
