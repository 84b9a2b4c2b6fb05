/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * http.c - see http.h. The loop's side: evhttp, the routes, the clients'
 * bound, and the worker jobs' hand-back (the same pattern as the server's
 * heavy requests: done() queues under a lock and wakes the loop).
 */
#include "http.h"

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "cmd.h"
#include "estimate.h"
#include "http_gate.h"
#include "http_impl.h"
#include "log.h"
#include "pool.h"
#include "query.h"

/* The page, compiled in from topod/web/index.html (Makefile). */
static const char web_page[] =
#include "web_page.h"
	;

/* A request's URI (path and query) may be at most this long: the longest
 * protocol line, percent-encoded, and some room. */
#define HTTP_URI_MAX (TOPO_LINE_MAX * 3 + 256)
/* evhttp's bounds: the request head (URI and headers) and a body. */
#define HTTP_HEAD_MAX (HTTP_URI_MAX + 8192)
#define HTTP_BODY_MAX 4096
/* What a socket may have read and not yet parsed. */
#define HTTP_READ_MAX (HTTP_HEAD_MAX + HTTP_BODY_MAX + 4096)

struct hconn;

/* One answer being computed on the pool. */
struct hjob {
	struct pool_job pj;
	struct http *h;
	struct evhttp_request *req; /* NULL once the client is gone */
	struct hconn *hc;
	struct evbuffer *out;       /* the body */
	int status;
	const char *ctype;
	/* /api: the command, its generation and its words */
	const struct cmd *k;
	struct fabric *f;
	struct qctx qc;
	char *line;
	struct proto_req preq;
	/* /metrics */
	struct http_scrape *sc;
	/* /api/job: a Slurm job ID */
	char jobid[32];
	enum qstats_outcome outcome; /* of the protocol's reply */
	int stopped;                 /* cancelled at the deadline (job_run) */
	struct hjob *next;
};

/* A client connection, known from its first request on (evhttp tells us of
 * none before; the gate, http_gate.h, knows every socket). */
struct hconn {
	struct http *h;
	struct evhttp_connection *evcon;
	struct hjob *job; /* in flight: evhttp answers one request at a time */
	size_t unsent;    /* its reply, handed to evhttp and not yet written */
	/* The /api request being answered, counted in topod_queries_total
	 * when its reply is sent (api_note). */
	int api;
	const struct cmd *api_k; /* NULL: not a command (counted as other) */
	uint64_t api_t0;
	int api_lane;
	struct hconn *prev, *next;
};

struct http {
	struct http_config cfg;
	struct server *srv;
	struct server_plane plane[TOPO_PLANES_MAX];
	int nplanes;
	struct evhttp *evh;
	int port;
	struct event *done_ev;
	struct hconn *conns;
	/* Every socket, from its accept on: the limits and deadlines of the
	 * clients that have not sent a whole request (http_gate.h). A request
	 * past max_conns being answered at once gets a 503 (request_cb). */
	struct hgate *gate;
	uint64_t refused, codes[HS_CODES];
	uint64_t unsent; /* every client's replies not yet written (hconn.unsent) */
	struct qstats qs; /* the /api requests, added to the server's at a scrape */
	/* The names a request's Host header may give (host_ok). */
	char host[HTTP_HOSTS_MAX + 2][256];
	int nhosts;
	unsigned slurm_jobs; /* /api/job lookups on the pool */
	/* Heavy /api commands refused, added to topod_heavy_refused_total's
	 * reasons at a scrape. */
	uint64_t heavy_busy, heavy_toobig, heavy_timeouts;
	pthread_mutex_t lock; /* covers done, closed and njobs */
	struct hjob *done;
	int closed;
	unsigned njobs;       /* on the pool */
};

static void count_status(struct http *h, int status)
{
	for (int i = 0; i < HS_CODES; i++)
		if (http_codes[i] == status) {
			h->codes[i]++;
			return;
		}
	h->codes[HS_500]++;
}

static struct hconn *find_conn(struct http *h, struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	for (struct hconn *hc = h->conns; hc; hc = hc->next)
		if (hc->evcon == evcon)
			return hc;
	return NULL;
}

/* The /api request on req's connection is answered with outcome o: counted
 * as the query port counts its requests (docs/metrics.md). */
static void api_note(struct http *h, struct evhttp_request *req, enum qstats_outcome o)
{
	struct hconn *hc = find_conn(h, req);
	if (!hc || !hc->api)
		return;
	hc->api = 0;
	qstats_note(&h->qs, hc->api_k, o, hc->api_lane, pool_now_ns() - hc->api_t0);
}

