/*
 * test_route.c - the route engine: LFT walks, their errors, the name index,
 * node-name-maps and the hop-count DP, on synthetic fabrics.
 */
#include "namemap_file.h"
#include "route.h"
#include "testfab.h"

#include <unistd.h>

static uint32_t node_by_guid(const struct snap *s, uint64_t g)
{
	int64_t i = snap_find_node(s, g);
	if (i < 0)
		tf_die("no such node");
	return (uint32_t)i;
}

static uint32_t ep(const struct route_tab *rt, const char *name)
{
	uint32_t e;
	if (route_resolve(rt, name, &e, NULL)) {
		fprintf(stderr, "cannot resolve %s\n", name);
		exit(99);
	}
	return e;
}

static int hops(const struct route_tab *rt, const char *a, const char *b)
{
	return route_hops(rt, ep(rt, a), rt->eps[ep(rt, b)].lid);
}

static struct route_tab *build(const struct snap *s, const struct route_namemap *m)
{
	struct route_tab *rt;
	if (route_build(s, m, &rt))
		tf_die("route_build");
	return rt;
}

/* 4 leaves x 3 hosts, 2 spines. */
static void test_tree2(void)
{
	struct snap *s = snap_new();
	tf_tree2(s, 4, 3, 2, 1);
	tf_finish(s, 0);
	struct route_tab *rt = build(s, NULL);
	CHECK(rt->nhosts == 12 && rt->nsw == 6, "tree2: 12 hosts, 6 switches (%u, %u)", rt->nhosts, rt->nsw);
	int bad = 0;
	char a[16], b[16];
	for (unsigned i = 0; i < 12; i++)
		for (unsigned j = 0; j < 12; j++) {
			snprintf(a, sizeof(a), "h%04u", i);
			snprintf(b, sizeof(b), "h%04u", j);
			bad += hops(rt, a, b) != (i == j ? 0 : i / 3 == j / 3 ? 1 : 3);
		}
	CHECK(!bad, "tree2: hop count 0 to itself, 1 on one leaf, 3 across leaves, all 144 pairs (%d wrong)", bad);

	struct route_hop hp[8];
	struct route_res res;
	int r = route_walk(rt, ep(rt, "h0000"), rt->eps[ep(rt, "h0005")].lid, hp, 8, &res);
	uint32_t l0 = node_by_guid(s, TF_SW_GUID + 0), l1 = node_by_guid(s, TF_SW_GUID + 1);
	CHECK(r == AN_OK && res.hops == 3 && hp[0].node == l0 && hp[2].node == l1 &&
		      s->nodes[hp[1].node].guid >= TF_SW_GUID + 1000 && hp[0].in == 1 && hp[2].out == 3,
	      "tree2: h0000 -> h0005 walks leaf0, a spine, leaf1, leaving by h0005's port 3");
	r = route_walk(rt, ep(rt, "h0000"), rt->eps[ep(rt, "h0005")].lid, hp, 1, &res);
	CHECK(r == AN_OK && res.hops == 3 && hp[0].node == l0, "walk: a short buffer still counts all hops");

	/* switches as source and destination */
	char g[32];
	snprintf(g, sizeof(g), "0x%016llx", (unsigned long long)(TF_SW_GUID + 0));
	uint32_t sw0 = ep(rt, g);
	CHECK(rt->eps[sw0].node == l0 && rt->eps[sw0].port == 0, "resolve: a switch GUID gives its port 0");
	CHECK(route_hops(rt, ep(rt, "h0001"), rt->eps[sw0].lid) == 1, "host -> its own leaf switch: 1 hop");
	CHECK(route_hops(rt, sw0, rt->eps[sw0].lid) == 1, "switch -> itself: 1 hop");
	CHECK(route_hops(rt, sw0, rt->eps[ep(rt, "h0004")].lid) == 3, "leaf switch -> host on another leaf: 3");
	snprintf(g, sizeof(g), "0x%016llx", (unsigned long long)(TF_SW_GUID + 1000));
	CHECK(route_hops(rt, ep(rt, g), rt->eps[ep(rt, "h0000")].lid) == 2, "spine -> host: 2 hops");

	/* names */
	uint32_t e0 = ep(rt, "h0000");
	uint16_t dl;
	uint32_t e;
	CHECK(!strcmp(rt->eps[e0].hca, "HCA-1") && ep(rt, "h0000/HCA-1") == e0, "resolve: host and host/HCA");
	snprintf(g, sizeof(g), "0x%016llx", (unsigned long long)(TF_CA_GUID + 16 * 1 + 1));
	CHECK(ep(rt, g) == e0, "resolve: port GUID");
	snprintf(g, sizeof(g), "0X%016llX", (unsigned long long)(TF_CA_GUID + 16 * 1));
	CHECK(ep(rt, g) == e0, "resolve: node GUID, upper case");
	snprintf(g, sizeof(g), "lid:%u", rt->eps[e0].lid);
	CHECK(!route_resolve(rt, g, &e, &dl) && e == e0 && dl == rt->eps[e0].lid, "resolve: lid:N");
	snprintf(g, sizeof(g), "lid:0x%x", rt->eps[e0].lid);
	CHECK(!route_resolve(rt, g, &e, &dl) && e == e0, "resolve: lid:0xN");
	const char *nf[] = { "lid:0", "lid:99999", "lid:", "lid:1x", "0xzz", "0x", "0x1", "nohost", "h0000/HCA-9",
			     "h0000/", "/HCA-1", "h0000 " };
	int nbad = 0;
	for (size_t i = 0; i < sizeof(nf) / sizeof(nf[0]); i++)
		nbad += route_resolve(rt, nf[i], &e, NULL) != AN_E_NOTFOUND;
	CHECK(!nbad, "resolve: 12 unknown names give AN_E_NOTFOUND (%d did not)", nbad);
	char longname[300];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	CHECK(route_resolve(rt, longname, &e, NULL) == AN_E_INVAL && route_resolve(rt, NULL, &e, NULL) ==
		      AN_E_INVAL && route_resolve(rt, "", &e, NULL) == AN_E_INVAL,
	      "resolve: over-long, NULL and empty names are AN_E_INVAL");
	CHECK(route_hops(rt, e0, 0) == AN_E_NOLID && route_hops(rt, e0, (uint16_t)(rt->max_lid + 1)) ==
		      AN_E_NOLID && route_hops(rt, rt->neps, 1) == AN_E_INVAL,
	      "walk: LID 0 / unassigned LID are AN_E_NOLID, a bad source AN_E_INVAL");

	/* LFT errors on the same fabric */
	uint16_t lid5 = rt->eps[ep(rt, "h0005")].lid;
	uint8_t up = snap_lft_get(&s->nodes[l0], lid5);
	const struct snap_port *upp = &s->ports[s->nodes[l0].port0 + up];
	uint32_t spine = upp->peer_node;
	uint8_t saved = snap_lft_get(&s->nodes[spine], lid5);
	*tf_lft_at(s, spine, lid5) = upp->peer_port;   /* back down to leaf0 */
	r = route_walk(rt, e0, lid5, NULL, 0, &res);
	CHECK(r == AN_E_LOOP && res.hops == rt->nsw, "error: leaf <-> spine ping-pong is AN_E_LOOP after nsw hops");
	*tf_lft_at(s, spine, lid5) = saved;
	*tf_lft_at(s, l0, lid5) = SNAP_LFT_NONE;
	r = route_walk(rt, e0, lid5, NULL, 0, &res);
	CHECK(r == AN_E_NOENTRY && res.fail_node == l0 && res.hops == 1, "error: 0xFF entry is AN_E_NOENTRY at leaf0");
	*tf_lft_at(s, l0, lid5) = 0;
	CHECK(route_hops(rt, e0, lid5) == AN_E_WRONGDST, "error: entry 0 (this switch) for a host LID is AN_E_WRONGDST");
	*tf_lft_at(s, l0, lid5) = 2;
	r = route_walk(rt, e0, lid5, NULL, 0, &res);
	CHECK(r == AN_E_WRONGDST && res.fail_node == l0 && res.fail_port == 2,
	      "error: entry pointing at another host's port is AN_E_WRONGDST");
	*tf_lft_at(s, l0, lid5) = up;
	{
		/* an LFT shorter than the LID (an index reads the lengths when
		 * built) */
		struct snap_node *n = &s->nodes[l0];
		uint32_t keep = n->lft_len;
		struct route_tab *cut = NULL;
		n->lft_len = lid5;
		CHECK(!route_repoint(rt, s, &cut) && route_hops(cut, e0, lid5) == AN_E_NOENTRY,
		      "error: LID beyond the LFT is AN_E_NOENTRY");
		route_free(cut);
		n->lft_len = keep;
	}
	CHECK(route_hops(rt, e0, lid5) == 3, "walk: restored LFT routes again");
	route_free(rt);
	snap_free(s);
}

