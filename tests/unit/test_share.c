/*
 * test_share.c - link sharing for a job: a hand-checked over-subscribed
 * tree, and path matrix / loads / ingress groups against brute force over
 * route_walk() on random fabrics.
 *
 * test: serial - asserts the 1,024-host build within 2,000 ms of wall
 * clock with OpenMP on both cores (ASan's build takes ~1.9 s alone).
 */
#include <time.h>

#include "share.h"
#include "testfab.h"

static struct route_tab *build_rt(const struct snap *s)
{
	struct route_tab *rt;
	if (route_build(s, NULL, &rt))
		tf_die("route_build");
	return rt;
}

static uint32_t ep(const struct route_tab *rt, const char *n)
{
	uint32_t e;
	if (route_resolve(rt, n, &e, NULL))
		tf_die("resolve");
	return e;
}

static struct share *build_sh(const struct route_tab *rt, const uint32_t *eps, size_t n, unsigned flags)
{
	struct share *sh;
	int rc = share_build(rt, eps, n, flags, &sh);
	if (rc) {
		fprintf(stderr, "share_build: %s\n", an_strerror(rc));
		exit(99);
	}
	return sh;
}

static uint32_t load_of(const struct share *sh, uint32_t node, unsigned port)
{
	for (uint32_t i = 0; i < sh->nlinks; i++)
		if (sh->links[i].node == node && sh->links[i].port == port)
			return sh->links[i].count;
	return 0;
}

