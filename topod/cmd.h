/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd.h - the query protocol's command table: the one place a command is
 * named. The dispatcher (query_answer), `help`, `topod --commands` and the
 * test that keeps docs/protocol.md and libtii in step all read cmd_table[].
 *
 * A row is the whole description of a command: its name, arity, lane
 * (flags), handler, usage and help, the estimator of a CMD_HEAVY command
 * (what it will cost before it runs, estimate.h), the server handler of a
 * CMD_ADMIN one, and the keys of its reply's head. Nothing else names a command: the admin socket, the
 * HTTP endpoint, the budget and the metrics all read the row.
 *
 * Adding a command (CONTRIBUTING.md, "Adding a command", is the recipe a
 * test keeps complete): write `void answer_foo(struct qctx *c)` in the
 * file of its concept and declare it in that file's header; for a heavy
 * one, `void est_foo(...)` in estimate.c; add one row to cmd_table[] in
 * cmd.c; document its reply in docs/protocol.md (t_protocol_doc checks
 * that every row has a section there).
 *
 * A handler appends its whole reply (one "OK ..." line plus the lines it
 * announces, or one "ERR CODE text" line) to c->out. It must not block and
 * must not touch the store: c->f is the one generation it answers from.
 * Handlers of CMD_HEAVY commands run on a worker thread, so they may take
 * milliseconds to seconds, and may use OpenMP with c->threads threads; the
 * others run on the event loop and must stay O(request) and cheap.
 */
#ifndef TOPOD_CMD_H
#define TOPOD_CMD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>

#include "proto.h"
#include "topo_limits.h"
#include "store.h"

struct route_tab;
struct hier;

/* The fabric planes (subnets) a connection can choose from; the server
 * fills it for CMD_PLANES rows. NULL outside a server (one plane). */
struct qplanes {
	int n;
	const char *name[TOPO_PLANES_MAX];
	const struct fabric *f[TOPO_PLANES_MAX];
	int *selected; /* the connection's choice: -1 for "the plane the hosts are on" */
	int current;   /* the plane this request is answered from */
};

/* One request, answered from one generation. Built by query_answer(); a
 * handler only reads it (and writes out). */
struct qctx {
	const struct fabric *f;       /* the generation; never NULL */
	const struct snap *s;         /* f->snap */
	const struct route_tab *rt;   /* NULL only for commands without CMD_FABRIC */
	const struct hier *h;         /* likewise */
	uint64_t gen;
	const struct proto_req *req;  /* req->cmd, req->argc, req->argv[] */
	struct evbuffer *out;         /* the reply goes here */
	int threads;                  /* OpenMP team size this request may use, >= 1 */
	const struct qplanes *planes; /* CMD_PLANES rows only; may be NULL */
	int close;                    /* set by a handler: close after the reply ("quit") */
	/* CMD_HEAVY: raised by the server at the request's deadline; handlers
	 * pass it to the analyses' cancel members (an_err.h). NULL elsewhere. */
	const atomic_int *cancel;
};

typedef void cmd_answer_fn(struct qctx *c);
struct estimate;
/* What a request will cost before it runs (estimate.h), O(request). */
typedef void cmd_estimate_fn(const struct proto_req *r, const struct fabric *f, struct estimate *e);
struct conn;
/* An admin command: answered with the server's own state (server_admin.c). */
typedef void cmd_admin_fn(struct conn *c, const struct proto_req *req, struct evbuffer *out);

#define CMD_FABRIC 1u  /* needs a fabric: ERR NOFABRIC before the first snapshot */
#define CMD_HEAVY 2u   /* runs on the worker pool, never on the event loop */
#define CMD_PLANES 4u  /* about the planes, not one fabric: gets qctx.planes */
#define CMD_WATCH 8u   /* may wait for the next generation: the server parks the connection */
#define CMD_ADMIN 16u  /* the admin socket's own (admin, not answer): ERR DENIED on the query port */

struct cmd {
	const char *name;
	int min_args, max_args;   /* max_args -1: up to PROTO_ARGS_MAX */
	unsigned flags;
	cmd_answer_fn *answer;
	const char *usage;        /* "hops HOSTA HOSTB": sent with ERR USAGE */
	const char *help;         /* one line, for `help` and `topod --commands` */
	cmd_estimate_fn *estimate; /* CMD_HEAVY: cost before it runs; NULL otherwise */
	cmd_admin_fn *admin;      /* CMD_ADMIN: the handler (answer is NULL) */
	/* The reply's head: the keys of "OK key=value ..." in order, "key?"
	 * for one some answers leave out; "lines" announces that many lines
	 * after it. Checked against the handlers' replies (test_query) and
	 * docs/protocol.md (t_protocol_doc); the head keys libtii's parsers
	 * read (libtii/cmds.c) against it (t_tii_rows); libtii and the fake
	 * server against the handlers (t_tii_real, t_fake_conform).
	 * NULL for the admin rows: stats is its own table (server_admin.c). */
	const char *reply;
};

extern const struct cmd cmd_table[];
extern const size_t cmd_count;

/* The row named name, or NULL. */
const struct cmd *cmd_find(const char *name);

/* ---- helpers shared by handlers ------------------------------------------ */

/* "ERR <code> <text>\n" with text cleaned of control bytes. */
void query_error(struct evbuffer *out, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The protocol code (docs/protocol.md, "Errors") of an AN_E_* code: a route
 * failure by its own name (NOENTRY, LOOP, ...), the others as the table
 * there says; INTERNAL for AN_E_CHECK and any code not listed. */
const char *qctx_route_code(int route_err);

/* The ERR reply for a name that names nothing (what: "no host, HCA, GUID or
 * LID"): ERR GONE for a host earlier generations had, else ERR NOTFOUND with
 * the name probably meant (case, domain suffix, switch). */
void qctx_notfound(struct qctx *c, const char *name, const char *what, int takes_switch);
/* Resolves a host list; *eps and *dlids are malloc'd (caller frees both);
 * on failure writes the ERR reply, returns -1 and allocates nothing. */
int qctx_resolve_list(struct qctx *c, const char *const *names, size_t n, uint32_t **eps, uint16_t **dlids);
/* Host index of a name naming a host's default rail, or -1 with the ERR
 * reply written (ERR RAIL for another rail: the hierarchy is per host). */
int64_t qctx_host_of(struct qctx *c, const char *name);
/* Canonical name of an end port: host/HCA for CA ports, 0xGUID otherwise. */
void qctx_ep_name(const struct qctx *c, uint32_t ep, char *buf, size_t n);
/* ERR USAGE/TOOMANY unless min <= n <= TOPO_MATRIX_MAX; -1 when written. */
int qctx_check_hosts(struct qctx *c, size_t n, size_t min);
/* A traffic matrix from nt words S:D:BYTES for nranks ranks (load_cmd.c),
 * for `load` and `pick pattern=matrix`: -1 once the error is written. */
struct pattern;
int qctx_matrix(struct qctx *c, const char *const *words, size_t nt, uint32_t nranks, struct pattern *p);

/* Duplicate hosts, one rule (docs/protocol.md, "Naming hosts"): a list
 * whose answer is per host (a set) refuses a repeat with ERR DUPLICATE
 * naming it and its two places; a rank list (hopsmatrix, clusters, load,
 * schedule) takes repeats as more ranks on the host. -1 when written.
 * By name as written (query.c's qctx_dup_eps: by end port). */
int qctx_dup_names(struct qctx *c, const char *const *names, size_t n);

#endif