/* Two switches, hand-made: cabling faults. */
static void test_faults(void)
{
	struct snap *s = snap_new();
	uint32_t s1 = tf_switch(s, 1, 4), s2 = tf_switch(s, 2, 4);
	uint32_t a = tf_ca(s, 1, 1, "a HCA-1"), b = tf_ca(s, 2, 1, "b HCA-1"), c = tf_ca(s, 3, 1, "c HCA-1");
	tf_ca(s, 4, 1, "d HCA-1");   /* never cabled */
	uint32_t e = tf_ca(s, 5, 1, "e HCA-1"), f = tf_ca(s, 6, 1, "f HCA-1");
	tf_link(s, a, 1, s1, 1);
	tf_link(s, c, 1, s1, 2);
	tf_link(s, b, 1, s2, 1);
	tf_link(s, s1, 3, s2, 3);
	tf_link(s, e, 1, f, 1);      /* back to back */
	tf_finish(s, 0);
	struct route_tab *rt = build(s, NULL);
	uint32_t S1 = node_by_guid(s, TF_SW_GUID + 1), S2 = node_by_guid(s, TF_SW_GUID + 2);
	uint16_t lb = rt->eps[ep(rt, "b")].lid;
	uint32_t ea = ep(rt, "a");
	struct route_res res;
	CHECK(hops(rt, "a", "b") == 2 && hops(rt, "b", "c") == 2 && hops(rt, "a", "c") == 1, "faults: base routes");
	CHECK(hops(rt, "e", "f") == 0 && hops(rt, "f", "e") == 0, "back-to-back CAs: 0 switches");
	CHECK(hops(rt, "e", "a") == AN_E_WRONGDST, "back-to-back CA to a third host: AN_E_WRONGDST");
	CHECK(hops(rt, "d", "a") == AN_E_SRC_NOLINK && rt->eps[ep(rt, "d")].up == AN_E_SRC_NOLINK,
	      "uncabled source: AN_E_SRC_NOLINK");
	CHECK(hops(rt, "a", "d") == AN_E_NOENTRY, "uncabled destination: no LFT entry");

	tf_set_entry(s, TF_SW_GUID + 1, lb, 4);
	CHECK(route_walk(rt, ea, lb, NULL, 0, &res) == AN_E_NOLINK && res.fail_node == S1 && res.fail_port == 4,
	      "error: LFT sends out of an uncabled port: AN_E_NOLINK at S1 port 4");
	tf_set_entry(s, TF_SW_GUID + 2, lb, 3);
	tf_set_entry(s, TF_SW_GUID + 1, lb, 3);
	CHECK(route_walk(rt, ea, lb, NULL, 0, &res) == AN_E_LOOP, "error: S1 <-> S2 loop: AN_E_LOOP");
	tf_set_entry(s, TF_SW_GUID + 2, lb, 1);
	CHECK(hops(rt, "a", "b") == 2, "faults: restored");
	route_free(rt);

	/* A link that went down after routing: the LFT still uses it. */
	tf_link_down(s, S1, 3);
	rt = build(s, NULL);
	CHECK(route_walk(rt, ea, lb, NULL, 0, &res) == AN_E_DOWN && res.fail_node == S1 && res.fail_port == 3,
	      "error: route over a DOWN link: AN_E_DOWN at S1 port 3");
	route_free(rt);
	tf_link_down(s, node_by_guid(s, TF_CA_GUID + 16), 1);
	rt = build(s, NULL);
	CHECK(route_walk(rt, ep(rt, "a"), rt->eps[ep(rt, "c")].lid, NULL, 0, &res) == AN_E_DOWN &&
		      res.fail_node == node_by_guid(s, TF_CA_GUID + 16),
	      "error: source port DOWN: AN_E_DOWN at the source");
	CHECK(hops(rt, "c", "a") == AN_E_DOWN, "error: destination's cable DOWN: AN_E_DOWN");
	(void)S2;
	route_free(rt);
	snap_free(s);
}

