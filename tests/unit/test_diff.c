/*
 * test_diff.c - diff_build() (analysis/diff.h) between two generations of
 * synthetic fabrics: the records of each kind, in reply order, the hosts
 * missing from a list, and changed routes checked against walking every
 * pair in both generations; the walk bound and the listing cap.
 */
#include "diff.h"
#include "testfab.h"

#define HPL 4 /* hosts per leaf of the two-level trees */

static struct snap *tree(unsigned nleaf)
{
	struct snap *s = snap_new();
	tf_tree2(s, nleaf, HPL, 2, 1);
	tf_finish(s, 0);
	return s;
}

static struct route_tab *tab(const struct snap *s)
{
	struct route_tab *rt = NULL;
	if (route_build(s, NULL, &rt))
		tf_die("route_build");
	return rt;
}

static struct diff *build(const struct route_tab *a, const struct route_tab *b, const char *const *names,
			  size_t n)
{
	char err[AN_ERR_LEN] = "";
	struct diff *d = NULL;
	int rc = diff_build(a, b, names, n, UINT64_MAX, SIZE_MAX, &d, err);
	if (rc)
		fprintf(stderr, "diff_build: %s: %s\n", an_strerror(rc), err);
	return d;
}

static int same_walk(const struct route_tab *ra, uint32_t sa, uint32_t da, const struct route_tab *rb,
		     uint32_t sb, uint32_t db)
{
	struct route_hop ha[DIFF_HOPS_MAX], hb[DIFF_HOPS_MAX];
	struct route_res xa, xb;
	int ca = route_walk(ra, route_host_ep(ra, sa), ra->eps[route_host_ep(ra, da)].lid, ha, DIFF_HOPS_MAX, &xa);
	int cb = route_walk(rb, route_host_ep(rb, sb), rb->eps[route_host_ep(rb, db)].lid, hb, DIFF_HOPS_MAX, &xb);
	if (ca != cb || xa.hops != xb.hops)
		return 0;
	for (uint32_t k = 0; k < xa.hops && k < DIFF_HOPS_MAX; k++)
		if (ra->snap->nodes[ha[k].node].guid != rb->snap->nodes[hb[k].node].guid || ha[k].out != hb[k].out)
			return 0;
	return 1;
}

/* Changed ordered pairs among the hosts of both, walked one by one. */
static uint64_t reference_changed(const struct route_tab *ra, const struct route_tab *rb)
{
	uint64_t n = 0;
	for (uint32_t j = 0; j < rb->nhosts; j++)
		for (uint32_t i = 0; i < rb->nhosts; i++) {
			uint32_t si, di;
			if (i == j || route_find_host(ra, rb->hosts[i].name, &si) ||
			    route_find_host(ra, rb->hosts[j].name, &di))
				continue;
			n += !same_walk(ra, si, di, rb, i, j);
		}
	return n;
}

static size_t count_kind(const struct diff *d, enum diff_kind k)
{
	size_t n = 0;
	for (size_t i = 0; i < d->nchanges; i++)
		n += d->changes[i].kind == k;
	return n;
}

/* Kinds never go back in the reply's order: gone, new, down, up, then
 * ports and LFTs interleaved per node. */
static int in_reply_order(const struct diff *d)
{
	for (size_t i = 1; i < d->nchanges; i++) {
		unsigned p = d->changes[i - 1].kind, k = d->changes[i].kind;
		if (p > k && !(p >= DIFF_PORT_LID && k >= DIFF_PORT_LID))
			return 0;
	}
	return 1;
}

static const char *all_names[4 * HPL];

static void test_same(void)
{
	struct snap *a = tree(4), *b = snap_dup(a);
	struct route_tab *ra = tab(a), *rb = tab(b);
	struct diff *d = build(ra, rb, NULL, 0);
	CHECK(d && d->nchanges == 0 && d->links_down + d->links_up + d->nodes_gone + d->nodes_new + d->ports +
						   d->lft_switches + d->lft_entries == 0,
	      "the same fabric twice: no record, no count");
	CHECK(d && d->nhosts == 16 && d->nmissing == 0 && d->ndest == 0 && d->routes_changed == 0 &&
		      d->hosts_changed == 0 && d->npairs == 0,
	      "and, without a list, all 16 hosts but no destination walked");
	diff_free(d);
	d = build(ra, rb, all_names, 16);
	CHECK(d && d->ndest == 16 && d->routes_changed == 0 && d->npairs == 0,
	      "with every host listed, all 16 destinations are walked and none changed");
	diff_free(d);
	route_free(ra);
	route_free(rb);
	snap_free(a);
	snap_free(b);
}

