/*
 * test_hier.c - the hierarchy: expected levels on trees and fat trees,
 * stable IDs, disconnected fabrics, and the fast build against the plain
 * reference (ref_hier.h) on many small fabrics.
 */
#include <omp.h>
#include <time.h>

#include "hier.h"
#include "ref_hier.h"
#include "testfab.h"

static struct route_tab *build_rt(const struct snap *s, const struct route_namemap *m)
{
	struct route_tab *rt;
	if (route_build(s, m, &rt))
		tf_die("route_build");
	return rt;
}

static struct hier *build_h(const struct route_tab *rt)
{
	struct hier *h;
	int rc = hier_build(rt, &h);
	if (rc) {
		fprintf(stderr, "hier_build: %s\n", an_strerror(rc));
		exit(99);
	}
	return h;
}

static uint32_t host(const struct route_tab *rt, const char *n)
{
	uint32_t h;
	if (route_find_host(rt, n, &h))
		tf_die("no such host");
	return h;
}

static uint64_t id_at(const struct hier *h, uint32_t x, uint32_t level)
{
	uint64_t id = 0;
	if (hier_cluster_at(h, x, level, &id))
		tf_die("cluster_at");
	return id;
}

static size_t count_all(const struct hier *h, uint32_t level)
{
	uint32_t *v = malloc((h->nhosts + 1) * sizeof(*v));
	for (uint32_t i = 0; i < h->nhosts; i++)
		v[i] = i;
	size_t c = 0;
	if (hier_count_at(h, v, h->nhosts, level, &c))
		tf_die("count_at");
	free(v);
	return c;
}

/* Same tree as the reference: depth, roots, and every host's ID per level. */
static int same_as_ref(const struct route_tab *rt, const struct hier *h, const char *what)
{
	struct ref_hier r;
	if (ref_hier_build(rt, &r))
		tf_die("ref");
	int ok = r.depth == h->depth && r.nroots == h->nroots && r.nclusters == h->nclusters;
	for (uint32_t x = 0; ok && x < r.nh; x++)
		for (uint32_t l = 0; ok && l < r.depth; l++)
			ok = r.anc[(size_t)x * r.depth + l] == id_at(h, x, l);
	if (!ok)
		printf("# %s: fast depth %u roots %u clusters %u, reference %u %u %u\n", what, h->depth, h->nroots,
		       h->nclusters, r.depth, r.nroots, r.nclusters);
	ref_hier_free(&r);
	return ok;
}

