/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * server_impl.h - what the server's files share and nothing outside them
 * sees: the connection and server structures, and the calls one protocol's
 * file makes into another's. server.c owns connections (accept, accounting,
 * close) and the loop; server_query.c request lines; server_heavy.c the
 * worker pool's admission and replies; server_watch.c long polls;
 * server_admin.c the admin commands; server_ingest.c snapshot producers.
 * Everything runs on the loop thread except where a comment says otherwise.
 */
#ifndef TOPOD_SERVER_IMPL_H
#define TOPOD_SERVER_IMPL_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "cmd.h"
#include "fabric.h"
#include "pool.h"
#include "proto.h"
#include "server.h"

/* A client that queues more reply bytes than this without reading stops
 * being parsed until it catches up: cheap replies never pile up past it,
 * and heavy ones are bounded by the output limits below. */
#define OUT_HIGH (8u << 20)

enum conn_kind { CONN_QUERY, CONN_ADMIN, CONN_INGEST };

struct conn {
	struct server *srv;
	struct bufferevent *bev;
	enum conn_kind kind;
	int closing;       /* flush output, then free */
	int stop_after;    /* admin "shutdown": stop the loop once the reply is out */
	int refs;          /* the connection itself + an ingest or heavy job in flight */
	/* query and admin */
	int busy;          /* a heavy request is on the pool: parse nothing more until it is back */
	int plane;         /* query: the chosen plane, -1 for the one the hosts are on; ingest: the listener's */
	/* watch: parked until the plane serves another generation */
	int watch_plane;   /* plane + 1 while parked, else 0 */
	uint64_t watch_gen;
	struct event *watch_ev;           /* its timeout */
	struct conn *wprev, *wnext;       /* srv->watchers[plane] */
	int eof;           /* the client half-closed: answer what it sent, flush, close */
	struct conn *prev, *next;         /* srv->conns: every open connection */
	struct event *soft_ev;            /* armed while the output is above the soft limit */
	struct evbuffer_cb_entry *acct_in, *acct_out; /* query and admin: srv->in_bytes, out_bytes */
	time_t out_progress;  /* when the client last read some of its replies (budget_cb spares it) */
	uint64_t line_since;  /* ms when the partial request line waiting in the input began, 0: none */
	size_t scanned;       /* input bytes already searched for the end of a line */
	/* ingest only */
	uint8_t *buf;
	size_t have, want, cap; /* want = header + payload once the header is known */
	uint64_t first_us;         /* ingest: when its first bytes were read (util_now_us) */
	int draining;      /* refused: the ERR is queued, read and drop the rest until EOF */
	int auth;          /* enum ingest_auth_state */
	int tcp;           /* ingest over TCP: the key must be proved unless insecure */
	struct ingest_auth *ia;    /* from the producer's hello on */
	struct event *linger_ev;   /* TCP before the proof: the grace time, then the linger after ERR */
	struct event *rd_ev;       /* the payload read straight into buf (server_ingest.c), NULL: through bev */
	int is_delta;              /* from the header */
	size_t room;               /* bytes the builder was asked to make room for, or to feed */
	int fed;                   /* buf is given to builder_feed(): freed through ingest_buf_free() */
	char peer[64];
};

/* Where an ingest connection is in authentication (auth.h). */
enum ingest_auth_state {
	IA_NONE,       /* a bare snapshot (UNIX, or TCP with --ingest-insecure) */
	IA_V1,         /* the old 48-byte preamble (UNIX only), checked at the end */
	IA_CHALLENGED, /* hello answered with a challenge: awaiting proof and header */
	IA_PROVEN,     /* the head tag matched: the body tag is computed as bytes arrive */
	IA_UNCHECKED   /* challenge-response without a key to check it (UNIX, insecure) */
};

struct ingest_auth {
	uint8_t pre[SNAP_AUTH_LEN];       /* version 1 */
	uint8_t chal[SNAP_AUTH_CHAL_LEN]; /* version 2: the challenge this connection was sent */
	struct snap_auth_body body;
};

/* After refusing a peer that has not proved the key, topod reads and drops
 * what it still sends for this long, so that an honest producer with the
 * wrong key reads the ERR instead of a reset, then closes. */
#define AUTH_LINGER_MS 1000
/* A TCP peer must have proved the key this long after connecting, or it
 * gives its ingest slot back (sshd's LoginGraceTime): the proof is 144
 * bytes and one round trip, and the ingest timeout (minutes) is for
 * snapshots that take long to send. */
#define AUTH_GRACE_S 10

struct done_item {
	struct conn *c;
	char msg[SNAP_ERR_LEN + 32];
	struct done_item *next;
};

/* A heavy request on its way through the pool. The job owns a copy of the
 * request line (req's pointers point into it) and a fabric reference, so
 * the answer comes from the generation current when it was accepted. */
struct heavy_job {
	struct pool_job pj;
	struct conn *c;
	const struct cmd *k;
	struct fabric *f;
	struct qctx qc;
	struct evbuffer *out;
	char *line;
	struct heavy_job *next_done;
	uint64_t submitted_ns;
	struct proto_req req; /* last: large */
};

