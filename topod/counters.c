/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * counters.c - the one description of topod's counters (counters.h): the
 * `stats` line, the /metrics families and `topod --counters` are all
 * printed from these two tables, so that a name, its help and its value
 * cannot drift apart between them.
 */
#include "counters.h"

#include <inttypes.h>
#include <string.h>

#include <event2/buffer.h>

#include "log.h"

/* In the order /metrics renders them (its HELP text is this help). */
const struct metric_family metric_families[] = {
	{ "topod_build_info", "gauge", "always 1; the version in a label", "version", NULL },
	{ "topod_planes", "gauge", "fabric planes (subnets) served", NULL, NULL },
	{ "topod_generation", "gauge", "generation served (0: none yet)", "plane", NULL },
	{ "topod_generation_age_seconds", "gauge", "seconds since topod received the generation served", "plane", NULL },
	{ "topod_generation_build_seconds", "gauge", "seconds building the generation served took", "plane", NULL },
	{ "topod_hosts", "gauge", "hosts in the generation served", "plane", NULL },
	{ "topod_switches", "gauge", "switches in the generation served", "plane", NULL },
	{ "topod_links", "gauge", "cables in the generation served", "plane", NULL },
	{ "topod_links_down", "gauge", "cables whose either end is below Init (Down or Polling)", "plane", NULL },
	{ "topod_links_lost", "gauge", "cables fewer than the most a generation in the history had", "plane", NULL },
	{ "topod_link_lost", "gauge", "1 for each cable counted in topod_links_lost (at most 32), by both ends",
	  "plane a a_guid a_port b b_guid b_port", NULL },
	{ "topod_snapshots_accepted_total", "counter", "snapshots accepted and published", "plane", NULL },
	{ "topod_snapshots_superseded_total", "counter", "snapshots a newer one replaced before they were built", "plane",
	  NULL },
	{ "topod_generation_held", "gauge",
	  "the generation the shrink guard holds back, not served (0: none): admin `confirm G` serves it", "plane", NULL },
	{ "topod_snapshots_held_total", "counter",
	  "generations held back for reaching more than --shrink-guard fewer HCAs or switches than the served one",
	  "plane", NULL },
	{ "topod_snapshots_refused_total", "counter",
	  "snapshots refused, by reason: invalid (failed to decode, verify or build), denied (peer not allowed), "
	  "unsigned (no valid signature), truncated, trailing (bytes after the snapshot)",
	  "reason", "invalid denied unsigned truncated trailing" },
	{ "topod_deltas_applied_total", "counter", "snapshots received as deltas and applied", NULL, NULL },
	{ "topod_ingest_decode_seconds", "histogram", "decoding a snapshot, per generation served", NULL, NULL },
	{ "topod_build_seconds", "histogram", "building routes and hierarchy, per generation served", NULL, NULL },
	{ "topod_queries_total", "counter",
	  "requests answered, by command and outcome (refused: topod's limits, e.g. BUSY or TIMEOUT)", "command outcome",
	  NULL },
	{ "topod_query_duration_seconds", "histogram",
	  "request to reply, by where it was answered (loop: lookups; pool: the worker pool, queueing included)", "lane",
	  NULL },
	{ "topod_heavy_queued", "gauge", "requests waiting for a worker", NULL, NULL },
	{ "topod_heavy_running", "gauge", "requests on a worker", NULL, NULL },
	{ "topod_heavy_refused_total", "counter", "heavy requests refused, by reason", "reason", "busy toobig timeout" },
	{ "topod_clients_connected", "gauge", "query connections open", NULL, NULL },
	{ "topod_clients_max", "gauge", "query connections allowed (--max-conns)", NULL, NULL },
	{ "topod_clients_refused_total", "counter", "query connections refused: --max-conns reached", NULL, NULL },
	{ "topod_clients_cut_total", "counter", "query clients disconnected by the output limits, by limit", "limit",
	  "hard soft write_timeout budget" },
	{ "topod_admin_clients_connected", "gauge", "admin socket connections open", NULL, NULL },
	{ "topod_ingest_clients_connected", "gauge", "snapshot producers connected", NULL, NULL },
	{ "topod_watchers", "gauge", "clients parked in watch", NULL, NULL },
	{ "topod_http_clients_connected", "gauge", "HTTP connections open", NULL, NULL },
	{ "topod_http_clients_waiting", "gauge",
	  "HTTP connections without a whole request: arriving, or kept alive between requests", NULL, NULL },
	{ "topod_http_clients_max", "gauge",
	  "HTTP requests answered at once (--http-max-conns; twice as many connections)", NULL, NULL },
	{ "topod_http_clients_refused_total", "counter", "HTTP requests refused: --http-max-conns being answered", NULL,
	  NULL },
	{ "topod_http_cut_total", "counter",
	  "HTTP connections closed before a whole request, by reason: header_timeout, body_timeout "
	  "(--http-header-timeout, --http-body-timeout), idle_timeout (kept alive past --http-timeout), per_peer "
	  "(the address's oldest past --http-per-peer), full (the oldest anywhere past 2 x --http-max-conns)",
	  "reason", NULL },
	{ "topod_http_reply_bytes_unread", "gauge", "HTTP reply bytes not yet written to their clients", NULL, NULL },
	{ "topod_http_requests_total", "counter", "HTTP requests answered, by status code", "code", NULL },
	{ "topod_resident_memory_bytes", "gauge", "resident set size of the process", NULL, NULL },
	{ "topod_memory_warm_bytes", "gauge",
	  "bytes of the served generations' tables and indexes, of the copies the next deltas are applied to, and of "
	  "the free table chunks, last read to keep them mapped (--warm-interval; 0: off, or not yet)",
	  NULL, NULL },
	{ "topod_lft_pool_bytes", "gauge",
	  "the forwarding tables' memory, in 512-entry chunks shared between generations, by state: tables (held by "
	  "tables of any generation) and spare (free, kept for the next copies, and ready for them: --warm-interval)",
	  "state", NULL },
	{ "topod_request_memory_reserved_bytes", "gauge", "memory the requests on workers reserved by their estimates",
	  NULL, NULL },
	{ "topod_request_memory_budget_bytes", "gauge",
	  "what they may reserve together (--max-request-memory; 0: unbounded)", NULL, NULL },
	{ "topod_client_buffer_bytes", "gauge", "bytes all clients' unanswered input and unread replies hold", NULL,
	  NULL },
	{ "topod_client_buffer_budget_bytes", "gauge", "what they may hold together (--client-budget; 0: unbounded)",
	  NULL, NULL },
	{ "topod_reply_bytes_unread", "gauge", "reply bytes clients have not read yet", NULL, NULL },
	{ "topod_reply_budget_bytes", "gauge", "heavy requests are admitted below this (--output-budget)", NULL, NULL },
};
const size_t metric_family_count = sizeof(metric_families) / sizeof(metric_families[0]);

