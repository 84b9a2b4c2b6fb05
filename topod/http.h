/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * http.h - topod's HTTP endpoint (--http ADDR:PORT; off by default):
 * /metrics in the Prometheus text format, the web view at / (one page
 * compiled into the binary, topod/web/index.html) and /api/COMMAND, the
 * query protocol's read-only commands answered as JSON. docs/metrics.md and
 * docs/admin-guide.md ("Metrics and the web view") describe it.
 *
 * libevent's evhttp on the server's loop: the loop parses the request,
 * takes a copy of the counters or a fabric reference (lookups), and hands
 * every answer that needs computing to the worker pool, which renders the
 * metrics or runs the command and writes its JSON; the loop only sends the
 * finished body. The same rules as the TCP query port: read-only (GET and
 * HEAD; no admin verb is reachable), bounded clients, request size and
 * reply size, the worker pool's memory budget and deadline, and every bad
 * request a 4xx naming what was wrong.
 */
#ifndef TOPOD_HTTP_H
#define TOPOD_HTTP_H

#include <stdint.h>

#include "server.h"

struct http_config {
	const char *addr;           /* "ADDR:PORT", "[V6]:PORT" */
	unsigned max_conns;         /* requests answered at once (more: 503); 2x as many sockets */
	unsigned per_peer;          /* sockets one address may hold waiting for a request */
	unsigned header_timeout_s;  /* a request's line and headers must arrive within this */
	unsigned body_timeout_s;    /* and its body within this of them */
	unsigned timeout_s;         /* kept-alive connection idle, or a reply not read */
	unsigned request_timeout_s; /* deadline of a worker job, 0: none */
	uint64_t max_reply;         /* largest body sent; more is 413 */
	int slurm;                  /* /api/job?id=N runs squeue (--http-slurm) */
	uint64_t out_budget;        /* replies not yet written, all clients; past it 503 (0: none) */
	const char *hosts;          /* --http-host: names a Host header may give, comma-separated; NULL: the defaults */
};

#define HTTP_DEFAULT_CONNS 64
#define HTTP_DEFAULT_TIMEOUT 30
#define HTTP_DEFAULT_PER_PEER 8
#define HTTP_DEFAULT_HEADER_TIMEOUT 10
#define HTTP_DEFAULT_BODY_TIMEOUT 10
#define HTTP_DEFAULT_MAX_REPLY (64u << 20)
#define HTTP_HOSTS_MAX 16

struct http;

/* Binds cfg->addr on srv's loop. planes are the server's (names and
 * stores); NULL with err set on failure. */
struct http *http_new(const struct http_config *cfg, struct server *srv, const struct server_plane *planes,
		      int nplanes, char err[SNAP_ERR_LEN]);
/* The bound port (useful with port 0). */
int http_port(const struct http *h);
/* Stops listening and drops every client; jobs still on the pool free
 * themselves when they finish. Call before server_free(). NULL: no-op. */
void http_free(struct http *h);

#endif
