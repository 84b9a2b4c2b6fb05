/*
 * test_http_metrics.c - the HTTP endpoint's Prometheus text
 * (topod/http_metrics.c) on a hand-made fabric: the age of the generation
 * served when the clock is ahead of it, and when it has stepped back
 * behind it (a wrapped unsigned difference would say 1.8e13 s); and the
 * families rendered from the counter table (counters.c): every family's
 * HELP, rows of one label summed, per-plane rows, and the `stats` line
 * from the same rows. Built plain and under ASan+UBSan.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "counters.h"
#include "fabric.h"
#include "http_impl.h"
#include "store.h"
#include "testfab.h"

/* What out holds, as a string to free. */
static char *drain(struct evbuffer *out)
{
	size_t n = evbuffer_get_length(out);
	char *text = malloc(n + 1);
	evbuffer_remove(out, text, n);
	text[n] = '\0';
	evbuffer_free(out);
	return text;
}

/* The whole exposition of a scrape of f with the counters m. */
static char *render(struct fabric *f, uint64_t now_us, const struct server_metrics *m)
{
	static struct http_scrape sc; /* large: not on the stack */
	memset(&sc, 0, sizeof(sc));
	if (m)
		sc.m = *m;
	sc.m.nplanes = 1;
	sc.plane_name[0] = "main";
	sc.f[0] = f;
	sc.now_us = now_us;
	struct evbuffer *out = evbuffer_new();
	http_render_metrics(&sc, out);
	return drain(out);
}

/* The value of the first sample of name, or -1 if absent. */
static double sample(struct fabric *f, uint64_t now_us, const char *name)
{
	char *text = render(f, now_us, NULL);
	double v = -1;
	char key[128];
	snprintf(key, sizeof(key), "\n%s{", name);
	const char *at = strstr(text, key);
	if (at && (at = strchr(at + 1, '}')))
		v = strtod(at + 1, NULL);
	free(text);
	return v;
}

static void counters_check(struct fabric *f)
{
	static struct server_metrics m;
	m.toobig = 2;
	m.heavy_toobig = 3;
	m.all.rejected = 7;
	m.ingest_denied = 1;
	m.plane[0].accepted = 4;
	m.all.accepted = 4;
	m.cut_budget = 9;
	char *text = render(f, f->received_us, &m);
	size_t missing = 0;
	for (size_t i = 0; i < metric_family_count; i++) {
		char want[1024];
		const struct metric_family *fam = &metric_families[i];
		/* a sample right below: a counter row or a renderer feeds it
		 * (topod_link_lost has none while nothing is lost) */
		snprintf(want, sizeof(want), "# HELP %s %s\n# TYPE %s %s\n%s", fam->name, fam->help, fam->name, fam->type,
			 strcmp(fam->name, "topod_link_lost") ? fam->name : "");
		missing += !strstr(text, want);
	}
	CHECK(!missing, "every family of the table has its HELP, TYPE and a sample (%zu not)", missing);
	CHECK(strstr(text, "\ntopod_heavy_refused_total{reason=\"toobig\"} 5\n") != NULL,
	      "toobig and heavy_toobig are one sample: 2 + 3");
	CHECK(strstr(text, "\ntopod_snapshots_refused_total{reason=\"invalid\"} 7\n"
			   "topod_snapshots_refused_total{reason=\"denied\"} 1\n") != NULL,
	      "the refused snapshots by reason, in the family's order");
	CHECK(strstr(text, "\ntopod_snapshots_accepted_total{plane=\"main\"} 4\n") != NULL, "a per-plane row");
	CHECK(strstr(text, "\ntopod_clients_cut_total{limit=\"budget\"} 9\n") != NULL, "cut_budget");
	CHECK(strstr(text, "\ntopod_planes 1\n") != NULL, "an unlabelled row (an int field)");
	free(text);
	struct evbuffer *out = evbuffer_new();
	counters_stats(&m, out);
	text = drain(out);
	const char *head = " connections=0 admin_connections=0 max_conns=0 requests=0 ";
	CHECK(!strncmp(text, head, strlen(head)), "`stats` starts as it always has");
	CHECK(strstr(text, " toobig=2 busy_heavy=0 ") && strstr(text, " heavy_toobig=3 ") && strstr(text, " rejected=7 ") &&
		      strstr(text, " last_error=\"\" "),
	      "`stats` keeps the fields apart");
	free(text);
}

int main(void)
{
	struct snap *s = snap_new();
	tf_tree2(s, 4, 4, 2, 1);
	tf_finish(s, 0);
	char err[SNAP_ERR_LEN];
	struct fabric_index *x = NULL;
	fabric_index_build(s, NULL, 1, &x, err);
	CHECK(x != NULL, "the 4-leaf, 16-host tree builds");
	struct fabric *f = fabric_new(s, "test");
	f->index = x;
	f->received_us = 1700000000000000ull;
	double age = sample(f, f->received_us + 5500000, "topod_generation_age_seconds");
	CHECK(age == 5.5, "received 5.5 s ago: topod_generation_age_seconds 5.5 (%g)", age);
	age = sample(f, f->received_us - 60000000, "topod_generation_age_seconds");
	CHECK(age == 0, "the clock stepped back 60 s behind it: 0, not a wrapped 1.8e13 (%g)", age);
	double hosts = sample(f, f->received_us, "topod_hosts");
	CHECK(hosts == 16, "topod_hosts 16 (%g)", hosts);
	counters_check(f);
	fabric_put(f);
	return tf_failures ? 1 : 0;
}