/* The key beside the field it shows, so that no two can be swapped; the
 * kind comes from the field's type. */
#define KIND(field)                                                                                                \
	_Generic(((struct server_metrics *)0)->field, unsigned: CK_UNS, int: CK_INT, uint64_t: CK_U64,            \
		 double: CK_MS, char *: CK_TEXT)
#define ROW(key, field, family, value, help)                                                                       \
	{ key, offsetof(struct server_metrics, field), KIND(field), family, value, 0, help }
/* One per plane on /metrics, summed over them (builder_stats_add) in `stats`. */
#define PLANE_ROW(key, field, family)                                                                              \
	{ key, offsetof(struct server_metrics, all.field), KIND(all.field), family, NULL, 1, NULL }
#define STAT(key, field, help) ROW(key, field, NULL, NULL, help)

/* In the order of the `stats` line (a reply scripts parse: append only).
 * The counters over every plane are summed; the times are plane 0's and
 * the last error the newest. */
const struct counter counters[] = {
	ROW("connections", conns, "topod_clients_connected", NULL, NULL),
	ROW("admin_connections", admin_conns, "topod_admin_clients_connected", NULL, NULL),
	ROW("max_conns", max_conns, "topod_clients_max", NULL, NULL),
	STAT("requests", requests, "request lines read on the query port and the admin socket"),
	STAT("errors", errors, "requests answered ERR"),
	ROW("refused", refused, "topod_clients_refused_total", NULL, NULL),
	ROW("reply_bytes_unread", out_pending, "topod_reply_bytes_unread", NULL, NULL),
	ROW("cut_hard", cut_hard, "topod_clients_cut_total", "hard", "clients cut off past --output-limit"),
	ROW("cut_soft", cut_soft, "topod_clients_cut_total", "soft", "clients cut off past --output-soft-limit"),
	ROW("cut_write_timeout", cut_write, "topod_clients_cut_total", "write_timeout",
	    "clients cut off reading nothing for --write-timeout"),
	ROW("toobig", toobig, "topod_heavy_refused_total", "toobig", "replies refused for passing --output-limit"),
	ROW("busy_heavy", busy_heavy, "topod_heavy_refused_total", "busy", "heavy requests refused ERR BUSY"),
	STAT("half_closed", half_closed, "clients that closed their sending side first, answered before closing"),
	ROW("heavy_queued", pool.queued, "topod_heavy_queued", NULL, NULL),
	ROW("heavy_running", pool.running, "topod_heavy_running", NULL, NULL),
	STAT("heavy_done", pool.completed, "requests the worker pool finished"),
	STAT("workers", workers, "the worker pool's threads (--threads)"),
	ROW("ingest_connections", ingest_conns, "topod_ingest_clients_connected", NULL, NULL),
	ROW("ingest_denied", ingest_denied, "topod_snapshots_refused_total", "denied",
	    "ingest connections refused: the UNIX peer is not allowed"),
	ROW("ingest_unsigned", ingest_unsigned, "topod_snapshots_refused_total", "unsigned",
	    "snapshots refused without a valid signature"),
	ROW("ingest_truncated", ingest_truncated, "topod_snapshots_refused_total", "truncated",
	    "snapshots that ended before their length"),
	ROW("ingest_trailing", ingest_trailing, "topod_snapshots_refused_total", "trailing",
	    "snapshots refused for bytes after their end"),
	STAT("snapshots_received", all.received, "snapshots and deltas the builders received"),
	PLANE_ROW("accepted", accepted, "topod_snapshots_accepted_total"),
	ROW("rejected", all.rejected, "topod_snapshots_refused_total", "invalid",
	    "snapshots refused: failed to decode, verify, apply or build, stale, or empty"),
	PLANE_ROW("superseded", superseded, "topod_snapshots_superseded_total"),
	ROW("deltas", all.deltas, "topod_deltas_applied_total", NULL, NULL),
	ROW("planes", nplanes, "topod_planes", NULL, NULL),
	ROW("watching", watching, "topod_watchers", NULL, NULL),
	STAT("watch_answered", watch_answered, "watch requests answered with a newer generation"),
	STAT("watch_timeouts", watch_timeouts, "watch requests answered at their timeout, unchanged"),
	STAT("last_decode_ms", all.last_decode_ms, "decoding the last snapshot took, ms"),
	STAT("last_build_ms", all.last_build_ms, "building the last generation took, ms"),
	STAT("last_error_us", all.last_error_us, "when the last snapshot was refused, us since the epoch (0: never)"),
	STAT("last_error", all.last_error, "why it was refused"),
	STAT("journal_quarantined", all.journal_quarantined,
	     "the state directory's journal entries renamed aside at start"),
	STAT("journal_full_writes", all.journal_full_writes, "deltas written whole: their base was not on disk"),
	STAT("not_durable", all.not_durable, "snapshots answered OK G not-durable"),
	STAT("journal_last", all.journal_last, "the last quarantine's reason"),
	STAT("heavy_light_queued", pool.light_queued, "light-lane requests waiting for a worker"),
	STAT("heavy_light_done", pool.light_done, "light-lane requests finished"),
	ROW("heavy_reserved", pool.reserved, "topod_request_memory_reserved_bytes", NULL, NULL),
	ROW("max_request_memory", pool.budget, "topod_request_memory_budget_bytes", NULL, NULL),
	ROW("heavy_toobig", heavy_toobig, "topod_heavy_refused_total", "toobig",
	    "heavy requests whose estimate one request could never hold"),
	STAT("heavy_expired", pool.expired, "heavy requests past --request-timeout before a worker took them"),
	STAT("heavy_cancelled", pool.stopped, "heavy requests stopped on a worker past --request-timeout"),
	ROW("heavy_timeouts", heavy_timeouts, "topod_heavy_refused_total", "timeout",
	    "heavy requests answered ERR TIMEOUT"),
	STAT("client_input_bytes", client_in, "bytes of clients' input not answered yet"),
	ROW("client_bytes", client_bytes, "topod_client_buffer_bytes", NULL, NULL),
	ROW("client_budget", client_budget, "topod_client_buffer_budget_bytes", NULL, NULL),
	ROW("cut_budget", cut_budget, "topod_clients_cut_total", "budget",
	    "clients cut off, largest first, past --client-budget"),
	STAT("ambiguous_names", all.ambiguous_names,
	     "CAs of the served generations named by GUID: another CA has their hostname and HCA label"),
	STAT("ambiguous_example", all.ambiguous_example, "one such name, \"host label\""),
	ROW("warm_bytes", all.warm_bytes, "topod_memory_warm_bytes", NULL, NULL),
	STAT("warm_ms", all.warm_ms, "reading them took, ms"),
	/* /metrics only */
	ROW(NULL, out_budget, "topod_reply_budget_bytes", NULL, NULL),
	PLANE_ROW(NULL, held_gen, "topod_generation_held"),
	PLANE_ROW(NULL, held_total, "topod_snapshots_held_total"),
};
const size_t counter_count = sizeof(counters) / sizeof(counters[0]);

