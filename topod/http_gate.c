/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * http_gate.c - see http_gate.h. On the event loop only.
 */
#include "http_gate.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <time.h>

#include <event2/buffer.h>


const char *const hgate_cut_names[HG_CUTS] = { "header_timeout", "body_timeout", "idle_timeout", "per_peer",
					       "full" };

/* HS_GONE: cut, not yet let go of by evhttp (not expected). */
enum hs_state { HS_HEAD, HS_BODY, HS_SERVING, HS_IDLE, HS_GONE };

struct hsock {
	struct hgate *g;
	struct bufferevent *bev;            /* our reference; evhttp holds its own while it uses it */
	struct evbuffer_cb_entry *in_cb;
	uint64_t since_ns;                  /* when the current state began */
	uint64_t born_ns;                   /* accepted */
	uint8_t served;                     /* a request of it was answered */
	uint8_t got;                        /* some bytes arrived */
	uint8_t rank;                       /* the order of cutting within an address (limit_peers) */
	uint8_t state;                      /* enum hs_state */
	uint8_t eol;                        /* the empty-line scanner: 0 in a line, 1 at a line's start, 2 and CR */
	uint8_t have_peer;
	uint8_t peer[16];                   /* IPv4 (mapped) or the /64 of IPv6 */
	struct hsock *prev, *next;
};

struct hgate {
	struct hgate_config cfg;
	struct event_base *base;
	struct evconnlistener *listener;
	struct event *tick_ev;  /* deadlines, once a quarter second while sockets are open */
	struct event *judge_ev; /* limits, after the new sockets' first read */
	struct hsock *socks;
	unsigned nsocks, nserving;
	unsigned round;         /* accepted since the limits were last applied */
	int gated;              /* the listener is disabled */
	uint64_t cut[HG_CUTS];
};

/* Accepted in one go before the limits are applied: the listener accepts
 * everything queued in one callback, so this bounds what a burst costs
 * until then. */
#define HG_BURST 64
#define TICK_US 250000
#define HG_GRACE_NS 200000000u

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void set_state(struct hsock *k, enum hs_state s)
{
	k->g->nserving += (s == HS_SERVING) - (k->state == HS_SERVING);
	k->state = (uint8_t)s;
	k->since_ns = now_ns();
	k->eol = 0;
}

/* Feeds bytes to the empty-line scanner; 1 once the head is complete. */
static int scan(struct hsock *k, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n') {
			if (k->eol)
				return 1;
			k->eol = 1;
		} else {
			k->eol = p[i] == '\r' && k->eol == 1 ? 2 : 0;
		}
	}
	return 0;
}

/* The bytes of b from off on, through the scanner: HEAD becomes BODY at
 * the empty line. */
static void scan_from(struct hsock *k, struct evbuffer *b, size_t off)
{
	struct evbuffer_ptr p;
	if (evbuffer_ptr_set(b, &p, off, EVBUFFER_PTR_SET))
		return;
	struct evbuffer_iovec v[8];
	for (;;) {
		int n = evbuffer_peek(b, -1, &p, v, 8), m = n < 8 ? n : 8;
		size_t seen = 0;
		for (int i = 0; i < m; i++) {
			if (scan(k, v[i].iov_base, v[i].iov_len)) {
				set_state(k, HS_BODY);
				return;
			}
			seen += v[i].iov_len;
		}
		if (n <= 8 || evbuffer_ptr_set(b, &p, seen, EVBUFFER_PTR_ADD))
			return;
	}
}

/* Every change to a socket's input: the request's first byte ends IDLE,
 * and new bytes of a head are scanned for its end. */
static void input_cb(struct evbuffer *b, const struct evbuffer_cb_info *info, void *arg)
{
	struct hsock *k = arg;
	if (!info->n_added || (k->state != HS_HEAD && k->state != HS_IDLE))
		return;
	k->got = 1;
	if (k->state == HS_IDLE)
		set_state(k, HS_HEAD);
	size_t len = evbuffer_get_length(b);
	scan_from(k, b, len > info->n_added ? len - info->n_added : 0);
}

