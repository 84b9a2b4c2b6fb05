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
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>

#include "log.h"
#include "proto.h"
#include "query.h"
#include "sink.h"

/* A client that queues more reply bytes than this without reading stops
 * being read from until it catches up: memory stays bounded per client. */
#define OUT_HIGH (8u << 20)

enum conn_kind { CONN_QUERY, CONN_ADMIN, CONN_INGEST };

struct conn {
	struct server *srv;
	struct bufferevent *bev;
	enum conn_kind kind;
	int closing;       /* flush output, then free */
	int stop_after;    /* admin "shutdown": stop the loop once the reply is out */
	int refs;          /* the connection itself + an ingest job in flight */
	/* ingest only */
	uint8_t *buf;
	size_t have, want; /* want = header + payload once the header is known */
	char peer[64];
};

struct done_item {
	struct conn *c;
	char msg[SNAP_ERR_LEN + 32];
	struct done_item *next;
};

struct server {
	struct server_config cfg;
	struct store *st;
	struct builder *b;
	struct event_base *base;
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
};

static void conn_unref(struct conn *c)
{
	if (--c->refs > 0)
		return;
	free(c->buf);
	free(c);
}

static void conn_close(struct conn *c)
{
	if (!c->bev)
		return;
	bufferevent_free(c->bev);
	c->bev = NULL;
	if (c->stop_after)
		event_base_loopexit(c->srv->base, NULL);
	if (c->kind != CONN_INGEST)
		c->srv->nconns--;
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

static void answer_admin(struct conn *c, const struct proto_req *req, struct evbuffer *out)
{
	struct server *srv = c->srv;
	if (!strcmp(req->cmd, "stats")) {
		struct builder_stats bs;
		builder_get_stats(srv->b, &bs);
		char le[SNAP_ERR_LEN];
		log_clean(bs.last_error, strlen(bs.last_error), le, sizeof(le));
		evbuffer_add_printf(out,
				    "OK connections=%u requests=%" PRIu64 " errors=%" PRIu64 " refused=%" PRIu64
				    " snapshots_received=%" PRIu64 " accepted=%" PRIu64 " rejected=%" PRIu64
				    " superseded=%" PRIu64 " last_decode_ms=%.1f last_build_ms=%.1f"
				    " last_error_us=%" PRIu64 " last_error=\"%s\"\n",
				    srv->nconns, srv->requests, srv->errors, srv->refused, bs.received, bs.accepted,
				    bs.rejected, bs.superseded, bs.last_decode_ms, bs.last_build_ms, bs.last_error_us,
				    le);
	} else if (!strcmp(req->cmd, "shutdown")) {
		evbuffer_add_printf(out, "OK shutting down\n");
		tlog(LOG_INFO, "shutdown requested on the admin socket");
		/* Stop once the reply is written, so the caller sees it. */
		c->stop_after = 1;
		conn_finish(c);
	} else if (!strcmp(req->cmd, "reload")) {
		char err[SNAP_ERR_LEN];
		if (!srv->reload)
			query_error(out, "NOSOURCE", "no --load or state file to reload from");
		else if (srv->reload(srv->reload_arg, err))
			query_error(out, "RELOAD", "%s", err);
		else
			evbuffer_add_printf(out, "OK reloaded\n");
	} else {
		query_error(out, "UNKNOWN", "unknown command; admin commands: stats reload shutdown, and every query");
	}
}

static void handle_line(struct conn *c, char *line, size_t len, struct evbuffer *out)
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
		return;
	}
	struct fabric *f = store_get(srv->st);
	enum query_result r = query_answer(f, &req, out);
	fabric_put(f);
	if (r == QUERY_CLOSE) {
		conn_finish(c);
		return;
	}
	if (r == QUERY_UNKNOWN) {
		if (c->kind == CONN_ADMIN) {
			answer_admin(c, &req, out);
		} else if (!strcmp(req.cmd, "stats") || !strcmp(req.cmd, "shutdown") || !strcmp(req.cmd, "reload")) {
			srv->errors++;
			query_error(out, "DENIED", "%s is only available on the admin socket", req.cmd);
		} else {
			srv->errors++;
			query_error(out, "UNKNOWN", "unknown command; try help");
		}
	}
}

