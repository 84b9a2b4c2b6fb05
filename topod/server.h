/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * server.h - topod's network side (libevent): query listeners (TCP),
 * snapshot ingest (UNIX and/or TCP) and the admin socket (UNIX only).
 *
 * Everything here runs on the event loop thread, except the ingest
 * completion callbacks, which the builder thread hands back through a
 * locked queue and event_active(), and heavy requests (CMD_HEAVY), which
 * run on the worker pool (pool.h) and come back the same way. A connection
 * with a heavy request in flight parses no further request until its reply
 * is appended, so replies stay in request order.
 */
#ifndef TOPOD_SERVER_H
#define TOPOD_SERVER_H

#include <sys/types.h>

#include "auth.h"
#include "build.h"
#include "pool.h"
#include "qstats.h"
#include "store.h"
#include "topo_limits.h"

struct cmd;
struct proto_req;
struct fabric;
struct evbuffer;

#define SERVER_MAX_ADDRS 8

struct server_config {
	const char *listen[SERVER_MAX_ADDRS]; /* "ADDR:PORT" query listeners */
	int nlisten;
	const char *ingest[SERVER_MAX_ADDRS]; /* "unix:PATH" or "tcp:ADDR:PORT" */
	int ingest_plane[SERVER_MAX_ADDRS];   /* the plane each ingest feeds (index into the planes) */
	int ningest;
	const char *admin;                    /* UNIX socket path, or NULL */
	unsigned max_conns;                   /* query connections */
	unsigned max_admin;                   /* admin connections, counted apart from queries */
	unsigned idle_timeout_s;              /* close idle query connections */
	uint64_t max_snapshot;                /* bytes accepted on ingest */
	unsigned ingest_timeout_s;            /* a producer that sends nothing this long is dropped */
	/* Per-client reply memory (Redis's client-output-buffer-limit): a
	 * client whose unread replies pass out_hard, or stay above out_soft
	 * for out_soft_s seconds, or make no write progress for
	 * write_timeout_s seconds, is cut off and logged. A single reply
	 * larger than out_hard is refused (ERR TOOBIG). */
	uint64_t out_hard, out_soft;
	unsigned out_soft_s, write_timeout_s;
	/* Heavy requests are admitted (else ERR BUSY) only while all
	 * clients' unread replies together stay below this. */
	uint64_t out_budget;
	int threads;                          /* worker pool size (--threads) */
	unsigned heavy_queue;                 /* heavy requests waiting at most */
	/* Ingest (see docs/admin-guide.md, "Who may feed topod"). */
	unsigned max_ingest;                  /* ingest connections at once */
	const struct snap_key *ingest_key;    /* verifies signed snapshots; NULL: none configured */
	int ingest_insecure;                  /* TCP ingest without a signature (explicit opt-out) */
	int ingest_has_group;                 /* UNIX ingest: members of ingest_gid may feed too */
	gid_t ingest_gid;
	/* Bounded resources (docs/admin-guide.md, "Limits"): the memory all
	 * heavy requests in flight may reserve together by their estimates
	 * (estimate.h; 0: unbounded), the deadline of every heavy request
	 * (0: none), and the bytes all clients' unanswered input and unread
	 * output may hold together (0: unbounded): past it, heavy requests
	 * are refused and the largest clients are cut first. */
	uint64_t max_request_mem;
	unsigned request_timeout_s;
	uint64_t client_budget;
};

/* A fabric plane (subnet): its name, the generation served and the builder
 * its ingest feeds. Queries choose one with `plane`, or get the plane their
 * hosts are on. */
struct server_plane {
	const char *name;
	struct store *st;
	struct builder *b;
};

struct server;

/* Binds every listener; returns NULL with err set. planes[0] is the first
 * (the admin socket's reload and restore act on it). */
struct server *server_new(const struct server_config *cfg, const struct server_plane *planes, int nplanes,
			  char err[SNAP_ERR_LEN]);
/* The bound TCP port of query listener i (useful with port 0). */
int server_query_port(const struct server *srv, int i);
/* Runs the loop until shutdown (admin "shutdown", SIGINT, SIGTERM). */
int server_run(struct server *srv);
void server_free(struct server *srv);

/* Set by main: what admin "reload" (path NULL: re-read the configured
 * source) and "restore PATH [force]" do. */
typedef int (*server_reload_fn)(void *arg, const char *path, int force, char err[SNAP_ERR_LEN]);
void server_set_reload(struct server *srv, server_reload_fn fn, void *arg);

/* ---- for the HTTP endpoint (http.h), on the loop thread ---------------- */

/* The server's counters at one instant (the `stats` verb's, and qstats.h's). */
struct server_metrics {
	unsigned conns, max_conns, admin_conns, ingest_conns, watching;
	uint64_t requests, errors, refused, half_closed, watch_answered, watch_timeouts;
	uint64_t cut_hard, cut_soft, cut_write, cut_budget, toobig, busy_heavy, heavy_toobig, heavy_timeouts;
	uint64_t ingest_denied, ingest_unsigned, ingest_truncated, ingest_trailing;
	uint64_t out_pending, out_budget, client_in, client_bytes, client_budget;
	int workers;
	int nplanes;
	struct builder_stats plane[TOPO_PLANES_MAX];
	struct builder_stats all; /* over the planes (builder_stats_add), the times plane 0's */
	struct pool_stats pool;
	struct qstats qs;
};
void server_get_metrics(const struct server *srv, struct server_metrics *m);
struct event_base *server_base(struct server *srv);
/* The worker pool; NULL until server_run() has started it. */
struct pool *server_pool(struct server *srv);
/* --output-budget covers both ports: the HTTP endpoint reports the bytes
 * of its replies handed over (add) and written or dropped (sub). */
void server_http_unsent(struct server *srv, uint64_t add, uint64_t sub);
/* Whether a finished reply of n bytes may be queued: every unread reply
 * of both ports (into *pending) and n within --output-budget, or nothing
 * else waiting. */
int server_reply_fits(const struct server *srv, uint64_t n, uint64_t *pending);

/* A job for the worker pool, as server_admit judges it. */
struct admission {
	const struct cmd *k;          /* the command, or NULL (a job lookup, a scrape) */
	const struct proto_req *req;  /* k's words, for its estimate */
	const struct fabric *f;       /* the generation it will answer from */
	uint64_t mem;                 /* without an estimator (k NULL or light): the bytes to reserve */
	int light;                    /* likewise: may it take the light lane */
	unsigned copies;              /* the reply is held this many times at once (HTTP's JSON: 2) */
	int scrape;                   /* the metrics: admitted past the clients' budgets (how overload is seen) */
	const char *peer;             /* for the log */
};
enum admit_result { ADMIT_QUEUED, ADMIT_UNREAD, ADMIT_TOOBIG, ADMIT_FULL, ADMIT_NOESTIMATE };

/* The one admission rule of every request that runs on the worker pool,
 * from the query port and the HTTP endpoint alike (docs/admin-guide.md,
 * "Limits"): while clients do not read what they asked for (every unread
 * reply past --output-budget, or all clients' buffers past seven eighths
 * of --client-budget) ERR BUSY; a heavy command's estimate (estimate.h)
 * that one request could never hold, ERR TOOBIG; a full queue, ERR BUSY.
 * Otherwise pj is queued with its reservation, lane and deadline. Returns
 * ADMIT_QUEUED, or why not with the ERR line written to err. */
enum admit_result server_admit(struct server *srv, const struct admission *a, struct pool_job *pj,
			       struct evbuffer *err);

#endif