static void unlink_sock(struct hgate *g, struct hsock *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else
		g->socks = k->next;
	if (k->next)
		k->next->prev = k->prev;
	if (k->state == HS_SERVING)
		g->nserving--;
	g->nsocks--;
	evbuffer_remove_cb_entry(bufferevent_get_input(k->bev), k->in_cb);
	bufferevent_decref(k->bev); /* the last reference: closes the socket */
	free(k);
}

/* evhttp clears a bufferevent's callbacks when it frees the connection. */
static int released(const struct hsock *k)
{
	bufferevent_data_cb r, w;
	bufferevent_event_cb e;
	void *arg;
	bufferevent_getcb(k->bev, &r, &w, &e, &arg);
	return !r && !w && !e;
}

static void sweep(struct hgate *g)
{
	for (struct hsock *k = g->socks, *next; k; k = next) {
		next = k->next;
		if (released(k))
			unlink_sock(g, k);
	}
}

/* Closes a waiting socket, first telling its client why when nothing else
 * is on its way to it. evhttp frees the connection as it would at its own
 * read timeout (a waiting socket has no request of ours in flight). */
static void cut(struct hgate *g, struct hsock *k, int why)
{
	static const char timeout[] = "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
	static const char full[] = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
	evutil_socket_t fd = bufferevent_getfd(k->bev);
	g->cut[why]++;
	if (fd >= 0 && why != HG_CUT_IDLE && !evbuffer_get_length(bufferevent_get_output(k->bev))) {
		const char *m = why == HG_CUT_HEADER || why == HG_CUT_BODY ? timeout : full;
		ssize_t w = send(fd, m, strlen(m), MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)w;
	}
	if (!released(k))
		bufferevent_trigger_event(k->bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, 0);
	if (released(k)) {
		unlink_sock(g, k);
	} else {
		/* Not expected: then evhttp reads the end of file. */
		set_state(k, HS_GONE);
		if (fd >= 0)
			shutdown(fd, SHUT_RDWR);
	}
}

static int waiting(const struct hsock *k)
{
	return k->state != HS_SERVING && k->state != HS_GONE && !released(k);
}

/* The address a socket counts against: IPv4 as mapped IPv6, IPv6 by /64
 * (one host is given a /64 as readily as one IPv4 address). */
static void peer_of(struct hsock *k)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	evutil_socket_t fd = bufferevent_getfd(k->bev);
	memset(k->peer, 0, sizeof(k->peer));
	k->have_peer = 1;
	if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &sl))
		return;
	if (ss.ss_family == AF_INET) {
		k->peer[10] = k->peer[11] = 0xff;
		memcpy(k->peer + 12, &((struct sockaddr_in *)&ss)->sin_addr, 4);
	} else if (ss.ss_family == AF_INET6) {
		const uint8_t *a = ((struct sockaddr_in6 *)&ss)->sin6_addr.s6_addr;
		static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		memcpy(k->peer, a, memcmp(a, mapped, 12) ? 8 : 16);
	}
}

/* Waiting sockets by address; within each, in the order they are cut:
 * by rank (limit_peers), the oldest first. */
static int by_peer(const void *x, const void *y)
{
	const struct hsock *a = *(struct hsock *const *)x, *b = *(struct hsock *const *)y;
	int c = memcmp(a->peer, b->peer, sizeof(a->peer));
	if (c || a->rank != b->rank)
		return c ? c : a->rank - b->rank;
	return a->since_ns < b->since_ns ? -1 : a->since_ns > b->since_ns;
}

static int by_age(const void *x, const void *y)
{
	const struct hsock *a = *(struct hsock *const *)x, *b = *(struct hsock *const *)y;
	return a->since_ns < b->since_ns ? -1 : a->since_ns > b->since_ns;
}

/* Stops accepting while every socket is taken by a request being answered,
 * and after HG_BURST accepts until the new sockets have been read and the
 * limits applied (judge_cb, in the next round of the loop): the listener
 * takes everything queued in one go, and a crowd that reconnects as fast
 * as its connections are closed would keep it there, closing the socket
 * of a client that sent its request with its connection before the
 * request was read. Otherwise it accepts, whatever waits: a new socket
 * takes the place of the oldest waiting one past the ceiling
 * (hgate_accept), so that the kernel's accept queue does not fill and
 * drop a client's connection attempt (retried only a second later). */
