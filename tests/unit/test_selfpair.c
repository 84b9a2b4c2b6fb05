/*
 * test_selfpair.c - a host to itself is 0 hops and an empty path in every
 * pure analysis that answers per pair (issue 26, item 4): route_walk and
 * route_hops (also with the host's cable down, and for two names of one
 * port), matrix_hops with a host repeated in several columns (copied rows
 * included), share_path's diagonal; while two rails of one host and a
 * switch's port 0 to itself keep their walks. Load and schedule answer per
 * host index and are checked through topod (t_selfpair.py).
 */
#include "matrix.h"
#include "route.h"
#include "share.h"
#include "testfab.h"

static uint32_t ep_of(const struct route_tab *rt, const char *name, uint16_t *dlid)
{
	uint32_t e;
	if (route_resolve(rt, name, &e, dlid)) {
		fprintf(stderr, "cannot resolve %s\n", name);
		exit(99);
	}
	return e;
}

static void test_walk(const struct route_tab *rt)
{
	uint16_t d;
	uint32_t a = ep_of(rt, "h0001", &d);
	struct route_hop hp[8];
	struct route_res res = { 7, 7, 7 };
	int rc = route_walk(rt, a, d, hp, 8, &res);
	CHECK(rc == AN_OK && res.hops == 0 && res.fail_node == ROUTE_NONE, "walk h0001 -> h0001: OK, 0 switches (%d, %u)",
	      rc, res.hops);
	CHECK(route_hops(rt, a, d) == 0, "hops h0001 h0001 = 0");
	uint16_t dl;
	uint32_t b = ep_of(rt, "h0001/HCA-1", &dl);
	CHECK(b == a && route_hops(rt, b, d) == 0 && route_hops(rt, a, dl) == 0,
	      "h0001 and h0001/HCA-1 are one port: 0 hops either way");
	uint32_t r2 = ep_of(rt, "h0001/HCA-2", &dl);
	int h2 = route_hops(rt, a, dl);
	CHECK(h2 >= 1, "h0001 -> h0001/HCA-2, another rail on another leaf, is walked through the fabric (%d)", h2);
	/* h0005's cable is down: it reaches nothing, yet itself in 0 hops */
	uint32_t dn = ep_of(rt, "h0005", &dl);
	CHECK(route_hops(rt, dn, dl) == 0 && route_hops(rt, dn, d) == AN_E_DOWN,
	      "h0005 with its cable down: 0 hops to itself, AN_E_DOWN to h0001");
	uint32_t sw = ep_of(rt, "0x0008f10500000001", &dl);
	CHECK(rt->snap->nodes[rt->eps[sw].node].type == SNAP_NODE_SWITCH && route_hops(rt, sw, dl) == 1,
	      "a switch's port 0 to its own LID stays 1 hop, as the hierarchy counts it (%d)", route_hops(rt, sw, dl));
	(void)r2;
}

static void test_matrix(const struct route_tab *rt)
{
	/* h0001 three times, two of them on the leaf whose row h0000 walks */
	static const char *const names[] = { "h0000", "h0001", "h0002", "h0001", "h0004", "h0001/HCA-1", "h0005" };
	size_t n = sizeof(names) / sizeof(*names);
	uint32_t eps[sizeof(names) / sizeof(*names)];
	uint16_t dl[sizeof(names) / sizeof(*names)];
	for (size_t i = 0; i < n; i++)
		eps[i] = ep_of(rt, names[i], &dl[i]);
	int16_t out[sizeof(names) / sizeof(*names) * sizeof(names) / sizeof(*names)];
	CHECK(matrix_hops(rt, eps, dl, n, out) == AN_OK, "matrix_hops over %zu names with repeats", n);
	int self0 = 1, others = 1;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			if (eps[i] == eps[j])
				self0 &= out[i * n + j] == 0;
			else if (i != j && eps[i] != eps[j]) {
				int h = route_hops(rt, eps[i], dl[j]);
				others &= out[i * n + j] == (h < 0 ? -1 : h);
			}
		}
	CHECK(self0, "every pair of names of one port is 0, on and off the diagonal (h0001 x3, h0005 down)");
	CHECK(others, "every other pair is route_hops()");
	CHECK(out[1 * n + 0] == 1 && out[3 * n + 0] == 1 && out[0 * n + 3] == 1,
	      "the repeats still reach h0000 (their row's representative) in 1 hop");
}

static void test_share(const struct route_tab *rt)
{
	static const char *const names[] = { "h0000", "h0001", "h0004", "h0005" };
	uint32_t eps[4];
	uint16_t dl;
	for (size_t i = 0; i < 4; i++)
		eps[i] = ep_of(rt, names[i], &dl);
	struct share *sh = NULL;
	CHECK(share_build(rt, eps, 4, SHARE_KEEP_PATHS, &sh) == AN_OK, "share with paths over 4 hosts");
	if (!sh)
		return;
	uint32_t sw[8];
	size_t ns = 99;
	int ok = 1;
	for (size_t i = 0; i < 4; i++)
		ok &= share_path(sh, i, i, sw, 8, &ns) == AN_OK && ns == 0;
	CHECK(ok, "share_path(i, i): OK with no switch for every host, the one with a dead cable too");
	CHECK(share_path(sh, 0, 1, sw, 8, &ns) == AN_OK && ns == 1, "share_path h0000 -> h0001: its leaf");
	uint32_t dup[2] = { eps[1], eps[1] };
	struct share *bad = NULL;
	CHECK(share_build(rt, dup, 2, 0, &bad) == AN_E_INVAL && !bad, "share_build refuses a repeated port (topod names it)");
	share_free(sh);
}

int main(void)
{
	struct snap *s = snap_new();
	tf_tree2(s, 3, 3, 2, 2);
	tf_finish(s, 0);
	/* h0005's HCA-1 cable (leaf 1, port 3) down */
	uint32_t leaf1 = (uint32_t)snap_find_node(s, 0x0008f10500000001ull);
	tf_link_down(s, leaf1, 3);
	struct route_tab *rt;
	if (route_build(s, NULL, &rt))
		tf_die("route_build");
	test_walk(rt);
	test_matrix(rt);
	test_share(rt);
	route_free(rt);
	snap_free(s);
	return tf_failures != 0;
}
