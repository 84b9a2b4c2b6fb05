/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * server.c - see server.h. libevent only: no topology knowledge lives here.
 */
#include "server.h"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>

#include "cmd.h"
#include "estimate.h"
#include "fabric.h"
#include "log.h"
#include "pool.h"
#include "proto.h"
#include "query.h"
#include "auth.h"
#include "delta.h"
#include "history_cmd.h"
#include "sink.h"
#include "util.h"

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
	int draining;      /* refused: the ERR is queued, read and drop the rest until EOF */
	int auth;          /* enum ingest_auth_state */
	int tcp;           /* ingest over TCP: the key must be proved unless insecure */
	struct ingest_auth *ia;    /* from the producer's hello on */
	struct event *linger_ev;   /* TCP before the proof: the grace time, then the linger after ERR */
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

static void conn_unref(struct conn *c)
{
	if (--c->refs > 0)
		return;
	free(c->buf);
	if (c->ia) {
		sodium_memzero(c->ia, sizeof(*c->ia));
		free(c->ia);
	}
	free(c);
}

static void watch_unpark(struct conn *c);

/* ---- the clients' budget: what all their buffers hold -------------------- */

/* Every change to a client's buffers, as it happens: O(1), so the total is
 * always current and a crowd is noticed the moment it passes the budget. */
static void acct_note(struct server *srv, uint64_t *total, const struct evbuffer_cb_info *info)
{
	*total += info->n_added;
	*total -= info->n_deleted;
	if (srv->cfg.client_budget && srv->in_bytes + srv->out_bytes > srv->cfg.client_budget &&
	    !srv->budget_pending) {
		/* Cut in budget_cb, never here: this may run inside the very
		 * connection's read or write. */
		srv->budget_pending = 1;
		event_active(srv->budget_ev, EV_TIMEOUT, 0);
	}
}

static void acct_in_cb(struct evbuffer *b, const struct evbuffer_cb_info *info, void *arg)
{
	struct server *srv = ((struct conn *)arg)->srv;
	acct_note(srv, &srv->in_bytes, info);
}

static void acct_out_cb(struct evbuffer *b, const struct evbuffer_cb_info *info, void *arg)
{
	struct conn *c = arg;
	struct server *srv = c->srv;
	if (info->n_deleted || !info->orig_size) {
		/* read some, or a fresh reply: its reader gets time to start */
		struct timeval now;
		event_base_gettimeofday_cached(srv->base, &now);
		c->out_progress = now.tv_sec;
	}
	acct_note(srv, &srv->out_bytes, info);
}

static void acct_start(struct conn *c)
{
	c->acct_in = evbuffer_add_cb(bufferevent_get_input(c->bev), acct_in_cb, c);
	c->acct_out = evbuffer_add_cb(bufferevent_get_output(c->bev), acct_out_cb, c);
}

/* What the connection still holds leaves the totals with it. */
static void acct_stop(struct conn *c)
{
	if (c->acct_in) {
		evbuffer_remove_cb_entry(bufferevent_get_input(c->bev), c->acct_in);
		c->srv->in_bytes -= evbuffer_get_length(bufferevent_get_input(c->bev));
	}
	if (c->acct_out) {
		evbuffer_remove_cb_entry(bufferevent_get_output(c->bev), c->acct_out);
		c->srv->out_bytes -= evbuffer_get_length(bufferevent_get_output(c->bev));
	}
	c->acct_in = c->acct_out = NULL;
}

/* What a client holds as budget_cb ranks it: its input, and its unread
 * replies unless it read some (or got a fresh reply) within the last two
 * seconds: a client taking a large answer at speed is no offender. */
static uint64_t conn_held(const struct conn *c, time_t now)
{
	uint64_t in = evbuffer_get_length(bufferevent_get_input(c->bev));
	return in + (c->out_progress + 2 >= now ? 0 : evbuffer_get_length(bufferevent_get_output(c->bev)));
}

static int held_cmp(const void *a, const void *b, void *now)
{
	uint64_t x = conn_held(*(struct conn *const *)a, *(time_t *)now);
	uint64_t y = conn_held(*(struct conn *const *)b, *(time_t *)now);
	return x < y ? 1 : x > y ? -1 : 0;
}

static void cut_client(struct conn *c, const char *why);

/* Over the budget: cut the query clients holding the most until the total
 * is back under seven eighths of it (so that one more byte does not start
 * it again), as Redis's maxmemory-clients evicts the largest first. Admin
 * connections are never cut. O(n log n) in the clients, and only when the
 * budget is passed. */
static void budget_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	srv->budget_pending = 0;
	uint64_t low = srv->cfg.client_budget / 8 * 7;
	struct timeval now;
	event_base_gettimeofday_cached(srv->base, &now);
	time_t sec = now.tv_sec;
	if (srv->in_bytes + srv->out_bytes <= srv->cfg.client_budget)
		return;
	size_t n = 0;
	for (struct conn *c = srv->conns; c; c = c->next)
		n += c->bev && c->kind == CONN_QUERY && !c->closing;
	struct conn **v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		return;
	n = 0;
	for (struct conn *c = srv->conns; c; c = c->next)
		if (c->bev && c->kind == CONN_QUERY && !c->closing)
			v[n++] = c;
	qsort_r(v, n, sizeof(*v), held_cmp, &sec);
	for (size_t i = 0; i < n && srv->in_bytes + srv->out_bytes > low; i++) {
		/* sorted largest first: from here on nobody holds what is over */
		if (!conn_held(v[i], sec))
			break;
		char why[160];
		srv->cut_budget++;
		snprintf(why, sizeof(why), "all clients together hold %" PRIu64 " bytes, more than --client-budget %" PRIu64
			 "; this one holds the most (%" PRIu64 ")", srv->in_bytes + srv->out_bytes, srv->cfg.client_budget,
			 conn_held(v[i], sec));
		cut_client(v[i], why);
	}
	free(v);
}

static void conn_close(struct conn *c)
{
	if (!c->bev)
		return;
	watch_unpark(c);
	if (c->soft_ev) {
		event_free(c->soft_ev);
		c->soft_ev = NULL;
	}
	if (c->linger_ev) {
		event_free(c->linger_ev);
		c->linger_ev = NULL;
	}
	acct_stop(c);
	bufferevent_free(c->bev);
	c->bev = NULL;
	if (c->prev)
		c->prev->next = c->next;
	else
		c->srv->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (c->stop_after)
		event_base_loopexit(c->srv->base, NULL);
	if (c->kind == CONN_QUERY)
		c->srv->nconns--;
	else if (c->kind == CONN_ADMIN)
		c->srv->nadmin--;
	else {
		c->srv->ningest--;
		c->srv->ningest_tcp -= (unsigned)c->tcp;
	}
	conn_unref(c);
}