static void test_tree2(void)
{
	struct snap *s = snap_new();
	tf_tree2(s, 4, 4, 2, 1);
	tf_finish(s, 0);
	struct route_tab *rt = build_rt(s, NULL);
	struct hier *h = build_h(rt);
	CHECK(hier_depth(h) == 2 && count_all(h, 1) == 4 && count_all(h, 0) == 1 && h->nroots == 1,
	      "2-level tree: depth 2, level 1 = 4 leaf clusters, level 0 = 1 (depth %u)", h->depth);
	int ok = 1;
	char a[16], b[16];
	for (unsigned i = 0; i < 16; i++)
		for (unsigned j = 0; j < 16; j++) {
			snprintf(a, sizeof(a), "h%04u", i);
			snprintf(b, sizeof(b), "h%04u", j);
			ok &= (id_at(h, host(rt, a), 1) == id_at(h, host(rt, b), 1)) == (i / 4 == j / 4);
			ok &= id_at(h, host(rt, a), 0) == id_at(h, host(rt, b), 0);
		}
	CHECK(ok, "2-level tree: level-1 clusters are exactly the leaf switches");
	uint64_t want = 0, all = 0;
	for (unsigned i = 0; i < 16; i++) {
		uint64_t g = TF_CA_GUID + 16 * (i * 4 + 1) + 1;
		all += hier_guid_hash(g);
		if (i < 4)
			want += hier_guid_hash(g);
	}
	CHECK(id_at(h, host(rt, "h0000"), 1) == want && id_at(h, host(rt, "h0000"), 0) == all,
	      "cluster ID = sum of hier_guid_hash over member port GUIDs");
	uint32_t two[2] = { host(rt, "h0000"), host(rt, "h0005") }, dup[3] = { 0, 0, 0 };
	size_t c = 0;
	CHECK(!hier_count_at(h, two, 2, 1, &c) && c == 2 && !hier_count_at(h, dup, 3, 1, &c) && c == 1 &&
		      !hier_count_at(h, two, 0, 1, &c) && c == 0,
	      "tii_num_switch_clusters_at_depth: 2 leaves, duplicates counted once, empty list 0");
	uint64_t id;
	CHECK(hier_cluster_at(h, 0, 2, &id) == AN_E_INVAL && hier_cluster_at(h, 99, 0, &id) == AN_E_INVAL &&
		      hier_count_at(h, two, 2, 2, &c) == AN_E_INVAL,
	      "bad level or host: AN_E_INVAL");
	CHECK(same_as_ref(rt, h, "tree2"), "2-level tree: fast == reference");

	/* IDs come from GUIDs only: renaming every host changes none. */
	char *map = malloc(16 * 64), *p = map;
	for (unsigned i = 0; i < 16; i++)
		p += sprintf(p, "0x%016llx \"renamed-%02u HCA-1\"\n", (unsigned long long)(TF_CA_GUID + 16 * (i * 4 + 1)),
			     15 - i);
	struct route_namemap *m;
	char err[AN_ERR_LEN];
	if (route_namemap_parse(map, strlen(map), &m, err))
		tf_die(err);
	struct route_tab *rt2 = build_rt(s, m);
	struct hier *h2 = build_h(rt2);
	ok = h2->depth == h->depth;
	for (unsigned i = 0; ok && i < 16; i++) {
		char nn[32];
		snprintf(a, sizeof(a), "h%04u", i);
		snprintf(nn, sizeof(nn), "renamed-%02u", 15 - i);
		for (uint32_t l = 0; l < h->depth; l++)
			ok &= id_at(h, host(rt, a), l) == id_at(h2, host(rt2, nn), l);
	}
	CHECK(ok, "IDs are stable when a node-name-map renames (and so reorders) every host");
	/* and across thread counts */
	omp_set_num_threads(1);
	struct hier *h3 = build_h(rt);
	omp_set_num_threads(omp_get_num_procs());
	ok = h3->depth == h->depth && h3->nclusters == h->nclusters;
	for (uint32_t x = 0; ok && x < h->nhosts; x++)
		for (uint32_t l = 0; l < h->depth; l++)
			ok &= id_at(h, x, l) == id_at(h3, x, l);
	CHECK(ok, "IDs are stable across thread counts");
	hier_free(h3);
	hier_free(h2);
	route_free(rt2);
	route_namemap_free(m);
	free(map);
	hier_free(h);
	route_free(rt);
	snap_free(s);
}

static void test_fattree3(unsigned k, int analytic)
{
	struct snap *s = snap_new();
	tf_fattree3(s, k);
	if (analytic)
		tf_fattree3_finish(s, k);
	else
		tf_finish(s, 0);
	struct route_tab *rt = build_rt(s, NULL);
	struct hier *h = build_h(rt);
	unsigned hh = k / 2;
	CHECK(h->depth == 3 && count_all(h, 2) == k * hh && count_all(h, 1) == k && count_all(h, 0) == 1,
	      "3-level fat tree k=%u (%s LFTs): depth 3; %u leaves, %u pods, 1 root (got %u: %zu %zu %zu)", k,
	      analytic ? "d-mod-k" : "BFS", k * hh, k, h->depth, h->depth > 2 ? count_all(h, 2) : 0,
	      h->depth > 1 ? count_all(h, 1) : 0, count_all(h, 0));
	int ok = 1;
	char a[16], b[16];
	unsigned n = k * hh * hh;
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = i; j < n; j += 1 + i % 7) {
			snprintf(a, sizeof(a), "h%04u", i);
			snprintf(b, sizeof(b), "h%04u", j);
			uint32_t x = host(rt, a), y = host(rt, b);
			ok &= (id_at(h, x, 2) == id_at(h, y, 2)) == (i / hh == j / hh);
			ok &= (id_at(h, x, 1) == id_at(h, y, 1)) == (i / (hh * hh) == j / (hh * hh));
		}
	CHECK(ok, "3-level fat tree k=%u: level 2 = leaf switches, level 1 = pods", k);
	if (k <= 6)
		CHECK(same_as_ref(rt, h, "fattree3"), "3-level fat tree k=%u: fast == reference", k);
	hier_free(h);
	route_free(rt);
	snap_free(s);
}

