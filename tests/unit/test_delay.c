/*
 * test_delay.c - the delay matrix (analysis/matrix.h, matrix_delay): every
 * entry against an independent walk of the LFTs (latency of its switches
 * plus bytes over its slowest cable), on a fabric with mixed rates: a 1x
 * host cable makes every pair into that host 4x slower for large messages,
 * a 1x leaf uplink slows exactly the routes the LFTs send over it.
 */
#include <inttypes.h>

#include "cost.h"
#include "matrix.h"
#include "rate.h"
#include "testfab.h"

#define GB (1ull << 30)

/* 3 leaves x 3 hosts, 2 spines, 4x QDR cables (32 Gb/s of data). */
static struct snap *fabric(void)
{
	struct snap *s = snap_new();
	tf_tree2(s, 3, 3, 2, 1);
	tf_finish(s, 0);
	return s;
}

static uint32_t node_of(const struct snap *s, uint64_t guid)
{
	int64_t v = snap_find_node(s, guid);
	if (v < 0)
		tf_die("node");
	return (uint32_t)v;
}

/* The expected entry by an independent walk: from the port, through each
 * switch's LFT, the least rate of every cable crossed. */
static int64_t ref_delay(const struct snap *s, uint32_t node, unsigned port, uint16_t dlid, uint64_t bytes)
{
	uint64_t bps = UINT64_MAX;
	uint32_t sw = 0;
	/* A host to its own port: no network at all (route.h: 0 hops). */
	const struct snap_port *own = &s->ports[s->nodes[node].port0 + port];
	if (s->nodes[node].type != SNAP_NODE_SWITCH && own->lid && dlid >= own->lid &&
	    dlid < own->lid + (1u << own->lmc))
		return 0;
	/* A switch source counts as a hop, as in the hop matrix. */
	if (s->nodes[node].type == SNAP_NODE_SWITCH) {
		port = snap_lft_get(&s->nodes[node], dlid);
		sw = 1;
	}
	for (int guard = 0; guard < 32; guard++) {
		if (port == 0)
			break; /* the switch itself */
		uint64_t b = rate_cable_bps(s, node, port);
		bps = b < bps ? b : bps;
		const struct snap_port *p = &s->ports[s->nodes[node].port0 + port];
		if (p->state == SNAP_PORT_DOWN)
			return -1;
		node = p->peer_node;
		if (s->nodes[node].type != SNAP_NODE_SWITCH)
			break;
		sw++;
		port = snap_lft_get(&s->nodes[node], dlid);
	}
	double ns = cost_route_latency(sw) * 1e9 + (bytes ? (double)bytes * 8e9 / (double)bps : 0);
	return (int64_t)(ns + 0.5);
}

static size_t resolve(const struct route_tab *rt, const char *const *names, size_t n, uint32_t *eps, uint16_t *dl)
{
	for (size_t i = 0; i < n; i++)
		if (route_resolve(rt, names[i], &eps[i], &dl[i]))
			tf_die(names[i]);
	return n;
}