const struct metric_family *metric_family_find(const char *name)
{
	for (size_t i = 0; i < metric_family_count; i++)
		if (!strcmp(metric_families[i].name, name))
			return &metric_families[i];
	return NULL;
}

void counters_stats(const struct server_metrics *m, struct evbuffer *out)
{
	for (size_t i = 0; i < counter_count; i++) {
		const struct counter *f = &counters[i];
		const char *p = (const char *)m + f->off;
		char clean[SNAP_ERR_LEN];
		if (!f->key)
			continue;
		switch (f->kind) {
		case CK_UNS: evbuffer_add_printf(out, " %s=%u", f->key, *(const unsigned *)p); break;
		case CK_INT: evbuffer_add_printf(out, " %s=%d", f->key, *(const int *)p); break;
		case CK_U64: evbuffer_add_printf(out, " %s=%" PRIu64, f->key, *(const uint64_t *)p); break;
		case CK_MS: evbuffer_add_printf(out, " %s=%.1f", f->key, *(const double *)p); break;
		case CK_TEXT:
			log_clean(p, strnlen(p, SNAP_ERR_LEN), clean, sizeof(clean));
			evbuffer_add_printf(out, " %s=\"%s\"", f->key, clean);
			break;
		}
	}
}

/* Counter c's value in m, or in plane p's builder_stats when p >= 0 (its
 * field is in `all`, which has the same layout). A negative int (none is)
 * reads as 0 rather than wrap. */