/* An error code of topod's limits, not of the request (qstats_outcome). */
static enum qstats_outcome code_outcome(const char *code)
{
	static const char *const limits[] = { "BUSY", "TOOBIG", "TIMEOUT", "NOMEM", "SHUTDOWN" };
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
		if (!strcmp(code, limits[i]))
			return QS_REFUSED;
	return QS_ERROR;
}

/* The replies handed to evhttp and not yet written, here and in the
 * server's count: --output-budget is one budget for both ports. */
static void unsent_move(struct http *h, size_t add, size_t sub)
{
	h->unsent = h->unsent + add - sub;
	server_http_unsent(h->srv, add, sub);
}

/* evhttp wrote the whole reply: the socket waits for the next request. */
static void sent_cb(struct evhttp_request *req, void *arg)
{
	struct http *h = arg;
	struct hconn *hc = find_conn(h, req);
	if (hc) {
		unsent_move(h, 0, hc->unsent);
		hc->unsent = 0;
	}
	hgate_end(h->gate, req);
}

static void send_body(struct http *h, struct evhttp_request *req, int status, const char *ctype,
		      struct evbuffer *body)
{
	/* Replies still being written count against --output-budget, as the
	 * query port's do: a client that does not read holds them. */
	struct hconn *hc = find_conn(h, req);
	if (hc && body && evbuffer_get_length(body) && evhttp_request_get_command(req) != EVHTTP_REQ_HEAD) {
		hc->unsent = evbuffer_get_length(body);
		unsent_move(h, hc->unsent, 0);
	}
	evhttp_request_set_on_complete_cb(req, sent_cb, h);
	struct evkeyvalq *hd = evhttp_request_get_output_headers(req);
	evhttp_add_header(hd, "Content-Type", ctype);
	evhttp_add_header(hd, "Cache-Control", "no-store");
	evhttp_add_header(hd, "X-Content-Type-Options", "nosniff");
	count_status(h, status);
	const char *reason = status == 200 ? "OK" : status == 404 ? "Not Found" : status == 413 ? "Payload Too Large"
			   : status == 431 ? "Request Header Fields Too Large" : status == 421 ? "Misdirected Request"
			   : status == 503 ? "Service Unavailable" : status == 504 ? "Gateway Timeout"
			   : status == 500 ? "Internal Server Error" : status == 405 ? "Method Not Allowed" : "Bad Request";
	if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
		/* libevent 2.1 would send the body after a HEAD's headers. */
		char len[24];
		snprintf(len, sizeof(len), "%zu", body ? evbuffer_get_length(body) : 0);
		evhttp_add_header(hd, "Content-Length", len);
		evhttp_send_reply(req, status, reason, NULL);
		return;
	}
	evhttp_send_reply(req, status, reason, body);
}