static void test_lmc(void)
{
	struct snap *s = snap_new();
	tf_tree2(s, 2, 2, 2, 1);
	tf_finish(s, 2);
	struct route_tab *rt = build(s, NULL);
	uint32_t a = ep(rt, "h0000"), b = ep(rt, "h0002");
	uint16_t base = rt->eps[b].lid;
	struct route_hop h1[4], h2[4];
	int r1 = route_walk(rt, a, base, h1, 4, NULL), r2 = route_walk(rt, a, (uint16_t)(base + 1), h2, 4, NULL);
	CHECK(rt->eps[b].lmc == 2 && r1 == 0 && r2 == 0 && h1[1].node != h2[1].node,
	      "LMC 2: base LID and base+1 take different spines");
	char g[32];
	uint32_t e;
	uint16_t dl;
	snprintf(g, sizeof(g), "lid:%u", base + 3);
	CHECK(!route_resolve(rt, g, &e, &dl) && e == b && dl == base + 3, "LMC: lid:base+3 names the port, dlid kept");
	CHECK(route_hops(rt, a, (uint16_t)(base + 3)) == 3 && hops(rt, "h0000", "h0002") == 3,
	      "LMC: every LID of the range routes, 3 hops");
	route_free(rt);
	snap_free(s);
}

static const struct route_host *host_named(const struct route_tab *rt, const char *n)
{
	uint32_t h;
	return route_find_host(rt, n, &h) ? NULL : &rt->hosts[h];
}