static void test_lft(void)
{
	struct snap *a = tree(4), *b = snap_dup(a);
	struct route_tab *ra = tab(a);
	uint32_t h5;
	route_find_host(ra, "h0005", &h5);
	uint16_t lid = ra->eps[route_host_ep(ra, h5)].lid;
	int64_t leaf0 = snap_find_node(b, TF_SW_GUID + 0);
	uint8_t old = snap_lft_get(&b->nodes[leaf0], lid);
	tf_set_entry(b, TF_SW_GUID + 0, lid, (uint8_t)(old == HPL + 1 ? HPL + 2 : HPL + 1));
	struct route_tab *rb = tab(b);
	struct diff *d = build(ra, rb, NULL, 0);
	const struct diff_change *c = d && d->nchanges == 1 ? &d->changes[0] : NULL;
	CHECK(c && c->kind == DIFF_LFT && c->entries == 1 && c->first_lid == lid &&
		      a->nodes[c->from_node].guid == TF_SW_GUID && b->nodes[c->to_node].guid == TF_SW_GUID,
	      "one LFT entry of leaf 0 moved to the other spine: one lft record, first_lid=%u", lid);
	CHECK(d && d->lft_switches == 1 && d->lft_entries == 1 && d->ports == 0, "counted as 1 switch, 1 entry");
	CHECK(d && d->ndest == 1 && d->routes_changed == 4 && d->routes_changed == reference_changed(ra, rb),
	      "only h0005 is walked as a destination: the 4 routes from leaf 0 changed, as walking every pair says");
	CHECK(d && d->hosts_changed == 5 && d->npairs == 0, "5 hosts have a changed route; no pair listed without a list");
	uint32_t per_host[16] = { 0 };
	for (size_t i = 0; d && i < d->nhosts; i++) {
		uint32_t k = (uint32_t)strtoul(d->hosts[i].name + 1, NULL, 10);
		if (k < 16)
			per_host[k] = d->hosts[i].changed;
	}
	CHECK(per_host[5] == 4 && per_host[0] == 1 && per_host[3] == 1 && per_host[4] == 0,
	      "h0005 is at the end of 4 of them, each leaf-0 host of 1");
	diff_free(d);

	static const char *const names[] = { "h0000", "h0005", "nosuch", "h0001", "h0008" };
	d = build(ra, rb, names, 5);
	CHECK(d && d->nmissing == 1 && !strcmp(d->missing[0].name, "nosuch") && d->missing[0].where == DIFF_IN_NEITHER,
	      "a name in neither generation is missing, in-neither");
	CHECK(d && d->nhosts == 4 && d->ndest == 4 && d->routes_changed == 2 && d->hosts_changed == 3,
	      "with 4 hosts found, all 4 are destinations and 2 routes changed");
	CHECK(d && d->npairs == 2 && d->pairs[0].src == 0 && d->pairs[0].dst == 1 && d->pairs[1].src == 2 &&
		      d->pairs[1].dst == 1,
	      "the changed pairs are listed by destination, then source: h0000 and h0001 to h0005");
	diff_free(d);

	char err[AN_ERR_LEN] = "";
	d = NULL;
	int rc = diff_build(ra, rb, names, 5, UINT64_MAX, 1, &d, err);
	CHECK(rc == AN_OK && d && d->npairs == 1 && d->routes_changed == 2,
	      "max_pairs caps the listing, not the counts");
	diff_free(d);
	d = NULL;
	rc = diff_build(ra, rb, names, 5, 15, SIZE_MAX, &d, err);
	CHECK(rc == AN_E_RANGE && !d && !strcmp(err, "4 destinations changed for 4 hosts: 16 routes to compare, more than 15"),
	      "more walks than max_walks: AN_E_RANGE before any walk (%s)", err);
	rc = diff_build(ra, rb, names, 5, 16, SIZE_MAX, &d, err);
	CHECK(rc == AN_OK && d, "exactly max_walks is allowed");
	diff_free(d);
	route_free(ra);
	route_free(rb);
	snap_free(a);
	snap_free(b);
}

