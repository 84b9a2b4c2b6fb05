/*
 * testfab.h - synthetic fabrics for unit tests and the build benchmark.
 *
 * Header-only (static functions) because every tests/unit/X.c is its own
 * program. Build with tf_*() on a fresh snap_new(), then tf_finish(): it
 * assigns LIDs (CA ports first, in creation order, then switches), computes
 * LFTs and canonicalizes, so node indices change afterwards: find nodes by
 * GUID (snap_find_node) or by name through the route index.
 *
 * LFTs (tf_finish with TF_BFS): shortest paths over ACTIVE links, computed
 * per destination LID by BFS; among equal-cost out ports the one at position
 * (LID mod count) in port order, a deterministic stand-in for OpenSM's
 * min-hop / d-mod-k. Unreachable LIDs get SNAP_LFT_NONE. tf_fattree3_lft()
 * fills a k-ary 3-level fat tree analytically (d-mod-k), for fabrics too
 * large for per-LID BFS.
 */
#ifndef TESTFAB_H
#define TESTFAB_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot.h"

/* TAP-like lines for tests/run.sh; main() returns tf_failures != 0. */
static int tf_failures;
static inline int tf_check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int tf_check(int ok, const char *fmt, ...)
{
	va_list ap;
	fputs(ok ? "ok - " : "not ok - ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	tf_failures += !ok;
	return ok;
}
#define CHECK(cond, ...) tf_check(!!(cond), __VA_ARGS__)

#define TF_SW_GUID 0x0008f10500000000ull
#define TF_CA_GUID 0x0002c90300000000ull

static uint64_t tf_rng_state = 1;
static inline uint64_t tf_rand(void)
{
	uint64_t z = (tf_rng_state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static inline void tf_die(const char *what)
{
	fprintf(stderr, "testfab: %s\n", what);
	exit(99);
}

/* Switch with nports external ports; its GUID is TF_SW_GUID + id. */
static inline uint32_t tf_switch(struct snap *s, uint64_t id, unsigned nports)
{
	char d[64];
	snprintf(d, sizeof(d), "sw-%llu", (unsigned long long)id);
	int64_t i = snap_add_node(s, SNAP_NODE_SWITCH, TF_SW_GUID + id, TF_SW_GUID + id, (uint8_t)nports, d,
				  strlen(d));
	if (i < 0)
		tf_die("add switch");
	struct snap_port *p = snap_port_of(s, (uint32_t)i, 0);
	p->present = 1;
	p->guid = TF_SW_GUID + id;
	p->state = SNAP_PORT_ACTIVE;
	for (unsigned q = 1; q <= nports; q++) {
		p = snap_port_of(s, (uint32_t)i, q);
		p->present = 1;
		p->guid = TF_SW_GUID + id;
		p->state = SNAP_PORT_DOWN;   /* until linked */
	}
	return (uint32_t)i;
}

/* CA with nports ports; node GUID TF_CA_GUID + 16 * id, port p GUID + p.
 * desc may hold any bytes; desc_len as on the wire (<= 64, no NUL needed). */
static inline uint32_t tf_ca_raw(struct snap *s, uint64_t id, unsigned nports, const char *desc, size_t desc_len)
{
	uint64_t g = TF_CA_GUID + 16 * id;
	int64_t i = snap_add_node(s, SNAP_NODE_CA, g, g, (uint8_t)nports, desc, desc_len);
	if (i < 0)
		tf_die("add ca");
	for (unsigned q = 1; q <= nports; q++) {
		struct snap_port *p = snap_port_of(s, (uint32_t)i, q);
		p->present = 1;
		p->guid = g + q;
		p->state = SNAP_PORT_DOWN;
	}
	return (uint32_t)i;
}

static inline uint32_t tf_ca(struct snap *s, uint64_t id, unsigned nports, const char *desc)
{
	return tf_ca_raw(s, id, nports, desc, strlen(desc));
}

static inline void tf_link(struct snap *s, uint32_t a, unsigned pa, uint32_t b, unsigned pb)
{
	if (snap_link(s, a, pa, b, pb))
		tf_die("link");
	snap_port_of(s, a, pa)->state = SNAP_PORT_ACTIVE;
	snap_port_of(s, b, pb)->state = SNAP_PORT_ACTIVE;
	snap_port_of(s, a, pa)->width = snap_port_of(s, b, pb)->width = 2;
	snap_port_of(s, a, pa)->speed = snap_port_of(s, b, pb)->speed = 4;
}

/* Sets the active width (PortInfo code: 1 = 1x, 2 = 4x) of the cable on
 * (node, port) at both ends, as a trained link has it. */
static inline void tf_cable_width(struct snap *s, uint32_t node, unsigned port, uint8_t width)
{
	struct snap_port *p = &s->ports[s->nodes[node].port0 + port];
	p->width = width;
	s->ports[s->nodes[p->peer_node].port0 + p->peer_port].width = width;
}

/* Marks the link on (a, pa) DOWN at both ends (the cable stays). */
static inline void tf_link_down(struct snap *s, uint32_t a, unsigned pa)
{
	struct snap_port *p = snap_port_of(s, a, pa);
	snap_port_of(s, p->peer_node, p->peer_port)->state = SNAP_PORT_DOWN;
	p->state = SNAP_PORT_DOWN;
}

static inline void tf_assign_lids(struct snap *s, unsigned lmc)
{
	uint32_t lid = 1;
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t i = 0; i < s->nnodes; i++) {
			struct snap_node *n = &s->nodes[i];
			if ((n->type == SNAP_NODE_SWITCH) != (pass == 1))
				continue;
			for (unsigned q = n->type == SNAP_NODE_SWITCH ? 0 : 1;
			     q <= (n->type == SNAP_NODE_SWITCH ? 0u : n->nports); q++) {
				struct snap_port *p = snap_port_of(s, i, q);
				p->lid = (uint16_t)lid;
				p->lmc = n->type == SNAP_NODE_SWITCH ? 0 : (uint8_t)lmc;
				lid += 1u << p->lmc;
			}
		}
	s->max_lid = lid - 1;
}

static inline int tf_active(struct snap *s, uint32_t n, unsigned q)
{
	struct snap_port *p = snap_port_of(s, n, q);
	return p->present && p->peer_node != SNAP_NONE && p->state == SNAP_PORT_ACTIVE &&
	       snap_port_of(s, p->peer_node, p->peer_port)->state == SNAP_PORT_ACTIVE;
}

/* Shortest-path LFTs for every switch, see the top. */
static inline void tf_bfs_lft(struct snap *s)
{
	uint32_t n = s->nnodes, L = s->max_lid + 1;
	uint8_t *lft = malloc((size_t)n * L);
	uint32_t *dist = malloc(n * sizeof(*dist)), *q = malloc(n * sizeof(*q));
	if (!lft || !dist || !q)
		tf_die("nomem");
	memset(lft, SNAP_LFT_NONE, (size_t)n * L);
	for (uint32_t d = 0; d < n; d++) {
		struct snap_node *dn = &s->nodes[d];
		for (unsigned dq = 0; dq <= dn->nports; dq++) {
			struct snap_port *dp = snap_port_of(s, d, dq);
			if (!dp->present || !dp->lid || (dn->type == SNAP_NODE_SWITCH) != (dq == 0))
				continue;
			/* the switch the destination hangs off, and its port there */
			uint32_t root;
			unsigned rport;
			if (dn->type == SNAP_NODE_SWITCH) {
				root = d;
				rport = 0;
			} else {
				if (!tf_active(s, d, dq) || s->nodes[dp->peer_node].type != SNAP_NODE_SWITCH)
					continue;
				root = dp->peer_node;
				rport = dp->peer_port;
			}
			for (uint32_t i = 0; i < n; i++)
				dist[i] = UINT32_MAX;
			uint32_t qh = 0, qt = 0;
			dist[root] = 0;
			q[qt++] = root;
			while (qh < qt) {
				uint32_t x = q[qh++];
				for (unsigned pq = 1; pq <= s->nodes[x].nports; pq++) {
					if (!tf_active(s, x, pq))
						continue;
					uint32_t y = snap_port_of(s, x, pq)->peer_node;
					if (s->nodes[y].type != SNAP_NODE_SWITCH || dist[y] != UINT32_MAX)
						continue;
					dist[y] = dist[x] + 1;
					q[qt++] = y;
				}
			}
			for (uint32_t lid = dp->lid; lid < (uint32_t)dp->lid + (1u << dp->lmc); lid++) {
				for (uint32_t x = 0; x < n; x++) {
					if (s->nodes[x].type != SNAP_NODE_SWITCH || dist[x] == UINT32_MAX)
						continue;
					if (x == root) {
						lft[(size_t)x * L + lid] = (uint8_t)rport;
						continue;
					}
					unsigned cand[256], nc = 0;
					for (unsigned pq = 1; pq <= s->nodes[x].nports; pq++) {
						if (!tf_active(s, x, pq))
							continue;
						uint32_t y = snap_port_of(s, x, pq)->peer_node;
						if (s->nodes[y].type == SNAP_NODE_SWITCH && dist[y] + 1 == dist[x])
							cand[nc++] = pq;
					}
					if (nc)
						lft[(size_t)x * L + lid] = (uint8_t)cand[lid % nc];
				}
			}
		}
	}
	for (uint32_t x = 0; x < n; x++)
		if (s->nodes[x].type == SNAP_NODE_SWITCH && snap_set_lft(s, x, lft + (size_t)x * L, L))
			tf_die("set lft");
	free(lft);
	free(dist);
	free(q);
}

/* LIDs, BFS LFTs, canonical order, validation. */
static inline void tf_finish(struct snap *s, unsigned lmc)
{
	char err[SNAP_ERR_LEN];
	tf_assign_lids(s, lmc);
	tf_bfs_lft(s);
	if (snap_canonicalize(s) || snap_validate(s, err)) {
		fprintf(stderr, "testfab: %s\n", err);
		exit(99);
	}
}

/* Entry l of node's table, writable: its chunk copied first where another
 * snapshot shares it (a test's snap_dup() of a fabric it changes). */
static inline uint8_t *tf_lft_at(struct snap *s, uint32_t node, uint32_t l)
{
	uint8_t *t = snap_lft_own(s, node, l, 1);
	if (!t)
		tf_die("snap_lft_own");
	return t;
}

/* Node's whole table as a malloc'd copy, to change and hand back to
 * tf_lft_put(), which writes the entries that differ (so only their
 * chunks are copied, as a delta would). */
static inline uint8_t *tf_lft_get(const struct snap *s, uint32_t node)
{
	uint32_t len = s->nodes[node].lft_len;
	uint8_t *t = malloc(len ? len : 1);
	if (!t)
		tf_die("tf_lft_get");
	snap_lft_read(&s->nodes[node], 0, len, t);
	return t;
}

static inline void tf_lft_put(struct snap *s, uint32_t node, uint8_t *t)
{
	for (uint32_t l = 0; l < s->nodes[node].lft_len; l++)
		if (snap_lft_get(&s->nodes[node], l) != t[l])
			*tf_lft_at(s, node, l) = t[l];
	free(t);
}

/* A cable fault on a tf_fattree3 tree (half-radix h), rerouted as a
 * subnet manager does: pod 0's leaves lose their cables to aggregation
 * switch 0 (the ports go down); those leaves send everything up their
 * other uplinks, every leaf sends pod 0's hosts (LIDs 1 .. h*h) up a way
 * that avoids aggregation switch 0, which no longer reaches them. No
 * leaf-to-host hop count changes; agg 0's (and its cores') do. */
static inline void tf_fault_pod0(struct snap *s, unsigned h)
{
	int64_t a0 = snap_find_node(s, TF_SW_GUID + 100000);
	if (a0 < 0)
		tf_die("tf_fault_pod0: no aggregation switch 0");
	for (unsigned j = 0; j < h; j++)
		tf_link_down(s, (uint32_t)snap_find_node(s, TF_SW_GUID + j), h + 1);
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct snap_node *n = &s->nodes[i];
		if (n->type != SNAP_NODE_SWITCH || n->guid - TF_SW_GUID >= 100000)
			continue;
		uint8_t *e = tf_lft_get(s, i);
		for (uint32_t l = 1; l < n->lft_len; l++)
			if (e[l] == h + 1 && (n->guid - TF_SW_GUID < h || l <= h * h))
				e[l] = (uint8_t)(h + 2);
		tf_lft_put(s, i, e);
	}
	for (uint32_t l = 1; l <= h * h; l++)
		*tf_lft_at(s, (uint32_t)a0, l) = SNAP_LFT_NONE;
}

/* Sets one LFT entry of the switch with this GUID (after tf_finish). */
static inline void tf_set_entry(struct snap *s, uint64_t sw_guid, uint32_t lid, uint8_t port)
{
	int64_t i = snap_find_node(s, sw_guid);
	if (i < 0 || lid >= s->nodes[i].lft_len)
		tf_die("set entry");
	*tf_lft_at(s, i, lid) = port;
}

/* Do two nodes' tables hold the same entries (lengths included)? */
static inline int tf_lft_same(const struct snap_node *a, const struct snap_node *b)
{
	if (a->lft_len != b->lft_len)
		return 0;
	for (uint32_t l = 0; l < a->lft_len; l++)
		if (snap_lft_get(a, l) != snap_lft_get(b, l))
			return 0;
	return 1;
}

/* Do a and b encode to the same bytes (header, nodes, ports, tables)? */
static inline int tf_same_encoding(const struct snap *a, const struct snap *b)
{
	char err[SNAP_ERR_LEN];
	uint8_t *ea, *eb;
	size_t la, lb;
	if (snap_encode(a, &ea, &la, err) || snap_encode(b, &eb, &lb, err))
		tf_die(err);
	int same = la == lb && !memcmp(ea, eb, la);
	free(ea);
	free(eb);
	return same;
}

/* A random reroute of s (after tf_finish), as its next generation:
 * entries of a few switches sent to other ports (tf_rand), a host renamed
 * in step it % 4 == 1 and a link down in it % 6 == 2, so that a chain of
 * them changes descriptions and ports too. */
static inline struct snap *tf_reroute(const struct snap *s, unsigned it)
{
	struct snap *t = snap_dup(s);
	if (!t)
		tf_die("dup");
	t->generation = s->generation + 1;
	t->timestamp = s->timestamp + 1;
	unsigned n = 1 + (unsigned)(tf_rand() % 12);
	for (unsigned c = 0; c < n; c++) {
		uint32_t i;
		do
			i = (uint32_t)(tf_rand() % t->nnodes);
		while (t->nodes[i].type != SNAP_NODE_SWITCH);
		uint32_t l = 1 + (uint32_t)(tf_rand() % (t->nodes[i].lft_len - 1));
		*tf_lft_at(t, i, l) = (uint8_t)(1 + tf_rand() % t->nodes[i].nports);
	}
	uint32_t x;
	do
		x = (uint32_t)(tf_rand() % t->nnodes);
	while ((t->nodes[x].type == SNAP_NODE_SWITCH) != (it % 6 == 2));
	if (it % 4 == 1 && t->nodes[x].type != SNAP_NODE_SWITCH)
		snprintf(t->nodes[x].desc, sizeof(t->nodes[x].desc), "moved%u HCA-1", it);
	unsigned q = 1 + (unsigned)(tf_rand() % t->nodes[x].nports);
	if (it % 6 == 2 && snap_port_of(t, x, q)->peer_node != SNAP_NONE)
		tf_link_down(t, x, q);
	return t;
}

/* ---- shapes ------------------------------------------------------------------- */

static inline void tf_hostdesc(char *d, size_t n, unsigned host, unsigned rail)
{
	snprintf(d, n, "h%04u HCA-%u", host, rail);
}

/*
 * Two-level tree: nleaf leaves with hpl hosts (ports 1..hpl) and one uplink
 * to each of nspine spines (port hpl+1+j); spines have nleaf ports. hpl >
 * nspine is over-subscribed. With rails == 2, host h also has "HCA-2" on the
 * next leaf (port hpl+nspine+1.., so leaves get hpl more ports).
 * Host numbers: leaf * hpl + i; switch ids: leaves 0.., spines 1000...
 */
static inline void tf_tree2(struct snap *s, unsigned nleaf, unsigned hpl, unsigned nspine, unsigned rails)
{
	uint32_t leaf[256], spine[256];
	for (unsigned l = 0; l < nleaf; l++)
		leaf[l] = tf_switch(s, l, hpl + nspine + (rails > 1 ? hpl : 0));
	for (unsigned j = 0; j < nspine; j++)
		spine[j] = tf_switch(s, 1000 + j, nleaf);
	for (unsigned l = 0; l < nleaf; l++)
		for (unsigned j = 0; j < nspine; j++)
			tf_link(s, leaf[l], hpl + 1 + j, spine[j], l + 1);
	for (unsigned l = 0; l < nleaf; l++)
		for (unsigned i = 0; i < hpl; i++) {
			unsigned h = l * hpl + i;
			char d[64];
			for (unsigned r = 1; r <= rails; r++) {
				tf_hostdesc(d, sizeof(d), h, r);
				uint32_t c = tf_ca(s, h * 4 + r, 1, d);
				if (r == 1)
					tf_link(s, c, 1, leaf[l], i + 1);
				else
					tf_link(s, c, 1, leaf[(l + 1) % nleaf], hpl + nspine + 1 + i);
			}
		}
}

/* k-ary 3-level fat tree (k even): k pods of k/2 leaves and k/2 aggregation
 * switches, (k/2)^2 cores, k^3/4 hosts. Leaf (p,e) ports 1..k/2 hosts,
 * k/2+1+a to agg (p,a); agg (p,a) ports 1..k/2 to leaves, k/2+1+j to core
 * a*k/2+j; core port p+1 to pod p. Host (p,e,h) is number (p*k/2+e)*k/2+h.
 * Switch ids: leaf p*k/2+e, agg 100000+p*k/2+a, core 200000+c. */
static inline void tf_fattree3(struct snap *s, unsigned k)
{
	unsigned h = k / 2;
	uint32_t *leaf = malloc(sizeof(uint32_t) * k * h), *agg = malloc(sizeof(uint32_t) * k * h);
	uint32_t *core = malloc(sizeof(uint32_t) * h * h);
	if (!leaf || !agg || !core)
		tf_die("nomem");
	for (unsigned i = 0; i < k * h; i++) {
		leaf[i] = tf_switch(s, i, k);
		agg[i] = tf_switch(s, 100000 + i, k);
	}
	for (unsigned c = 0; c < h * h; c++)
		core[c] = tf_switch(s, 200000 + c, k);
	for (unsigned p = 0; p < k; p++)
		for (unsigned a = 0; a < h; a++) {
			for (unsigned e = 0; e < h; e++)
				tf_link(s, leaf[p * h + e], h + 1 + a, agg[p * h + a], e + 1);
			for (unsigned j = 0; j < h; j++)
				tf_link(s, agg[p * h + a], h + 1 + j, core[a * h + j], p + 1);
		}
	for (unsigned l = 0; l < k * h; l++)
		for (unsigned i = 0; i < h; i++) {
			unsigned host = l * h + i;
			char d[64];
			tf_hostdesc(d, sizeof(d), host, 1);
			uint32_t c = tf_ca(s, host, 1, d);
			tf_link(s, c, 1, leaf[l], i + 1);
		}
	free(leaf);
	free(agg);
	free(core);
}

/* d-mod-k LFTs for tf_fattree3 (host LIDs only; a switch reaches only itself),
 * then canonical order. LIDs: host n gets n + 1, switches follow. */
static inline void tf_fattree3_finish(struct snap *s, unsigned k)
{
	unsigned h = k / 2;
	uint32_t nhost = k * h * h;
	tf_assign_lids(s, 0);
	uint32_t L = s->max_lid + 1;
	uint8_t *lft = malloc(L);
	if (!lft)
		tf_die("nomem");
	for (uint32_t x = 0; x < s->nnodes; x++) {
		const struct snap_node *n = &s->nodes[x];
		if (n->type != SNAP_NODE_SWITCH)
			continue;
		uint64_t id = n->guid - TF_SW_GUID;
		memset(lft, SNAP_LFT_NONE, L);
		lft[snap_port_of(s, x, 0)->lid] = 0;
		for (uint32_t host = 0; host < nhost; host++) {
			uint32_t lid = host + 1, pd = host / (h * h), ed = (host / h) % h, hd = host % h;
			uint8_t port;
			if (id < 100000) {
				uint32_t p = (uint32_t)id / h, e = (uint32_t)id % h;
				port = (uint8_t)(p == pd && e == ed ? hd + 1 : h + 1 + lid % h);
			} else if (id < 200000) {
				uint32_t p = (uint32_t)(id - 100000) / h;
				port = (uint8_t)(p == pd ? ed + 1 : h + 1 + (lid / h) % h);
			} else {
				port = (uint8_t)(pd + 1);
			}
			lft[lid] = port;
		}
		if (snap_set_lft(s, x, lft, L))
			tf_die("set lft");
	}
	free(lft);
	char err[SNAP_ERR_LEN];
	if (snap_canonicalize(s) || snap_validate(s, err)) {
		fprintf(stderr, "testfab: %s\n", err);
		exit(99);
	}
}

/* Random d-regular-ish graph of n switches (configuration model; pairs that
 * would make a self-loop are dropped, parallel links kept, so it may be
 * disconnected), hps hosts per switch. Host numbers: sw * hps + i. */
static inline void tf_rrg(struct snap *s, unsigned n, unsigned d, unsigned hps, uint64_t seed)
{
	tf_rng_state = seed;
	uint32_t *sw = malloc(n * sizeof(*sw)), *stubs = malloc((size_t)n * d * sizeof(*stubs));
	if (!sw || !stubs)
		tf_die("nomem");
	for (unsigned i = 0; i < n; i++)
		sw[i] = tf_switch(s, i, d + hps);
	unsigned ns = 0;
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < d; j++)
			stubs[ns++] = i * d + j;
	for (unsigned i = ns; i > 1; i--) {
		unsigned j = (unsigned)(tf_rand() % i);
		uint32_t t = stubs[i - 1];
		stubs[i - 1] = stubs[j];
		stubs[j] = t;
	}
	for (unsigned i = 0; i + 1 < ns; i += 2) {
		unsigned a = stubs[i] / d, pa = stubs[i] % d, b = stubs[i + 1] / d, pb = stubs[i + 1] % d;
		if (a != b)
			tf_link(s, sw[a], hps + 1 + pa, sw[b], hps + 1 + pb);
	}
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < hps; j++) {
			char dsc[64];
			tf_hostdesc(dsc, sizeof(dsc), i * hps + j, 1);
			tf_link(s, tf_ca(s, i * hps + j, 1, dsc), 1, sw[i], j + 1);
		}
	free(sw);
	free(stubs);
}

