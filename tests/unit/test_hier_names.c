/*
 * test_hier_names.c - the naming rule of hier.h ("Names"): clusters named
 * after their real switch (leaf, smallest-GUID spine in the pod, smallest-
 * GUID core), duplicate / empty / GUID-shaped / reserved / hostile
 * NodeDescriptions falling back to sw_<GUID>, and names that survive a host
 * going away and a redundant link failing.
 */
#include "hier.h"
#include "testfab.h"

#define K 6   /* three hosts per leaf: one may go and the leaf stays a cluster */
#define H (K / 2)

static void set_desc(struct snap *s, uint64_t id, const char *d)
{
	int64_t i = snap_find_node(s, TF_SW_GUID + id);
	if (i < 0)
		tf_die("no such switch");
	memset(s->nodes[i].desc, 0, sizeof(s->nodes[i].desc));
	memcpy(s->nodes[i].desc, d, strlen(d));
}

/* Before tf_finish nodes are not in canonical order: a linear search. */
static uint32_t node_of(const struct snap *s, uint64_t guid)
{
	for (uint32_t i = 0; i < s->nnodes; i++)
		if (s->nodes[i].guid == guid)
			return i;
	tf_die("no such node");
	return 0;
}

/* A k=6 3-level fat tree (54 hosts; leaves 0..17, spines 100000.., cores
 * 200000..), with leaf 0's link to its first spine down when down_link, and
 * host 5's cable down when down_host. */
static struct snap *fabric(int down_link, int down_host)
{
	struct snap *s = snap_new();
	if (!s)
		tf_die("snap_new");
	tf_fattree3(s, K);
	if (down_link)
		tf_link_down(s, node_of(s, TF_SW_GUID + 0), H + 1);
	if (down_host)
		tf_link_down(s, node_of(s, TF_CA_GUID + 16 * 5), 1);
	tf_finish(s, 0);
	return s;
}

static struct hier *build(const struct snap *s, struct route_tab **rt)
{
	struct hier *h;
	if (route_build(s, NULL, rt) || hier_build(*rt, &h))
		tf_die("build");
	return h;
}

static int has_name(const struct hier *h, const char *n)
{
	for (uint32_t c = 0; c < h->nclusters; c++)
		if (!strcmp(h->names[c], n))
			return 1;
	return 0;
}

static const char *sw_name(const struct route_tab *rt, const struct hier *h, uint64_t id)
{
	for (uint32_t i = 0; i < rt->nsw; i++)
		if (rt->snap->nodes[rt->sw_node[i]].guid == TF_SW_GUID + id)
			return h->swnames[i];
	return "?";
}

/* The cluster names of h, sorted, as one string. */
static void names_of(const struct hier *h, char *buf, size_t n)
{
	buf[0] = 0;
	for (uint32_t pass = 0; pass < h->nclusters; pass++) {
		const char *best = NULL;
		for (uint32_t c = 0; c < h->nclusters; c++) {
			const char *x = h->names[c];
			if (strstr(buf, x) || (best && strcmp(x, best) >= 0))
				continue;
			best = x;
		}
		if (best)
			snprintf(buf + strlen(buf), n - strlen(buf), "%s ", best);
	}
}

static void test_clean(void)
{
	struct snap *s = fabric(0, 0);
	struct route_tab *rt;
	struct hier *h = build(s, &rt);
	int ok = h->nclusters == K * H + K + 1;
	for (unsigned l = 0; l < K * H; l++) {
		char n[32];
		snprintf(n, sizeof(n), "sw-%u", l);
		ok &= has_name(h, n);
	}
	CHECK(ok, "every leaf cluster is named after its leaf switch (sw-0 .. sw-17), %u clusters", h->nclusters);
	ok = 1;
	for (unsigned p = 0; p < K; p++) {
		char n[32];
		snprintf(n, sizeof(n), "sw-%u", 100000 + p * H);
		ok &= has_name(h, n);
	}
	CHECK(ok, "each pod is named after its smallest-GUID spine (sw-100000, sw-100003, ...)");
	CHECK(has_name(h, "sw-200000"), "the root is named after the smallest-GUID core switch (sw-200000)");
	hier_free(h);
	route_free(rt);
	snap_free(s);
}

