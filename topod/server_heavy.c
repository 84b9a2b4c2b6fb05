/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * server_heavy.c - requests that run on the worker pool: admission by
 * their cost estimate and the output budgets, the deadline, and the reply
 * handed back to the loop.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "estimate.h"
#include "log.h"
#include "query.h"
#include "server_impl.h"

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

void heavy_free(struct heavy_job *j)
{
	fabric_put(j->f);
	if (j->out)
		evbuffer_free(j->out);
	free(j->line);
	free(j);
}


/* Every client's unread reply bytes, kept current by acct_out_cb, and
 * the HTTP endpoint's: --output-budget is one budget for both ports. */
uint64_t out_pending(const struct server *srv)
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
void set_busy(struct conn *c, int busy)
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
void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	if (srv->pool && srv->cfg.request_timeout_s)
		pool_expire(srv->pool, pool_now_ns());
}

void jobs_cb(evutil_socket_t fd, short what, void *arg)
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

enum admit_result server_admit(struct server *srv, const struct admission *a, struct pool_job *pj,
			       struct evbuffer *err)
{
	/* Clients are not reading what they asked for: admit no more large
	 * answers until they do (or are cut off). The scrape is how an
	 * operator sees it. */
	uint64_t pending = out_pending(srv), held = srv->in_bytes + srv->out_bytes;
	if (!a->scrape && srv->cfg.out_budget && pending > srv->cfg.out_budget) {
		query_error(err, "BUSY", "%" PRIu64 " bytes of replies are waiting to be read, more than --output-budget %" PRIu64
			    "; retry later", pending, srv->cfg.out_budget);
		return ADMIT_UNREAD;
	}
	if (!a->scrape && srv->cfg.client_budget && held > srv->cfg.client_budget / 8 * 7) {
		query_error(err, "BUSY", "all clients hold %" PRIu64 " bytes of input and unread replies, more than 7/8 of "
			    "--client-budget %" PRIu64 "; retry later", held, srv->cfg.client_budget);
		return ADMIT_UNREAD;
	}
	struct estimate e = { a->mem, 0 };
	int light = a->light;
	if (a->k && (a->k->flags & CMD_HEAVY)) {
		if (estimate_request(a->k, a->req, a->f, &e)) {
			/* a heavy command is never run unbounded */
			query_error(err, "INTERNAL", "%s has no cost estimate", a->k->name);
			return ADMIT_NOESTIMATE;
		}
		light = estimate_light(&e);
		tlog(TLOG_DEBUG, "%s: %s estimated %" PRIu64 " bytes, %" PRIu64 " us (%s lane)", a->peer, a->k->name,
		     e.mem, e.work_us, light && e.mem <= pool_job_max(srv->pool, 1) ? "light" : "heavy");
	}
	pj->mem = e.mem * (a->copies ? a->copies : 1);
	pj->light = light && srv->pool && pj->mem <= pool_job_max(srv->pool, 1);
	uint64_t now = pool_now_ns();
	pj->deadline_ns = srv->cfg.request_timeout_s ? now + srv->cfg.request_timeout_s * 1000000000ull : 0;
	int rc = srv->pool ? pool_submit(srv->pool, pj) : POOL_FULL;
	if (rc == POOL_TOOBIG) {
		query_error(err, "TOOBIG", "%s needs an estimated %" PRIu64 " MiB, more than one request may hold (%" PRIu64
			    " MiB of --max-request-memory): ask for fewer hosts or ranks", a->k ? a->k->name : "the request",
			    pj->mem >> 20, pool_job_max(srv->pool, 0) >> 20);
		return ADMIT_TOOBIG;
	}
	if (rc) {
		query_error(err, "BUSY", "%u heavy requests are waiting already; retry later", srv->cfg.heavy_queue);
		return ADMIT_FULL;
	}
	return ADMIT_QUEUED;
}

/* Queues a heavy request; 0 if it went to the pool (the reply comes
 * later), -1 if the reply (an ERR) was written now. */
int submit_heavy(struct conn *c, const struct cmd *k, const struct proto_req *req, struct evbuffer *out)
{
	struct server *srv = c->srv;
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
	j->submitted_ns = pool_now_ns();
	struct admission a = { .k = k, .req = &j->req, .f = j->f, .copies = 1, .peer = c->peer };
	enum admit_result r = server_admit(srv, &a, &j->pj, out);
	if (r != ADMIT_QUEUED) {
		srv->errors++;
		if (r == ADMIT_TOOBIG)
			srv->heavy_toobig++;
		else if (r != ADMIT_NOESTIMATE)
			srv->busy_heavy++;
		heavy_free(j);
		return -1;
	}
	set_busy(c, 1);
	c->refs++;
	return 0;
}