static void test_oversubscribed(void)
{
	/* 2 leaves x 4 hosts, 2 spines: 2:1. Hosts h0..h7 have LIDs 1..8;
	 * leaves send odd LIDs up port 6 (spine 1), even ones up port 5. */
	struct snap *s = snap_new();
	tf_tree2(s, 2, 4, 2, 1);
	tf_finish(s, 0);
	struct route_tab *rt = build_rt(s);
	uint32_t H[8];
	char n[16];
	for (unsigned i = 0; i < 8; i++) {
		snprintf(n, sizeof(n), "h%04u", i);
		H[i] = ep(rt, n);
	}
	struct share *sh = build_sh(rt, H, 8, SHARE_KEEP_PATHS);
	uint32_t l0 = (uint32_t)snap_find_node(s, TF_SW_GUID), l1 = (uint32_t)snap_find_node(s, TF_SW_GUID + 1);
	uint32_t s0 = (uint32_t)snap_find_node(s, TF_SW_GUID + 1000), s1 = (uint32_t)snap_find_node(s, TF_SW_GUID + 1001);
	CHECK(rt->eps[H[4]].lid == 5 && sh->npairs_ok == 56 && sh->npairs_failed == 0 && sh->max_hops == 3,
	      "2:1 tree: 56 routed pairs, longest 3 switches");
	int ok = 1;
	for (unsigned i = 0; i < 8; i++) {
		ok &= load_of(sh, rt->eps[H[i]].node, 1) == 7;                 /* host cable up */
		ok &= load_of(sh, i < 4 ? l0 : l1, i % 4 + 1) == 7;            /* leaf down to host */
	}
	CHECK(ok, "2:1 tree: every host cable carries 7 routes each way");
	CHECK(load_of(sh, l0, 5) == 8 && load_of(sh, l0, 6) == 8 && load_of(sh, l1, 5) == 8 && load_of(sh, l1, 6) == 8 &&
		      load_of(sh, s0, 1) == 8 && load_of(sh, s0, 2) == 8 && load_of(sh, s1, 1) == 8 &&
		      load_of(sh, s1, 2) == 8 && sh->nlinks == 24,
	      "2:1 tree: each of the 8 directed leaf-spine links carries 4 x 2 = 8 routes, 24 links in all");
	CHECK(sh->nsharing == 8 && sh->ngroups == 4 && sh->nleaves == 2 && sh->avg_hosts_per_leaf == 4.0,
	      "2:1 tree: all 8 hosts share, in 4 pairs; 4 hosts per leaf");
	ok = 1;
	for (uint32_t g = 0; g < sh->ngroups; g++) {
		const struct share_group *gr = &sh->groups[g];
		uint32_t a = sh->members[gr->first], b = sh->members[gr->first + 1];
		/* same leaf, LIDs of the same parity, link from the spine that parity selects */
		ok &= gr->n == 2 && a / 4 == b / 4 && (a + 1) % 2 == (b + 1) % 2;
		ok &= gr->node == ((a + 1) % 2 ? s1 : s0) && gr->port == (a < 4 ? 1 : 2);
	}
	CHECK(ok, "2:1 tree: each group is two hosts of one leaf fed by the same spine downlink");
	uint32_t sw[8];
	size_t ns;
	CHECK(share_path(sh, 0, 4, sw, 8, &ns) == AN_OK && ns == 3 && sw[0] == l0 && sw[1] == s1 && sw[2] == l1,
	      "path matrix: h0 -> h4 = leaf0, spine1, leaf1");
	CHECK(share_path(sh, 0, 1, sw, 8, &ns) == AN_OK && ns == 1 && sw[0] == l0 &&
		      share_path(sh, 3, 3, sw, 8, &ns) == AN_OK && ns == 0 && share_path(sh, 8, 0, sw, 8, &ns) == AN_E_INVAL,
	      "path matrix: same leaf 1 switch, a host to itself none, out of range INVAL");
	share_free(sh);

	uint32_t sub[3] = { H[0], H[4], H[6] };
	sh = build_sh(rt, sub, 3, 0);
	CHECK(sh->nsharing == 2 && sh->sharing[0] == 1 && sh->sharing[1] == 2 && sh->ngroups == 1 &&
		      sh->avg_hosts_per_leaf == 1.5 && share_path(sh, 0, 1, sw, 8, &ns) == AN_E_INVAL,
	      "job {h0, h4, h6}: h4 and h6 share spine1's downlink, h0 alone; 1.5 hosts per leaf; no kept paths");
	share_free(sh);
	uint32_t dupl[2] = { H[0], H[0] }, badep[1] = { rt->neps };
	CHECK(share_build(rt, dupl, 2, 0, &sh) == AN_E_INVAL && share_build(rt, badep, 1, 0, &sh) == AN_E_INVAL,
	      "repeated or unknown end port: AN_E_INVAL");
	sh = build_sh(rt, NULL, 0, SHARE_KEEP_PATHS);
	CHECK(sh->n == 0 && sh->nlinks == 0 && sh->nsharing == 0 && sh->avg_hosts_per_leaf == 0.0, "empty job");
	share_free(sh);
	route_free(rt);
	snap_free(s);

	/* Same tree without over-subscription: every host has its own spine. */
	s = snap_new();
	tf_tree2(s, 2, 4, 4, 1);
	tf_finish(s, 0);
	rt = build_rt(s);
	for (unsigned i = 0; i < 8; i++) {
		snprintf(n, sizeof(n), "h%04u", i);
		H[i] = ep(rt, n);
	}
	sh = build_sh(rt, H, 8, 0);
	CHECK(sh->nsharing == 0 && sh->ngroups == 0 && sh->npairs_ok == 56,
	      "1:1 tree: no host shares an ingress link (tii_get_num_hosts_sharing_links = 0)");
	share_free(sh);
	route_free(rt);
	snap_free(s);
}