static int valid_name(const char *n)
{
	size_t l = strlen(n);
	if (l < 1 || l > ROUTE_NAME_MAX)
		return 0;
	for (size_t i = 0; i < l; i++)
		if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= 'A' && n[i] <= 'Z') || (n[i] >= '0' && n[i] <= '9') ||
		      n[i] == '-' || n[i] == '_' || n[i] == '.'))
			return 0;
	return 1;
}

static void test_names(void)
{
	struct snap *s = snap_new();
	uint32_t sw = tf_switch(s, 1, 40);
	const char *descs[] = { "c401-101 HCA-1", "c401-101 HCA-2", "x HCA-10", "x HCA-2", "", "    ",
				"bad\x01host HCA-1", "\"quoted\" HCA-1", "0x1234 HCA-1", "tabhost\tHCA-3",
				"h\xc3\xb4st HCA-1", "lid:5 HCA-1", "nohca", "dup HCA-1", "dup HCA-1",
				"c401-101 \"evil\"" };
	unsigned nd = sizeof(descs) / sizeof(descs[0]), port = 1;
	for (unsigned i = 0; i < nd; i++) {
		uint32_t c = tf_ca(s, 100 + i, 1, descs[i]);
		tf_link(s, c, 1, sw, port++);
	}
	/* the two "dup" CAs belong to different system images */
	s->nodes[s->nnodes - 2].sysimg_guid = 77;
	char raw[64];
	memset(raw, 'A', sizeof(raw));
	tf_link(s, tf_ca_raw(s, 200, 1, raw, 64), 1, sw, port++);       /* 64 bytes, no NUL */
	memset(raw, ' ', sizeof(raw));
	raw[63] = 'Z';
	tf_link(s, tf_ca_raw(s, 201, 1, raw, 64), 1, sw, port++);
	uint32_t dp = tf_ca(s, 202, 2, "dual HCA-1");                   /* dual-port HCA */
	tf_link(s, dp, 1, sw, port++);
	tf_link(s, dp, 2, sw, port++);
	tf_finish(s, 0);
	struct route_tab *rt = build(s, NULL);

	const struct route_host *h = host_named(rt, "c401-101");
	CHECK(h && h->nrails == 3 && !strcmp(rt->eps[rt->rails[h->rail0]].hca, "HCA-1") &&
		      !strcmp(rt->eps[rt->rails[h->rail0 + 1]].hca, "HCA-2"),
	      "multi-rail: one host, rails HCA-1, HCA-2, then the GUID-labelled one");
	CHECK(ep(rt, "c401-101") == rt->rails[h->rail0] && ep(rt, "c401-101/HCA-2") == rt->rails[h->rail0 + 1],
	      "multi-rail: bare name is HCA-1, host/HCA-2 the second rail");
	h = host_named(rt, "x");
	CHECK(h && !strcmp(rt->eps[route_host_ep(rt, (uint32_t)(h - rt->hosts))].hca, "HCA-2"),
	      "multi-rail: HCA-2 sorts before HCA-10");
	char g[32];
	int fb = 0;
	for (unsigned i = 4; i <= 11; i++) {
		if (i == 9)
			continue;
		snprintf(g, sizeof(g), "0x%016llx", (unsigned long long)(TF_CA_GUID + 16 * (100 + i)));
		fb += host_named(rt, g) != NULL;
	}
	CHECK(fb == 7, "hostile descriptions (empty, blanks, control byte, quotes, GUID-shaped, UTF-8, ':') fall back to the node GUID (%d of 7)", fb);
	h = host_named(rt, "tabhost");
	CHECK(h && !strcmp(rt->eps[rt->rails[h->rail0]].hca, "HCA-3"), "a tab separates tokens");
	snprintf(g, sizeof(g), "0x%016llx", (unsigned long long)(TF_CA_GUID + 16 * 112));
	h = host_named(rt, "nohca");
	CHECK(h && !strcmp(rt->eps[rt->rails[h->rail0]].hca, g), "a missing HCA token becomes the node GUID");
	h = host_named(rt, "dup");
	CHECK(h && h->nrails == 2, "duplicate hostnames from two system images: one host, two rails");
	char as[65];
	memset(as, 'A', 64);
	as[64] = '\0';
	CHECK(host_named(rt, as) && host_named(rt, "Z"), "64-byte descriptions without NUL: whole-token and trailing-token hosts");
	h = host_named(rt, "dual");
	CHECK(h && h->nrails == 2 && rt->eps[rt->rails[h->rail0]].port == 1 && rt->eps[rt->rails[h->rail0 + 1]].port == 2,
	      "dual-port HCA: two rails, port 1 first");
	int allvalid = 1, roundtrip = 1;
	for (uint32_t i = 0; i < rt->nhosts; i++) {
		allvalid &= valid_name(rt->hosts[i].name);
		uint32_t e;
		roundtrip &= !route_resolve(rt, rt->hosts[i].name, &e, NULL) && e == route_host_ep(rt, i);
	}
	CHECK(allvalid && roundtrip, "every host name is clean and resolves to its default port");
	route_free(rt);

	/* node-name-map */
	char map[1024];
	snprintf(map, sizeof(map),
		 "# node-name-map\n\n   0x%016llx \"mapped-a HCA-7\"\n0x%llx   unquoted-b  HCA-1  \r\n"
		 "0x%016llx \"second-is-ignored\"\n0x%016llx \"\"\n0x%016llx \"evil\x01 HCA-1\"\n",
		 (unsigned long long)(TF_CA_GUID + 16 * 100), (unsigned long long)(TF_CA_GUID + 16 * 104),
		 (unsigned long long)(TF_CA_GUID + 16 * 100), (unsigned long long)(TF_CA_GUID + 16 * 105),
		 (unsigned long long)(TF_CA_GUID + 16 * 113));
	struct route_namemap *m = NULL;
	char err[AN_ERR_LEN];
	int rc = route_namemap_parse(map, strlen(map), &m, err);
	CHECK(rc == 0 && !strcmp(route_namemap_get(m, TF_CA_GUID + 16 * 100), "mapped-a HCA-7") &&
		      !strcmp(route_namemap_get(m, TF_CA_GUID + 16 * 104), "unquoted-b  HCA-1") &&
		      !route_namemap_get(m, TF_CA_GUID + 16 * 105) && !route_namemap_get(m, 1),
	      "name map: quoted, unquoted, comments, first entry wins, empty names skipped");
	rt = build(s, m);
	h = host_named(rt, "mapped-a");
	snprintf(g, sizeof(g), "0x%016llx", (unsigned long long)(TF_CA_GUID + 16 * 113));
	CHECK(h && !strcmp(rt->eps[rt->rails[h->rail0]].hca, "HCA-7") && host_named(rt, "unquoted-b") &&
		      host_named(rt, "c401-101")->nrails == 2 && host_named(rt, g),
	      "name map: mapped names win; a hostile mapped name falls back to the GUID");
	route_free(rt);
	route_namemap_free(m);
	const char *badmaps[] = { "zz \"x\"\n", "0x12 \"unterminated\n", "0xqq x\n", "0x123456789abcdef01 x\n" };
	int nb = 0;
	for (size_t i = 0; i < 4; i++) {
		m = NULL;
		nb += route_namemap_parse(badmaps[i], strlen(badmaps[i]), &m, err) == AN_E_INVAL && !m;
	}
	CHECK(nb == 4, "name map: malformed lines are AN_E_INVAL (%d of 4)", nb);
	char *big = malloc(ROUTE_MAP_LINE_MAX + 10);
	memset(big, 'x', ROUTE_MAP_LINE_MAX + 9);
	memcpy(big, "0x1 ", 4);
	CHECK(route_namemap_parse(big, ROUTE_MAP_LINE_MAX + 9, &m, err) == AN_E_INVAL, "name map: over-long line rejected: %s", err);
	free(big);
	CHECK(route_namemap_load("/nonexistent/map", &m, err) == AN_E_NOTFOUND, "name map: missing file");
	char path[] = "/tmp/test_route_mapXXXXXX";
	int fd = mkstemp(path);
	if (fd >= 0) {
		FILE *f = fdopen(fd, "w");
		fputs(map, f);
		fclose(f);
		rc = route_namemap_load(path, &m, err);
		CHECK(rc == 0 && route_namemap_get(m, TF_CA_GUID + 16 * 100), "name map: loaded from a file");
		if (!rc)
			route_namemap_free(m);
		unlink(path);
	}
	route_namemap_free(NULL);
	snap_free(s);
}