/* Closes once the reply is on the wire. */
static void conn_finish(struct conn *c)
{
	c->closing = 1;
	bufferevent_disable(c->bev, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		conn_close(c);
}

/* ---- query and admin lines -------------------------------------------- */

static uint64_t out_pending(const struct server *srv);
static int pick_plane(const struct conn *c, const struct proto_req *req);

/* The shrink guard's way past it (build.h): `confirm G` serves the
 * generation G a plane holds back. The result is in the log and in `info`;
 * the reply says it was queued. */
static void admin_confirm(struct server *srv, const struct proto_req *req, struct evbuffer *out)
{
	char *end = NULL, why[SNAP_ERR_LEN * 2] = "", err[SNAP_ERR_LEN];
	errno = 0;
	unsigned long long gen = req->argc == 1 ? strtoull(req->argv[0], &end, 10) : 0;
	if (req->argc != 1 || errno || !gen || *end || req->argv[0][0] == '-') {
		query_error(out, "USAGE", "confirm GENERATION (the one held back: info's held=, the log, "
			    "topod_generation_held)");
		return;
	}
	for (int i = 0; i < srv->nplanes; i++) {
		if (!builder_confirm(srv->plane[i].b, gen, err)) {
			evbuffer_add_printf(out, "OK confirmed generation %llu (plane %s): queued to be served\n", gen,
					    srv->plane[i].name);
			return;
		}
		size_t n = strlen(why);
		snprintf(why + n, sizeof(why) - n, "%s%s", n ? "; " : "", err);
	}
	query_error(out, "NOTHELD", "generation %llu is not held back: %s", gen, why);
}

static void answer_admin(struct conn *c, const struct proto_req *req, struct evbuffer *out)
{
	struct server *srv = c->srv;
	if (!strcmp(req->cmd, "stats")) {
		/* Counters over every plane; the last error is the newest. */
		struct builder_stats bs;
		builder_get_stats(srv->plane[0].b, &bs);
		for (int i = 1; i < srv->nplanes; i++) {
			struct builder_stats o;
			builder_get_stats(srv->plane[i].b, &o);
			bs.received += o.received;
			bs.accepted += o.accepted;
			bs.rejected += o.rejected;
			bs.superseded += o.superseded;
			bs.published += o.published;
			bs.deltas += o.deltas;
			bs.journal_quarantined += o.journal_quarantined;
			bs.journal_full_writes += o.journal_full_writes;
			bs.not_durable += o.not_durable;
			bs.ambiguous_names += o.ambiguous_names;
			if (o.ambiguous_example[0])
				memcpy(bs.ambiguous_example, o.ambiguous_example, sizeof(bs.ambiguous_example));
			if (o.journal_last[0])
				memcpy(bs.journal_last, o.journal_last, sizeof(bs.journal_last));
			if (o.last_error_us > bs.last_error_us) {
				bs.last_error_us = o.last_error_us;
				memcpy(bs.last_error, o.last_error, sizeof(bs.last_error));
			}
		}
		char le[SNAP_ERR_LEN], jl[SNAP_ERR_LEN], ae[SNAP_ERR_LEN];
		log_clean(bs.last_error, strlen(bs.last_error), le, sizeof(le));
		log_clean(bs.ambiguous_example, strlen(bs.ambiguous_example), ae, sizeof(ae));
		log_clean(bs.journal_last, strlen(bs.journal_last), jl, sizeof(jl));
		struct pool_stats ps;
		pool_get_stats(srv->pool, &ps);
		evbuffer_add_printf(out,
				    "OK connections=%u admin_connections=%u max_conns=%u requests=%" PRIu64 " errors=%" PRIu64
				    " refused=%" PRIu64 " reply_bytes_unread=%" PRIu64 " cut_hard=%" PRIu64
				    " cut_soft=%" PRIu64 " cut_write_timeout=%" PRIu64 " toobig=%" PRIu64
				    " busy_heavy=%" PRIu64 " half_closed=%" PRIu64 " heavy_queued=%u heavy_running=%u"
				    " heavy_done=%" PRIu64 " workers=%d ingest_connections=%u ingest_denied=%" PRIu64
				    " ingest_unsigned=%" PRIu64 " ingest_truncated=%" PRIu64 " ingest_trailing=%" PRIu64
				    " snapshots_received=%" PRIu64 " accepted=%" PRIu64 " rejected=%" PRIu64
				    " superseded=%" PRIu64 " deltas=%" PRIu64 " planes=%d watching=%u watch_answered=%" PRIu64
				    " watch_timeouts=%" PRIu64 " last_decode_ms=%.1f last_build_ms=%.1f"
				    " last_error_us=%" PRIu64 " last_error=\"%s\" journal_quarantined=%" PRIu64
				    " journal_full_writes=%" PRIu64 " not_durable=%" PRIu64 " journal_last=\"%s\""
				    " heavy_light_queued=%u heavy_light_done=%" PRIu64
				    " heavy_reserved=%" PRIu64 " max_request_memory=%" PRIu64 " heavy_toobig=%" PRIu64
				    " heavy_expired=%" PRIu64 " heavy_cancelled=%" PRIu64 " heavy_timeouts=%" PRIu64
				    " client_input_bytes=%" PRIu64 " client_bytes=%" PRIu64 " client_budget=%" PRIu64
				    " cut_budget=%" PRIu64 " ambiguous_names=%u ambiguous_example=\"%s\"\n",
				    srv->nconns, srv->nadmin, srv->cfg.max_conns, srv->requests, srv->errors, srv->refused,
				    out_pending(srv), srv->cut_hard, srv->cut_soft, srv->cut_write, srv->toobig,
				    srv->busy_heavy, srv->half_closed, ps.queued, ps.running, ps.completed,
				    pool_threads(srv->pool), srv->ningest, srv->ingest_denied, srv->ingest_unsigned,
				    srv->ingest_truncated, srv->ingest_trailing, bs.received, bs.accepted, bs.rejected, bs.superseded,
				    bs.deltas, srv->nplanes, srv->nwatch, srv->watch_answered, srv->watch_timeouts, bs.last_decode_ms, bs.last_build_ms, bs.last_error_us, le,
				    bs.journal_quarantined, bs.journal_full_writes, bs.not_durable, jl,
				    ps.light_queued, ps.light_done, ps.reserved, ps.budget, srv->heavy_toobig, ps.expired, ps.stopped,
				    srv->heavy_timeouts, srv->in_bytes, srv->in_bytes + srv->out_bytes, srv->cfg.client_budget,
				    srv->cut_budget, bs.ambiguous_names, ae);
	} else if (!strcmp(req->cmd, "shutdown")) {
		evbuffer_add_printf(out, "OK shutting down\n");
		tlog(TLOG_INFO, "shutdown requested on the admin socket");
		/* Stop once the reply is written, so the caller sees it. */
		c->stop_after = 1;
		conn_finish(c);
	} else if (!strcmp(req->cmd, "reload")) {
		char err[SNAP_ERR_LEN];
		if (!srv->reload)
			query_error(out, "NOSOURCE", "no --load or state file to reload from");
		else if (srv->reload(srv->reload_arg, NULL, 0, err))
			query_error(out, "RELOAD", "%s", err);
		else
			evbuffer_add_printf(out, "OK reloaded\n");
	} else if (!strcmp(req->cmd, "restore")) {
		/* The operator's way past the generation rule: restoring a
		 * backup of an older fabric. The result is in the log and in
		 * `info`; the reply says it was queued. */
		char err[SNAP_ERR_LEN];
		int force = req->argc == 2 && !strcmp(req->argv[1], "force");
		if (req->argc < 1 || req->argc > 2 || (req->argc == 2 && !force))
			query_error(out, "USAGE", "restore PATH [force]");
		else if (!srv->reload || srv->reload(srv->reload_arg, req->argv[0], force, err))
			query_error(out, "RELOAD", "%s", srv->reload ? err : "not available");
		else
			evbuffer_add_printf(out, "OK queued%s\n", force ? " (forced past the generation rule)" : "");
	} else if (!strcmp(req->cmd, "confirm")) {
		admin_confirm(srv, req, out);
	} else {
		query_error(out, "UNKNOWN",
			    "unknown command; admin commands: stats reload restore confirm shutdown, and every query");
	}
}

/* ---- heavy requests -------------------------------------------------------- */

static void heavy_run(struct pool_job *pj, int threads)
{
	struct heavy_job *j = (struct heavy_job *)pj;
	j->qc.threads = threads;
	j->qc.cancel = &pj->stop;
	j->k->answer(&j->qc);
}

static void heavy_done(struct pool_job *pj)
{
	/* Worker thread (or pool_free): hand the reply to the loop, which
	 * owns the connection. The mutex orders our writes to j->out before
	 * the loop reads it. */
	struct heavy_job *j = (struct heavy_job *)pj;
	struct server *srv = j->c->srv;
	pthread_mutex_lock(&srv->jobs_lock);
	j->next_done = srv->jobs_done;
	srv->jobs_done = j;
	pthread_mutex_unlock(&srv->jobs_lock);
	event_active(srv->jobs_ev, EV_READ, 0);
}

static void heavy_free(struct heavy_job *j)
{
	fabric_put(j->f);
	if (j->out)
		evbuffer_free(j->out);
	free(j->line);
	free(j);
}

static void line_read_cb(struct bufferevent *bev, void *arg);
static void check_output(struct conn *c);

/* Every client's unread reply bytes, kept current by acct_out_cb, and
 * the HTTP endpoint's: --output-budget is one budget for both ports. */
static uint64_t out_pending(const struct server *srv)
{
	return srv->out_bytes + srv->http_unsent;
}

void server_http_unsent(struct server *srv, uint64_t add, uint64_t sub)
{
	srv->http_unsent = srv->http_unsent + add - sub;
}

int server_reply_fits(const struct server *srv, uint64_t n, uint64_t *pending)
{
	/* A reply is always delivered when nothing else is waiting. */
	*pending = out_pending(srv);
	return !srv->cfg.out_budget || !*pending || *pending + n <= srv->cfg.out_budget;
}

/* While a heavy request is in flight the connection's input is bounded by
 * the longest request (reading pauses past it); otherwise lines are
 * consumed as they come and the check costs nothing per request. */
static void set_busy(struct conn *c, int busy)
{
	c->busy = busy;
	bufferevent_setwatermark(c->bev, EV_READ, 0, busy ? PROTO_LINE_MAX + 2 : 0);
}

/* ERR TIMEOUT for a request past its deadline: one that never ran, or one
 * whose analysis stopped at the flag (its reply is an ERR). One that
 * finished regardless (a loop without the check) is answered. */
static int heavy_timed_out(struct heavy_job *j, struct evbuffer *out)
{
	unsigned limit = j->c->srv->cfg.request_timeout_s;
	double waited = (double)(pool_now_ns() - j->submitted_ns) / 1e9;
	if (j->pj.expired) {
		query_error(out, "TIMEOUT", "waited %.1f s for a worker, past the %u s deadline (--request-timeout): not run",
			    waited, limit);
		return 1;
	}
	char head[4] = "";
	if (!atomic_load(&j->pj.stop) || evbuffer_copyout(j->out, head, 4) != 4 || memcmp(head, "ERR ", 4))
		return 0;
	query_error(out, "TIMEOUT", "cancelled after %.1f s, past the %u s deadline (--request-timeout)", waited, limit);
	return 1;
}

/* Deadlines of heavy requests: a tenth of a second late at most. */
static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	if (srv->pool && srv->cfg.request_timeout_s)
		pool_expire(srv->pool, pool_now_ns());
}