static void gate(struct hgate *g)
{
	int full = g->round >= HG_BURST || (g->nsocks >= g->cfg.max_socks && g->nserving >= g->nsocks);
	if (full != g->gated)
		(full ? evconnlistener_disable : evconnlistener_enable)(g->listener);
	g->gated = full;
	struct timeval tv = { 0, TICK_US };
	if (g->nsocks && !evtimer_pending(g->tick_ev, NULL))
		evtimer_add(g->tick_ev, &tv);
}

/* A socket this young that has not yet sent a whole request is spared by
 * the limits (not by the ceiling): a client sends its request with its
 * connection, and a request taking two reads to arrive must not make its
 * socket the oldest one of a busy address. */
static int young(const struct hsock *k, uint64_t now)
{
	return !k->served && now - k->born_ns < HG_GRACE_NS;
}

/* Past per_peer waiting sockets of one address, its oldest ones are cut;
 * young ones that sent part of a request too past twice per_peer, so that
 * an address reopening them as fast as they are closed holds no more than
 * that; young ones that sent nothing yet (the request of a client on the
 * attacker's own address may be on its way) only at the ceiling
 * (hgate_accept). v: the waiting sockets, n; returns how many are kept in
 * v, and sets *spared when a young one was kept over the limit. */
static size_t limit_peers(struct hgate *g, struct hsock **v, size_t n, uint64_t now, int *spared)
{
	for (size_t i = 0; i < n; i++)
		v[i]->rank = !young(v[i], now) ? 0 : v[i]->got ? 1 : 2;
	qsort(v, n, sizeof(*v), by_peer);
	size_t kept = 0;
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && !memcmp(v[j]->peer, v[i]->peer, sizeof(v[i]->peer)); j++)
			;
		size_t left = j - i;
		for (size_t x = i; x < j; x++) {
			if (left > g->cfg.per_peer && (!v[x]->rank || (v[x]->rank == 1 && left > 2 * g->cfg.per_peer))) {
				cut(g, v[x], HG_CUT_PEER); /* frees v[x] */
				left--;
			} else {
				v[kept++] = v[x];
			}
		}
		*spared |= left > g->cfg.per_peer;
	}
	return kept;
}

/* The limits: per_peer waiting sockets per address, max_socks in all; the
 * oldest waiting ones go first, young ones only past the ceiling
 * (max_socks + HG_BURST, hgate_accept). */
static void judge_cb(evutil_socket_t fd, short what, void *arg)
{
	struct hgate *g = arg;
	g->round = 0;
	sweep(g);
	struct hsock **v = malloc(((size_t)g->nsocks + 1) * sizeof(*v));
	if (!v) {
		gate(g);
		return;
	}
	uint64_t now = now_ns();
	size_t n = 0;
	int spared = 0;
	for (struct hsock *k = g->socks; k; k = k->next)
		if (waiting(k)) {
			if (!k->have_peer)
				peer_of(k);
			v[n++] = k;
		}
	n = limit_peers(g, v, n, now, &spared);
	qsort(v, n, sizeof(*v), by_age);
	for (size_t i = 0; i < n && g->nsocks > g->cfg.max_socks; i++)
		if (!young(v[i], now))
			cut(g, v[i], HG_CUT_FULL);
	spared |= g->nsocks > g->cfg.max_socks && n;
	free(v);
	/* Once the spared ones have had their time. */
	struct timeval grace = { 0, HG_GRACE_NS / 1000 };
	if (spared)
		evtimer_add(g->judge_ev, &grace);
	gate(g);
}

/* The deadlines of waiting sockets. */
static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct hgate *g = arg;
	sweep(g);
	uint64_t now = now_ns();
	for (struct hsock *k = g->socks, *next; k; k = next) {
		next = k->next;
		uint64_t limit = k->state == HS_HEAD ? g->cfg.header_s : k->state == HS_BODY ? g->cfg.body_s
							   : k->state == HS_IDLE ? g->cfg.idle_s : 0;
		if (limit && now - k->since_ns > limit * 1000000000u)
			cut(g, k, k->state == HS_HEAD ? HG_CUT_HEADER : k->state == HS_BODY ? HG_CUT_BODY : HG_CUT_IDLE);
	}
	gate(g);
}