static void test_hostile(void)
{
	struct snap *s = fabric(0, 0);
	set_desc(s, 0, "MF0;switch:MQM8700/U1");   /* the vendor default, twice */
	set_desc(s, 1, "MF0;switch:MQM8700/U1");
	set_desc(s, 2, "");
	set_desc(s, 3, "0x0008f10500000007");        /* another switch's GUID */
	set_desc(s, 4, "sw_0008f10500000006");       /* shadows a fallback */
	set_desc(s, 5, "\x01 evil\"name\n\\;");
	set_desc(s, 6, "  MF0;leaf-6:MQM8700/U1  ");
	set_desc(s, 100000, "\xe9\xe9\xe9");          /* nothing usable */
	struct route_tab *rt;
	struct hier *h = build(s, &rt);
	char want[40];
	int ok = 1;
	for (uint64_t id = 0; id <= 4; id++) {
		snprintf(want, sizeof(want), "sw_%016llx", (unsigned long long)(TF_SW_GUID + id));
		ok &= !strcmp(sw_name(rt, h, id), want) && has_name(h, want);
	}
	CHECK(ok, "duplicate, empty, GUID-shaped and reserved descriptions fall back to sw_<GUID> (leaves 0..4)");
	CHECK(!strcmp(sw_name(rt, h, 5), "evil_name"), "a hostile description is sanitized: evil_name (%s)",
	      sw_name(rt, h, 5));
	CHECK(!strcmp(sw_name(rt, h, 6), "MF0_leaf-6_MQM8700_U1") && has_name(h, "MF0_leaf-6_MQM8700_U1"),
	      "a vendor description keeps its parts: MF0_leaf-6_MQM8700_U1 (%s)", sw_name(rt, h, 6));
	CHECK(!strcmp(sw_name(rt, h, 100000), "sw_0008f105000186a0") && has_name(h, "sw_0008f105000186a0"),
	      "a description without one usable byte: sw_<GUID> (%s)", sw_name(rt, h, 100000));
	ok = 1;
	for (uint32_t c = 0; c < h->nclusters; c++) {
		for (const char *p = h->names[c]; *p; p++)
			ok &= (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			      *p == '.' || *p == '_' || *p == '-';
		ok &= h->names[c][0] && strlen(h->names[c]) <= 64;
		for (uint32_t d = 0; d < c; d++)
			ok &= strcmp(h->names[c], h->names[d]) != 0;
	}
	CHECK(ok, "every cluster name is 1..64 bytes of [A-Za-z0-9._-] and unique");
	char big[80];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	char out[HIER_NAME_LEN];
	hier_sanitize(big, out);
	CHECK(strlen(out) == 64, "hier_sanitize cuts at 64 bytes (%zu)", strlen(out));
	hier_sanitize(";;a;;b;;", out);
	CHECK(!strcmp(out, "a_b"), "runs of other bytes become one '_', trimmed at both ends (%s)", out);
	hier_free(h);
	route_free(rt);
	snap_free(s);
}

static void test_stable(void)
{
	char base[2048], other[2048];
	struct route_tab *rt;
	struct snap *s = fabric(0, 0);
	struct hier *h = build(s, &rt);
	names_of(h, base, sizeof(base));
	hier_free(h);
	route_free(rt);
	snap_free(s);

	s = fabric(1, 0);
	h = build(s, &rt);
	names_of(h, other, sizeof(other));
	CHECK(!strcmp(base, other), "a redundant leaf uplink down: the same names (%s)", other);
	hier_free(h);
	route_free(rt);
	snap_free(s);

	s = fabric(0, 1);
	h = build(s, &rt);
	int ok = 1;
	for (unsigned l = 0; l < K * H; l++) {
		char n[32];
		snprintf(n, sizeof(n), "sw-%u", l);
		ok &= has_name(h, n);
	}
	for (unsigned p = 0; p < K; p++) {
		char n[32];
		snprintf(n, sizeof(n), "sw-%u", 100000 + p * H);
		ok &= has_name(h, n);
	}
	ok &= has_name(h, "sw-200000");
	CHECK(ok, "a host's cable down: every leaf, pod and root keeps its name");
	hier_free(h);
	route_free(rt);
	snap_free(s);
}

int main(void)
{
	test_clean();
	test_hostile();
	test_stable();
	return tf_failures != 0;
}