/* Brute force over route_walk for every ordered pair. */
static int agrees(const struct route_tab *rt, const uint32_t *H, uint32_t n, const char *what)
{
	const struct snap *s = rt->snap;
	struct share *sh = build_sh(rt, H, n, SHARE_KEEP_PATHS);
	uint32_t *load = calloc(s->nports + 1, sizeof(*load));
	uint32_t cap = rt->nsw + 2;
	struct route_hop *hp = malloc(cap * sizeof(*hp));
	uint32_t *sw = malloc(cap * sizeof(*sw));
	/* ingress[j] as a list of port slots */
	uint32_t *ing = malloc((size_t)n * n * sizeof(*ing) + 1), *ning = calloc(n + 1, sizeof(*ning));
	int ok = 1;
	uint64_t pok = 0, pfail = 0;
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < n; j++) {
			struct route_res res;
			int r = route_walk(rt, H[i], rt->eps[H[j]].lid, hp, cap, &res);
			size_t ns;
			int r2 = share_path(sh, i, j, sw, cap, &ns);
			if (r != r2 || (r == AN_OK && ns != res.hops) || (r != AN_E_LOOP && ns != res.hops)) {
				printf("# %s: %u -> %u: walk %d/%u, share %d/%zu\n", what, i, j, r, res.hops, r2, ns);
				ok = 0;
				continue;
			}
			for (size_t k = 0; r != AN_E_LOOP && k < ns; k++)
				ok &= sw[k] == hp[k].node;
			if (i == j)
				continue;
			if (r) {
				pfail++;
				continue;
			}
			pok++;
			const struct route_ep *e = &rt->eps[H[i]];
			if (s->nodes[e->node].type != SNAP_NODE_SWITCH)
				load[s->nodes[e->node].port0 + e->port]++;
			for (uint32_t k = 0; k < res.hops; k++)
				load[s->nodes[hp[k].node].port0 + hp[k].out]++;
			const struct route_ep *f = &rt->eps[H[j]];
			int li = e->up == AN_OK && e->leaf != ROUTE_NONE, lj = f->up == AN_OK && f->leaf != ROUTE_NONE;
			if (li && lj && e->leaf != f->leaf && res.hops >= 2) {
				uint32_t slot = s->nodes[hp[res.hops - 2].node].port0 + hp[res.hops - 2].out, k;
				for (k = 0; k < ning[j] && ing[(size_t)j * n + k] != slot; k++)
					;
				if (k == ning[j])
					ing[(size_t)j * n + ning[j]++] = slot;
			}
		}
	ok &= pok == sh->npairs_ok && pfail == sh->npairs_failed;
	uint32_t nl = 0;
	for (uint32_t x = 0; x < s->nports; x++)
		nl += load[x] != 0;
	ok &= nl == sh->nlinks;
	for (uint32_t k = 0; k < sh->nlinks; k++)
		ok &= load[s->nodes[sh->links[k].node].port0 + sh->links[k].port] == sh->links[k].count;
	/* groups: every link in two or more ingress sets, with exactly those hosts */
	uint32_t ng = 0;
	uint8_t *shares = calloc(n + 1, 1);
	for (uint32_t j = 0; j < n; j++)
		for (uint32_t k = 0; k < ning[j]; k++) {
			uint32_t slot = ing[(size_t)j * n + k], cnt = 0, first = UINT32_MAX;
			for (uint32_t j2 = 0; j2 < n; j2++)
				for (uint32_t k2 = 0; k2 < ning[j2]; k2++)
					if (ing[(size_t)j2 * n + k2] == slot) {
						cnt++;
						if (first == UINT32_MAX)
							first = j2;
					}
			if (cnt < 2)
				continue;
			shares[j] = 1;
			if (first != j)
				continue;
			ng++;
			int found = 0;
			for (uint32_t g = 0; g < sh->ngroups; g++)
				if (s->nodes[sh->groups[g].node].port0 + sh->groups[g].port == slot)
					found = sh->groups[g].n == cnt;
			ok &= found;
		}
	ok &= ng == sh->ngroups;
	uint32_t nshare = 0;
	for (uint32_t j = 0; j < n; j++)
		nshare += shares[j];
	ok &= nshare == sh->nsharing;
	for (uint32_t k = 0; k < sh->nsharing; k++)
		ok &= shares[sh->sharing[k]];
	if (!ok)
		printf("# %s: loads/ingress differ (pairs %llu/%llu vs %llu/%llu, links %u vs %u, groups %u vs %u)\n", what,
		       (unsigned long long)pok, (unsigned long long)pfail, (unsigned long long)sh->npairs_ok,
		       (unsigned long long)sh->npairs_failed, nl, sh->nlinks, ng, sh->ngroups);
	free(shares);
	free(load);
	free(hp);
	free(sw);
	free(ing);
	free(ning);
	share_free(sh);
	return ok;
}