static void jobs_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	pthread_mutex_lock(&srv->jobs_lock);
	struct heavy_job *j = srv->jobs_done;
	srv->jobs_done = NULL;
	pthread_mutex_unlock(&srv->jobs_lock);
	while (j) {
		struct heavy_job *next = j->next_done;
		struct conn *c = j->c;
		c->busy = 0;
		if (c->bev)
			set_busy(c, 0);
		if (c->bev && !c->closing) {
			struct evbuffer *out = bufferevent_get_output(c->bev);
			size_t n = evbuffer_get_length(j->out), from = evbuffer_get_length(out);
			uint64_t pending;
			if (j->pj.cancelled) {
				query_error(out, "SHUTDOWN", "topod is stopping");
			} else if (heavy_timed_out(j, out)) {
				srv->heavy_timeouts++;
				srv->errors++;
			} else if (srv->cfg.out_hard && n > srv->cfg.out_hard) {
				/* Refuse rather than buffer: the limit is what one
				 * client may hold, and this reply alone passes it. */
				srv->toobig++;
				srv->errors++;
				query_error(out, "TOOBIG", "the reply is %zu bytes, more than the per-client output limit of %" PRIu64
					    " (--output-limit): ask for fewer hosts", n, srv->cfg.out_hard);
			} else if (!server_reply_fits(srv, n, &pending)) {
				/* Checked again here, not only at admission: many
				 * requests admitted at once would otherwise all land
				 * in memory together. */
				srv->busy_heavy++;
				srv->errors++;
				query_error(out, "BUSY", "%" PRIu64 " bytes of replies are waiting to be read; retry later",
					    pending);
			} else {
				evbuffer_add_buffer(out, j->out);
			}
			qstats_note(&srv->qs, j->k, qstats_outcome(out, from), QS_LANE_POOL,
				    pool_now_ns() - j->submitted_ns);
			check_output(c);
			/* Resume the pipelined requests it sent meanwhile, and
			 * finish a half-closed connection. */
			if (c->bev && !c->closing)
				line_read_cb(c->bev, c);
		}
		conn_unref(c);
		heavy_free(j);
		j = next;
	}
}

/* The job's estimate, lane and deadline, then the pool: 0 queued, -1 with
 * the ERR written (TOOBIG: it could never fit the budget; BUSY: the queue
 * is full). */
static int heavy_admit(struct heavy_job *j, struct evbuffer *out)
{
	struct server *srv = j->c->srv;
	struct estimate e;
	if (estimate_request(j->k, &j->req, j->f, &e)) {
		query_error(out, "INTERNAL", "%s has no cost estimate", j->k->name);
		return -1;
	}
	j->pj.mem = e.mem;
	j->pj.light = estimate_light(&e) && e.mem <= pool_job_max(srv->pool, 1);
	tlog(TLOG_DEBUG, "%s: %s estimated %" PRIu64 " bytes, %" PRIu64 " us (%s lane)", j->c->peer, j->k->name, e.mem,
	     e.work_us, j->pj.light ? "light" : "heavy");
	j->submitted_ns = pool_now_ns();
	j->pj.deadline_ns = srv->cfg.request_timeout_s ? j->submitted_ns + srv->cfg.request_timeout_s * 1000000000ull : 0;
	int rc = pool_submit(srv->pool, &j->pj);
	if (rc == POOL_TOOBIG) {
		srv->heavy_toobig++;
		srv->errors++;
		query_error(out, "TOOBIG", "%s needs an estimated %" PRIu64 " MiB, more than one request may hold (%" PRIu64
			    " MiB of --max-request-memory): ask for fewer hosts or ranks", j->k->name, e.mem >> 20,
			    pool_job_max(srv->pool, 0) >> 20);
		return -1;
	}
	if (rc) {
		srv->busy_heavy++;
		srv->errors++;
		query_error(out, "BUSY", "%u heavy requests are waiting already; retry later", srv->cfg.heavy_queue);
		return -1;
	}
	return 0;
}

/* Queues a heavy request; 0 if it went to the pool (the reply comes
 * later), -1 if the reply (an ERR) was written now. */
static int submit_heavy(struct conn *c, const struct cmd *k, const struct proto_req *req, struct evbuffer *out)
{
	struct server *srv = c->srv;
	uint64_t pending = out_pending(srv), held = srv->in_bytes + srv->out_bytes;
	if ((srv->cfg.out_budget && pending > srv->cfg.out_budget) ||
	    (srv->cfg.client_budget && held > srv->cfg.client_budget / 8 * 7)) {
		/* Clients are not reading what they asked for: admit no more
		 * large answers until they do (or are cut off). */
		srv->busy_heavy++;
		srv->errors++;
		query_error(out, "BUSY", "%" PRIu64 " bytes of replies are waiting to be read (%" PRIu64
			    " held by all clients); retry later", pending, held);
		return -1;
	}
	struct heavy_job *j = calloc(1, sizeof(*j));
	if (!j) {
		query_error(out, "NOMEM", "no memory for the request");
		return -1;
	}
	/* The request's words point into the line: rebuild them in a copy
	 * the job owns. */
	size_t len = 0;
	for (size_t i = 0; i < req->argc; i++)
		len += strlen(req->argv[i]) + 1;
	j->line = malloc(strlen(req->cmd) + 1 + len + 1);
	j->out = evbuffer_new();
	if (!j->line || !j->out) {
		heavy_free(j);
		query_error(out, "NOMEM", "no memory for the request");
		return -1;
	}
	char *p = j->line;
	size_t l = strlen(req->cmd) + 1;
	memcpy(p, req->cmd, l);
	j->req.cmd = p;
	p += l;
	for (size_t i = 0; i < req->argc; i++) {
		l = strlen(req->argv[i]) + 1;
		memcpy(p, req->argv[i], l);
		j->req.argv[i] = p;
		p += l;
	}
	j->req.argc = req->argc;
	j->c = c;
	j->k = k;
	j->f = store_get(srv->plane[pick_plane(c, req)].st);
	if (query_prepare(&j->qc, k, j->f, &j->req, out)) {
		heavy_free(j); /* arity or NOFABRIC: answered now */
		return -1;
	}
	j->qc.out = j->out;
	j->pj.run = heavy_run;
	j->pj.done = heavy_done;
	if (heavy_admit(j, out)) {
		heavy_free(j);
		return -1;
	}
	set_busy(c, 1);
	c->refs++;
	return 0;
}

/* ---- output limits ---------------------------------------------------------- */

static void cut_client(struct conn *c, const char *why)
{
	size_t n = evbuffer_get_length(bufferevent_get_output(c->bev));
	tlog(TLOG_WARN, "%s: closing the connection: %s (%zu reply bytes unread)", c->peer, why, n);
	/* What is queued will not be read: drop it, do not flush. */
	conn_close(c);
}

static void soft_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	struct server *srv = c->srv;
	if (!c->bev)
		return;
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) > srv->cfg.out_soft) {
		srv->cut_soft++;
		char why[128];
		snprintf(why, sizeof(why), "unread replies stayed above the soft output limit of %" PRIu64 " bytes for %u s",
			 srv->cfg.out_soft, srv->cfg.out_soft_s);
		cut_client(c, why);
	}
}

/* Enforces the per-client limits after output grew. The soft limit is
 * checked again by a timer when it has been held out_soft_s seconds. */
static void check_output(struct conn *c)
{
	struct server *srv = c->srv;
	/* The admin socket is the operator's (root, topod's user): its
	 * replies (stats grows with every counter) are never cut. */
	if (!c->bev || c->kind != CONN_QUERY)
		return;
	size_t n = evbuffer_get_length(bufferevent_get_output(c->bev));
	if (srv->cfg.out_hard && n > srv->cfg.out_hard) {
		srv->cut_hard++;
		char why[96];
		snprintf(why, sizeof(why), "unread replies passed the hard output limit of %" PRIu64 " bytes",
			 srv->cfg.out_hard);
		cut_client(c, why);
		return;
	}
	if (!srv->cfg.out_soft || n <= srv->cfg.out_soft) {
		if (c->soft_ev)
			evtimer_del(c->soft_ev);
		return;
	}
	if (!c->soft_ev && !(c->soft_ev = evtimer_new(srv->base, soft_cb, c)))
		return;
	if (!evtimer_pending(c->soft_ev, NULL)) {
		struct timeval tv = { srv->cfg.out_soft_s, 0 };
		evtimer_add(c->soft_ev, &tv);
	}
}