static void send_error(struct http *h, struct evhttp_request *req, int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void send_error(struct http *h, struct evhttp_request *req, int status, const char *code, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	api_note(h, req, code_outcome(code));
	struct evbuffer *b = evbuffer_new();
	if (!b) {
		evhttp_send_error(req, 503, NULL);
		return;
	}
	http_json_error(b, code, text);
	send_body(h, req, status, "application/json", b);
	evbuffer_free(b);
}

/* A protocol ERR line (query_error's) as the JSON error with its status:
 * how a refusal by the protocol's rules reads over HTTP. */
static void send_err_line(struct http *h, struct evhttp_request *req, struct evbuffer *err)
{
	api_note(h, req, qstats_outcome(err, 0));
	struct evbuffer *body = evbuffer_new();
	if (!body) {
		evhttp_send_error(req, 503, NULL);
		return;
	}
	int status = http_reply_json(err, body);
	send_body(h, req, status, "application/json", body);
	evbuffer_free(body);
}

/* ---- clients ------------------------------------------------------------- */

static void conn_closed(struct evhttp_connection *evcon, void *arg)
{
	struct hconn *hc = arg;
	struct http *h = hc->h;
	if (hc->job) {
		hc->job->req = NULL; /* evhttp frees it with the connection */
		hc->job->hc = NULL;
	}
	unsent_move(h, 0, hc->unsent);
	if (hc->prev)
		hc->prev->next = hc->next;
	else
		h->conns = hc->next;
	if (hc->next)
		hc->next->prev = hc->prev;
	free(hc);
	hgate_poke(h->gate); /* evhttp frees the connection after this: look then */
}

/* The request's connection; NULL (and a 503 sent) when out of memory, or
 * when more than max_conns requests would be answered at once (serving:
 * with this one). A scrape is always answered: it is how an overload is
 * seen, and it costs some kB. A linear search: the sockets are bounded
 * (2 x max_conns). */
static struct hconn *conn_of(struct http *h, struct evhttp_request *req, unsigned serving, int scrape)
{
	struct hconn *hc = find_conn(h, req);
	if (!hc && (hc = calloc(1, sizeof(*hc)))) {
		hc->h = h;
		hc->evcon = evhttp_request_get_connection(req);
		hc->next = h->conns;
		if (hc->next)
			hc->next->prev = hc;
		h->conns = hc;
		evhttp_connection_set_closecb(hc->evcon, conn_closed, hc);
	}
	if (hc && (scrape || serving <= h->cfg.max_conns))
		return hc;
	h->refused++;
	evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
	if (hc)
		send_error(h, req, 503, "BUSY", "%u HTTP requests are being answered already (--http-max-conns)",
			   serving - 1);
	else
		send_error(h, req, 503, "NOMEM", "no memory for the connection");
	return NULL;
}

/* ---- worker jobs ------------------------------------------------------------ */

static void job_free(struct hjob *j)
{
	fabric_put(j->f);
	if (j->sc)
		for (int p = 0; p < j->sc->m.nplanes; p++)
			fabric_put(j->sc->f[p]);
	free(j->sc);
	if (j->out)
		evbuffer_free(j->out);
	free(j->line);
	free(j);
}

static void http_destroy(struct http *h)
{
	pthread_mutex_destroy(&h->lock);
	free(h);
}

static void job_run(struct pool_job *pj, int threads)
{
	struct hjob *j = (struct hjob *)pj;
	if (j->sc) {
		http_render_metrics(j->sc, j->out);
		j->status = 200;
		return;
	}
	if (j->jobid[0]) {
		j->status = http_job_nodes(j->jobid, j->out);
		return;
	}
	struct evbuffer *text = evbuffer_new();
	if (!text) {
		http_json_error(j->out, "NOMEM", "no memory for the reply");
		j->status = 503;
		return;
	}
	j->qc.threads = threads;
	j->qc.cancel = &pj->stop;
	j->qc.out = text;
	j->k->answer(&j->qc);
	/* Stopped at the deadline, the analysis answers an ERR: say why. One
	 * that finished regardless is answered (as the query port does). */
	char head[4] = "";
	if (atomic_load(&pj->stop) && evbuffer_copyout(text, head, 4) == 4 && !memcmp(head, "ERR ", 4)) {
		evbuffer_drain(text, evbuffer_get_length(text));
		query_error(text, "TIMEOUT", "cancelled past the %u s deadline (--request-timeout)",
			    j->h->cfg.request_timeout_s);
		j->stopped = 1;
	}
	j->outcome = qstats_outcome(text, 0);
	j->status = http_reply_json(text, j->out);
	evbuffer_free(text);
}

/* A heavy command's refusal, counted as the query port counts its own. */
static void heavy_refused(struct http *h, const struct hjob *j, uint64_t *reason)
{
	if (j->k && (j->k->flags & CMD_HEAVY))
		(*reason)++;
}

/* Worker thread (or pool_free at shutdown): back to the loop, or, if the
 * endpoint is gone, free the job (and the endpoint after its last job). */
static void job_done(struct pool_job *pj)
{
	struct hjob *j = (struct hjob *)pj;
	struct http *h = j->h;
	pthread_mutex_lock(&h->lock);
	if (h->closed) {
		int last = --h->njobs == 0;
		pthread_mutex_unlock(&h->lock);
		job_free(j);
		if (last)
			http_destroy(h);
		return;
	}
	j->next = h->done;
	h->done = j;
	event_active(h->done_ev, EV_READ, 0);
	pthread_mutex_unlock(&h->lock);
}

static void done_cb(evutil_socket_t fd, short what, void *arg)
{
	struct http *h = arg;
	pthread_mutex_lock(&h->lock);
	struct hjob *j = h->done;
	h->done = NULL;
	pthread_mutex_unlock(&h->lock);
	uint64_t pending;
	while (j) {
		struct hjob *next = j->next;
		pthread_mutex_lock(&h->lock);
		h->njobs--;
		pthread_mutex_unlock(&h->lock);
		if (j->hc)
			j->hc->job = NULL;
		if (j->jobid[0])
			h->slurm_jobs--;
		if (!j->req) {
			/* the client left */
		} else if (j->pj.cancelled) {
			send_error(h, j->req, 503, "SHUTDOWN", "topod is stopping");
		} else if (j->pj.expired) {
			heavy_refused(h, j, &h->heavy_timeouts);
			send_error(h, j->req, 504, "TIMEOUT", "waited for a worker past the %u s deadline (--request-timeout)",
				   h->cfg.request_timeout_s);
		} else if (evbuffer_get_length(j->out) > h->cfg.max_reply) {
			heavy_refused(h, j, &h->heavy_toobig);
			send_error(h, j->req, 413, "TOOBIG", "the reply is %zu bytes, more than --http-max-reply %llu",
				   evbuffer_get_length(j->out), (unsigned long long)h->cfg.max_reply);
		} else if (!j->sc && !server_reply_fits(h->srv, evbuffer_get_length(j->out), &pending)) {
			/* Checked again here, as the query port does: requests
			 * admitted together would otherwise all land in memory. */
			heavy_refused(h, j, &h->heavy_busy);
			send_error(h, j->req, 503, "BUSY", "%llu bytes of replies are waiting to be read (--output-budget); "
				   "retry later", (unsigned long long)pending);
		} else {
			if (j->stopped)
				heavy_refused(h, j, &h->heavy_timeouts);
			api_note(h, j->req, j->outcome);
			send_body(h, j->req, j->status, j->ctype, j->out);
		}
		job_free(j);
		j = next;
	}
}

/* Queues j by the server's admission rule (server_admit: the same as the
 * query port's); on refusal answers and frees it. a->k and a->req for a
 * command; else a->mem and a->light. */
static void job_submit(struct http *h, struct hconn *hc, struct hjob *j, struct admission *a)
{
	j->h = h;
	j->hc = hc;
	j->pj.run = job_run;
	j->pj.done = job_done;
	a->copies = 2; /* the JSON is built beside the protocol's reply */
	a->scrape = j->sc != NULL;
	a->peer = "http";
	pthread_mutex_lock(&h->lock);
	h->njobs++;
	pthread_mutex_unlock(&h->lock);
	struct evbuffer *err = evbuffer_new();
	enum admit_result r = err ? server_admit(h->srv, a, &j->pj, err) : ADMIT_FULL;
	if (r == ADMIT_QUEUED) {
		evbuffer_free(err);
		hc->job = j;
		hc->api_lane = QS_LANE_POOL;
		return;
	}
	pthread_mutex_lock(&h->lock);
	h->njobs--;
	pthread_mutex_unlock(&h->lock);
	if (r != ADMIT_NOESTIMATE)
		heavy_refused(h, j, r == ADMIT_TOOBIG ? &h->heavy_toobig : &h->heavy_busy);
	if (err) {
		send_err_line(h, j->req, err);
		evbuffer_free(err);
	} else {
		send_error(h, j->req, 503, "NOMEM", "no memory for the request");
	}
	job_free(j);
}

/* ---- routes ------------------------------------------------------------------ */

static void add_hist(struct qstats_hist *to, const struct qstats_hist *from)
{
	for (int i = 0; i <= QSTATS_BUCKETS; i++)
		to->bucket[i] += from->bucket[i];
	to->count += from->count;
	to->sum += from->sum;
}

/* The /api requests join the query port's in the scrape's copy. */
static void add_api_counts(struct qstats *to, const struct qstats *from)
{
	for (int c = 0; c <= QSTATS_CMDS; c++)
		for (int o = 0; o < QS_OUTCOMES; o++)
			to->n[c][o] += from->n[c][o];
	for (int l = 0; l < QS_LANES; l++)
		add_hist(&to->latency[l], &from->latency[l]);
}

static void serve_metrics(struct http *h, struct hconn *hc, struct evhttp_request *req)
{
	struct hjob *j = calloc(1, sizeof(*j));
	struct http_scrape *sc = calloc(1, sizeof(*sc));
	if (!j || !sc || !(j->out = evbuffer_new())) {
		free(sc);
		if (j)
			job_free(j);
		send_error(h, req, 503, "NOMEM", "no memory for the scrape");
		return;
	}
	j->req = req;
	j->sc = sc;
	j->ctype = "text/plain; version=0.0.4; charset=utf-8";
	server_get_metrics(h->srv, &sc->m);
	struct timeval tv;
	gettimeofday(&tv, NULL);
	sc->now_us = (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
	for (int p = 0; p < sc->m.nplanes; p++) {
		sc->plane_name[p] = h->plane[p].name;
		sc->f[p] = store_get(h->plane[p].st);
	}
	struct hgate_stats gs;
	hgate_get_stats(h->gate, &gs);
	sc->http_conns = gs.socks;
	sc->http_waiting = gs.waiting;
	memcpy(sc->http_cut, gs.cut, sizeof(sc->http_cut));
	sc->http_max_conns = h->cfg.max_conns;
	sc->http_refused = h->refused;
	sc->http_unsent = h->unsent;
	memcpy(sc->http_codes, h->codes, sizeof(sc->http_codes));
	add_api_counts(&sc->m.qs, &h->qs);
	sc->m.busy_heavy += h->heavy_busy;
	sc->m.heavy_toobig += h->heavy_toobig;
	sc->m.heavy_timeouts += h->heavy_timeouts;
	/* Counting down cables walks every port: a few ms on the largest fabrics. */
	struct admission a = { .mem = 1u << 20, .light = 1 };
	job_submit(h, hc, j, &a);
}

/* evhttp decodes a query into C strings: a %00 would cut a value short
 * unseen (and every other control character is refused once decoded). */
static int query_has_nul(const char *query)
{
	for (const char *s = query; s && (s = strchr(s, '%')); s++)
		if (s[1] == '0' && s[2] == '0')
			return 1;
	return 0;
}

/* The query's parameters: args= (the command's words, space-separated)
 * and plane= (default: the first plane). 0, or -1 with the 400 sent. */
static int api_params(struct http *h, struct evhttp_request *req, const char *query, char *args, size_t nargs,
		      int *plane)
{
	struct evkeyvalq q;
	TAILQ_INIT(&q);
	*plane = 0;
	args[0] = '\0';
	if (query_has_nul(query)) {
		send_error(h, req, 400, "QUERY", "the query string holds a control character (%%00)");
		return -1;
	}
	if (query && evhttp_parse_query_str(query, &q)) {
		send_error(h, req, 400, "QUERY", "the query string is not KEY=VALUE&...");
		return -1;
	}
	int rc = 0, seen_args = 0, seen_plane = 0;
	for (struct evkeyval *kv = q.tqh_first; kv && !rc; kv = kv->next.tqe_next) {
		if ((!strcmp(kv->key, "args") && seen_args++) || (!strcmp(kv->key, "plane") && seen_plane++)) {
			send_error(h, req, 400, "QUERY", "%s= is given twice", kv->key);
			rc = -1;
		} else if (!strcmp(kv->key, "args") && strlen(kv->value) < nargs) {
			snprintf(args, nargs, "%s", kv->value);
		} else if (!strcmp(kv->key, "args")) {
			send_error(h, req, 413, "TOOLONG", "args= is longer than %zu bytes", nargs - 1);
			rc = -1;
		} else if (!strcmp(kv->key, "plane")) {
			*plane = -1;
			for (int p = 0; p < h->nplanes; p++)
				if (!strcmp(h->plane[p].name, kv->value))
					*plane = p;
			if (*plane < 0) {
				send_error(h, req, 400, "NOPLANE", "no plane named '%.64s'", kv->value);
				rc = -1;
			}
		} else {
			send_error(h, req, 400, "QUERY", "unknown parameter '%.32s' (args=, plane=)", kv->key);
			rc = -1;
		}
	}
	evhttp_clear_headers(&q);
	for (const char *s = args; !rc && *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f) {
			send_error(h, req, 400, "QUERY", "args= holds a control character");
			rc = -1;
		}
	return rc;
}

/* /api/COMMAND?args=WORDS: the protocol's answer as JSON (http_json.c). */
static void serve_api(struct http *h, struct hconn *hc, struct evhttp_request *req, const char *verb,
		      const char *query)
{
	const struct cmd *k = cmd_find(verb);
	hc->api = 1;
	int served = k && !(k->flags & (CMD_WATCH | CMD_PLANES | CMD_ADMIN)) && strcmp(verb, "quit");
	hc->api_k = served ? k : NULL;
	hc->api_t0 = pool_now_ns();
	hc->api_lane = QS_LANE_LOOP;
	if (!served) {
		send_error(h, req, 404, "UNKNOWN", "no command '%.32s' over HTTP (the query commands but quit, watch, "
			   "plane, planes and show)", verb);
		return;
	}
	char args[TOPO_LINE_MAX];
	int plane;
	if (api_params(h, req, query, args, sizeof(args) - strlen(verb) - 2, &plane))
		return;
	struct hjob *j = calloc(1, sizeof(*j));
	struct evbuffer *err = evbuffer_new();
	size_t len = strlen(verb) + 1 + strlen(args);
	if (!j || !err || !(j->out = evbuffer_new()) || !(j->line = malloc(len + 1))) {
		if (j)
			job_free(j);
		if (err)
			evbuffer_free(err);
		send_error(h, req, 503, "NOMEM", "no memory for the request");
		return;
	}
	snprintf(j->line, len + 1, "%s %s", verb, args);
	j->req = req;
	j->k = k;
	j->ctype = "application/json";
	const char *why;
	j->f = store_get(h->plane[plane].st);
	if (proto_split(j->line, len, &j->preq, &why)) {
		query_error(err, "PROTO", "%s", why);
	} else if (!query_prepare(&j->qc, k, j->f, &j->preq, err)) {
		/* a light command's reply is a few lookups: an eighth of the light lane */
		struct admission a = { .k = k, .req = &j->preq, .f = j->f, .mem = ESTIMATE_LIGHT_MEM / 8, .light = 1 };
		evbuffer_free(err);
		job_submit(h, hc, j, &a);
		return;
	}
	send_err_line(h, req, err);
	evbuffer_free(err);
	job_free(j);
}

/* /api/job?id=N: the job's nodes, from squeue on a worker. */
static void serve_job(struct http *h, struct hconn *hc, struct evhttp_request *req, const char *query)
{
	if (!h->cfg.slurm) {
		send_error(h, req, 404, "NOSLURM", "job IDs are not looked up: topod runs without --http-slurm");
		return;
	}
	if (h->slurm_jobs >= HTTP_SLURM_MAX) {
		send_error(h, req, 503, "BUSY", "%u job lookups are running already; retry later", h->slurm_jobs);
		return;
	}
	struct evkeyvalq q;
	TAILQ_INIT(&q);
	const char *id = NULL;
	if (!query || query_has_nul(query) || evhttp_parse_query_str(query, &q) || !(id = evhttp_find_header(&q, "id")) || !http_job_id_ok(id) ||
	    q.tqh_first->next.tqe_next) {
		evhttp_clear_headers(&q);
		send_error(h, req, 400, "QUERY", "expected ?id=JOBID (digits, or digits_digits for an array task)");
		return;
	}
	struct hjob *j = calloc(1, sizeof(*j));
	if (!j || !(j->out = evbuffer_new())) {
		if (j)
			job_free(j);
		evhttp_clear_headers(&q);
		send_error(h, req, 503, "NOMEM", "no memory for the request");
		return;
	}
	snprintf(j->jobid, sizeof(j->jobid), "%s", id);
	evhttp_clear_headers(&q);
	j->req = req;
	j->ctype = "application/json";
	/* Not the light lane: a lookup waits up to 10 s on squeue, and the
	 * light lane's one worker is what keeps /metrics answering. */
	struct admission a = { .mem = 1u << 20 };
	job_submit(h, hc, j, &a);
	if (hc->job) /* queued: counted until done_cb */
		h->slurm_jobs++;
}

static void serve_page(struct http *h, struct evhttp_request *req)
{
	struct evbuffer *b = evbuffer_new();
	if (!b) {
		evhttp_send_error(req, 503, NULL);
		return;
	}
	evbuffer_add_reference(b, web_page, sizeof(web_page) - 1, NULL, NULL);
	/* Everything is inline; nothing may come from elsewhere. */
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Security-Policy",
			  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
			  "img-src data:; connect-src 'self'; frame-ancestors 'none'");
	send_body(h, req, 200, "text/html; charset=utf-8", b);
	evbuffer_free(b);
}

/* What a browser or Prometheus sends is a dozen lines and under 2 kB;
 * evhttp's own bound (max_headers_size) must leave room for the URI. */
#define HTTP_HEADERS_MAX 64
#define HTTP_HEADER_BYTES_MAX 16384

static int headers_too_large(struct evhttp_request *req)
{
	size_t n = 0, bytes = 0;
	struct evkeyvalq *hd = evhttp_request_get_input_headers(req);
	for (struct evkeyval *kv = hd->tqh_first; kv; kv = kv->next.tqe_next) {
		n++;
		bytes += strlen(kv->key) + strlen(kv->value) + 4;
	}
	return n > HTTP_HEADERS_MAX || bytes > HTTP_HEADER_BYTES_MAX;
}

/* Against DNS rebinding: a page from elsewhere that has its own name
 * resolve to topod's address gets its requests sent with that name as the
 * Host, and could then read the answers as its own origin. So a Host must
 * be an address (a browser sends one only for a page loaded from topod
 * itself) or one of the names configured; no Host (HTTP/1.0, scripts)
 * comes from no browser. */
static int host_ok(const struct http *h, struct evhttp_request *req)
{
	const char *v = evhttp_find_header(evhttp_request_get_input_headers(req), "Host");
	if (!v)
		return 1;
	const char *e;
	if (*v == '[') {
		e = strchr(++v, ']');
		if (!e || (e[1] && e[1] != ':'))
			return 0;
	} else if (!(e = strchr(v, ':'))) {
		e = v + strlen(v);
	}
	char name[256];
	size_t n = (size_t)(e - v);
	if (!n || n >= sizeof(name))
		return 0;
	memcpy(name, v, n);
	name[n] = '\0';
	unsigned char a[sizeof(struct in6_addr)];
	if (inet_pton(AF_INET, name, a) == 1 || inet_pton(AF_INET6, name, a) == 1)
		return 1;
	for (int i = 0; i < h->nhosts; i++)
		if (!strcasecmp(name, h->host[i]))
			return 1;
	return 0;
}

static void request_cb(struct evhttp_request *req, void *arg)
{
	struct http *h = arg;
	unsigned serving = hgate_begin(h->gate, req);
	enum evhttp_cmd_type m = evhttp_request_get_command(req);
	const char *uri = evhttp_request_get_uri(req);
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
	const char *path = u ? evhttp_uri_get_path(u) : NULL;
	struct hconn *hc = conn_of(h, req, serving, path && !strcmp(path, "/metrics"));
	if (!hc)
		return;
	if (m != EVHTTP_REQ_GET && m != EVHTTP_REQ_HEAD) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
		send_error(h, req, 405, "METHOD", "read-only: GET and HEAD only");
	} else if (headers_too_large(req)) {
		send_error(h, req, 431, "HEADERS", "more than %d header lines or %d bytes of headers", HTTP_HEADERS_MAX,
			   HTTP_HEADER_BYTES_MAX);
	} else if (!uri || strlen(uri) > HTTP_URI_MAX) {
		send_error(h, req, 413, "TOOLONG", "the URI is longer than %d bytes", HTTP_URI_MAX);
	} else if (!host_ok(h, req)) {
		send_error(h, req, 421, "HOST", "this server is not known by the name in the Host header "
			   "(an address, or a name of --http-host)");
	} else if (!path) {
		send_error(h, req, 400, "URI", "cannot parse the URI");
	} else if (!strcmp(path, "/") || !strcmp(path, "/index.html")) {
		serve_page(h, req);
	} else if (!strcmp(path, "/metrics")) {
		serve_metrics(h, hc, req);
	} else if (!strcmp(path, "/api/job")) {
		serve_job(h, hc, req, evhttp_uri_get_query(u));
	} else if (!strncmp(path, "/api/", 5) && strlen(path + 5) < 32) {
		serve_api(h, hc, req, path + 5, evhttp_uri_get_query(u));
	} else {
		send_error(h, req, 404, "NOTFOUND", "no such page; there are /, /metrics and /api/COMMAND?args=...");
	}
}

