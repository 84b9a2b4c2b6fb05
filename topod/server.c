/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * server.c - see server.h: the loop, its listeners and signals, and the
 * connections' life (accept, the clients' budget, close). What each
 * protocol does with its bytes is in its own file (server_impl.h).
 * libevent only: no topology knowledge lives here.
 */
#include "server_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/thread.h>

#include "estimate.h"
#include "log.h"
#include "util.h"

void conn_unref(struct conn *c)
{
	if (--c->refs > 0)
		return;
	ingest_buf_free(c);
	if (c->ia) {
		sodium_memzero(c->ia, sizeof(*c->ia));
		free(c->ia);
	}
	free(c);
}


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

void conn_close(struct conn *c)
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
	ingest_direct_stop(c);
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
void conn_finish(struct conn *c)
{
	c->closing = 1;
	ingest_direct_stop(c);
	bufferevent_disable(c->bev, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		conn_close(c);
}

/* ---- query and admin lines -------------------------------------------- */


void conn_event_cb(struct bufferevent *bev, short what, void *arg)
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

/* ---- listeners ----------------------------------------------------------- */

void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
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
	m->half_closed = srv->half_closed;
	m->watch_answered = srv->watch_answered;
	m->watch_timeouts = srv->watch_timeouts;
	m->client_in = srv->in_bytes;
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
	for (int i = 0; i < srv->nplanes; i++) {
		builder_get_stats(srv->plane[i].b, &m->plane[i]);
		if (i)
			builder_stats_add(&m->all, &m->plane[i]);
		else
			m->all = m->plane[0];
	}
	if (srv->pool) {
		pool_get_stats(srv->pool, &m->pool);
		m->workers = pool_threads(srv->pool);
	}
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