static void test_random(void)
{
	int n = 0, bad = 0;
	uint32_t shared = 0;
	for (uint64_t seed = 1; seed <= 120; seed++) {
		struct snap *s = snap_new();
		tf_rng_state = seed;
		unsigned kind = (unsigned)(seed % 4);
		if (kind == 0)
			tf_tree2(s, 2 + (unsigned)(tf_rand() % 4), 1 + (unsigned)(tf_rand() % 5),
				 1 + (unsigned)(tf_rand() % 3), 1 + (unsigned)(tf_rand() % 2));
		else if (kind == 1)
			tf_fattree3(s, 4);
		else if (kind == 2)
			tf_rrg(s, 3 + (unsigned)(tf_rand() % 8), 2 + (unsigned)(tf_rand() % 3), 1 + (unsigned)(tf_rand() % 3),
			       seed);
		else
			tf_torus(s, 3, 2 + (unsigned)(tf_rand() % 2), 2);
		uint32_t x = tf_ca(s, 9000, 1, "bb1 HCA-1"), y = tf_ca(s, 9001, 1, "bb2 HCA-1");
		tf_link(s, x, 1, y, 1);
		tf_finish(s, (unsigned)(seed % 3 == 0));
		/* faults after routing: a dead link, a dead host cable, corrupted entries */
		tf_rng_state = seed * 77;
		for (int k = 0; k < 3; k++) {
			uint32_t z = (uint32_t)(tf_rand() % s->nnodes);
			struct snap_node *nd = &s->nodes[z];
			unsigned p = 1 + (unsigned)(tf_rand() % nd->nports);
			if (tf_rand() % 2 && snap_port_of(s, z, p)->peer_node != SNAP_NONE)
				tf_link_down(s, z, p);
			if (nd->type == SNAP_NODE_SWITCH && nd->lft_len && tf_rand() % 2) {
				uint64_t r = tf_rand() % (nd->nports + 2u);
				*tf_lft_at(s, (uint32_t)(nd - s->nodes), tf_rand() % nd->lft_len) = r > nd->nports ? SNAP_LFT_NONE : (uint8_t)r;
			}
		}
		struct route_tab *rt = build_rt(s);
		/* a random subset of all end ports: hosts' rails, switches, the pair */
		uint32_t *H = malloc(rt->neps * sizeof(*H)), m = 0;
		for (uint32_t e = 0; e < rt->neps; e++)
			if (tf_rand() % 3)
				H[m++] = e;
		for (uint32_t i = m; i > 1; i--) {
			uint32_t j = (uint32_t)(tf_rand() % i), t = H[i - 1];
			H[i - 1] = H[j];
			H[j] = t;
		}
		char what[32];
		snprintf(what, sizeof(what), "seed %llu", (unsigned long long)seed);
		struct share *sh = build_sh(rt, H, m, 0);
		shared += sh->nsharing > 0;
		share_free(sh);
		bad += !agrees(rt, H, m, what);
		n++;
		free(H);
		route_free(rt);
		snap_free(s);
	}
	CHECK(!bad, "path matrix, link loads and sharing groups == brute force on %d random jobs on faulty fabrics (%d differ; %u with sharing)",
	      n, bad, shared);
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1e3 + (t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static void test_speed(void)
{
	struct snap *s = snap_new();
	tf_fattree3(s, 24);
	tf_fattree3_finish(s, 24);
	struct route_tab *rt = build_rt(s);
	/* 1,024 hosts spread over the whole fabric: every third one */
	uint32_t H[1024];
	for (uint32_t i = 0; i < 1024; i++)
		H[i] = route_host_ep(rt, i * 3);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct share *sh = build_sh(rt, H, 1024, SHARE_KEEP_PATHS);
	double ms = ms_since(&t0);
	CHECK(sh->npairs_ok == 1024u * 1023u && sh->max_hops == 5 && ms < 2000,
	      "1,024-host job on a k=24 fat tree: path matrix, loads and sharing in %.1f ms", ms);
	share_free(sh);
	route_free(rt);
	snap_free(s);
}

int main(void)
{
	test_oversubscribed();
	test_random();
	test_speed();
	return tf_failures != 0;
}
