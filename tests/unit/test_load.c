/*
 * test_load.c - link loads of job patterns against brute force: every flow
 * of the pattern walked on its own with route_walk() and added link by
 * link, on full, over-subscribed, failed-link and 3-level fat trees, a
 * torus, a random regular graph and multi-rail hosts; seed 000's bound on a
 * hand-checked fat tree; byte counts beyond 32 bits exact, totals past
 * 2^62 refused; the limits.
 */
#include "load.h"
#include "testfab.h"

struct bf {
	const struct route_tab *rt;
	const uint32_t *host;          /* rank -> fabric host */
	uint64_t *m, *b;               /* [nports] */
	uint64_t intra_m, intra_b, fail_m, fail_b, msgs, bytes;
	uint64_t hop_m[LOAD_HOPS_MAX + 1];
	struct route_hop hops[512];
};

static int bf_fn(void *arg, uint32_t s, uint32_t d, uint64_t bytes)
{
	struct bf *x = arg;
	const struct route_tab *rt = x->rt;
	x->msgs++;
	x->bytes += bytes;
	if (x->host[s] == x->host[d]) {
		x->intra_m++;
		x->intra_b += bytes;
		return 0;
	}
	uint32_t a = route_host_ep(rt, x->host[s]), e = route_host_ep(rt, x->host[d]);
	struct route_res res;
	int rc = route_walk(rt, a, rt->eps[e].lid, x->hops, 512, &res);
	if (rc != AN_OK || !rt->eps[e].lid) {
		x->fail_m++;
		x->fail_b += bytes;
		return 0;
	}
	const struct snap *sn = rt->snap;
	uint32_t k = sn->nodes[rt->eps[a].node].port0 + rt->eps[a].port;
	x->m[k]++;
	x->b[k] += bytes;
	for (uint32_t i = 0; i < res.hops; i++) {
		k = sn->nodes[x->hops[i].node].port0 + x->hops[i].out;
		x->m[k]++;
		x->b[k] += bytes;
	}
	x->hop_m[res.hops < LOAD_HOPS_MAX ? res.hops : LOAD_HOPS_MAX]++;
	return 0;
}

/* Compares load_build with brute force; returns 1 if all equal. */
static int compare(const struct route_tab *rt, const uint32_t *host, uint32_t n, const char *spec,
		   const struct pattern *given, int threads, const char *fab)
{
	struct pattern p;
	char err[AN_ERR_LEN];
	if (given) {
		p = *given;
	} else if (pattern_parse(spec, &p, err)) {
		CHECK(0, "%s: parse %s: %s", fab, spec, err);
		return 0;
	}
	p.msg_bytes = given ? p.msg_bytes : 4096;
	struct pat_job job = { .nranks = n, .host = (uint32_t *)host };
	struct load *L;
	int rc = load_build(rt, &job, &p, threads, &L);
	if (!CHECK(rc == AN_OK, "%s %s: load_build %s", fab, spec, an_strerror(rc)))
		return 0;
	const struct snap *sn = rt->snap;
	struct bf x = { .rt = rt, .host = host };
	x.m = calloc(sn->nports, 8);
	x.b = calloc(sn->nports, 8);
	pattern_for_each(&p, n, bf_fn, &x);
	int ok = 1;
	uint32_t nz = 0;
	for (uint32_t k = 0; k < sn->nports; k++)
		nz += x.m[k] != 0;
	ok &= nz == L->nlinks;
	uint64_t mx = 0;
	for (uint32_t i = 0; i < L->nlinks && ok; i++) {
		uint32_t k = sn->nodes[L->links[i].node].port0 + L->links[i].port;
		ok &= x.m[k] == L->links[i].msgs && x.b[k] == L->links[i].bytes;
		if (x.b[k] > mx)
			mx = x.b[k];
		if (i)
			ok &= L->links[i - 1].node < L->links[i].node ||
			      (L->links[i - 1].node == L->links[i].node &&
			       L->links[i - 1].port < L->links[i].port);
	}
	uint64_t hs = 0;
	for (int h = 0; h <= LOAD_HOPS_MAX; h++) {
		ok &= x.hop_m[h] == L->hop_msgs[h];
		hs += L->hop_msgs[h];
	}
	int totals = x.msgs == L->msgs && x.bytes == L->bytes && x.intra_m == L->intra_msgs &&
		     x.intra_b == L->intra_bytes && x.fail_m == L->fail_msgs && x.fail_b == L->fail_bytes &&
		     hs + L->intra_msgs + L->fail_msgs == L->msgs;
	CHECK(ok && totals && mx == L->max_bytes,
	      "%s %s (%u ranks, %u threads): %u links, flows %llu, intra %llu, failed %llu equal brute force",
	      fab, spec, n, threads, L->nlinks, (unsigned long long)L->msgs,
	      (unsigned long long)L->intra_msgs, (unsigned long long)L->fail_msgs);
	/* per-level totals add up to the link totals */
	uint64_t lt = 0, all = 0;
	for (uint32_t i = 0; i < L->nlevels; i++)
		lt += L->levels[i].tot_bytes;
	for (uint32_t i = 0; i < L->nlinks; i++)
		all += L->links[i].bytes;
	CHECK(lt == all && L->nmax >= (L->max_bytes ? 1u : 0u), "%s %s: per-level totals add up, %u max links",
	      fab, spec, L->nmax);
	free(x.m);
	free(x.b);
	load_free(L);
	return ok && totals;
}