/* Random 64-byte descriptions must never crash and always give clean names. */
static void test_fuzz_names(void)
{
	struct snap *s = snap_new();
	uint32_t sw = tf_switch(s, 1, 200);
	tf_rng_state = 42;
	for (unsigned i = 0; i < 200; i++) {
		char d[64];
		for (int k = 0; k < 64; k++) {
			uint64_t r = tf_rand();
			d[k] = (char)(r % 4 == 0 ? ' ' : r % 4 == 1 ? 'a' + (int)(r >> 8) % 26 : 1 + (int)((r >> 8) % 255));
		}
		tf_link(s, tf_ca_raw(s, i, 1, d, (size_t)(tf_rand() % 65)), 1, sw, i + 1);
	}
	tf_finish(s, 0);
	struct route_tab *rt = build(s, NULL);
	int ok = 1;
	uint32_t rails = 0;
	for (uint32_t i = 0; i < rt->nhosts; i++) {
		ok &= valid_name(rt->hosts[i].name);
		rails += rt->hosts[i].nrails;
		uint32_t e;
		ok &= !route_resolve(rt, rt->hosts[i].name, &e, NULL) && e == route_host_ep(rt, i);
	}
	CHECK(ok && rails == 200, "fuzzed descriptions: 200 CAs, all rails named, names clean and resolvable");
	route_free(rt);
	snap_free(s);
}