static void test_disconnected(void)
{
	/* Leaf 3 loses both uplinks before routing: two islands. */
	struct snap *s = snap_new();
	tf_tree2(s, 4, 3, 2, 1);
	uint32_t leaf3 = 3;
	tf_link_down(s, leaf3, 4);
	tf_link_down(s, leaf3, 5);
	tf_finish(s, 0);
	struct route_tab *rt = build_rt(s, NULL);
	struct hier *h = build_h(rt);
	CHECK(h->nroots == 2 && count_all(h, 0) == 2 && h->depth == 2 && count_all(h, 1) == 4,
	      "disconnected: two roots (the island and the rest), leaves below (roots %u depth %u)", h->nroots, h->depth);
	CHECK(id_at(h, host(rt, "h0009"), 0) == id_at(h, host(rt, "h0009"), 1) &&
		      id_at(h, host(rt, "h0009"), 0) != id_at(h, host(rt, "h0000"), 0),
	      "disconnected: the island's root is its leaf cluster, repeated at level 1");
	CHECK(same_as_ref(rt, h, "disconnected"), "disconnected: fast == reference");
	hier_free(h);
	route_free(rt);
	snap_free(s);

	/* A host whose cable is down is a root of its own. */
	s = snap_new();
	tf_tree2(s, 2, 3, 2, 1);
	tf_finish(s, 0);
	tf_link_down(s, (uint32_t)snap_find_node(s, TF_CA_GUID + 16 * 1), 1);
	rt = build_rt(s, NULL);
	h = build_h(rt);
	uint32_t lone = host(rt, "h0000");
	CHECK(h->nroots == 2 && id_at(h, lone, 0) == hier_guid_hash(TF_CA_GUID + 16 + 1) &&
		      id_at(h, lone, 1) == id_at(h, lone, 0) && h->clusters[h->host_parent[lone]].dist == HIER_INF,
	      "unreachable host: own root, ID = hash of its GUID, repeated at every level");
	CHECK(same_as_ref(rt, h, "lone host"), "unreachable host: fast == reference");
	hier_free(h);
	route_free(rt);
	snap_free(s);

	/* No hosts at all. */
	s = snap_new();
	tf_switch(s, 1, 4);
	tf_finish(s, 0);
	rt = build_rt(s, NULL);
	h = build_h(rt);
	size_t c = 9;
	CHECK(h->depth == 0 && h->nclusters == 0 && !hier_count_at(h, NULL, 0, 0, &c) && c == 0,
	      "no hosts: depth 0, no clusters");
	hier_free(h);
	route_free(rt);
	snap_free(s);
}

