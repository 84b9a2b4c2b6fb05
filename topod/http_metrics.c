/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * http_metrics.c - the Prometheus text exposition (format 0.0.4) of one
 * scrape, rendered on a worker thread from the copy http.c took on the
 * loop. Every name is documented in docs/metrics.md; the per-plane
 * figures carry plane="NAME".
 */
#include "http_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "fabric.h"
#include "history.h"
#include "route.h"
#include "inventory.h"

const int http_codes[HS_CODES] = { 200, 400, 404, 405, 413, 431, 500, 503, 504, 421 };

static void family(struct evbuffer *out, const char *name, const char *type, const char *help)
{
	evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void one(struct evbuffer *out, const char *name, const char *type, const char *help, double v)
{
	family(out, name, type, help);
	evbuffer_add_printf(out, "%s %.17g\n", name, v);
}

static void hist(struct evbuffer *out, const char *name, const char *labels, const struct qstats_hist *h)
{
	uint64_t cum = 0;
	const char *sep = labels[0] ? "," : "";
	for (int i = 0; i < QSTATS_BUCKETS; i++) {
		cum += h->bucket[i];
		evbuffer_add_printf(out, "%s_bucket{%s%sle=\"%g\"} %" PRIu64 "\n", name, labels, sep, qstats_le[i], cum);
	}
	cum += h->bucket[QSTATS_BUCKETS];
	evbuffer_add_printf(out, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, labels, sep, cum);
	evbuffer_add_printf(out, "%s_sum%s%s%s %.17g\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
			    h->sum);
	evbuffer_add_printf(out, "%s_count%s%s%s %" PRIu64 "\n", name, labels[0] ? "{" : "", labels,
			    labels[0] ? "}" : "", h->count);
}

/* Cables whose either end is below Init: cabled but not passing packets. */
static unsigned links_down(const struct snap *s)
{
	unsigned n = 0;
	for (uint32_t a = 0; a < s->nnodes; a++)
		for (unsigned pa = 1; pa <= s->nodes[a].nports; pa++) {
			const struct snap_port *p = &s->ports[s->nodes[a].port0 + pa];
			if (!p->present || p->peer_node == SNAP_NONE ||
			    (p->peer_node < a || (p->peer_node == a && p->peer_port < pa)))
				continue;
			n += inv_cable_state(s, a, pa) < SNAP_PORT_INIT;
		}
	return n;
}

/* A cable by both ends, the lower (GUID, port) first. */
struct cable_key {
	uint64_t ga, gb;
	unsigned pa, pb;
};

static int key_cmp(const void *x, const void *y)
{
	const struct cable_key *a = x, *b = y;
	if (a->ga != b->ga)
		return a->ga < b->ga ? -1 : 1;
	if (a->pa != b->pa)
		return a->pa < b->pa ? -1 : 1;
	if (a->gb != b->gb)
		return a->gb < b->gb ? -1 : 1;
	return a->pb < b->pb ? -1 : a->pb > b->pb;
}

/* The cables of s, each once (from its lower end): how many, and their keys
 * into keys unless it is NULL. */
static size_t cables(const struct snap *s, struct cable_key *keys)
{
	size_t n = 0;
	for (uint32_t a = 0; a < s->nnodes; a++)
		for (unsigned pa = 1; pa <= s->nodes[a].nports; pa++) {
			const struct snap_port *p = &s->ports[s->nodes[a].port0 + pa];
			if (!p->present || p->peer_node == SNAP_NONE || p->peer_node >= s->nnodes)
				continue;
			struct cable_key k = { s->nodes[a].guid, s->nodes[p->peer_node].guid, pa, p->peer_port };
			if (k.ga > k.gb || (k.ga == k.gb && k.pa > k.pb))
				continue; /* counted from the other end */
			if (keys)
				keys[n] = k;
			n++;
		}
	return n;
}

/* A label value: Prometheus wants UTF-8 with \\, \" and \n escaped; a
 * NodeDescription may hold any byte, so the rest become '?'. */
static void label(struct evbuffer *out, const char *v)
{
	for (; *v; v++) {
		unsigned char c = (unsigned char)*v;
		if (c == '\\' || c == '"')
			evbuffer_add_printf(out, "\\%c", c);
		else
			evbuffer_add_printf(out, "%c", c < 0x20 || c >= 0x7f ? '?' : c);
	}
}

static const char *desc_of(const struct snap *s, uint64_t guid)
{
	for (uint32_t i = 0; i < s->nnodes; i++)
		if (s->nodes[i].guid == guid)
			return s->nodes[i].desc;
	return "";
}

/* The newest generation in the history with the most cables, and that
 * count (at least the served one's). */
static uint32_t most_cables(const struct fabric *f, uint64_t *gen)
{
	struct history_meta *m;
	size_t n;
	uint32_t most = f->index->links;
	*gen = f->snap->generation;
	if (!f->hist || history_list(f->hist, &m, &n))
		return most;
	for (size_t i = 0; i < n; i++)
		if (m[i].links > most) {
			most = m[i].links;
			*gen = m[i].generation;
		}
	free(m);
	return most;
}

/* Cables fewer than the most any generation in the history had. A cable
 * pulled or failed at both ends is gone from OpenSM's subnet, not Down
 * (links_down cannot see it): this is how its loss shows. */
static unsigned links_lost(const struct fabric *f)
{
	uint64_t gen;
	return most_cables(f, &gen) - f->index->links;
}

#define LOST_NAMED_MAX 32

/* topod_link_lost{...} 1 for each cable (at most LOST_NAMED_MAX) of the
 * generation with the most cables that the served one lacks, named by
 * both ends, so that an alert can say which. Rebuilds that generation
 * from the history: only while something is lost. */
static void lost_named(const struct fabric *f, const char *plane, struct evbuffer *out)
{
	uint64_t gen;
	char err[SNAP_ERR_LEN];
	struct snap *old = NULL;
	if (!f->index || most_cables(f, &gen) <= f->index->links || history_get(f->hist, gen, &old, NULL, err))
		return;
	size_t n = cables(f->snap, NULL), shown = 0;
	struct cable_key *now = malloc((n ? n : 1) * sizeof(*now));
	size_t nold = cables(old, NULL);
	struct cable_key *was = malloc((nold ? nold : 1) * sizeof(*was));
	if (now && was) {
		cables(f->snap, now);
		cables(old, was);
		qsort(now, n, sizeof(*now), key_cmp);
		for (size_t i = 0; i < nold && shown < LOST_NAMED_MAX; i++) {
			if (bsearch(&was[i], now, n, sizeof(*now), key_cmp))
				continue;
			evbuffer_add_printf(out, "topod_link_lost{plane=\"%s\",a=\"", plane);
			label(out, desc_of(old, was[i].ga));
			evbuffer_add_printf(out, "\",a_guid=\"0x%016" PRIx64 "\",a_port=\"%u\",b=\"", was[i].ga, was[i].pa);
			label(out, desc_of(old, was[i].gb));
			evbuffer_add_printf(out, "\",b_guid=\"0x%016" PRIx64 "\",b_port=\"%u\"} 1\n", was[i].gb, was[i].pb);
			shown++;
		}
	}
	free(now);
	free(was);
	snap_free(old);
}

static void planes(const struct http_scrape *sc, struct evbuffer *out)
{
	static const struct { const char *name, *help; } g[] = {
		{ "topod_generation", "generation served (0: none yet)" },
		{ "topod_generation_age_seconds", "seconds since topod received the generation served" },
		{ "topod_generation_build_seconds", "seconds building the generation served took" },
		{ "topod_hosts", "hosts in the generation served" },
		{ "topod_switches", "switches in the generation served" },
		{ "topod_links", "cables in the generation served" },
		{ "topod_links_down", "cables whose either end is below Init (Down or Polling)" },
		{ "topod_links_lost", "cables fewer than the most a generation in the history had" },
	};
	for (size_t k = 0; k < sizeof(g) / sizeof(g[0]); k++) {
		family(out, g[k].name, "gauge", g[k].help);
		for (int p = 0; p < sc->m.nplanes; p++) {
			const struct fabric *f = sc->f[p];
			const struct fabric_index *x = f->index;
			double v = 0;
			switch (k) {
			case 0: v = (double)f->snap->generation; break;
			/* A clock stepped back: 0, not 2^64 us. */
			case 1: v = x && sc->now_us > f->received_us ? (double)(sc->now_us - f->received_us) / 1e6 : 0; break;
			case 2: v = x ? f->build_ms / 1e3 : 0; break;
			case 3: v = x ? x->rt->nhosts : 0; break;
			case 4: v = x ? x->switches : 0; break;
			case 5: v = x ? x->links : 0; break;
			case 6: v = x ? links_down(f->snap) : 0; break;
			default: v = x ? links_lost(f) : 0; break;
			}
			evbuffer_add_printf(out, "%s{plane=\"%s\"} %.17g\n", g[k].name, sc->plane_name[p], v);
		}
	}
	family(out, "topod_link_lost", "gauge", "1 for each cable counted in topod_links_lost (at most 32), by both ends");
	for (int p = 0; p < sc->m.nplanes; p++)
		lost_named(sc->f[p], sc->plane_name[p], out);
	family(out, "topod_snapshots_accepted_total", "counter", "snapshots accepted and published");
	for (int p = 0; p < sc->m.nplanes; p++)
		evbuffer_add_printf(out, "topod_snapshots_accepted_total{plane=\"%s\"} %" PRIu64 "\n", sc->plane_name[p],
				    sc->m.plane[p].accepted);
	family(out, "topod_snapshots_superseded_total", "counter", "snapshots a newer one replaced before they were built");
	for (int p = 0; p < sc->m.nplanes; p++)
		evbuffer_add_printf(out, "topod_snapshots_superseded_total{plane=\"%s\"} %" PRIu64 "\n",
				    sc->plane_name[p], sc->m.plane[p].superseded);
	family(out, "topod_generation_held", "gauge",
	       "the generation the shrink guard holds back, not served (0: none): admin `confirm G` serves it");
	for (int p = 0; p < sc->m.nplanes; p++)
		evbuffer_add_printf(out, "topod_generation_held{plane=\"%s\"} %" PRIu64 "\n", sc->plane_name[p],
				    sc->m.plane[p].held_gen);
	family(out, "topod_snapshots_held_total", "counter",
	       "generations held back for reaching more than --shrink-guard fewer HCAs or switches than the served one");
	for (int p = 0; p < sc->m.nplanes; p++)
		evbuffer_add_printf(out, "topod_snapshots_held_total{plane=\"%s\"} %" PRIu64 "\n", sc->plane_name[p],
				    sc->m.plane[p].held_total);
}

static void snapshots(const struct server_metrics *m, struct evbuffer *out)
{
	uint64_t rejected = m->all.rejected, deltas = m->all.deltas;
	family(out, "topod_snapshots_refused_total", "counter",
	       "snapshots refused, by reason: invalid (failed to decode, verify or build), denied (peer not allowed), "
	       "unsigned (no valid signature), truncated, trailing (bytes after the snapshot)");
	const struct { const char *r; uint64_t v; } r[] = {
		{ "invalid", rejected },	  { "denied", m->ingest_denied }, { "unsigned", m->ingest_unsigned },
		{ "truncated", m->ingest_truncated }, { "trailing", m->ingest_trailing },
	};
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		evbuffer_add_printf(out, "topod_snapshots_refused_total{reason=\"%s\"} %" PRIu64 "\n", r[i].r, r[i].v);
	one(out, "topod_deltas_applied_total", "counter", "snapshots received as deltas and applied", (double)deltas);
	family(out, "topod_ingest_decode_seconds", "histogram", "decoding a snapshot, per generation served");
	hist(out, "topod_ingest_decode_seconds", "", &m->qs.decode);
	family(out, "topod_build_seconds", "histogram", "building routes and hierarchy, per generation served");
	hist(out, "topod_build_seconds", "", &m->qs.build);
}

static void queries(const struct server_metrics *m, struct evbuffer *out)
{
	static const char *const oc[QS_OUTCOMES] = { "ok", "error", "refused" };
	family(out, "topod_queries_total", "counter",
	       "requests answered, by command and outcome (refused: topod's limits, e.g. BUSY or TIMEOUT)");
	for (size_t k = 0; k <= QSTATS_CMDS; k++) {
		/* the admin rows are counted with "other", as before they were rows */
		if (k < QSTATS_CMDS && (k >= cmd_count || (cmd_table[k].flags & CMD_ADMIN)))
			continue;
		for (int o = 0; o < QS_OUTCOMES; o++)
			evbuffer_add_printf(out, "topod_queries_total{command=\"%s\",outcome=\"%s\"} %" PRIu64 "\n",
					    k < QSTATS_CMDS ? cmd_table[k].name : "other", oc[o], m->qs.n[k][o]);
	}
	family(out, "topod_query_duration_seconds", "histogram",
		"request to reply, by where it was answered (loop: lookups; pool: the worker pool, queueing included)");
	hist(out, "topod_query_duration_seconds", "lane=\"loop\"", &m->qs.latency[QS_LANE_LOOP]);
	hist(out, "topod_query_duration_seconds", "lane=\"pool\"", &m->qs.latency[QS_LANE_POOL]);
	one(out, "topod_heavy_queued", "gauge", "requests waiting for a worker", m->pool.queued);
	one(out, "topod_heavy_running", "gauge", "requests on a worker", m->pool.running);
	family(out, "topod_heavy_refused_total", "counter", "heavy requests refused, by reason");
	evbuffer_add_printf(out, "topod_heavy_refused_total{reason=\"busy\"} %" PRIu64 "\n", m->busy_heavy);
	evbuffer_add_printf(out, "topod_heavy_refused_total{reason=\"toobig\"} %" PRIu64 "\n", m->heavy_toobig + m->toobig);
	evbuffer_add_printf(out, "topod_heavy_refused_total{reason=\"timeout\"} %" PRIu64 "\n", m->heavy_timeouts);
}

static uint64_t resident_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long long size = 0, rss = 0;
	if (f) {
		if (fscanf(f, "%llu %llu", &size, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return (uint64_t)rss * 4096u;
}

static void clients(const struct http_scrape *sc, struct evbuffer *out)
{
	const struct server_metrics *m = &sc->m;
	one(out, "topod_clients_connected", "gauge", "query connections open", m->conns);
	one(out, "topod_clients_max", "gauge", "query connections allowed (--max-conns)", m->max_conns);
	one(out, "topod_clients_refused_total", "counter", "query connections refused: --max-conns reached",
	    (double)m->refused);
	family(out, "topod_clients_cut_total", "counter", "query clients disconnected by the output limits, by limit");
	const struct { const char *r; uint64_t v; } c[] = {
		{ "hard", m->cut_hard }, { "soft", m->cut_soft }, { "write_timeout", m->cut_write }, { "budget", m->cut_budget },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		evbuffer_add_printf(out, "topod_clients_cut_total{limit=\"%s\"} %" PRIu64 "\n", c[i].r, c[i].v);
	one(out, "topod_admin_clients_connected", "gauge", "admin socket connections open", m->admin_conns);
	one(out, "topod_ingest_clients_connected", "gauge", "snapshot producers connected", m->ingest_conns);
	one(out, "topod_watchers", "gauge", "clients parked in watch", m->watching);
	one(out, "topod_http_clients_connected", "gauge", "HTTP connections open", sc->http_conns);
	one(out, "topod_http_clients_waiting", "gauge",
	    "HTTP connections without a whole request: arriving, or kept alive between requests", sc->http_waiting);
	one(out, "topod_http_clients_max", "gauge", "HTTP requests answered at once (--http-max-conns; twice as many "
	    "connections)", sc->http_max_conns);
	one(out, "topod_http_clients_refused_total", "counter", "HTTP requests refused: --http-max-conns being answered",
	    (double)sc->http_refused);
	family(out, "topod_http_cut_total", "counter",
	       "HTTP connections closed before a whole request, by reason: header_timeout, body_timeout "
	       "(--http-header-timeout, --http-body-timeout), idle_timeout (kept alive past --http-timeout), per_peer "
	       "(the address's oldest past --http-per-peer), full (the oldest anywhere past 2 x --http-max-conns)");
	for (int i = 0; i < HG_CUTS; i++)
		evbuffer_add_printf(out, "topod_http_cut_total{reason=\"%s\"} %" PRIu64 "\n", hgate_cut_names[i],
				    sc->http_cut[i]);
	one(out, "topod_http_reply_bytes_unread", "gauge", "HTTP reply bytes not yet written to their clients",
	    (double)sc->http_unsent);
	family(out, "topod_http_requests_total", "counter", "HTTP requests answered, by status code");
	for (int i = 0; i < HS_CODES; i++)
		evbuffer_add_printf(out, "topod_http_requests_total{code=\"%d\"} %" PRIu64 "\n", http_codes[i],
				    sc->http_codes[i]);
}

static void memory(const struct server_metrics *m, struct evbuffer *out)
{
	one(out, "topod_resident_memory_bytes", "gauge", "resident set size of the process", (double)resident_bytes());
	one(out, "topod_request_memory_reserved_bytes", "gauge",
	    "memory the requests on workers reserved by their estimates", (double)m->pool.reserved);
	one(out, "topod_request_memory_budget_bytes", "gauge", "what they may reserve together (--max-request-memory; 0: unbounded)",
	    (double)m->pool.budget);
	one(out, "topod_client_buffer_bytes", "gauge", "bytes all clients' unanswered input and unread replies hold",
	    (double)m->client_bytes);
	one(out, "topod_client_buffer_budget_bytes", "gauge", "what they may hold together (--client-budget; 0: unbounded)",
	    (double)m->client_budget);
	one(out, "topod_reply_bytes_unread", "gauge", "reply bytes clients have not read yet", (double)m->out_pending);
	one(out, "topod_reply_budget_bytes", "gauge", "heavy requests are admitted below this (--output-budget)",
	    (double)m->out_budget);
}

void http_render_metrics(const struct http_scrape *sc, struct evbuffer *out)
{
	family(out, "topod_build_info", "gauge", "always 1; the version in a label");
	evbuffer_add_printf(out, "topod_build_info{version=\"%s\"} 1\n", TOPO_VERSION);
	one(out, "topod_planes", "gauge", "fabric planes (subnets) served", sc->m.nplanes);
	planes(sc, out);
	snapshots(&sc->m, out);
	queries(&sc->m, out);
	clients(sc, out);
	memory(&sc->m, out);
}