/* route_switch_hops() against route_walk() from each switch's port 0. */
static int dp_agrees(struct snap *s)
{
	struct route_tab *rt = build(s, NULL);
	uint32_t *src = malloc(rt->nsw * sizeof(*src)), *dst = malloc(rt->neps * sizeof(*dst));
	uint16_t *out = malloc((size_t)rt->nsw * rt->neps * sizeof(*out) + 1);
	for (uint32_t i = 0; i < rt->nsw; i++)
		src[i] = rt->sw_node[i];
	for (uint32_t i = 0; i < rt->neps; i++)
		dst[i] = i;
	int ok = route_switch_hops(rt, src, rt->nsw, dst, rt->neps, out) == 0;
	for (uint32_t i = 0; ok && i < rt->neps; i++)
		for (uint32_t j = 0; ok && j < rt->nsw; j++) {
			uint32_t se = ROUTE_NONE;
			for (uint32_t e = 0; e < rt->neps; e++)
				if (rt->eps[e].node == src[j])
					se = e;
			int h = rt->eps[i].lid ? route_hops(rt, se, rt->eps[i].lid) : -1;
			uint16_t want = h < 0 ? ROUTE_HOPS_INF : (uint16_t)h;
			if (out[(size_t)i * rt->nsw + j] != want) {
				printf("# dp: switch %u to ep %u: %u, walk %d\n", j, i, out[(size_t)i * rt->nsw + j], h);
				ok = 0;
			}
		}
	free(src);
	free(dst);
	free(out);
	route_free(rt);
	return ok;
}

