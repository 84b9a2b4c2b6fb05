/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * http_impl.h - what http.c shares with its renderers, which run on a
 * worker thread: http_metrics.c (the Prometheus text) and http_json.c (a
 * protocol reply as JSON).
 */
#ifndef TOPOD_HTTP_IMPL_H
#define TOPOD_HTTP_IMPL_H

#include <event2/buffer.h>

#include "http_gate.h"
#include "server.h"
#include "store.h"

/* The HTTP statuses counted (topod_http_requests_total{code}). */
enum { HS_200, HS_400, HS_404, HS_405, HS_413, HS_431, HS_500, HS_503, HS_504, HS_421, HS_CODES };
extern const int http_codes[HS_CODES];

/* Everything a scrape reports, copied on the loop. */
struct http_scrape {
	struct server_metrics m;
	const char *plane_name[TOPO_PLANES_MAX];
	struct fabric *f[TOPO_PLANES_MAX]; /* references, dropped with the job */
	uint64_t now_us;
	unsigned http_conns, http_waiting, http_max_conns;
	uint64_t http_cut[HG_CUTS];
	uint64_t http_refused, http_codes[HS_CODES], http_unsent;
};

/* Prometheus text exposition format 0.0.4 of sc into out. */
void http_render_metrics(const struct http_scrape *sc, struct evbuffer *out);

/* The protocol reply in `in` as JSON into out. Returns the HTTP status:
 * 200 for an OK reply, the status its ERR code maps to otherwise. */
int http_reply_json(struct evbuffer *in, struct evbuffer *out);
/* {"ok":false,"code":CODE,"error":TEXT} */
void http_json_error(struct evbuffer *out, const char *code, const char *text);
/* s as a JSON string, escaped. */
void http_json_string(struct evbuffer *out, const char *s, size_t n);

/* squeue lookups at once (each may hold a worker 10 s); more get 503. */
#define HTTP_SLURM_MAX 1
/* Whether id is a Slurm job ID (digits, or digits_digits). */
int http_job_id_ok(const char *id);
/* {"ok":true,"job":ID,"nodelist":LIST} from squeue, or the error; the
 * HTTP status. Blocks up to 10 s: on a worker only. */
int http_job_nodes(const char *id, struct evbuffer *out);

#endif