/* ---- watch: long polls for the next generation ------------------------------ */

/* Takes c off its plane's watcher list and gives back what parking took. */
static void watch_unpark(struct conn *c)
{
	if (!c->watch_plane)
		return;
	struct server *srv = c->srv;
	int p = c->watch_plane - 1;
	if (c->wprev)
		c->wprev->wnext = c->wnext;
	else
		srv->watchers[p] = c->wnext;
	if (c->wnext)
		c->wnext->wprev = c->wprev;
	c->wprev = c->wnext = NULL;
	c->watch_plane = 0;
	srv->nwatch--;
	if (c->watch_ev) {
		event_free(c->watch_ev);
		c->watch_ev = NULL;
	}
	if (c->bev) {
		struct timeval tv = { srv->cfg.idle_timeout_s, 0 }, wtv = { srv->cfg.write_timeout_s, 0 };
		bufferevent_set_timeouts(c->bev, &tv, srv->cfg.write_timeout_s ? &wtv : NULL);
	}
}

/* The answer, then whatever the client pipelined behind the watch. */
static void watch_answer(struct conn *c, uint64_t gen, int changed)
{
	struct server *srv = c->srv;
	watch_unpark(c);
	if (changed)
		srv->watch_answered++;
	else
		srv->watch_timeouts++;
	if (!c->bev || c->closing)
		return;
	watch_reply(bufferevent_get_output(c->bev), gen, changed);
	set_busy(c, 0);
	check_output(c);
	if (c->bev && !c->closing)
		line_read_cb(c->bev, c);
}

static void watch_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	struct fabric *f = store_get(c->srv->plane[c->watch_plane - 1].st);
	uint64_t g = f->snap->generation;
	fabric_put(f);
	watch_answer(c, g, g != c->watch_gen);
}

/* Loop thread, after a publish on wake->plane: every watcher of that plane
 * whose generation is no longer served hears of it. O(its watchers). */
static void watch_wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct watch_wake *w = arg;
	struct server *srv = w->srv;
	struct fabric *f = store_get(srv->plane[w->plane].st);
	uint64_t g = f->snap->generation;
	qstats_note_gen(&srv->qs, w->plane, f);
	fabric_put(f);
	for (struct conn *c = srv->watchers[w->plane], *next; c; c = next) {
		next = c->wnext;
		if (c->watch_gen != g)
			watch_answer(c, g, 1);
	}
}

/* Builder thread: event_active() is the one libevent call that may come
 * from another thread (evthread_use_pthreads). */
static void watch_publish_hook(void *arg)
{
	event_active(((struct watch_wake *)arg)->ev, EV_READ, 0);
}

/* watch GEN [TIMEOUT_MS]: answered now if the plane already serves another
 * generation (or the timeout is 0), else parked: no thread, no pool slot,
 * a timer and a list entry; no further request is parsed until answered,
 * so replies stay in order. */
static void handle_watch(struct conn *c, const struct proto_req *req, struct evbuffer *out)
{
	struct server *srv = c->srv;
	uint64_t gen;
	unsigned ms;
	if (watch_args(req, &gen, &ms, out)) {
		srv->errors++;
		return;
	}
	int p = c->plane >= 0 && c->plane < srv->nplanes ? c->plane : 0;
	struct fabric *f = store_get(srv->plane[p].st);
	uint64_t g = f->snap->generation;
	fabric_put(f);
	if (g != gen || !ms) {
		watch_reply(out, g, g != gen);
		return;
	}
	c->watch_ev = evtimer_new(srv->base, watch_timeout_cb, c);
	if (!c->watch_ev) {
		query_error(out, "NOMEM", "cannot wait");
		return;
	}
	struct timeval tv = { ms / 1000, (long)(ms % 1000) * 1000 };
	evtimer_add(c->watch_ev, &tv);
	c->watch_gen = gen;
	c->watch_plane = p + 1;
	c->wprev = NULL;
	c->wnext = srv->watchers[p];
	if (c->wnext)
		c->wnext->wprev = c;
	srv->watchers[p] = c;
	srv->nwatch++;
	set_busy(c, 1);
	/* The idle timeout would cut a watch longer than it: the watch has
	 * its own. */
	struct timeval wtv = { srv->cfg.write_timeout_s, 0 };
	bufferevent_set_timeouts(c->bev, NULL, srv->cfg.write_timeout_s ? &wtv : NULL);
}

/* The plane a request is answered from: the connection's choice, else the
 * first plane on which one of the first arguments names an end port (a
 * host on two rails is on both: the first plane wins), else the first.
 * Lookups only: O(planes * log hosts). */
static int pick_plane(const struct conn *c, const struct proto_req *req)
{
	const struct server *srv = c->srv;
	if (c->plane >= 0 && c->plane < srv->nplanes)
		return c->plane;
	if (srv->nplanes == 1)
		return 0;
	for (size_t a = 0; a < req->argc && a < 3; a++) {
		char name[TOPO_QUERY_NAME_MAX + 1];
		/* "host*slots" in rank lists */
		size_t n = strcspn(req->argv[a], "*:");
		if (!strncmp(req->argv[a], "lid:", 4) || !n || n > TOPO_QUERY_NAME_MAX)
			continue;
		memcpy(name, req->argv[a], n);
		name[n] = '\0';
		for (int i = 0; i < srv->nplanes; i++) {
			struct fabric *f = store_get(srv->plane[i].st);
			uint32_t ep;
			uint16_t dl;
			int hit = f->index && route_resolve(f->index->rt, name, &ep, &dl) == AN_OK;
			fabric_put(f);
			if (hit)
				return i;
		}
	}
	return 0;
}

/* Answers one line; 1 if the reply comes later (a heavy request on the
 * pool, a parked watch), else 0 with it written and *k its command. */
static int answer_line(struct conn *c, char *line, size_t len, struct evbuffer *out, const struct cmd **kp)
{
	struct server *srv = c->srv;
	/* proto_req is large (PROTO_ARGS_MAX pointers): one per thread, not
	 * per call on the stack. The loop is single-threaded. */
	static struct proto_req req;
	const char *why;
	srv->requests++;
	if (proto_split(line, len, &req, &why)) {
		srv->errors++;
		query_error(out, "PROTO", "%s", why);
		return 0;
	}
	const struct cmd *k = cmd_find(req.cmd);
	*kp = k;
	if (k && (k->flags & CMD_WATCH)) {
		size_t max = k->max_args < 0 ? PROTO_ARGS_MAX : (size_t)k->max_args;
		if (req.argc < (size_t)k->min_args || req.argc > max) {
			query_error(out, "USAGE", "%s", k->usage);
			return 0;
		}
		handle_watch(c, &req, out);
		return 1;
	}
	if (k && (k->flags & CMD_HEAVY))
		return submit_heavy(c, k, &req, out) == 0;
	if (k) {
		struct qplanes qp = { .n = srv->nplanes, .selected = &c->plane };
		int p = pick_plane(c, &req);
		struct fabric *f = store_get(srv->plane[p].st);
		if (k->flags & CMD_PLANES) {
			qp.current = p;
			for (int i = 0; i < srv->nplanes; i++) {
				qp.name[i] = srv->plane[i].name;
				qp.f[i] = store_get(srv->plane[i].st);
			}
		}
		enum query_result r = query_run(k, f, &req, out, (k->flags & CMD_PLANES) ? &qp : NULL);
		fabric_put(f);
		if (k->flags & CMD_PLANES)
			for (int i = 0; i < srv->nplanes; i++)
				fabric_put((struct fabric *)qp.f[i]);
		if (r == QUERY_CLOSE)
			conn_finish(c);
		return 0;
	}
	if (c->kind == CONN_ADMIN) {
		answer_admin(c, &req, out);
	} else if (!strcmp(req.cmd, "stats") || !strcmp(req.cmd, "shutdown") || !strcmp(req.cmd, "reload") ||
		   !strcmp(req.cmd, "restore") || !strcmp(req.cmd, "confirm")) {
		srv->errors++;
		query_error(out, "DENIED", "%s is only available on the admin socket", req.cmd);
	} else {
		srv->errors++;
		query_error(out, "UNKNOWN", "unknown command; try help");
	}
	return 0;
}

/* answer_line, counted by command, outcome and time for the metrics. */
static void handle_line(struct conn *c, char *line, size_t len, struct evbuffer *out)
{
	const struct cmd *k = NULL;
	size_t from = evbuffer_get_length(out);
	uint64_t t0 = pool_now_ns();
	if (!answer_line(c, line, len, out, &k))
		qstats_note(&c->srv->qs, k, qstats_outcome(out, from), QS_LANE_LOOP, pool_now_ns() - t0);
}

/* The idle timeout restarts with every byte, so a client trickling one
 * byte a second would hold its connection for ever (slowloris): a request
 * line must also be complete within the idle timeout of its first byte,
 * as Apache's mod_reqtimeout and nginx's client_header_timeout ask. */