/* Linear: works before canonicalisation, unlike snap_find_node. */
static uint32_t node_of(const struct snap *s, uint64_t guid)
{
	for (uint32_t i = 0; i < s->nnodes; i++)
		if (s->nodes[i].guid == guid)
			return i;
	tf_die("no such node");
	return 0;
}

static struct route_tab *rt_of(const struct snap *s)
{
	struct route_tab *rt;
	if (route_build(s, NULL, &rt))
		tf_die("route_build");
	return rt;
}

/* A job on `nh` hosts spread over the fabric, uneven ranks per host. */
static uint32_t make_job(const struct route_tab *rt, uint32_t nh, uint32_t *host, uint64_t seed)
{
	tf_rng_state = seed;
	uint32_t n = 0;
	for (uint32_t i = 0; i < nh && i < rt->nhosts; i++) {
		uint32_t h = (uint32_t)((i * 7 + tf_rand() % 3) % rt->nhosts);
		uint32_t c = 1 + (uint32_t)(tf_rand() % 3);
		for (uint32_t j = 0; j < c; j++)
			host[n++] = h;
	}
	return n;
}

static void patterns(const struct route_tab *rt, const char *fab, uint64_t seed)
{
	uint32_t host[4096];
	uint32_t n = make_job(rt, rt->nhosts, host, seed);
	const char *specs[] = { "alltoall", "allgather", "ring", "shift:3", "shift:-7", "random:5" };
	for (unsigned i = 0; i < 6; i++)
		for (int th = 1; th <= 2; th++)
			compare(rt, host, n, specs[i], NULL, th, fab);
	/* stencils need a grid: trim the job to 12 / 24 ranks */
	if (n >= 24) {
		compare(rt, host, 12, "stencil2d:4,3", NULL, 2, fab);
		compare(rt, host, 12, "stencil2d:4,3:periodic", NULL, 2, fab);
		compare(rt, host, 24, "stencil3d:2,3,4:periodic", NULL, 2, fab);
		compare(rt, host, 24, "stencil3d:2,3,4", NULL, 1, fab);
		/* the permutations that need a power of two: 16 ranks */
		compare(rt, host, 16, "xor:5", NULL, 2, fab);
		compare(rt, host, 16, "bitrev", NULL, 1, fab);
	}
	/* an explicit matrix with random bytes, duplicates and self-sends */
	struct pat_triple t[600];
	for (unsigned i = 0; i < 600; i++)
		t[i] = (struct pat_triple){ (uint32_t)(tf_rand() % n), (uint32_t)(tf_rand() % n),
					    1 + tf_rand() % 100000 };
	struct pattern p;
	char err[AN_ERR_LEN];
	if (pattern_set_matrix(&p, t, 600, n, err))
		tf_die(err);
	compare(rt, host, n, "matrix", &p, 2, fab);
	pattern_clear(&p);
	/* bytes beyond 32 bits (issue 37): a traffic matrix of a long run
	 * (341 GB for one pair, one entry at 2^53, the rest below 2^43), and
	 * 6 GB per pair of an all-to-all, exact to the byte */
	for (unsigned i = 0; i < 600; i++)
		t[i].bytes = i == 0 ? 341303846527ull : i == 1 ? 1ull << 53 : 1 + tf_rand() % (1ull << 43);
	if (pattern_set_matrix(&p, t, 600, n, err))
		tf_die(err);
	compare(rt, host, n, "matrix", &p, 2, fab);
	pattern_clear(&p);
	pattern_parse("alltoall", &p, NULL);
	p.msg_bytes = 6000000000ull;
	compare(rt, host, n, "alltoall", &p, 2, fab);
	/* one rank per host, every host: the plain all-to-all */
	uint32_t all[4096];
	for (uint32_t h = 0; h < rt->nhosts && h < 4096; h++)
		all[h] = h;
	compare(rt, all, rt->nhosts < 4096 ? rt->nhosts : 4096, "alltoall", NULL, 2, fab);
}

