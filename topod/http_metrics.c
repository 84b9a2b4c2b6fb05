/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * http_metrics.c - the Prometheus text exposition (format 0.0.4) of one
 * scrape, rendered on a worker thread from the copy http.c took on the
 * loop. The families, their HELP and order are counters.c's table (which
 * docs/metrics.md is checked against); the per-plane figures carry
 * plane="NAME".
 */
#include "http_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "counters.h"
#include "fabric.h"
#include "history.h"
#include "route.h"
#include "inventory.h"

const int http_codes[HS_CODES] = { 200, 400, 404, 405, 413, 431, 500, 503, 504, 421 };

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

/* The families the counter table does not feed, each by the name of its
 * row in counters.c's family table: what struct server_metrics does not
 * hold (the fabrics served, histograms, the HTTP endpoint's own, the
 * process's memory). arg says which of a kind. */
typedef void render_fn(const struct http_scrape *sc, const char *name, int arg, struct evbuffer *out);

static void build_info(const struct http_scrape *sc, const char *name, int arg, struct evbuffer *out)
{
	(void)sc, (void)arg;
	evbuffer_add_printf(out, "%s{version=\"%s\"} 1\n", name, TOPO_VERSION);
}

static void plane_gauge(const struct http_scrape *sc, const char *name, int arg, struct evbuffer *out)
{
	for (int p = 0; p < sc->m.nplanes; p++) {
		const struct fabric *f = sc->f[p];
		const struct fabric_index *x = f->index;
		double v = 0;
		switch (arg) {
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
		evbuffer_add_printf(out, "%s{plane=\"%s\"} %.17g\n", name, sc->plane_name[p], v);
	}
}

static void link_lost(const struct http_scrape *sc, const char *name, int arg, struct evbuffer *out)
{
	(void)name, (void)arg;
	for (int p = 0; p < sc->m.nplanes; p++)
		lost_named(sc->f[p], sc->plane_name[p], out);
}

static void histogram(const struct http_scrape *sc, const char *name, int arg, struct evbuffer *out)
{
	const struct qstats *qs = &sc->m.qs;
	if (arg == 0) {
		hist(out, name, "", &qs->decode);
	} else if (arg == 1) {
		hist(out, name, "", &qs->build);
	} else {
		hist(out, name, "lane=\"loop\"", &qs->latency[QS_LANE_LOOP]);
		hist(out, name, "lane=\"pool\"", &qs->latency[QS_LANE_POOL]);
	}
}

static void queries(const struct http_scrape *sc, const char *name, int arg, struct evbuffer *out)
{
	static const char *const oc[QS_OUTCOMES] = { "ok", "error", "refused" };
	(void)arg;
	for (size_t k = 0; k <= QSTATS_CMDS; k++) {
		/* the admin rows are counted with "other", as before they were rows */
		if (k < QSTATS_CMDS && (k >= cmd_count || (cmd_table[k].flags & CMD_ADMIN)))
			continue;
		for (int o = 0; o < QS_OUTCOMES; o++)
			evbuffer_add_printf(out, "%s{command=\"%s\",outcome=\"%s\"} %" PRIu64 "\n", name,
					    k < QSTATS_CMDS ? cmd_table[k].name : "other", oc[o], sc->m.qs.n[k][o]);
	}
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

/* One unlabelled value the HTTP endpoint or the process holds. */
static void value(const struct http_scrape *sc, const char *name, int arg, struct evbuffer *out)
{
	const double v[] = { sc->http_conns, sc->http_waiting, sc->http_max_conns, (double)sc->http_refused,
			     (double)sc->http_unsent };
	evbuffer_add_printf(out, "%s %.17g\n", name, arg < 0 ? (double)resident_bytes() : v[arg]);
}

/* The chunk pool is the process's (snapshot/lft.c): every plane's tables. */
static void lft_pool(const struct http_scrape *sc, const char *name, int arg, struct evbuffer *out)
{
	uint64_t used, spare;
	(void)sc;
	(void)arg;
	snap_lft_pool(&used, &spare);
	evbuffer_add_printf(out, "%s{state=\"tables\"} %" PRIu64 "\n%s{state=\"spare\"} %" PRIu64 "\n", name, used,
			    name, spare);
}

static void http_labelled(const struct http_scrape *sc, const char *name, int arg, struct evbuffer *out)
{
	if (arg == 0)
		for (int i = 0; i < HG_CUTS; i++)
			evbuffer_add_printf(out, "%s{reason=\"%s\"} %" PRIu64 "\n", name, hgate_cut_names[i],
					    sc->http_cut[i]);
	else
		for (int i = 0; i < HS_CODES; i++)
			evbuffer_add_printf(out, "%s{code=\"%d\"} %" PRIu64 "\n", name, http_codes[i],
					    sc->http_codes[i]);
}

static const struct {
	const char *name;
	render_fn *fn;
	int arg;
} by_hand[] = {
	{ "topod_build_info", build_info, 0 },
	{ "topod_generation", plane_gauge, 0 },
	{ "topod_generation_age_seconds", plane_gauge, 1 },
	{ "topod_generation_build_seconds", plane_gauge, 2 },
	{ "topod_hosts", plane_gauge, 3 },
	{ "topod_switches", plane_gauge, 4 },
	{ "topod_links", plane_gauge, 5 },
	{ "topod_links_down", plane_gauge, 6 },
	{ "topod_links_lost", plane_gauge, 7 },
	{ "topod_link_lost", link_lost, 0 },
	{ "topod_ingest_decode_seconds", histogram, 0 },
	{ "topod_build_seconds", histogram, 1 },
	{ "topod_query_duration_seconds", histogram, 2 },
	{ "topod_queries_total", queries, 0 },
	{ "topod_http_clients_connected", value, 0 },
	{ "topod_http_clients_waiting", value, 1 },
	{ "topod_http_clients_max", value, 2 },
	{ "topod_http_clients_refused_total", value, 3 },
	{ "topod_http_reply_bytes_unread", value, 4 },
	{ "topod_resident_memory_bytes", value, -1 },
	{ "topod_lft_pool_bytes", lft_pool, 0 },
	{ "topod_http_cut_total", http_labelled, 0 },
	{ "topod_http_requests_total", http_labelled, 1 },
};

/* Every family of the table (counters.c), in its order: from the counter
 * rows that feed it, else by hand. */
void http_render_metrics(const struct http_scrape *sc, struct evbuffer *out)
{
	for (size_t i = 0; i < metric_family_count; i++) {
		const struct metric_family *f = &metric_families[i];
		evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, f->type);
		if (counters_render(f, &sc->m, sc->plane_name, out))
			continue;
		for (size_t k = 0; k < sizeof(by_hand) / sizeof(by_hand[0]); k++)
			if (!strcmp(by_hand[k].name, f->name)) {
				by_hand[k].fn(sc, f->name, by_hand[k].arg, out);
				break;
			}
	}
}