static int line_overdue(struct conn *c)
{
	struct timeval now;
	event_base_gettimeofday_cached(c->srv->base, &now);
	uint64_t ms = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_usec / 1000;
	if (!c->line_since) {
		c->line_since = ms;
		return 0;
	}
	return c->srv->cfg.idle_timeout_s && ms - c->line_since >= (uint64_t)c->srv->cfg.idle_timeout_s * 1000;
}

static void line_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev), *out = bufferevent_get_output(bev);
	while (!c->closing && !c->busy && c->bev) {
		if (evbuffer_get_length(out) > OUT_HIGH) {
			/* Back-pressure: resume from the write callback. */
			bufferevent_disable(bev, EV_READ);
			return;
		}
		/* Search only what arrived since the last look: a slow client
		 * sending a long line a few bytes at a time would otherwise
		 * have the loop rescan up to 256 KiB per read. */
		struct evbuffer_ptr from;
		size_t have = evbuffer_get_length(in);
		if (c->scanned > have)
			c->scanned = 0;
		if (evbuffer_ptr_set(in, &from, c->scanned, EVBUFFER_PTR_SET)) {
			c->scanned = 0;
			evbuffer_ptr_set(in, &from, 0, EVBUFFER_PTR_SET);
		}
		struct evbuffer_ptr eol = evbuffer_search_eol(in, &from, NULL, EVBUFFER_EOL_LF);
		if (eol.pos < 0) {
			c->scanned = have;
			if (have && line_overdue(c)) {
				c->srv->errors++;
				evbuffer_add_printf(out, "ERR IDLE request line not completed within %u s\n",
						    c->srv->cfg.idle_timeout_s);
				tlog(TLOG_INFO, "%s: a request line trickled in for over %u s, closing", c->peer,
				     c->srv->cfg.idle_timeout_s);
				conn_finish(c);
				return;
			}
			if (evbuffer_get_length(in) > PROTO_LINE_MAX) {
				c->srv->errors++;
				query_error(out, "TOOLONG", "request line longer than %d bytes", PROTO_LINE_MAX);
				char sample[64];
				size_t n = evbuffer_copyout(in, sample, sizeof(sample) - 1);
				char clean[64];
				tlog(TLOG_WARN, "%s: request line too long, closing; it began \"%s\"", c->peer,
				     log_clean(sample, n, clean, sizeof(clean)));
				conn_finish(c);
				return;
			}
			break; /* wait for the rest of the line */
		}
		if ((size_t)eol.pos > PROTO_LINE_MAX) {
			c->srv->errors++;
			query_error(out, "TOOLONG", "request line longer than %d bytes", PROTO_LINE_MAX);
			conn_finish(c);
			return;
		}
		size_t len;
		c->scanned = 0;
		c->line_since = 0;
		char *line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF);
		if (!line)
			break;
		/* evbuffer_readln stops at an embedded NUL only in its length,
		 * not its scan; len is authoritative. */
		handle_line(c, line, len, out);
		free(line);
		check_output(c);
	}
	/* Half-closed and everything it sent is answered: flush, then close
	 * (a trailing partial line is not a request). */
	if (c->bev && c->eof && !c->busy && !c->closing)
		conn_finish(c);
}

static void conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	size_t left = evbuffer_get_length(bufferevent_get_output(bev));
	if (c->closing) {
		if (left == 0)
			conn_close(c);
		return;
	}
	/* Back-pressure released: parse what is waiting (reading stays off
	 * once the client has half-closed). */
	if (c->kind != CONN_INGEST && left <= OUT_HIGH / 2 && !c->busy &&
	    (c->eof || !(bufferevent_get_enabled(bev) & EV_READ))) {
		if (!c->eof)
			bufferevent_enable(bev, EV_READ);
		line_read_cb(bev, c);
	}
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	if ((what & BEV_EVENT_TIMEOUT) && (what & BEV_EVENT_WRITING) && c->kind != CONN_INGEST) {
		c->srv->cut_write++;
		char why[96];
		snprintf(why, sizeof(why), "no reply byte could be written for %u s (write timeout)",
			 c->srv->cfg.write_timeout_s);
		cut_client(c, why);
		return;
	}
	if (what & BEV_EVENT_TIMEOUT) {
		if (c->kind == CONN_INGEST)
			tlog(TLOG_WARN, "%s: ingest timed out after %zu of %zu bytes", c->peer, c->have, c->want);
		else
			evbuffer_add_printf(bufferevent_get_output(bev), "ERR IDLE closing idle connection\n");
		/* A timeout disables reading; flush what we have and go. */
		conn_finish(c);
		return;
	}
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR) && c->kind != CONN_INGEST) {
		/* "echo hosts | nc -q1": the client is done sending, not done
		 * reading. Answer every complete request, then close. */
		c->srv->half_closed++;
		c->eof = 1;
		bufferevent_disable(bev, EV_READ);
		if (c->watch_plane) {
			/* A half-close looks like a close: a watcher gone away
			 * must not hold its connection for up to an hour, so it
			 * is answered now with what is served. */
			struct fabric *f = store_get(c->srv->plane[c->watch_plane - 1].st);
			uint64_t g = f->snap->generation;
			fabric_put(f);
			watch_answer(c, g, g != c->watch_gen);
			return;
		}
		line_read_cb(bev, c);
		return;
	}
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR) && c->kind == CONN_INGEST) {
		/* Producers half-close after the snapshot and then read our
		 * reply: tell them why a short one was dropped. */
		size_t got = c->want ? c->have : evbuffer_get_length(bufferevent_get_input(bev));
		if (!c->draining && (!c->want || c->have < c->want)) {
			c->srv->ingest_truncated++;
			char why[160];
			if (c->want)
				snprintf(why, sizeof(why), "truncated: got %zu of %zu bytes", got, c->want);
			else
				snprintf(why, sizeof(why), "truncated: got %zu bytes, less than a snapshot header", got);
			tlog(TLOG_WARN, "%s: producer closed early; snapshot dropped: %s", c->peer, why);
			builder_note_rejected(c->srv->plane[c->plane].b, why);
			evbuffer_add_printf(bufferevent_get_output(bev), "ERR INVALID %s\n", why);
		}
		conn_finish(c);
		return;
	}
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		if (c->kind == CONN_INGEST && c->want && c->have < c->want)
			tlog(TLOG_WARN, "%s: producer closed after %zu of %zu bytes; snapshot dropped", c->peer,
			     c->have, c->want);
		conn_close(c);
	}
}

/* ---- ingest -------------------------------------------------------------- */

static void ingest_done(void *arg, int ok, const char *msg)
{
	/* Builder thread: hand the reply to the loop, which owns the socket. */
	struct conn *c = arg;
	struct done_item *d = calloc(1, sizeof(*d));
	if (!d)
		return; /* the connection then simply times out */
	d->c = c;
	snprintf(d->msg, sizeof(d->msg), "%s", msg);
	pthread_mutex_lock(&c->srv->done_lock);
	d->next = c->srv->done_head;
	c->srv->done_head = d;
	pthread_mutex_unlock(&c->srv->done_lock);
	event_active(c->srv->notify, EV_READ, 0);
	(void)ok;
}

static void notify_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	pthread_mutex_lock(&srv->done_lock);
	struct done_item *d = srv->done_head;
	srv->done_head = NULL;
	pthread_mutex_unlock(&srv->done_lock);
	while (d) {
		struct done_item *next = d->next;
		struct conn *c = d->c;
		if (c->bev) {
			evbuffer_add_printf(bufferevent_get_output(c->bev), "%s\n", d->msg);
			conn_finish(c);
		}
		conn_unref(c); /* the job's reference */
		free(d);
		d = next;
	}
}

static void ingest_refuse(struct conn *c, const char *code, const char *why);

static void linger_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	(void)fd;
	(void)what;
	if (c->draining) {
		conn_close(c);
		return;
	}
	char why[64];
	snprintf(why, sizeof(why), "no proof of the ingest key within %d s", AUTH_GRACE_S);
	ingest_refuse(c, "AUTH", why);
}

/* Has this producer shown it may feed topod? A UNIX peer by its credentials
 * at accept, a TCP one by proving the key (or the operator chose
 * --ingest-insecure). Until then topod holds at most SNAP_AUTH_PREAUTH_MAX
 * bytes of what it sends. */
static int ingest_trusted(const struct conn *c)
{
	return !c->tcp || c->srv->cfg.ingest_insecure || c->auth == IA_PROVEN;
}

/* Refuses the snapshot with an ERR and keeps reading (and dropping) until
 * the producer half-closes, so that it can read the reason instead of
 * getting EPIPE in the middle of its write. The ingest timeout bounds it,
 * and AUTH_LINGER_MS a peer that has not proved the key: it may stream
 * for ever (as sshd disconnects after a failed authentication). */