struct watch_wake {
	struct server *srv;
	int plane;
	struct event *ev; /* made active by the builder thread's publish hook */
};

struct server {
	struct server_config cfg;
	struct server_plane plane[TOPO_PLANES_MAX];
	int nplanes;
	struct conn *watchers[TOPO_PLANES_MAX];
	struct watch_wake wake[TOPO_PLANES_MAX];
	unsigned nwatch;
	uint64_t watch_answered, watch_timeouts;
	struct event_base *base;
	struct pool *pool;             /* started by server_run, in the process that serves */
	pid_t pid;                     /* of the process that made the loop */
	struct event *jobs_ev;                /* worker -> loop: finished heavy jobs */
	pthread_mutex_t jobs_lock;
	struct heavy_job *jobs_done;
	unsigned nadmin;
	struct conn *conns;                   /* open connections, for shutdown */
	unsigned ningest;
	unsigned ningest_tcp;      /* of ningest: TCP producers, counted apart (see accept_cb) */
	uint64_t ingest_denied, ingest_trailing, ingest_truncated, ingest_unsigned;
	uint64_t cut_hard, cut_soft, cut_write, toobig, busy_heavy, half_closed;
	struct evconnlistener *lq[SERVER_MAX_ADDRS], *li[SERVER_MAX_ADDRS], *la;
	int nlq, nli;
	int qport[SERVER_MAX_ADDRS];
	char unlink_paths[SERVER_MAX_ADDRS + 1][108];
	int nunlink;
	struct event *sigint, *sigterm, *sighup, *notify;
	unsigned nconns;
	uint64_t requests, errors, refused;
	pthread_mutex_t done_lock; /* builder thread -> loop: finished ingest jobs */
	struct done_item *done_head;
	server_reload_fn reload;
	void *reload_arg;
	/* bounded resources: heavy deadlines' tick, the clients' budget */
	struct event *tick_ev, *budget_ev;
	uint64_t in_bytes, out_bytes;       /* every query and admin client's input and output buffers */
	uint64_t http_unsent;               /* the HTTP endpoint's replies not yet written (server_http_unsent) */
	int budget_pending;                 /* budget_ev is active */
	uint64_t cut_budget, heavy_toobig, heavy_timeouts;
	struct qstats qs;                   /* by command, for the metrics endpoint */
};

/* ---- server.c: connections ------------------------------------------------ */

/* Drops one reference; the last frees the connection's memory. */
void conn_unref(struct conn *c);
/* Closes now, dropping unsent output; idempotent. */
void conn_close(struct conn *c);
/* Closes once the reply is on the wire. */
void conn_finish(struct conn *c);
void conn_event_cb(struct bufferevent *bev, short what, void *arg);
void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen, void *arg,
	       enum conn_kind kind, int plane);

/* ---- server_query.c: request lines and output limits ---------------------- */

void line_read_cb(struct bufferevent *bev, void *arg);
void conn_write_cb(struct bufferevent *bev, void *arg);
/* Enforces the per-client output limits after output grew. */
void check_output(struct conn *c);
/* Closes a client whose replies will not be read, with the reason logged. */
void cut_client(struct conn *c, const char *why);
/* The plane a request is answered from (lookups only). */
int pick_plane(const struct conn *c, const struct proto_req *req);

/* ---- server_heavy.c: the worker pool -------------------------------------- */

/* Queues a heavy request: 0 if it went to the pool (the reply comes
 * later), -1 if the reply (an ERR) was written now. */
int submit_heavy(struct conn *c, const struct cmd *k, const struct proto_req *req, struct evbuffer *out);
void heavy_free(struct heavy_job *j);
/* Parses nothing more from c while busy (a reply it waits for). */
void set_busy(struct conn *c, int busy);
/* Every client's unread reply bytes, the HTTP endpoint's included. */
uint64_t out_pending(const struct server *srv);
void jobs_cb(evutil_socket_t fd, short what, void *arg);
void tick_cb(evutil_socket_t fd, short what, void *arg);

/* ---- server_watch.c -------------------------------------------------------- */

void handle_watch(struct conn *c, const struct proto_req *req, struct evbuffer *out);
void watch_answer(struct conn *c, uint64_t gen, int changed);
void watch_unpark(struct conn *c);
void watch_wake_cb(evutil_socket_t fd, short what, void *arg);
/* Builder thread. */
void watch_publish_hook(void *arg);

/* ---- server_admin.c ------------------------------------------------------- */

/* The rows of cmd_table with CMD_ADMIN (cmd.c). */
cmd_admin_fn admin_stats, admin_reload, admin_restore, admin_confirm, admin_shutdown;

/* ---- server_ingest.c ------------------------------------------------------ */

void accept_ingest(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int n, void *a);
void ingest_read_cb(struct bufferevent *bev, void *arg);
/* Ends reading the payload past the bufferevent; a no-op when not. */
void ingest_direct_stop(struct conn *c);
/* Frees an ingest connection's buffer (the builder may be reading it). */
void ingest_buf_free(struct conn *c);
int ingest_trusted(const struct conn *c);
void linger_cb(evutil_socket_t fd, short what, void *arg);
void notify_cb(evutil_socket_t fd, short what, void *arg);

#endif