static void test_links(void)
{
	struct snap *a = tree(4), *b = snap_dup(a);
	uint32_t leaf1 = (uint32_t)snap_find_node(b, TF_SW_GUID + 1);
	tf_link_down(b, leaf1, HPL + 1); /* to spine 1000, its port 2 */
	struct route_tab *ra = tab(a), *rb = tab(b);
	struct diff *d = build(ra, rb, NULL, 0);
	const struct diff_change *c = d && d->nchanges == 1 ? &d->changes[0] : NULL;
	CHECK(c && c->kind == DIFF_LINK_DOWN && a->nodes[c->from_node].guid == TF_SW_GUID + 1 && c->port == HPL + 1 &&
		      a->nodes[c->peer].guid == TF_SW_GUID + 1000 && c->peer_port == 2 && c->to_node == DIFF_NONE,
	      "a spine link down: one link-down record, from the lower-GUID end (leaf 1, port %d)", HPL + 1);
	CHECK(d && d->links_down == 1 && d->links_up == 0 && d->ports == 0, "counted once");
	CHECK(d && d->ndest == 0 && d->routes_changed == 0,
	      "with every LFT the same no destination is walked without a list");
	diff_free(d);
	d = build(ra, rb, all_names, 16);
	uint64_t ref = reference_changed(ra, rb);
	CHECK(d && ref > 0 && d->routes_changed == ref && d->npairs == ref,
	      "with every host listed the routes over it changed (they fail): %llu, as walking every pair says",
	      (unsigned long long)ref);
	diff_free(d);
	d = build(rb, ra, NULL, 0);
	c = d && d->nchanges == 1 ? &d->changes[0] : NULL;
	CHECK(c && c->kind == DIFF_LINK_UP && c->from_node == DIFF_NONE && b->nodes[c->to_node].guid == TF_SW_GUID + 1 &&
		      b->nodes[c->peer].guid == TF_SW_GUID + 1000 && d->links_up == 1,
	      "and back up: one link-up record, in the newer snapshot");
	diff_free(d);
	route_free(ra);
	route_free(rb);
	snap_free(a);
	snap_free(b);
}

static void test_nodes(void)
{
	struct snap *a = tree(4), *b = tree(3);
	struct route_tab *ra = tab(a), *rb = tab(b);
	struct diff *d = build(ra, rb, NULL, 0);
	CHECK(d && d->nodes_gone == 5 && count_kind(d, DIFF_NODE_GONE) == 5 && d->nodes_new == 0,
	      "a leaf and its 4 hosts removed: 5 nodes gone");
	CHECK(d && d->links_down == 6 && count_kind(d, DIFF_LINK_DOWN) == 6 && d->links_up == 0,
	      "their 4 host links and 2 uplinks went down");
	CHECK(d && count_kind(d, DIFF_LFT) == 5 && in_reply_order(d), "every switch's LFT changed; records in reply order");
	CHECK(d && d->nhosts == 12 && d->routes_changed == 0 && reference_changed(ra, rb) == 0,
	      "the 12 hosts in both keep their LIDs and routes: none changed, as walking every pair says");
	diff_free(d);
	static const char *const names[] = { "h0015", "h0000" };
	d = build(ra, rb, names, 2);
	CHECK(d && d->nmissing == 1 && d->missing[0].where == DIFF_ONLY_IN_FROM && d->nhosts == 1,
	      "a listed host of the removed leaf is only-in-from");
	diff_free(d);
	d = build(rb, ra, names, 2);
	CHECK(d && d->nmissing == 1 && d->missing[0].where == DIFF_ONLY_IN_TO, "and only-in-to the other way");
	CHECK(d && d->nodes_new == 0 && d->links_up == 0 && d->lft_switches == 1 && d->ports == 1 &&
		      d->nchanges == 2,
	      "with only h0000 found in both, the new leaf is off its routes: only its own leaf's LFT and LID");
	diff_free(d);
	d = build(rb, ra, NULL, 0);
	CHECK(d && d->nodes_new == 5 && d->links_up == 6 && in_reply_order(d), "without a list: 5 nodes new, 6 links up");
	diff_free(d);
	route_free(ra);
	route_free(rb);
	snap_free(a);
	snap_free(b);
}

static struct snap_port *port(struct snap *s, uint64_t guid, unsigned p)
{
	return snap_port_of(s, (uint32_t)snap_find_node(s, guid), p);
}