struct bufferevent *hgate_accept(struct event_base *base, void *arg)
{
	struct hgate *g = arg;
	struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	struct hsock *k = bev ? calloc(1, sizeof(*k)) : NULL;
	if (!k)
		return bev; /* evhttp closes the socket if bev is NULL too */
	k->g = g;
	k->bev = bev;
	k->in_cb = evbuffer_add_cb(bufferevent_get_input(bev), input_cb, k);
	if (!k->in_cb) {
		free(k);
		return bev;
	}
	/* Our reference keeps the bufferevent (and so the socket) until the
	 * sweep sees evhttp let go of it: that is how a socket's end is seen.
	 * Meanwhile it may go on reading: bound it to one request's worth. */
	bufferevent_setwatermark(bev, EV_READ, 0, g->cfg.read_max);
	bufferevent_incref(bev);
	k->state = HS_HEAD;
	k->since_ns = k->born_ns = now_ns();
	/* At the ceiling the oldest waiting socket makes room at once: the
	 * listener accepts all it has queued in one go. */
	struct hsock *old = NULL;
	for (struct hsock *x = g->socks; x && g->nsocks >= g->cfg.max_socks + HG_BURST; x = x->next)
		if (waiting(x) && (!old || x->since_ns < old->since_ns))
			old = x;
	if (old)
		cut(g, old, HG_CUT_FULL);
	k->next = g->socks;
	if (k->next)
		k->next->prev = k;
	g->socks = k;
	g->nsocks++;
	g->round++;
	/* After the next round of reads (a timer due now runs after them),
	 * also when one was set for later. */
	struct timeval zero = { 0, 0 };
	evtimer_add(g->judge_ev, &zero);
	gate(g);
	return bev;
}

static struct hsock *sock_of(struct hgate *g, struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
	for (struct hsock *k = g->socks; bev && k; k = k->next)
		if (k->bev == bev)
			return k;
	return NULL;
}

unsigned hgate_begin(struct hgate *g, struct evhttp_request *req)
{
	struct hsock *k = sock_of(g, req);
	if (k && k->state != HS_SERVING) {
		set_state(k, HS_SERVING);
		k->served = 1;
	}
	return g->nserving;
}

void hgate_end(struct hgate *g, struct evhttp_request *req)
{
	struct hsock *k = sock_of(g, req);
	if (!k || k->state != HS_SERVING)
		return;
	struct evbuffer *in = bufferevent_get_input(k->bev);
	/* Bytes of a next request that came meanwhile are its head. */
	set_state(k, evbuffer_get_length(in) ? HS_HEAD : HS_IDLE);
	if (k->state == HS_HEAD)
		scan_from(k, in, 0);
	gate(g);
}

void hgate_poke(struct hgate *g)
{
	struct timeval zero = { 0, 0 };
	if (g && !evtimer_pending(g->judge_ev, NULL))
		evtimer_add(g->judge_ev, &zero);
}

void hgate_get_stats(struct hgate *g, struct hgate_stats *st)
{
	sweep(g);
	st->socks = g->nsocks;
	st->serving = g->nserving;
	st->waiting = g->nsocks - g->nserving;
	memcpy(st->cut, g->cut, sizeof(st->cut));
}

struct hgate *hgate_new(struct event_base *base, struct evconnlistener *listener, const struct hgate_config *cfg)
{
	struct hgate *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->cfg = *cfg;
	if (!g->cfg.per_peer)
		g->cfg.per_peer = 1;
	g->base = base;
	g->listener = listener;
	g->tick_ev = evtimer_new(base, tick_cb, g);
	g->judge_ev = evtimer_new(base, judge_cb, g);
	if (!g->tick_ev || !g->judge_ev) {
		hgate_free(g);
		return NULL;
	}
	return g;
}

void hgate_free(struct hgate *g)
{
	if (!g)
		return;
	while (g->socks) {
		struct hsock *k = g->socks;
		g->socks = k->next;
		evbuffer_remove_cb_entry(bufferevent_get_input(k->bev), k->in_cb);
		bufferevent_decref(k->bev);
		free(k);
	}
	if (g->tick_ev)
		event_free(g->tick_ev);
	if (g->judge_ev)
		event_free(g->judge_ev);
	free(g);
}