static void ingest_refuse(struct conn *c, const char *code, const char *why)
{
	tlog(TLOG_ERR, "rejected snapshot from ingest %s: %s", c->peer, why);
	builder_note_rejected(c->srv->plane[c->plane].b, why);
	evbuffer_add_printf(bufferevent_get_output(c->bev), "ERR %s %s\n", code, why);
	free(c->buf);
	c->buf = NULL;
	c->draining = 1;
	evbuffer_drain(bufferevent_get_input(c->bev), evbuffer_get_length(bufferevent_get_input(c->bev)));
	if (!ingest_trusted(c)) {
		struct timeval tv = { AUTH_LINGER_MS / 1000, (AUTH_LINGER_MS % 1000) * 1000 };
		if (!c->linger_ev)
			c->linger_ev = evtimer_new(c->srv->base, linger_cb, c);
		if (c->linger_ev)
			evtimer_add(c->linger_ev, &tv); /* replaces the grace time */
	}
}

/* The producer's "TOPOAUTH" hello (auth.h): version 2 is answered with a
 * challenge; version 1, the old preamble, only on the UNIX socket. 0 when
 * handled, 1 to wait for more bytes, -1 refused. */
static int ingest_hello(struct conn *c, struct evbuffer *in, const uint8_t hello[SNAP_AUTH_HELLO_LEN])
{
	struct server *srv = c->srv;
	uint32_t v = snap_auth_version(hello);
	char err[SNAP_ERR_LEN];
	if (v == 1 && c->tcp) {
		srv->ingest_unsigned++;
		ingest_refuse(c, "AUTH", "old-style signed snapshot (auth version 1): replayable and not bound to a "
					 "plane; update the producer to version 2");
		return -1;
	}
	if (v != 1 && v != 2) {
		snprintf(err, sizeof(err), "unknown authentication version %u (this topod speaks 2)", v);
		ingest_refuse(c, "AUTH", err);
		return -1;
	}
	if (v == 2 && c->tcp && !srv->cfg.ingest_key && !srv->cfg.ingest_insecure) {
		ingest_refuse(c, "AUTH", "topod has no ingest key to check producers with (--ingest-key)");
		return -1;
	}
	if (v == 1 && evbuffer_get_length(in) < SNAP_AUTH_LEN)
		return 1;
	if (!c->ia && !(c->ia = calloc(1, sizeof(*c->ia)))) {
		ingest_refuse(c, "NOMEM", "cannot start authentication");
		return -1;
	}
	if (v == 1) {
		evbuffer_remove(in, c->ia->pre, SNAP_AUTH_LEN);
		c->auth = IA_V1;
		return 0;
	}
	if (snap_auth_challenge(srv->plane[c->plane].name, c->ia->chal, err)) {
		ingest_refuse(c, "AUTH", err);
		return -1;
	}
	evbuffer_drain(in, SNAP_AUTH_HELLO_LEN);
	bufferevent_write(c->bev, c->ia->chal, SNAP_AUTH_CHAL_LEN);
	c->auth = IA_CHALLENGED;
	return 0;
}

/* Everything before the payload: the hello and the proof (its head tag is
 * checked here, before a byte of payload is accepted), the old preamble,
 * or none; then the header. 0 once c->want is known, 1 to wait, -1 refused. */
static int ingest_opening(struct conn *c, struct evbuffer *in)
{
	struct server *srv = c->srv;
	uint8_t hdr[SNAP_HEADER_LEN];
	char err[SNAP_ERR_LEN];
	if (c->auth == IA_NONE) {
		if (evbuffer_get_length(in) < 8)
			return 1;
		evbuffer_copyout(in, hdr, 8);
		if (snap_auth_is_preamble(hdr, 8)) {
			if (evbuffer_get_length(in) < SNAP_AUTH_HELLO_LEN)
				return 1;
			evbuffer_copyout(in, hdr, SNAP_AUTH_HELLO_LEN);
			int r = ingest_hello(c, in, hdr);
			if (r)
				return r;
		} else if (c->tcp && !srv->cfg.ingest_insecure) {
			srv->ingest_unsigned++;
			ingest_refuse(c, "AUTH", "this TCP ingest accepts only producers that prove the ingest key "
						 "(key_file=)");
			return -1;
		}
	}
	if (c->auth == IA_CHALLENGED) {
		if (evbuffer_get_length(in) < SNAP_AUTH_PROOF_LEN + SNAP_HEADER_LEN)
			return 1;
		uint8_t proof[SNAP_AUTH_PROOF_LEN];
		evbuffer_remove(in, proof, sizeof(proof));
		evbuffer_copyout(in, hdr, sizeof(hdr));
		int bad = srv->cfg.ingest_key &&
			  snap_auth_verify_head(srv->cfg.ingest_key, c->ia->chal, proof, hdr, &c->ia->body, err);
		sodium_memzero(proof, sizeof(proof));
		if (bad) {
			ingest_refuse(c, "AUTH", err);
			return -1;
		}
		c->auth = srv->cfg.ingest_key ? IA_PROVEN : IA_UNCHECKED;
		if (c->linger_ev)
			evtimer_del(c->linger_ev);
	}
	if (evbuffer_get_length(in) < SNAP_HEADER_LEN)
		return 1;
	evbuffer_copyout(in, hdr, sizeof(hdr));
	uint64_t plen = 0;
	int is_delta;
	int bad = snap_peek_any(hdr, sizeof(hdr), &plen, &is_delta, err);
	if (!bad && plen > srv->cfg.max_snapshot) {
		snprintf(err, sizeof(err), "snapshot of %" PRIu64 " bytes exceeds max_snapshot %" PRIu64, plen,
			 srv->cfg.max_snapshot);
		bad = 1;
	}
	if (bad) {
		ingest_refuse(c, "INVALID", err);
		return -1;
	}
	c->want = SNAP_HEADER_LEN + (size_t)plen;
	/* Only a producer topod trusts gets here: lift the pre-authentication
	 * read bound (set at accept). */
	bufferevent_setwatermark(c->bev, EV_READ, 0, 0);
	return 0;
}

/* The snapshot is in: the end of its authentication, then the builder. */
static void ingest_complete(struct conn *c)
{
	struct server *srv = c->srv;
	const struct snap_key *key = srv->cfg.ingest_key;
	char err[SNAP_ERR_LEN];
	if ((c->auth == IA_PROVEN && snap_auth_body_verify(&c->ia->body, err)) ||
	    (c->auth == IA_V1 && key && snap_auth_verify(key, c->ia->pre, c->buf, c->have, err))) {
		ingest_refuse(c, "AUTH", err);
		return;
	}
	bufferevent_disable(c->bev, EV_READ);
	struct ingest_job *j = calloc(1, sizeof(*j));
	if (!j) {
		evbuffer_add_printf(bufferevent_get_output(c->bev), "ERR NOMEM\n");
		conn_finish(c);
		return;
	}
	j->buf = c->buf;
	j->len = c->have;
	c->buf = NULL;
	j->persist = 1;
	snprintf(j->source, sizeof(j->source), "ingest %s", c->peer);
	j->done = ingest_done;
	j->arg = c;
	c->refs++;
	builder_submit(srv->plane[c->plane].b, j);
}

static void ingest_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	if (c->draining) {
		evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
	if (!c->want && ingest_opening(c, in))
		return;
	/* Memory follows the bytes that arrived, never the header's claim: a
	 * producer that announces 8 GiB and sends 64 bytes costs 64 bytes. */
	size_t avail = evbuffer_get_length(in), take = avail < c->want - c->have ? avail : c->want - c->have;
	if (c->have + take > c->cap) {
		size_t cap = c->cap ? c->cap : 1 << 16;
		while (cap < c->have + take)
			cap *= 2;
		if (cap > c->want)
			cap = c->want;
		uint8_t *nb = realloc(c->buf, cap);
		if (!nb) {
			ingest_refuse(c, "NOMEM", "cannot buffer the snapshot");
			return;
		}
		c->buf = nb;
		c->cap = cap;
	}
	size_t got = (size_t)evbuffer_remove(in, c->buf + c->have, take);
	if (c->auth == IA_PROVEN)
		snap_auth_body_update(&c->ia->body, c->buf + c->have, got);
	c->have += got;
	if (c->have < c->want)
		return;
	if (evbuffer_get_length(in)) {
		c->srv->ingest_trailing++;
		char why[96];
		snprintf(why, sizeof(why), "%zu bytes after the snapshot: one snapshot per connection",
			 evbuffer_get_length(in));
		ingest_refuse(c, "INVALID", why);
		return;
	}
	ingest_complete(c);
}