static void test_ports(void)
{
	struct snap *a = tree(4), *b = snap_dup(a);
	port(b, TF_SW_GUID + 2, 1)->width = 1;
	port(b, TF_SW_GUID + 3, 1)->state = SNAP_PORT_INIT; /* still linked */
	struct snap_port *p = port(b, TF_CA_GUID + 16 * 1, 1), *q = port(b, TF_CA_GUID + 16 * 9, 1);
	uint16_t t = p->lid;
	p->lid = q->lid;
	q->lid = t;
	struct route_tab *ra = tab(a), *rb = tab(b);
	struct diff *d = build(ra, rb, NULL, 0);
	CHECK(d && count_kind(d, DIFF_PORT_ATTR) == 2 && d->links_down == 0 && d->links_up == 0,
	      "a width change and ACTIVE -> INIT are port records, not link ones");
	CHECK(d && count_kind(d, DIFF_PORT_LID) == 2 && d->ports == 4, "two swapped LIDs: two lid records; 4 ports");
	CHECK(d && d->ndest == 2 && d->routes_changed == reference_changed(ra, rb) && d->routes_changed > 0,
	      "only the 2 hosts whose LIDs changed are destinations; their routes changed (%llu)",
	      d ? (unsigned long long)d->routes_changed : 0ull);
	for (size_t i = 0; d && i < d->nchanges; i++) {
		const struct diff_change *c = &d->changes[i];
		if (c->kind == DIFF_PORT_ATTR && a->nodes[c->from_node].guid == TF_SW_GUID + 2)
			CHECK(c->port == 1 && b->nodes[c->to_node].guid == TF_SW_GUID + 2, "the width record names sw-2/1");
	}
	diff_free(d);
	route_free(ra);
	route_free(rb);
	snap_free(a);
	snap_free(b);
}

/* With a host list, only what lies on those hosts' routes (either
 * generation) or is theirs is recorded and counted. */
static void test_filter(void)
{
	struct snap *a = tree(4), *b = snap_dup(a);
	struct route_tab *ra = tab(a);
	uint32_t h5;
	route_find_host(ra, "h0005", &h5);
	uint16_t lid = ra->eps[route_host_ep(ra, h5)].lid;
	int64_t leaf0 = snap_find_node(b, TF_SW_GUID + 0);
	uint8_t old = snap_lft_get(&b->nodes[leaf0], lid);
	tf_set_entry(b, TF_SW_GUID + 0, lid, (uint8_t)(old == HPL + 1 ? HPL + 2 : HPL + 1));
	port(b, TF_SW_GUID + 3, 1)->width = 1; /* h0012's cable, leaf 3 */
	struct route_tab *rb = tab(b);
	static const char *const leaf2[] = { "h0008", "h0009" };
	struct diff *d = build(ra, rb, leaf2, 2);
	CHECK(d && d->nchanges == 0 && d->lft_switches == 0 && d->ports == 0 && d->routes_changed == 0,
	      "two hosts of leaf 2: leaf 0's LFT and leaf 3's port are off their routes, no record, no count");
	diff_free(d);
	static const char *const across[] = { "h0000", "h0012" };
	d = build(ra, rb, across, 2);
	CHECK(d && d->lft_switches == 1 && d->ports == 1 && d->nchanges == 2,
	      "h0000 and h0012: leaf 0's LFT (on the route) and h0012's own cable are kept");
	diff_free(d);
	d = build(ra, rb, NULL, 0);
	CHECK(d && d->lft_switches == 1 && d->ports == 1, "without a list both are recorded");
	diff_free(d);
	route_free(ra);
	route_free(rb);
	snap_free(a);
	snap_free(b);
}

/* A cable is up only when both its ends are (the routes' rule): one end
 * Down is a link down, whichever end the record is named from. */
static void test_half_link(void)
{
	struct snap *a = tree(4), *b = snap_dup(a);
	uint32_t leaf1 = (uint32_t)snap_find_node(b, TF_SW_GUID + 1);
	struct snap_port *p = snap_port_of(b, leaf1, HPL + 1);
	snap_port_of(b, p->peer_node, p->peer_port)->state = SNAP_PORT_DOWN; /* the spine's end only */
	struct route_tab *ra = tab(a), *rb = tab(b);
	struct diff *d = build(ra, rb, NULL, 0);
	CHECK(d && d->links_down == 1 && count_kind(d, DIFF_LINK_DOWN) == 1 && d->links_up == 0,
	      "the higher-GUID end Down, the lower Active: the link is down");
	diff_free(d);
	route_free(ra);
	route_free(rb);
	snap_free(a);
	snap_free(b);
}

int main(void)
{
	static char buf[16][16];
	for (int i = 0; i < 16; i++) {
		snprintf(buf[i], sizeof(buf[i]), "h%04d", i);
		all_names[i] = buf[i];
	}
	test_same();
	test_lft();
	test_links();
	test_nodes();
	test_ports();
	test_filter();
	test_half_link();
	diff_free(NULL);
	CHECK(1, "diff_free(NULL) is a no-op");
	return tf_failures != 0;
}