/* ---- life ------------------------------------------------------------------------ */

/* "ADDR:PORT" or "[V6]:PORT" into host and port; -1 if malformed. */
static int split_addr(const char *spec, char *host, size_t n, int *port)
{
	const char *colon = strrchr(spec, ':');
	if (!colon || colon == spec)
		return -1;
	size_t hl = (size_t)(colon - spec);
	if (spec[0] == '[' && spec[hl - 1] == ']') {
		spec++;
		hl -= 2;
	}
	char *end;
	long p = strtol(colon + 1, &end, 10);
	if (!hl || hl >= n || *end || end == colon + 1 || p < 0 || p > 65535)
		return -1;
	memcpy(host, spec, hl);
	host[hl] = '\0';
	*port = (int)p;
	return 0;
}

/* The names a Host header may give: --http-host's, or by default the
 * bound name (when it is no address), this machine's name and localhost. */
static int host_names(struct http *h, const char *list, const char *bound, char err[SNAP_ERR_LEN])
{
	if (!list) {
		char me[256] = "";
		gethostname(me, sizeof(me) - 1);
		snprintf(h->host[h->nhosts++], sizeof(h->host[0]), "localhost");
		if (me[0])
			snprintf(h->host[h->nhosts++], sizeof(h->host[0]), "%s", me);
		if (strlen(bound) < sizeof(h->host[0]))
			snprintf(h->host[h->nhosts++], sizeof(h->host[0]), "%s", bound);
		return 0;
	}
	for (const char *s = list; *s;) {
		size_t n = strcspn(s, ",");
		if (!n || n >= sizeof(h->host[0]) || h->nhosts == HTTP_HOSTS_MAX || strcspn(s, " \t/@[]") < n) {
			snprintf(err, SNAP_ERR_LEN, "--http-host: expected at most %d names (DNS names, comma-separated), "
				 "got '%.64s'", HTTP_HOSTS_MAX, list);
			return -1;
		}
		memcpy(h->host[h->nhosts], s, n);
		h->host[h->nhosts++][n] = '\0';
		s += n + (s[n] == ',');
	}
	return 0;
}