static uint64_t value_of(const struct server_metrics *m, int p, const struct counter *c)
{
	const char *at = p < 0 ? (const char *)m + c->off
			       : (const char *)&m->plane[p] + (c->off - offsetof(struct server_metrics, all));
	switch (c->kind) {
	case CK_UNS: return *(const unsigned *)at;
	case CK_INT: return *(const int *)at > 0 ? (uint64_t)*(const int *)at : 0;
	case CK_U64: return *(const uint64_t *)at;
	default: return 0; /* times and text are `stats` only (t_counters_doc checks) */
	}
}

/* The sum of f's rows whose label value is the n bytes at value (NULL:
 * every row), in m or plane p (-1: none). */
static uint64_t family_sum(const struct metric_family *f, const struct server_metrics *m, int p, const char *value,
			   size_t n)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < counter_count; i++) {
		const struct counter *c = &counters[i];
		if (!c->family || strcmp(c->family, f->name))
			continue;
		if (value && (!c->value || strlen(c->value) != n || strncmp(c->value, value, n)))
			continue;
		sum += value_of(m, p, c);
	}
	return sum;
}

/* Integers are printed whole: the hand-written /metrics printed some as
 * %.17g doubles, the same digits below 2^53. */
size_t counters_render(const struct metric_family *f, const struct server_metrics *m,
		       const char *const *plane_name, struct evbuffer *out)
{
	size_t rows = 0;
	int per_plane = 0;
	for (size_t i = 0; i < counter_count; i++)
		if (counters[i].family && !strcmp(counters[i].family, f->name)) {
			rows++;
			per_plane |= counters[i].per_plane;
		}
	if (!rows)
		return 0;
	if (per_plane) {
		for (int p = 0; p < m->nplanes; p++)
			evbuffer_add_printf(out, "%s{plane=\"%s\"} %" PRIu64 "\n", f->name, plane_name[p],
					    family_sum(f, m, p, NULL, 0));
	} else if (f->values) {
		for (const char *v = f->values; *v;) {
			size_t n = strcspn(v, " ");
			evbuffer_add_printf(out, "%s{%s=\"%.*s\"} %" PRIu64 "\n", f->name, f->labels, (int)n, v,
					    family_sum(f, m, -1, v, n));
			v += n + (v[n] == ' ');
		}
	} else {
		evbuffer_add_printf(out, "%s %" PRIu64 "\n", f->name, family_sum(f, m, -1, NULL, 0));
	}
	return rows;
}

static const char *dash(const char *s)
{
	return s && *s ? s : "-";
}

/* family NAME TYPE LABELS HELP, then counter KEY FAMILY VALUE KIND HELP
 * (VALUE "plane": one per plane); "-" for none. */
void counters_print(FILE *out)
{
	static const char *const kind[] = { "uns", "int", "u64", "ms", "text" };
	for (size_t i = 0; i < metric_family_count; i++) {
		const struct metric_family *f = &metric_families[i];
		fprintf(out, "family\t%s\t%s\t%s\t%s\n", f->name, f->type, dash(f->labels), f->help);
	}
	for (size_t i = 0; i < counter_count; i++) {
		const struct counter *c = &counters[i];
		fprintf(out, "counter\t%s\t%s\t%s\t%s\t%s\n", dash(c->key), dash(c->family),
			c->per_plane ? "plane" : dash(c->value), kind[c->kind], dash(c->help));
	}
}
