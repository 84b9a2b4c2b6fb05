/*
 * test_http_metrics.c - the HTTP endpoint's Prometheus text
 * (topod/http_metrics.c) on a hand-made fabric: the age of the generation
 * served when the clock is ahead of it, and when it has stepped back
 * behind it (a wrapped unsigned difference would say 1.8e13 s). Built
 * plain and under ASan+UBSan.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "fabric.h"
#include "http_impl.h"
#include "store.h"
#include "testfab.h"

/* The value of the first sample of name, or -1 if absent. */
static double sample(struct fabric *f, uint64_t now_us, const char *name)
{
	struct http_scrape sc;
	memset(&sc, 0, sizeof(sc));
	sc.m.nplanes = 1;
	sc.plane_name[0] = "main";
	sc.f[0] = f;
	sc.now_us = now_us;
	struct evbuffer *out = evbuffer_new();
	http_render_metrics(&sc, out);
	size_t n = evbuffer_get_length(out);
	char *text = malloc(n + 1);
	evbuffer_remove(out, text, n);
	text[n] = '\0';
	evbuffer_free(out);
	double v = -1;
	char key[128];
	snprintf(key, sizeof(key), "\n%s{", name);
	const char *at = strstr(text, key);
	if (at && (at = strchr(at + 1, '}')))
		v = strtod(at + 1, NULL);
	free(text);
	return v;
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
	fabric_put(f);
	return tf_failures ? 1 : 0;
}
