/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * query.h - answers to query-protocol requests, computed from one fabric:
 * the dispatcher over cmd_table[] (cmd.h) and the handlers of the core
 * commands (routes, hierarchy, sharing, names).
 *
 * query_answer() appends the complete reply (one or more lines, each ending
 * in '\n') to out. It never blocks and never touches the store: the caller
 * passes the fabric it took a reference on, so a reply never mixes two
 * generations.
 */
#ifndef TOPOD_QUERY_H
#define TOPOD_QUERY_H

#include <event2/buffer.h>

#include "cmd.h"
#include "proto.h"
#include "store.h"

enum query_result {
	QUERY_OK = 0,
	QUERY_CLOSE = 1,   /* "quit": flush and close */
	QUERY_UNKNOWN = 2, /* not a query command; the caller may try others */
};

enum query_result query_answer(const struct fabric *f, const struct proto_req *req, struct evbuffer *out);
/* The same for a row already looked up (the server's path). */
enum query_result query_run(const struct cmd *k, const struct fabric *f, const struct proto_req *req,
			    struct evbuffer *out, const struct qplanes *planes);

/* Checks req against k's arity and fabric need and fills *c (threads = 1);
 * -1 with the ERR reply written to out. The server uses it to dispatch
 * CMD_HEAVY commands to its workers: query_prepare() on the loop, then
 * k->answer(c) on a worker with the fabric reference held. */
int query_prepare(struct qctx *c, const struct cmd *k, const struct fabric *f, const struct proto_req *req,
		  struct evbuffer *out);

/* Handlers of the core commands (rows of cmd_table[]). */
cmd_answer_fn answer_ping, answer_quit, answer_help, answer_info, answer_hops, answer_path,
	answer_seed_query, answer_hopsbatch, answer_hopsmatrix, answer_pathmatrix, answer_depth,
	answer_clusters, answer_tree, answer_shared, answer_resolve, answer_hosts;
/* The heavy analyses' commands: load_cmd.c and schedule_cmd.c. */
cmd_answer_fn answer_load, answer_schedule;
/* Every switch's name (names_cmd.c). */
cmd_answer_fn answer_switches;

#endif
