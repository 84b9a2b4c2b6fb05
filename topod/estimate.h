/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * estimate.h - what a heavy request will cost before it runs: its peak
 * memory (bytes topod holds for it at once: working arrays, and the reply
 * it builds) and its work (microseconds of one core, roughly). The server
 * reserves the memory from --max-request-memory while the request runs
 * (pool.h) and sends cheap requests down the light lane.
 *
 * One estimator per CMD_HEAVY row of cmd_table (cmd.c), named in its row
 * (struct cmd's estimate), written here: from the request's words
 * (host and rank counts, options) and the fabric's size, in O(request),
 * on the event loop. The figures are upper bounds fitted to measured peak
 * RSS on the k=24 fat tree (tests/integration/t_budget_estimate.py checks
 * each against a fresh topod's peak); they never read the request's hosts
 * from the fabric (a name that resolves to nothing is the handler's error).
 */
#ifndef TOPOD_ESTIMATE_H
#define TOPOD_ESTIMATE_H

#include <stdint.h>

#include "cmd.h"

struct estimate {
	uint64_t mem;     /* bytes at the peak */
	uint64_t work_us; /* microseconds of one core */
};

/* A light request: runs on the light lane (pool.h). */
#define ESTIMATE_LIGHT_US 20000u
#define ESTIMATE_LIGHT_MEM (32u << 20)

/* Fills e for request req of heavy command k on fabric f (f->index not
 * NULL) by k's estimator. Returns 0, or -1 if k has none (a programming
 * error the unit test catches: every CMD_HEAVY row has one). */
int estimate_request(const struct cmd *k, const struct proto_req *req, const struct fabric *f, struct estimate *e);

/* Whether e is light (both bounds). */
int estimate_light(const struct estimate *e);

/* The estimators of the heavy commands (cmd.c names each in its row). */
cmd_estimate_fn est_hopsmatrix;
cmd_estimate_fn est_pathmatrix;
cmd_estimate_fn est_shared;
cmd_estimate_fn est_order;
cmd_estimate_fn est_pick;
cmd_estimate_fn est_map;
cmd_estimate_fn est_load;
cmd_estimate_fn est_schedule;
cmd_estimate_fn est_simgrid;
cmd_estimate_fn est_delaymatrix;
cmd_estimate_fn est_links;
cmd_estimate_fn est_diff;

#endif