/* evhttp's own bind listens with a queue of 128: a crowd connecting as
 * fast as it is closed fills that, and the kernel then drops a client's
 * connection attempt, which it retries only a second later. The query
 * port's 4,096 (the kernel caps it at net.core.somaxconn). */
static struct evhttp_bound_socket *bind_listener(struct evhttp *evh, struct event_base *base, const char *host,
						 int port)
{
	char ps[8];
	snprintf(ps, sizeof(ps), "%d", port);
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *res;
	if (getaddrinfo(host, ps, &hints, &res)) {
		errno = EADDRNOTAVAIL;
		return NULL;
	}
	struct evconnlistener *l = evconnlistener_new_bind(base, NULL, NULL, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
							   LEV_OPT_CLOSE_ON_EXEC, 4096, res->ai_addr, (int)res->ai_addrlen);
	freeaddrinfo(res);
	struct evhttp_bound_socket *bs = l ? evhttp_bind_listener(evh, l) : NULL;
	if (l && !bs)
		evconnlistener_free(l);
	return bs;
}

struct http *http_new(const struct http_config *cfg, struct server *srv, const struct server_plane *planes,
		      int nplanes, char err[SNAP_ERR_LEN])
{
	char host[128];
	int port;
	if (split_addr(cfg->addr, host, sizeof(host), &port)) {
		snprintf(err, SNAP_ERR_LEN, "--http %.100s: not ADDR:PORT", cfg->addr);
		return NULL;
	}
	struct http *h = calloc(1, sizeof(*h));
	if (!h) {
		snprintf(err, SNAP_ERR_LEN, "out of memory");
		return NULL;
	}
	if (host_names(h, cfg->hosts, host, err)) {
		free(h);
		return NULL;
	}
	h->cfg = *cfg;
	h->srv = srv;
	h->nplanes = nplanes;
	for (int i = 0; i < nplanes; i++)
		h->plane[i] = planes[i];
	pthread_mutex_init(&h->lock, NULL);
	struct event_base *base = server_base(srv);
	h->evh = evhttp_new(base);
	h->done_ev = event_new(base, -1, 0, done_cb, h);
	struct evhttp_bound_socket *bs = h->evh ? bind_listener(h->evh, base, host, port) : NULL;
	struct hgate_config gc = { 2 * cfg->max_conns, cfg->per_peer, cfg->header_timeout_s, cfg->body_timeout_s,
				   cfg->timeout_s, HTTP_READ_MAX };
	h->gate = bs ? hgate_new(base, evhttp_bound_socket_get_listener(bs), &gc) : NULL;
	if (!h->evh || !h->done_ev || !h->gate || !bs || !cfg->max_conns) {
		snprintf(err, SNAP_ERR_LEN, "--http %.100s: cannot listen: %s", cfg->addr, strerror(errno));
		http_free(h);
		return NULL;
	}
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (!getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &sl))
		h->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							 : ((struct sockaddr_in *)&ss)->sin_port);
	evhttp_set_allowed_methods(h->evh, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
						   EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
	evhttp_set_max_headers_size(h->evh, HTTP_HEAD_MAX);
	evhttp_set_max_body_size(h->evh, HTTP_BODY_MAX);
	/* evhttp's own inactivity timeout: a reply the client does not read.
	 * A second later than the gate's, which closes idle connections. */
	evhttp_set_timeout(h->evh, (int)cfg->timeout_s + 1);
	evhttp_set_gencb(h->evh, request_cb, h);
	evhttp_set_bevcb(h->evh, hgate_accept, h->gate);
	tlog(TLOG_INFO, "HTTP: metrics and the web view on %s (port %d)", cfg->addr, h->port);
	return h;
}

int http_port(const struct http *h)
{
	return h->port;
}

void http_free(struct http *h)
{
	if (!h)
		return;
	/* Workers finishing from now on free their jobs themselves and never
	 * touch done_ev; our own reference (njobs + 1) keeps h until the end. */
	pthread_mutex_lock(&h->lock);
	h->closed = 1;
	h->njobs++;
	pthread_mutex_unlock(&h->lock);
	if (h->evh)
		evhttp_free(h->evh); /* closes every client: conn_closed frees its hconn */
	h->evh = NULL;
	hgate_free(h->gate); /* and the gate's references close their sockets */
	if (h->done_ev)
		event_free(h->done_ev);
	pthread_mutex_lock(&h->lock);
	struct hjob *j = h->done;
	h->done = NULL;
	for (struct hjob *x = j; x; x = x->next)
		h->njobs--;
	int last = --h->njobs == 0;
	pthread_mutex_unlock(&h->lock);
	while (j) {
		struct hjob *next = j->next;
		job_free(j);
		j = next;
	}
	if (last)
		http_destroy(h);
}