/* ---- listeners ----------------------------------------------------------- */

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
		      void *arg, enum conn_kind kind, int plane)
{
	struct server *srv = arg;
	/* Local (UNIX) and TCP producers have a budget each: a flood of TCP
	 * connections must not answer OpenSM's own delivery with BUSY. */
	int tcp = sa->sa_family != AF_UNIX;
	unsigned ingest_in_use = tcp ? srv->ningest_tcp : srv->ningest - srv->ningest_tcp;
	if ((kind == CONN_QUERY && srv->nconns >= srv->cfg.max_conns) ||
	    (kind == CONN_ADMIN && srv->nadmin >= srv->cfg.max_admin) ||
	    (kind == CONN_INGEST && ingest_in_use >= srv->cfg.max_ingest)) {
		/* Tell the client why instead of a silent reset. */
		static const char msg[] = "ERR BUSY too many connections\n";
		ssize_t w = send(fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)w;
		srv->refused++;
		evutil_closesocket(fd);
		return;
	}
	struct conn *c = calloc(1, sizeof(*c));
	struct bufferevent *bev = bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c || !bev) {
		free(c);
		if (bev)
			bufferevent_free(bev);
		else
			evutil_closesocket(fd);
		return;
	}
	c->srv = srv;
	c->next = srv->conns;
	if (c->next)
		c->next->prev = c;
	srv->conns = c;
	c->bev = bev;
	c->kind = kind;
	c->plane = plane;
	c->refs = 1;
	if (sa->sa_family == AF_UNIX) {
		snprintf(c->peer, sizeof(c->peer), "unix");
	} else {
		char h[NI_MAXHOST], p[NI_MAXSERV];
		if (getnameinfo(sa, (socklen_t)salen, h, sizeof(h), p, sizeof(p), NI_NUMERICHOST | NI_NUMERICSERV))
			snprintf(c->peer, sizeof(c->peer), "tcp:?");
		else
			snprintf(c->peer, sizeof(c->peer), "tcp:%.46s:%.8s", h, p);
	}
	struct timeval tv;
	if (kind == CONN_INGEST) {
		srv->ningest++;
		c->tcp = tcp;
		srv->ningest_tcp += (unsigned)c->tcp;
		bufferevent_setcb(bev, ingest_read_cb, conn_write_cb, conn_event_cb, c);
		/* Until the producer is trusted (ingest_opening), libevent reads
		 * no more than this into its input buffer. */
		bufferevent_setwatermark(bev, EV_READ, 0, SNAP_AUTH_PREAUTH_MAX);
		if (!ingest_trusted(c)) {
			struct timeval grace = { AUTH_GRACE_S, 0 };
			c->linger_ev = evtimer_new(srv->base, linger_cb, c);
			if (c->linger_ev)
				evtimer_add(c->linger_ev, &grace);
		}
		tv.tv_sec = srv->cfg.ingest_timeout_s;
		tv.tv_usec = 0;
		bufferevent_set_timeouts(bev, &tv, NULL);
	} else {
		if (kind == CONN_QUERY)
			srv->nconns++;
		else
			srv->nadmin++;
		bufferevent_setcb(bev, line_read_cb, conn_write_cb, conn_event_cb, c);
		acct_start(c);
		tv.tv_sec = srv->cfg.idle_timeout_s;
		tv.tv_usec = 0;
		struct timeval wtv = { srv->cfg.write_timeout_s, 0 };
		bufferevent_set_timeouts(bev, &tv, srv->cfg.write_timeout_s ? &wtv : NULL);
	}
	bufferevent_enable(bev, EV_READ | EV_WRITE);
}

static void accept_query(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int n, void *a)
{
	accept_cb(l, fd, sa, n, a, CONN_QUERY, -1);
}

static void accept_admin(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int n, void *a)
{
	accept_cb(l, fd, sa, n, a, CONN_ADMIN, 0);
}

/* May this UNIX peer feed topod? root, topod's own user, and members of
 * the configured group: a snapshot decides what every job is told. */
static int peer_allowed(const struct server *srv, int fd, char *who, size_t n)
{
	struct ucred cr;
	socklen_t l = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l)) {
		snprintf(who, n, "unknown peer");
		return 0;
	}
	snprintf(who, n, "uid %u gid %u pid %d", (unsigned)cr.uid, (unsigned)cr.gid, (int)cr.pid);
	if (cr.uid == 0 || cr.uid == geteuid())
		return 1;
	if (!srv->cfg.ingest_has_group)
		return 0;
	if (cr.gid == srv->cfg.ingest_gid)
		return 1;
	/* Supplementary groups of the peer's user. */
	struct passwd pw, *pp = NULL;
	char buf[4096];
	if (getpwuid_r(cr.uid, &pw, buf, sizeof(buf), &pp) || !pp)
		return 0;
	gid_t groups[256];
	int ng = 256;
	if (getgrouplist(pp->pw_name, pp->pw_gid, groups, &ng) < 0)
		return 0;
	for (int i = 0; i < ng; i++)
		if (groups[i] == srv->cfg.ingest_gid)
			return 1;
	return 0;
}

static void accept_ingest(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int n, void *a)
{
	struct server *srv = a;
	char who[96];
	if (sa->sa_family == AF_UNIX && !peer_allowed(srv, fd, who, sizeof(who))) {
		srv->ingest_denied++;
		tlog(TLOG_WARN, "ingest: refused a snapshot producer (%s): not root, topod's user or the ingest group",
		     who);
		static const char msg[] = "ERR DENIED this user may not feed topod (see --ingest-group)\n";
		ssize_t w = send(fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)w;
		evutil_closesocket(fd);
		return;
	}
	int plane = 0;
	for (int i = 0; i < srv->nli; i++)
		if (srv->li[i] == l)
			plane = srv->cfg.ingest_plane[i];
	accept_cb(l, fd, sa, n, a, CONN_INGEST, plane);
}

static struct evconnlistener *listen_unix(struct server *srv, const char *path, mode_t mode,
					  evconnlistener_cb cb, char *err)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, SNAP_ERR_LEN, "%.120s: UNIX socket path too long", path);
		return NULL;
	}
	memcpy(sun.sun_path, path, strlen(path));
	/* Remove a stale socket from a previous run, but never a regular file
	 * someone pointed us at by mistake. */
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, SNAP_ERR_LEN, "%.120s: exists and is not a socket", path);
			return NULL;
		}
		unlink(path);
	}
	mode_t old = umask(0777 & ~mode);
	struct evconnlistener *l = evconnlistener_new_bind(srv->base, cb, srv, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
							   64, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (!l) {
		snprintf(err, SNAP_ERR_LEN, "%.120s: %s", path, strerror(errno));
		return NULL;
	}
	if (srv->nunlink < SERVER_MAX_ADDRS + 1)
		snprintf(srv->unlink_paths[srv->nunlink++], sizeof(srv->unlink_paths[0]), "%s", path);
	return l;
}

static struct evconnlistener *listen_tcp(struct server *srv, const char *hostport, evconnlistener_cb cb,
					 int *port, char *err)
{
	/* Port 0 (any free port, for tests) is valid here, unlike for a sink. */
	const char *h;
	size_t hl;
	unsigned pn;
	char host[256], portstr[8];
	if (util_parse_hostport(hostport, strlen(hostport), &h, &hl, &pn) || hl >= sizeof(host)) {
		snprintf(err, SNAP_ERR_LEN, "%.120s: expected ADDR:PORT or [ADDR]:PORT", hostport);
		return NULL;
	}
	memcpy(host, h, hl);
	host[hl] = '\0';
	snprintf(portstr, sizeof(portstr), "%u", pn);
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *res;
	int gai = getaddrinfo(host, portstr, &hints, &res);
	if (gai) {
		snprintf(err, SNAP_ERR_LEN, "%.120s: %s", hostport, gai_strerror(gai));
		return NULL;
	}
	struct evconnlistener *lst = evconnlistener_new_bind(
		/* At job start thousands of ranks connect in the same
		 * millisecond: a short accept queue turns that into SYN
		 * retransmits (1 s, 3 s, ...). The kernel caps it at
		 * net.core.somaxconn. */
		srv->base, cb, srv, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 4096,
		res->ai_addr, (int)res->ai_addrlen);
	freeaddrinfo(res);
	if (!lst) {
		snprintf(err, SNAP_ERR_LEN, "%.120s: %s", hostport, strerror(errno));
		return NULL;
	}
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	getsockname(evconnlistener_get_fd(lst), (struct sockaddr *)&ss, &sl);
	*port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
					  : ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return lst;
}

/* SIGHUP does what admin "reload" does, so that `systemctl reload` works. */
static void sighup_cb(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;
	char err[SNAP_ERR_LEN];
	if (!srv->reload)
		return;
	if (srv->reload(srv->reload_arg, NULL, 0, err))
		tlog(TLOG_WARN, "SIGHUP: reload failed: %s", err);
	else
		tlog(TLOG_INFO, "SIGHUP: reloading the snapshot source");
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;
	tlog(TLOG_INFO, "signal %d: shutting down", (int)sig);
	event_base_loopexit(srv->base, NULL);
}