/* Random small fabrics of every kind: the fast build must equal the reference. */
static void test_random(void)
{
	int n = 0, bad = 0;
	uint32_t restarts = 0, maxdepth = 0, multiroot = 0;
	for (uint64_t seed = 1; seed <= 260; seed++) {
		struct snap *s = snap_new();
		tf_rng_state = seed;
		unsigned kind = (unsigned)(seed % 6);
		unsigned lmc = 0;
		int stale = 0;
		if (kind == 0) {
			tf_tree2(s, 2 + (unsigned)(tf_rand() % 4), 1 + (unsigned)(tf_rand() % 4),
				 1 + (unsigned)(tf_rand() % 3), 1 + (unsigned)(tf_rand() % 2));
			lmc = (unsigned)(tf_rand() % 2);
		} else if (kind == 1) {
			tf_fattree3(s, 4);
		} else if (kind == 2 || kind == 3) {
			uint64_t r = tf_rand();
			tf_rrg(s, 3 + (unsigned)(r % 8), 2 + (unsigned)((r >> 8) % 3), 1 + (unsigned)((r >> 16) % 3), seed);
		} else if (kind == 4) {
			uint64_t r = tf_rand();
			tf_torus(s, 3 + (unsigned)(r % 3), 1 + (unsigned)((r >> 8) % 3), 1 + (unsigned)((r >> 16) % 2));
		} else {
			tf_tree2(s, 3, 2, 2, 2);
			/* a back-to-back pair beside the fabric */
			uint32_t x = tf_ca(s, 9000, 1, "bb1 HCA-1"), y = tf_ca(s, 9001, 1, "bb2 HCA-1");
			tf_link(s, x, 1, y, 1);
		}
		/* failed switch-to-switch links: rerouted around, or left stale */
		tf_rng_state = seed * 31;
		unsigned fails = (unsigned)(tf_rand() % 3);
		stale = (int)(tf_rand() % 2);
		uint64_t downs[3][2];
		unsigned nd = 0;
		for (unsigned f = 0; f < fails; f++) {
			uint32_t x = (uint32_t)(tf_rand() % s->nnodes);
			if (s->nodes[x].type != SNAP_NODE_SWITCH)
				continue;
			unsigned p = 1 + (unsigned)(tf_rand() % s->nodes[x].nports);
			struct snap_port *pt = snap_port_of(s, x, p);
			if (pt->peer_node == SNAP_NONE || s->nodes[pt->peer_node].type != SNAP_NODE_SWITCH)
				continue;
			if (stale) {
				downs[nd][0] = s->nodes[x].guid;
				downs[nd][1] = p;
				nd++;
			} else {
				tf_link_down(s, x, p);
			}
		}
		tf_finish(s, lmc);
		for (unsigned f = 0; f < nd; f++)
			tf_link_down(s, (uint32_t)snap_find_node(s, downs[f][0]), (unsigned)downs[f][1]);
		/* and, on rrg fabrics, a few corrupted entries */
		if (kind == 3)
			for (int k = 0; k < 4; k++) {
				uint32_t x = (uint32_t)(tf_rand() % s->nnodes);
				struct snap_node *nd2 = &s->nodes[x];
				if (nd2->type != SNAP_NODE_SWITCH || !nd2->lft_len)
					continue;
				uint64_t r = tf_rand() % (nd2->nports + 2u);
				*tf_lft_at(s, (uint32_t)(nd2 - s->nodes), tf_rand() % nd2->lft_len) = r > nd2->nports ? SNAP_LFT_NONE : (uint8_t)r;
			}
		struct route_tab *rt = build_rt(s, NULL);
		struct hier *h = build_h(rt);
		char what[64];
		snprintf(what, sizeof(what), "seed %llu kind %u", (unsigned long long)seed, kind);
		if (!same_as_ref(rt, h, what))
			bad++;
		restarts += h->nrestarts;
		maxdepth = h->depth > maxdepth ? h->depth : maxdepth;
		multiroot += h->nroots > 1;
		n++;
		hier_free(h);
		route_free(rt);
		snap_free(s);
	}
	CHECK(!bad, "fast == reference on %d random fabrics (trees, over-subscribed, multi-rail, LMC, fat trees, "
		    "random regular graphs, tori/rings, back-to-back CAs, failed and stale links, corrupted LFTs): %d differ",
	      n, bad);
	printf("# random fabrics: deepest tree %u, %u with several roots, %u block splits\n", maxdepth, multiroot, restarts);
}

static void test_speed(void)
{
	struct snap *s = snap_new();
	tf_fattree3(s, 16);
	tf_fattree3_finish(s, 16);
	struct route_tab *rt = build_rt(s, NULL);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct hier *h = build_h(rt);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	CHECK(h->depth == 3 && count_all(h, 2) == 128 && count_all(h, 1) == 16 && h->nclasses == 128,
	      "k=16 fat tree (1,024 hosts): 128 twin classes, leaves/pods/root, built in %.1f ms", ms);
	hier_free(h);
	route_free(rt);
	snap_free(s);
}

int main(void)
{
	test_tree2();
	test_fattree3(4, 0);
	test_fattree3(6, 0);
	test_fattree3(6, 1);
	test_fattree3(8, 1);
	test_disconnected();
	test_random();
	test_speed();
	return tf_failures != 0;
}
