/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * http_gate.h - who gets a socket on topod's HTTP port, and for how long
 * (docs/admin-guide.md, "Metrics and the web view").
 *
 * evhttp says nothing of a connection until its whole request has arrived,
 * so a crowd that opens connections and never finishes a request would, if
 * every socket were kept until a timeout, keep a complete request from
 * ever being read (slowloris). The gate sits on evhttp's hooks (the
 * bufferevent of every accepted socket, and the bytes added to its input)
 * and keeps every socket in one of these states:
 *
 *   HEAD     the request line and headers are arriving: they must be
 *            complete within header_s of the accept (or of the request's
 *            first byte on a kept-alive connection): nginx's
 *            client_header_timeout, measured from the start, so that a
 *            byte now and then does not extend it;
 *   BODY     the blank line has arrived, a body is being read: within
 *            body_s of the head (client_body_timeout; a body is at most
 *            4 KiB here, so the whole of it);
 *   SERVING  evhttp handed the request over, until its reply is written;
 *   IDLE     kept alive after a reply, no byte of the next request yet:
 *            closed after idle_s (keepalive_timeout).
 *
 * HEAD, BODY and IDLE sockets are waiting for their client. One address
 * (an IPv6 /64) may have at most per_peer of them: past that its oldest
 * is closed. All sockets together are at most max_socks: past that the
 * oldest waiting socket anywhere is closed. The judgement is made after
 * the new sockets' first read, so that a client whose whole request came
 * with its connection is SERVING by then and never chosen. A complete
 * request is therefore never kept out by incomplete ones: only when every
 * socket is SERVING does the listener stop accepting until one is done.
 *
 * The end of the head is found by looking for an empty line in the bytes
 * as they arrive (CRLF or LF, as evhttp reads lines); nothing else of the
 * request is parsed here.
 */
#ifndef TOPOD_HTTP_GATE_H
#define TOPOD_HTTP_GATE_H

#include <stdint.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

struct hgate_config {
	unsigned max_socks;  /* sockets at once */
	unsigned per_peer;   /* waiting sockets of one address */
	unsigned header_s;   /* HEAD deadline */
	unsigned body_s;     /* BODY deadline */
	unsigned idle_s;     /* IDLE deadline */
	size_t read_max;     /* what one socket may have read and not parsed */
};

/* Why sockets were closed (topod_http_cut_total{reason}). */
enum { HG_CUT_HEADER, HG_CUT_BODY, HG_CUT_IDLE, HG_CUT_PEER, HG_CUT_FULL, HG_CUTS };
extern const char *const hgate_cut_names[HG_CUTS];

struct hgate_stats {
	unsigned socks, waiting, serving;
	uint64_t cut[HG_CUTS];
};

struct hgate;

/* NULL on ENOMEM. listener is evhttp's (evhttp_bound_socket_get_listener). */
struct hgate *hgate_new(struct event_base *base, struct evconnlistener *listener, const struct hgate_config *cfg);
/* For evhttp_set_bevcb: the bufferevent of a socket just accepted. */
struct bufferevent *hgate_accept(struct event_base *base, void *gate);
/* evhttp handed req over: its socket is SERVING. Returns how many are. */
unsigned hgate_begin(struct hgate *g, struct evhttp_request *req);
/* req's reply is written: its socket waits for the next request. */
void hgate_end(struct hgate *g, struct evhttp_request *req);
/* evhttp closed a connection: look at the sockets soon. */
void hgate_poke(struct hgate *g);
void hgate_get_stats(struct hgate *g, struct hgate_stats *st);
/* After evhttp_free(): drops the sockets' last references. NULL: no-op. */
void hgate_free(struct hgate *g);

#endif