struct server *server_new(const struct server_config *cfg, const struct server_plane *planes, int nplanes,
			  char err[SNAP_ERR_LEN])
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	/* Lets the builder thread wake the loop with event_active(). */
	pthread_once(&once, (void (*)(void))evthread_use_pthreads);
	struct server *srv = calloc(1, sizeof(*srv));
	if (!srv) {
		snprintf(err, SNAP_ERR_LEN, "out of memory");
		return NULL;
	}
	srv->cfg = *cfg;
	if (nplanes < 1 || nplanes > TOPO_PLANES_MAX) {
		snprintf(err, SNAP_ERR_LEN, "%d planes: 1 to %d", nplanes, TOPO_PLANES_MAX);
		free(srv);
		return NULL;
	}
	for (int i = 0; i < nplanes; i++)
		srv->plane[i] = planes[i];
	srv->nplanes = nplanes;
	pthread_mutex_init(&srv->done_lock, NULL);
	pthread_mutex_init(&srv->jobs_lock, NULL);
	srv->base = event_base_new();
	if (!srv->base) {
		snprintf(err, SNAP_ERR_LEN, "event_base_new failed");
		goto bad;
	}
	for (int i = 0; i < nplanes; i++) {
		struct watch_wake *w = &srv->wake[i];
		w->srv = srv;
		w->plane = i;
		w->ev = event_new(srv->base, -1, 0, watch_wake_cb, w);
		if (!w->ev) {
			snprintf(err, SNAP_ERR_LEN, "cannot set up events");
			goto bad;
		}
		planes[i].st->on_publish_arg = w;
		planes[i].st->on_publish = watch_publish_hook;
	}
	srv->jobs_ev = event_new(srv->base, -1, 0, jobs_cb, srv);
	srv->tick_ev = event_new(srv->base, -1, EV_PERSIST, tick_cb, srv);
	srv->budget_ev = event_new(srv->base, -1, 0, budget_cb, srv);
	struct timeval tick = { 0, 100000 };
	if (!srv->jobs_ev || !srv->tick_ev || !srv->budget_ev || event_add(srv->tick_ev, &tick)) {
		snprintf(err, SNAP_ERR_LEN, "cannot set up events");
		goto bad;
	}
	srv->pid = getpid();
	for (int i = 0; i < cfg->nlisten; i++) {
		srv->lq[i] = listen_tcp(srv, cfg->listen[i], accept_query, &srv->qport[i], err);
		if (!srv->lq[i])
			goto bad;
		srv->nlq++;
	}
	for (int i = 0; i < cfg->ningest; i++) {
		const char *spec = cfg->ingest[i];
		int port;
		if (!strncmp(spec, "unix:", 5))
			srv->li[i] = listen_unix(srv, spec + 5, 0660, accept_ingest, err);
		else if (!strncmp(spec, "tcp:", 4))
			srv->li[i] = listen_tcp(srv, spec + 4, accept_ingest, &port, err);
		else
			snprintf(err, SNAP_ERR_LEN, "%.120s: ingest must be unix:PATH or tcp:ADDR:PORT", spec);
		if (!srv->li[i])
			goto bad;
		srv->nli++;
	}
	if (cfg->admin) {
		/* Admin actions change what everyone is served: owner only. */
		srv->la = listen_unix(srv, cfg->admin, 0600, accept_admin, err);
		if (!srv->la)
			goto bad;
	}
	srv->sigint = evsignal_new(srv->base, SIGINT, signal_cb, srv);
	srv->sigterm = evsignal_new(srv->base, SIGTERM, signal_cb, srv);
	srv->sighup = evsignal_new(srv->base, SIGHUP, sighup_cb, srv);
	srv->notify = event_new(srv->base, -1, 0, notify_cb, srv);
	if (!srv->sigint || !srv->sigterm || !srv->sighup || !srv->notify || event_add(srv->sigint, NULL) ||
	    event_add(srv->sigterm, NULL) || event_add(srv->sighup, NULL)) {
		snprintf(err, SNAP_ERR_LEN, "cannot set up events");
		goto bad;
	}
	return srv;
bad:
	server_free(srv);
	return NULL;
}

int server_query_port(const struct server *srv, int i)
{
	return i < srv->nlq ? srv->qport[i] : -1;
}

void server_set_reload(struct server *srv, server_reload_fn fn, void *arg)
{
	srv->reload = fn;
	srv->reload_arg = arg;
}

int server_run(struct server *srv)
{
	/* Threads do not survive daemon()'s fork: the workers start here, in
	 * the process that serves, and the loop's kernel state is renewed if
	 * we are not the process that made it. */
	if (srv->pid != getpid() && event_reinit(srv->base)) {
		tlog(TLOG_ERR, "cannot renew the event loop after detaching");
		return -1;
	}
	struct pool_config pc = { srv->cfg.threads, srv->cfg.heavy_queue, srv->cfg.max_request_mem, ESTIMATE_LIGHT_MEM };
	srv->pool = pool_new(&pc);
	if (!srv->pool) {
		tlog(TLOG_ERR, "cannot start %d worker threads", srv->cfg.threads);
		return -1;
	}
	for (int i = 0; i < srv->nplanes; i++) { /* the generations served from the start */
		struct fabric *f = store_get(srv->plane[i].st);
		qstats_note_gen(&srv->qs, i, f);
		fabric_put(f);
	}
	return event_base_dispatch(srv->base) < 0 ? -1 : 0;
}

void server_free(struct server *srv)
{
	if (!srv)
		return;
	/* Running heavy jobs finish, queued ones are cancelled; their
	 * replies are never sent (the loop has stopped). */
	pool_free(srv->pool);
	for (struct heavy_job *j = srv->jobs_done, *n; j; j = n) {
		n = j->next_done;
		conn_unref(j->c);
		heavy_free(j);
	}
	while (srv->conns)
		conn_close(srv->conns);
	for (int i = 0; i < srv->nplanes; i++) {
		srv->plane[i].st->on_publish = NULL;
		if (srv->wake[i].ev)
			event_free(srv->wake[i].ev);
	}
	if (srv->jobs_ev)
		event_free(srv->jobs_ev);
	if (srv->tick_ev)
		event_free(srv->tick_ev);
	if (srv->budget_ev)
		event_free(srv->budget_ev);
	for (int i = 0; i < srv->nlq; i++)
		evconnlistener_free(srv->lq[i]);
	for (int i = 0; i < srv->nli; i++)
		evconnlistener_free(srv->li[i]);
	if (srv->la)
		evconnlistener_free(srv->la);
	for (int i = 0; i < srv->nunlink; i++)
		unlink(srv->unlink_paths[i]);
	if (srv->sigint)
		event_free(srv->sigint);
	if (srv->sigterm)
		event_free(srv->sigterm);
	if (srv->sighup)
		event_free(srv->sighup);
	if (srv->notify)
		event_free(srv->notify);
	/* Completions that arrived after the loop stopped still hold a
	 * connection reference each. */
	struct done_item *d = srv->done_head;
	while (d) {
		struct done_item *n = d->next;
		free(d);
		d = n;
	}
	if (srv->base)
		event_base_free(srv->base);
	pthread_mutex_destroy(&srv->done_lock);
	pthread_mutex_destroy(&srv->jobs_lock);
	free(srv);
}

/* ---- for the HTTP endpoint ------------------------------------------------- */

void server_get_metrics(const struct server *srv, struct server_metrics *m)
{
	memset(m, 0, sizeof(*m));
	m->conns = srv->nconns;
	m->max_conns = srv->cfg.max_conns;
	m->admin_conns = srv->nadmin;
	m->ingest_conns = srv->ningest;
	m->watching = srv->nwatch;
	m->requests = srv->requests;
	m->errors = srv->errors;
	m->refused = srv->refused;
	m->cut_hard = srv->cut_hard;
	m->cut_soft = srv->cut_soft;
	m->cut_write = srv->cut_write;
	m->cut_budget = srv->cut_budget;
	m->toobig = srv->toobig;
	m->busy_heavy = srv->busy_heavy;
	m->heavy_toobig = srv->heavy_toobig;
	m->heavy_timeouts = srv->heavy_timeouts;
	m->ingest_denied = srv->ingest_denied;
	m->ingest_unsigned = srv->ingest_unsigned;
	m->ingest_truncated = srv->ingest_truncated;
	m->ingest_trailing = srv->ingest_trailing;
	m->out_pending = out_pending(srv);
	m->out_budget = srv->cfg.out_budget;
	m->client_bytes = srv->in_bytes + srv->out_bytes;
	m->client_budget = srv->cfg.client_budget;
	m->nplanes = srv->nplanes;
	for (int i = 0; i < srv->nplanes; i++)
		builder_get_stats(srv->plane[i].b, &m->plane[i]);
	if (srv->pool)
		pool_get_stats(srv->pool, &m->pool);
	m->qs = srv->qs;
}

struct event_base *server_base(struct server *srv)
{
	return srv->base;
}

struct pool *server_pool(struct server *srv)
{
	return srv->pool;
}