static void test_mixed(void)
{
	struct snap *s = fabric();
	/* h0000's cable 1x; leaf 1's uplink to spine 0 (port 3 + 1) 1x. */
	tf_cable_width(s, node_of(s, TF_CA_GUID + 16 * 1), 1, 1);
	tf_cable_width(s, node_of(s, TF_SW_GUID + 1), 4, 1);
	struct route_tab *rt;
	if (route_build(s, NULL, &rt))
		tf_die("route_build");
	static const char *const names[] = { "h0000", "h0001", "h0002", "h0003", "h0004", "h0005",
					     "h0006", "h0007", "lid:1", "0x0008f10500000001" };
	size_t n = sizeof(names) / sizeof(*names);
	uint32_t eps[sizeof(names) / sizeof(*names)];
	uint16_t dl[sizeof(names) / sizeof(*names)];
	resolve(rt, names, n, eps, dl);
	int64_t *m = malloc(n * n * sizeof(*m)), *z = malloc(n * n * sizeof(*z));
	char err[AN_ERR_LEN] = "";
	if (!m || !z)
		tf_die("nomem");
	int rc = matrix_delay(rt, eps, dl, n, GB, m, err);
	CHECK(rc == AN_OK, "a delay matrix for 1 GiB: %s", err);
	rc = matrix_delay(rt, eps, dl, n, 0, z, err);
	CHECK(rc == AN_OK, "and for 0 bytes: %s", err);
	size_t bad = 0, slow_up = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			const struct route_ep *e = &rt->eps[eps[i]];
			int64_t want = i == j ? 0 : ref_delay(s, e->node, e->port, dl[j], GB);
			bad += m[i * n + j] != want;
			if (bad == 1 && m[i * n + j] != want) {
				printf("# %s -> %s: %" PRId64 " ns, want %" PRId64 "\n", names[i], names[j], m[i * n + j], want);
				bad++;
			}
			bad += i != j && z[i * n + j] != ref_delay(s, e->node, e->port, dl[j], 0);
			/* leaf 1's hosts (h0003..h0005, positions 3..5) to leaf 2 (6, 7) */
			slow_up += i >= 3 && i <= 5 && j >= 6 && j <= 7 && m[i * n + j] > 2 * m[1 * n + j];
		}
	CHECK(bad == 0, "every entry is latency(hops) + bytes / slowest cable of the LFT walk (0 on the diagonal)");
	CHECK(slow_up > 0 && slow_up % 3 == 0,
	      "the 1x uplink slows the routes the LFTs send over it, for every host of its leaf alike (%zu pairs)",
	      slow_up);
	/* h0001 (1) and h0003 (3) to h0000 (0) against h0002 (2): the same
	 * route length, 4x the time for a large message through the 1x cable. */
	double r1 = (double)m[1 * n + 0] / (double)m[1 * n + 2];
	double r3 = (double)m[6 * n + 0] / (double)m[6 * n + 1];
	CHECK(r1 > 3.99 && r1 < 4.01, "1 GiB into h0000's 1x cable takes 4x as long as to its leaf-mate (%.4f)", r1);
	CHECK(r3 > 3.99 && r3 < 4.01, "and 4x from another leaf over the same 3 switches (%.4f)", r3);
	CHECK(m[0 * n + 1] == m[1 * n + 0], "the 1x cable is as slow leaving h0000 as entering it");
	CHECK(z[1 * n + 0] == z[1 * n + 2] && z[1 * n + 0] == 300 && z[6 * n + 0] == 700,
	      "at 0 bytes only latency counts: 1 switch 300 ns, 3 switches 700 ns (%" PRId64 ", %" PRId64 ")",
	      z[1 * n + 0], z[6 * n + 0]);
	CHECK(m[8 * n + 0] == 0 && m[8 * n + 8] == 0 && m[0 * n + 8] == 0 && m[8 * n + 1] == m[0 * n + 1],
	      "lid:1 (h0000's port again) is h0000: 0 ns to and from it, h0000's times to the others");
	CHECK(m[9 * n + 0] > 0 && m[9 * n + 0] == ref_delay(s, rt->eps[eps[9]].node, 0, dl[0], GB),
	      "a switch as source starts at itself, without a first cable");
	/* the largest message (issue 37), 2^53 bytes, through the 1x cable:
	 * as the reference computes it, within libtii's TII_DELAY_NS_MAX */
	rc = matrix_delay(rt, eps, dl, n, MATRIX_DELAY_BYTES_MAX, m, err);
	int64_t big = ref_delay(s, rt->eps[eps[1]].node, rt->eps[eps[1]].port, dl[0], MATRIX_DELAY_BYTES_MAX);
	CHECK(rc == AN_OK && m[1 * n + 0] == big && big > 1000000000000000ll && big < 40000000000000000ll,
	      "2^53 bytes into the 1x cable: %" PRId64 " ns as the reference says, below TII_DELAY_NS_MAX (4e16)",
	      m[1 * n + 0]);
	free(m);
	free(z);
	route_free(rt);
	snap_free(s);
}

static void test_refusals(void)
{
	struct snap *s = fabric();
	/* h0004's cable down; h0008's cable of unknown width. */
	tf_link_down(s, node_of(s, TF_CA_GUID + 16 * 17), 1);
	tf_cable_width(s, node_of(s, TF_CA_GUID + 16 * 33), 1, 3);
	struct route_tab *rt;
	if (route_build(s, NULL, &rt))
		tf_die("route_build");
	static const char *const names[] = { "h0000", "h0004", "h0003" };
	uint32_t eps[4];
	uint16_t dl[4];
	resolve(rt, names, 3, eps, dl);
	int64_t m[16];
	char err[AN_ERR_LEN] = "";
	CHECK(matrix_delay(rt, eps, dl, 3, 1000, m, err) == AN_OK, "a matrix with a dead cable: %s", err);
	CHECK(m[0 * 3 + 1] == -1 && m[1 * 3 + 0] == -1 && m[1 * 3 + 1] == 0 && m[0 * 3 + 2] > 0,
	      "-1 for the routes into and out of the dead cable, 0 on the diagonal, others timed");
	CHECK(matrix_delay(rt, eps, dl, 3, MATRIX_DELAY_BYTES_MAX + 1, m, err) == AN_E_INVAL,
	      "more than 2^53 bytes is refused: %s", err);
	static const char *const names2[] = { "h0000", "h0008" };
	resolve(rt, names2, 2, eps, dl);
	err[0] = '\0';
	CHECK(matrix_delay(rt, eps, dl, 2, 1000, m, err) == AN_E_RANGE && strstr(err, "unknown rate"),
	      "a route over a cable of unknown rate cannot be timed: %s", err);
	int rc = matrix_delay(rt, eps, dl, 2, 0, m, err);
	CHECK(rc == AN_OK && m[1] == 700, "but its latency alone can (0 bytes: %" PRId64 " ns)", m[1]);
	route_free(rt);
	snap_free(s);
}

int main(void)
{
	test_mixed();
	test_refusals();
	return tf_failures != 0;
}