static void test_dp(void)
{
	int ok = 1, n = 0;
	for (uint64_t seed = 1; seed <= 30; seed++) {
		struct snap *s = snap_new();
		tf_rrg(s, 4 + (unsigned)(seed % 7), 2 + (unsigned)(seed % 3), 1 + (unsigned)(seed % 2), seed);
		tf_finish(s, seed % 3 == 0 ? 1 : 0);
		/* corrupt some entries: loops, holes, wrong ports */
		tf_rng_state = seed * 7919;
		for (int k = 0; k < 12; k++) {
			uint32_t x = (uint32_t)(tf_rand() % s->nnodes);
			struct snap_node *nd = &s->nodes[x];
			if (nd->type != SNAP_NODE_SWITCH || !nd->lft_len)
				continue;
			uint32_t l = (uint32_t)(tf_rand() % nd->lft_len);
			uint64_t r = tf_rand() % (nd->nports + 2u);
			*tf_lft_at(s, (uint32_t)(nd - s->nodes), l) = r > nd->nports ? SNAP_LFT_NONE : (uint8_t)r;
		}
		ok &= dp_agrees(s);
		n++;
		snap_free(s);
	}
	struct snap *s = snap_new();
	tf_torus(s, 4, 3, 2);
	tf_finish(s, 0);
	ok &= dp_agrees(s);
	snap_free(s);
	CHECK(ok, "route_switch_hops == route_walk for every switch and end port on %d corrupted random fabrics and a torus", n);
}

int main(void)
{
	test_tree2();
	test_faults();
	test_lmc();
	test_names();
	test_fuzz_names();
	test_dp();
	CHECK(!strcmp(an_strerror(AN_E_LOOP), "the route loops") && an_strerror(12345),
	      "an_strerror names codes and never returns NULL");
	return tf_failures != 0;
}