static int64_t bound_of(const struct load *L, unsigned from, unsigned to, uint64_t *max)
{
	for (uint32_t i = 0; i < L->nlevels; i++)
		if (L->levels[i].from == from && L->levels[i].to == to) {
			*max = L->levels[i].max_msgs;
			return L->levels[i].bound_msgs;
		}
	return -2;
}

int main(void)
{
	struct snap *s;
	struct route_tab *rt;

	/* full 2-level tree */
	s = snap_new();
	tf_tree2(s, 4, 4, 4, 1);
	tf_finish(s, 0);
	rt = rt_of(s);
	patterns(rt, "tree 4x4, 4 spines", 1);
	route_free(rt);
	snap_free(s);

	/* 5:4 over-subscribed, and one uplink down */
	s = snap_new();
	tf_tree2(s, 6, 5, 4, 1);
	tf_finish(s, 0);
	rt = rt_of(s);
	patterns(rt, "tree 5:4", 2);
	route_free(rt);
	snap_free(s);

	s = snap_new();
	tf_tree2(s, 4, 5, 4, 1);
	tf_link_down(s, node_of(s, TF_SW_GUID + 1), 6);
	tf_finish(s, 0);
	rt = rt_of(s);
	patterns(rt, "tree 5:4 failed link", 3);
	route_free(rt);
	snap_free(s);

	/* failed link after routing: LFTs still point at it -> failed flows */
	s = snap_new();
	tf_tree2(s, 4, 4, 2, 1);
	tf_finish(s, 0);
	tf_link_down(s, node_of(s, TF_SW_GUID + 2), 5);
	rt = rt_of(s);
	patterns(rt, "tree with a link down under the LFTs", 4);
	route_free(rt);
	snap_free(s);

	/* multi-rail */
	s = snap_new();
	tf_tree2(s, 4, 3, 2, 2);
	tf_finish(s, 0);
	rt = rt_of(s);
	patterns(rt, "tree multi-rail", 5);
	route_free(rt);
	snap_free(s);

	/* torus, random regular */
	s = snap_new();
	tf_torus(s, 4, 3, 2);
	tf_finish(s, 0);
	rt = rt_of(s);
	patterns(rt, "torus 4x3", 6);
	route_free(rt);
	snap_free(s);

	s = snap_new();
	tf_rrg(s, 12, 4, 3, 77);
	tf_finish(s, 0);
	rt = rt_of(s);
	patterns(rt, "random regular 12x4", 7);
	route_free(rt);
	snap_free(s);

	/* 3-level fat tree k=4 (d-mod-k): seed 000's bound by hand.
	 * 16 hosts, one rank each: a leaf holds 2 hosts and has 2 up links:
	 * ceil(2 * 14 / 2) = 14; a pod holds 4 hosts, its 2 spines have 4 up
	 * links: ceil(4 * 12 / 4) = 12; a host cable carries 15. */
	s = snap_new();
	tf_fattree3(s, 4);
	tf_fattree3_finish(s, 4);
	rt = rt_of(s);
	patterns(rt, "fat tree k=4", 8);
	{
		uint32_t all[16];
		for (uint32_t h = 0; h < 16; h++)
			all[h] = h;
		struct pattern p;
		pattern_parse("alltoall", &p, NULL);
		struct pat_job job = { 16, all };
		struct load *L;
		CHECK(load_build(rt, &job, &p, 2, &L) == 0, "k=4 alltoall");
		uint64_t mx;
		int64_t b;
		b = bound_of(L, 0, 1, &mx);
		CHECK(b == 15 && mx == 15, "k=4 host cables: bound 15, max %llu",
		      (unsigned long long)mx);
		b = bound_of(L, 1, 2, &mx);
		CHECK(b == 14 && mx >= 14, "k=4 leaf up: bound 14, max %llu",
		      (unsigned long long)mx);
		b = bound_of(L, 2, 1, &mx);
		CHECK(b == 14, "k=4 leaf down: bound 14, max %llu", (unsigned long long)mx);
		b = bound_of(L, 2, 3, &mx);
		CHECK(b == 12 && mx >= 12, "k=4 pod up: bound 12, max %llu",
		      (unsigned long long)mx);
		b = bound_of(L, 3, 2, &mx);
		CHECK(b == 12, "k=4 pod down: bound 12, max %llu", (unsigned long long)mx);
		CHECK(L->nmax >= 1, "k=4: %u max links", L->nmax);
		/* behind a max link: a host (cable) or the hosts under a switch */
		uint32_t nb = L->behind_off[1] - L->behind_off[0];
		CHECK(nb >= 1 && nb <= 16, "k=4: %u hosts behind the first max link", nb);
		CHECK(L->max_hops == 5 && L->hop_msgs[1] == 16 && L->hop_msgs[3] == 16 * 2 &&
		      L->hop_msgs[5] == 16 * 12, "k=4 hops: 1:%llu 3:%llu 5:%llu",
		      (unsigned long long)L->hop_msgs[1], (unsigned long long)L->hop_msgs[3],
		      (unsigned long long)L->hop_msgs[5]);
		load_free(L);
		/* a torus has lateral links: no bound there */
	}
	route_free(rt);
	snap_free(s);

	s = snap_new();
	tf_torus(s, 3, 3, 1);
	tf_finish(s, 0);
	rt = rt_of(s);
	{
		uint32_t all[9] = { 0, 1, 2, 3, 4, 5, 6, 7, 8 };
		struct pattern p;
		pattern_parse("alltoall", &p, NULL);
		struct pat_job job = { 9, all };
		struct load *L;
		load_build(rt, &job, &p, 1, &L);
		uint64_t mx;
		int64_t b;
		b = bound_of(L, 1, 1, &mx);
		CHECK(b == -1, "torus: lateral class 1>1 has no bound");
		b = bound_of(L, 0, 1, &mx);
		CHECK(b == 8, "torus: host cables bound 8");
		load_free(L);
		/* limits */
		job.nranks = 0;
		CHECK(load_build(rt, &job, &p, 1, &L) == AN_E_INVAL, "0 ranks refused");
		job.nranks = 9;
		all[3] = 99;
		CHECK(load_build(rt, &job, &p, 1, &L) == AN_E_INVAL, "unknown host refused");
		all[3] = 3;
		/* totals past 2^62: the pattern's (72 flows of 2^56), and, with
		 * the pattern's within, a lateral level's (72 flows of 2^62/72,
		 * more than one lateral link each on average) */
		char err[AN_ERR_LEN] = "";
		uint64_t total = 0;
		p.msg_bytes = 1ull << 56;
		CHECK(load_build(rt, &job, &p, 1, &L) == AN_E_RANGE &&
			      pattern_total_bytes(&p, 9, &total, err) == AN_E_RANGE && strstr(err, "2^62"),
		      "72 flows of 2^56 bytes: AN_E_RANGE (%s)", err);
		p.msg_bytes = TOPO_BYTES_TOTAL_MAX / 72;
		CHECK(pattern_total_bytes(&p, 9, &total, err) == AN_OK && total <= TOPO_BYTES_TOTAL_MAX &&
			      load_build(rt, &job, &p, 1, &L) == AN_E_RANGE,
		      "torus: the pattern's %llu bytes fit, its lateral level's total does not: AN_E_RANGE",
		      (unsigned long long)total);
		p.msg_bytes = TOPO_BYTES_TOTAL_MAX / 72 / 4;
		int rc = load_build(rt, &job, &p, 1, &L);
		uint64_t lat = 0;
		if (rc == AN_OK)
			bound_of(L, 1, 1, &lat);
		CHECK(rc == AN_OK && L->bytes == 72 * p.msg_bytes && L->max_bytes % p.msg_bytes == 0,
		      "torus at 2^62/288 bytes per message: answered, total %llu exact",
		      rc ? 0ull : (unsigned long long)L->bytes);
		if (rc == AN_OK)
			load_free(L);
	}
	route_free(rt);
	snap_free(s);
	return tf_failures != 0;
}