/* x-by-y torus (y == 1: a ring) with hps hosts per switch; ports hps+1..+4
 * are +x, -x, +y, -y. */
static inline void tf_torus(struct snap *s, unsigned x, unsigned y, unsigned hps)
{
	uint32_t *sw = malloc((size_t)x * y * sizeof(*sw));
	if (!sw)
		tf_die("nomem");
	for (unsigned i = 0; i < x * y; i++)
		sw[i] = tf_switch(s, i, hps + 4);
	for (unsigned j = 0; j < y; j++)
		for (unsigned i = 0; i < x; i++) {
			if (x > 2 || (x == 2 && i == 0))
				tf_link(s, sw[j * x + i], hps + 1, sw[j * x + (i + 1) % x], hps + 2);
			if (y > 2 || (y == 2 && j == 0))
				tf_link(s, sw[j * x + i], hps + 3, sw[((j + 1) % y) * x + i], hps + 4);
		}
	for (unsigned i = 0; i < x * y; i++)
		for (unsigned j = 0; j < hps; j++) {
			char dsc[64];
			tf_hostdesc(dsc, sizeof(dsc), i * hps + j, 1);
			tf_link(s, tf_ca(s, i * hps + j, 1, dsc), 1, sw[i], j + 1);
		}
	free(sw);
}

#endif