static void line_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev), *out = bufferevent_get_output(bev);
	while (!c->closing) {
		if (evbuffer_get_length(out) > OUT_HIGH) {
			/* Back-pressure: resume from the write callback. */
			bufferevent_disable(bev, EV_READ);
			return;
		}
		struct evbuffer_ptr eol = evbuffer_search_eol(in, NULL, NULL, EVBUFFER_EOL_LF);
		if (eol.pos < 0) {
			if (evbuffer_get_length(in) > PROTO_LINE_MAX) {
				c->srv->errors++;
				query_error(out, "TOOLONG", "request line longer than %d bytes", PROTO_LINE_MAX);
				char sample[64];
				size_t n = evbuffer_copyout(in, sample, sizeof(sample) - 1);
				char clean[64];
				tlog(LOG_WARN, "%s: request line too long, closing; it began \"%s\"", c->peer,
				     log_clean(sample, n, clean, sizeof(clean)));
				conn_finish(c);
			}
			return;
		}
		if ((size_t)eol.pos > PROTO_LINE_MAX) {
			c->srv->errors++;
			query_error(out, "TOOLONG", "request line longer than %d bytes", PROTO_LINE_MAX);
			conn_finish(c);
			return;
		}
		size_t len;
		char *line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF);
		if (!line)
			return;
		/* evbuffer_readln stops at an embedded NUL only in its length,
		 * not its scan; len is authoritative. */
		handle_line(c, line, len, out);
		free(line);
	}
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
	if (c->kind != CONN_INGEST && left <= OUT_HIGH / 2 && !(bufferevent_get_enabled(bev) & EV_READ)) {
		bufferevent_enable(bev, EV_READ);
		line_read_cb(bev, c);
	}
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	if (what & BEV_EVENT_TIMEOUT) {
		if (c->kind == CONN_INGEST)
			tlog(LOG_WARN, "%s: ingest timed out after %zu of %zu bytes", c->peer, c->have, c->want);
		else
			evbuffer_add_printf(bufferevent_get_output(bev), "ERR IDLE closing idle connection\n");
		/* A timeout disables reading; flush what we have and go. */
		conn_finish(c);
		return;
	}
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		if (c->kind == CONN_INGEST && c->want && c->have < c->want)
			tlog(LOG_WARN, "%s: producer closed after %zu of %zu bytes; snapshot dropped", c->peer,
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

static void ingest_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct server *srv = c->srv;
	if (!c->want) {
		if (evbuffer_get_length(in) < SNAP_HEADER_LEN)
			return;
		uint8_t hdr[SNAP_HEADER_LEN];
		evbuffer_copyout(in, hdr, sizeof(hdr));
		uint64_t plen = 0;
		char err[SNAP_ERR_LEN];
		int bad = snap_peek_header(hdr, sizeof(hdr), &plen, err);
		if (!bad && plen > srv->cfg.max_snapshot) {
			snprintf(err, sizeof(err), "snapshot of %" PRIu64 " bytes exceeds max_snapshot %" PRIu64, plen,
				 srv->cfg.max_snapshot);
			bad = 1;
		}
		if (bad) {
			tlog(LOG_ERR, "rejected snapshot from ingest %s: %s", c->peer, err);
			builder_note_rejected(srv->b, err);
			evbuffer_add_printf(bufferevent_get_output(bev), "ERR INVALID %s\n", err);
			conn_finish(c);
			return;
		}
		c->want = SNAP_HEADER_LEN + (size_t)plen;
		c->buf = malloc(c->want);
		if (!c->buf) {
			evbuffer_add_printf(bufferevent_get_output(bev), "ERR NOMEM cannot buffer %zu bytes\n", c->want);
			conn_finish(c);
			return;
		}
	}
	size_t n = evbuffer_remove(in, c->buf + c->have, c->want - c->have);
	c->have += n;
	if (c->have < c->want)
		return;
	if (evbuffer_get_length(in)) {
		evbuffer_add_printf(bufferevent_get_output(bev), "ERR INVALID bytes after the snapshot\n");
		conn_finish(c);
		return;
	}
	bufferevent_disable(bev, EV_READ);
	struct ingest_job *j = calloc(1, sizeof(*j));
	if (!j) {
		evbuffer_add_printf(bufferevent_get_output(bev), "ERR NOMEM\n");
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
	builder_submit(srv->b, j);
}

/* ---- listeners ----------------------------------------------------------- */

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
		      void *arg, enum conn_kind kind)
{
	struct server *srv = arg;
	if (kind != CONN_INGEST && srv->nconns >= srv->cfg.max_conns) {
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
	c->bev = bev;
	c->kind = kind;
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
		bufferevent_setcb(bev, ingest_read_cb, conn_write_cb, conn_event_cb, c);
		tv.tv_sec = srv->cfg.ingest_timeout_s;
	} else {
		srv->nconns++;
		bufferevent_setcb(bev, line_read_cb, conn_write_cb, conn_event_cb, c);
		tv.tv_sec = srv->cfg.idle_timeout_s;
	}
	tv.tv_usec = 0;
	bufferevent_set_timeouts(bev, &tv, NULL);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
}

static void accept_query(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int n, void *a)
{
	accept_cb(l, fd, sa, n, a, CONN_QUERY);
}

static void accept_admin(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int n, void *a)
{
	accept_cb(l, fd, sa, n, a, CONN_ADMIN);
}

static void accept_ingest(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int n, void *a)
{
	accept_cb(l, fd, sa, n, a, CONN_INGEST);
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
	struct sink k;
	char spec[SINK_ADDR_LEN + 8];
	snprintf(spec, sizeof(spec), "tcp:%s", hostport);
	/* Port 0 (any free port, for tests) is valid here, unlike for a sink. */
	int any = 0;
	size_t l = strlen(spec);
	if (l >= 2 && !strcmp(spec + l - 2, ":0")) {
		any = 1;
		spec[l - 1] = '1';
	}
	if (sink_parse_addr(spec, &k, err))
		return NULL;
	if (any)
		snprintf(k.port, sizeof(k.port), "0");
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *res;
	int gai = getaddrinfo(k.host, k.port, &hints, &res);
	if (gai) {
		snprintf(err, SNAP_ERR_LEN, "%.120s: %s", hostport, gai_strerror(gai));
		return NULL;
	}
	struct evconnlistener *lst = evconnlistener_new_bind(
		srv->base, cb, srv, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 512,
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
	if (srv->reload(srv->reload_arg, err))
		tlog(LOG_WARN, "SIGHUP: reload failed: %s", err);
	else
		tlog(LOG_INFO, "SIGHUP: reloading the snapshot source");
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;
	tlog(LOG_INFO, "signal %d: shutting down", (int)sig);
	event_base_loopexit(srv->base, NULL);
}

struct server *server_new(const struct server_config *cfg, struct store *st, struct builder *b,
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
	srv->st = st;
	srv->b = b;
	pthread_mutex_init(&srv->done_lock, NULL);
	srv->base = event_base_new();
	if (!srv->base) {
		snprintf(err, SNAP_ERR_LEN, "event_base_new failed");
		goto bad;
	}
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
	return event_base_dispatch(srv->base) < 0 ? -1 : 0;
}

void server_free(struct server *srv)
{
	if (!srv)
		return;
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
	free(srv);
}
