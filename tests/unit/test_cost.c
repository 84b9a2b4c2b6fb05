/*
 * test_cost.c - the cost model (analysis/cost.h): a phase takes its busiest
 * cable's bytes over that cable's rate plus the longest route's latency;
 * rates decide which cable is the busiest, not bytes alone.
 */
#include <math.h>

#include "cost.h"
#include "load.h"
#include "testfab.h"

#define MB 1000000ull

/* 2 leaves x 2 hosts, 2 spines, every cable 4x QDR (32 Gb/s of data);
 * with slow1x, h0000's cable is 1x QDR (8 Gb/s) at both ends. */
static struct snap *fabric(int slow1x)
{
	struct snap *s = snap_new();
	tf_tree2(s, 2, 2, 2, 1);
	tf_finish(s, 0);
	if (slow1x) {
		int64_t h0 = snap_find_node(s, TF_CA_GUID + 16 * 1);
		if (h0 < 0)
			tf_die("h0000");
		tf_cable_width(s, (uint32_t)h0, 1, 1);
	}
	return s;
}

/* The time of a matrix pattern (src:dst:bytes triples) on hosts[]. */
static int phase(const struct route_tab *rt, const uint32_t *host, uint32_t n, const struct pat_triple *t,
		 size_t nt, struct cost_time *ct, struct load **out)
{
	struct pattern p;
	char err[AN_ERR_LEN];
	struct pat_job job = { n, (uint32_t *)host };
	if (pattern_set_matrix(&p, t, nt, n, err))
		tf_die(err);
	struct load *L = NULL;
	int rc = load_build(rt, &job, &p, 1, &L);
	pattern_clear(&p);
	if (rc)
		tf_die("load_build");
	rc = cost_load_time(rt, L, ct, err);
	*out = L;
	return rc;
}

/* The route table of s and its hosts h0000..h0003. */
static struct route_tab *open4(struct snap *s, uint32_t h[4])
{
	struct route_tab *rt;
	if (route_build(s, NULL, &rt))
		tf_die("route_build");
	const char *name[4] = { "h0000", "h0001", "h0002", "h0003" };
	for (int i = 0; i < 4; i++)
		if (route_find_host(rt, name[i], &h[i]))
			tf_die(name[i]);
	return rt;
}

static int near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fabs(b) + 1e-15;
}

static void test_times(void)
{
	struct snap *s = fabric(0);
	uint32_t h[4];
	struct route_tab *rt = open4(s, h);
	CHECK(near(cost_route_latency(1), 300e-9) && near(cost_route_latency(3), 700e-9),
	      "latency: 2 cables + 1 switch = 300 ns, 4 cables + 3 switches = 700 ns");

	struct cost_time ct;
	struct load *L;
	struct pat_triple one[] = { { 0, 1, 4 * MB } };
	int rc = phase(rt, h, 2, one, 1, &ct, &L);   /* before CHECK: its arguments' order is unspecified */
	CHECK(rc == AN_OK && near(ct.bw_seconds, 4e6 * 8 / 32e9) &&
		      near(ct.seconds, 4e6 * 8 / 32e9 + 300e-9) && ct.link_bps == 32000000000ull,
	      "one 4 MB flow on a leaf: %.7g s = 4 MB / 4 GB/s + 300 ns", ct.seconds);
	double t1 = ct.bw_seconds;
	load_free(L);

	/* h0000 and h0002 both send to h0001: they share its cable */
	uint32_t three[3] = { h[0], h[1], h[2] };
	struct pat_triple two[] = { { 0, 1, 4 * MB }, { 2, 1, 4 * MB } };
	rc = phase(rt, three, 3, two, 2, &ct, &L);
	CHECK(rc == AN_OK && near(ct.bw_seconds, 2 * t1) &&
		      near(ct.lat_seconds, 700e-9) && L->links[ct.link].bytes == 8 * MB,
	      "two flows into one host: twice one flow's time (%.9f s), latency of the longer route 700 ns",
	      ct.seconds);
	load_free(L);

	struct pat_triple self[] = { { 0, 1, 4 * MB } };
	uint32_t same[2] = { h[0], h[0] };
	rc = phase(rt, same, 2, self, 1, &ct, &L);
	CHECK(rc == AN_OK && ct.seconds == 0 && ct.link == UINT32_MAX,
	      "ranks on one host: no cable, no time");
	load_free(L);
	route_free(rt);
	snap_free(s);
}

static void test_rates_decide(void)
{
	struct snap *s = fabric(1);
	uint32_t h[4];
	struct route_tab *rt = open4(s, h);
	struct cost_time ct;
	struct load *L;
	/* 4 MB out of h0000's 1x cable against 8 MB into h0003's 4x one: the
	 * 1x cable carries fewer bytes and still takes longer (4 MB / 1 GB/s >
	 * 8 MB / 4 GB/s). */
	struct pat_triple t[] = { { 0, 1, 4 * MB }, { 2, 3, 8 * MB } };
	int rc = phase(rt, h, 4, t, 2, &ct, &L);
	CHECK(rc == AN_OK && ct.link_bps == 8000000000ull &&
		      L->links[ct.link].bytes == 4 * MB && near(ct.bw_seconds, 4e6 * 8 / 8e9) &&
		      L->max_bytes == 8 * MB,
	      "the 1x cable with 4 MB is the bottleneck, not the 4x one with 8 MB (%.7g s)", ct.bw_seconds);
	load_free(L);
	struct pat_triple fast[] = { { 2, 3, 4 * MB } }, slow[] = { { 0, 1, 4 * MB } };
	double tf, ts;
	phase(rt, h, 4, fast, 1, &ct, &L);
	tf = ct.bw_seconds;
	load_free(L);
	phase(rt, h, 4, slow, 1, &ct, &L);
	ts = ct.bw_seconds;
	load_free(L);
	CHECK(near(ts, 4 * tf), "the same flow from a 1x cable takes four times as long as from a 4x one");

	/* a cable whose rate is unknown is named, not guessed */
	const struct route_ep *e2 = &rt->eps[route_host_ep(rt, h[2])];
	s->ports[s->nodes[e2->node].port0 + e2->port].width = 0;
	struct pat_triple u[] = { { 2, 3, 1 } };
	char err[AN_ERR_LEN] = "";
	struct pattern p;
	struct pat_job job = { 4, h };
	pattern_set_matrix(&p, u, 1, 4, err);
	load_build(rt, &job, &p, 1, &L);
	pattern_clear(&p);
	rc = cost_load_time(rt, L, &ct, err);
	CHECK(rc == AN_E_RANGE && strstr(err, "no known rate"),
	      "a cable without a rate: AN_E_RANGE (%s)", err);
	load_free(L);
	route_free(rt);
	snap_free(s);
}

int main(void)
{
	test_times();
	test_rates_decide();
	return tf_failures ? 1 : 0;
}
