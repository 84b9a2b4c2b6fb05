/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * server_ingest.c - snapshot producers: who may connect, the key's
 * challenge and proof (auth.h), the bytes collected and handed to the
 * builder, and its verdict sent back.
 */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "delta.h"
#include "log.h"
#include "sink.h"
#include "util.h"
#include "server_impl.h"

/* What one read takes from a producer once its header is in. */
#define INGEST_READ_MAX ((size_t)4 << 20)

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

void notify_cb(evutil_socket_t fd, short what, void *arg)
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

void linger_cb(evutil_socket_t fd, short what, void *arg)
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
int ingest_trusted(const struct conn *c)
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
	ingest_buf_free(c);
	c->draining = 1;
	/* The drain reads through the bufferevent, whose reading the direct
	 * read turned off (ingest_complete's checks refuse after it). */
	ingest_direct_stop(c);
	bufferevent_enable(c->bev, EV_READ);
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
	c->is_delta = is_delta;
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
	j->first_us = c->first_us;
	j->done_us = util_now_us();
	c->buf = NULL;
	c->fed = 0; /* the job's now: its decode takes what the builder made */
	j->persist = 1;
	snprintf(j->source, sizeof(j->source), "ingest %s", c->peer);
	j->done = ingest_done;
	j->arg = c;
	c->refs++;
	builder_submit(srv->plane[c->plane].b, j);
}

/* Room in c->buf for take more bytes, grown by doubling up to c->want:
 * memory follows the bytes that arrived, never the header's claim (a
 * producer that announces 8 GiB and sends 64 bytes costs 64 bytes).
 * 0, or -1 when refused. */
static int ingest_room(struct conn *c, size_t take)
{
	if (c->have + take <= c->cap)
		return 0;
	/* A delta arrives into the last one's buffer, kept mapped
	 * (snap_bytes_keep), when that holds it whole: memory already held,
	 * so the header's claim costs nothing more. */
	uint8_t *kept = !c->buf && c->is_delta ? snap_bytes_take(c->want) : NULL;
	if (kept) {
		c->buf = kept;
		c->cap = c->want;
		return 0;
	}
	size_t cap = c->cap ? c->cap : 1 << 16;
	while (cap < c->have + take)
		cap *= 2;
	if (cap > c->want)
		cap = c->want;
	uint8_t *nb = snap_bytes_realloc(c->buf, cap);
	if (!nb) {
		ingest_refuse(c, "NOMEM", "cannot buffer the snapshot");
		return -1;
	}
	c->buf = nb;
	c->cap = cap;
	return 0;
}

/* Every SNAP_EARLY_STEP of a full snapshot received: its tables copied
 * meanwhile by the builder (builder_feed), which needs a buffer that no
 * longer moves: grown to the whole snapshot once, when the builder can
 * take it (glibc moves a large block's pages, it does not copy them;
 * only those written are touched). Otherwise room made for its tables. */
static void ingest_step(struct conn *c)
{
	struct builder *b = c->srv->plane[c->plane].b;
	c->room = c->have;
	if (!c->fed && c->cap != c->want && !builder_feeding(b)) {
		uint8_t *nb = snap_bytes_realloc(c->buf, c->want);
		if (nb) {
			c->buf = nb;
			c->cap = c->want;
		}
	}
	if (c->cap == c->want && !builder_feed(b, c->buf, c->have))
		c->fed = 1;
	else
		builder_make_room(b, c->room);
}

/* got bytes were stored at c->buf + c->have. */
static void ingest_took(struct conn *c, size_t got)
{
	if (c->auth == IA_PROVEN)
		snap_auth_body_update(&c->ia->body, c->buf + c->have, got);
	c->have += got;
}

/* One snapshot per connection: bytes already there after it refuse it. */
static void ingest_trailing(struct conn *c, size_t n)
{
	c->srv->ingest_trailing++;
	char why[96];
	snprintf(why, sizeof(why), "%zu bytes after the snapshot: one snapshot per connection", n);
	ingest_refuse(c, "INVALID", why);
}

void ingest_buf_free(struct conn *c)
{
	if (c->fed)
		builder_feed_drop(c->srv->plane[c->plane].b, c->buf);
	else
		free(c->buf);
	c->buf = NULL;
	c->fed = 0;
}

void ingest_direct_stop(struct conn *c)
{
	if (c->rd_ev) {
		event_free(c->rd_ev);
		c->rd_ev = NULL;
	}
}

/* The payload straight from the socket into c->buf. Through the
 * bufferevent every byte was copied twice, into libevent's 16 KiB chains
 * and out of them: a k=56 snapshot (195 MB) arrived in 750-770 ms over the
 * UNIX socket, read directly in 130-390 ms. Timeouts, EOF and errors go
 * to conn_event_cb as the bufferevent's would. */
static void ingest_direct_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	if (what & EV_TIMEOUT) {
		conn_event_cb(c->bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, c);
		return;
	}
	/* As much as is queued (FIONREAD), so that the buffer grows with what
	 * arrived; one byte when unknown, to see EOF. */
	int queued = 0;
	if (ioctl(fd, FIONREAD, &queued) < 0 || queued <= 0)
		queued = 1;
	size_t take = c->want - c->have;
	if (take > (size_t)queued)
		take = (size_t)queued;
	if (take > INGEST_READ_MAX)
		take = INGEST_READ_MAX;
	if (ingest_room(c, take))
		return;
	ssize_t got = recv(fd, c->buf + c->have, take, 0);
	if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (got <= 0) {
		conn_event_cb(c->bev, BEV_EVENT_READING | (got ? BEV_EVENT_ERROR : BEV_EVENT_EOF), c);
		return;
	}
	ingest_took(c, (size_t)got);
	if (c->have < c->want) {
		if (!c->is_delta && c->have - c->room >= SNAP_EARLY_STEP)
			ingest_step(c);
		return;
	}
	int more = 0;
	if (ioctl(fd, FIONREAD, &more) == 0 && more > 0) {
		ingest_trailing(c, (size_t)more);
		return;
	}
	ingest_direct_stop(c);
	ingest_complete(c);
}

/* Reads the rest of the payload past the bufferevent (ingest_direct_cb),
 * with the ingest timeout; where libevent cannot, the bufferevent goes on. */
static void ingest_direct_start(struct conn *c)
{
	struct timeval tv = { c->srv->cfg.ingest_timeout_s, 0 };
	c->rd_ev = event_new(c->srv->base, bufferevent_getfd(c->bev), EV_READ | EV_PERSIST, ingest_direct_cb, c);
	if (!c->rd_ev)
		return;
	if (event_add(c->rd_ev, c->srv->cfg.ingest_timeout_s ? &tv : NULL)) {
		ingest_direct_stop(c);
		return;
	}
	bufferevent_disable(c->bev, EV_READ);
}

void ingest_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	if (c->draining) {
		evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
	if (!c->first_us)
		c->first_us = util_now_us();
	if (!c->want && ingest_opening(c, in))
		return;
	size_t avail = evbuffer_get_length(in), take = avail < c->want - c->have ? avail : c->want - c->have;
	if (ingest_room(c, take))
		return;
	ingest_took(c, (size_t)evbuffer_remove(in, c->buf + c->have, take));
	if (c->have < c->want) {
		ingest_direct_start(c);
		return;
	}
	if (evbuffer_get_length(in)) {
		ingest_trailing(c, evbuffer_get_length(in));
		return;
	}
	ingest_complete(c);
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

void accept_ingest(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int n, void *a)
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
