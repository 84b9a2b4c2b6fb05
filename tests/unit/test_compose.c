/*
 * test_compose.c - composing two deltas (snap_delta_compose), what the
 * state directory's journal is made of: compose(a, b) applied to the base
 * gives exactly what applying a then b gives, on reroutes that touch LFT
 * blocks, ports and descriptions, overlapping and not, and over a chain of
 * 200 reroutes; a second delta that does not follow the first is NOBASE;
 * every truncation, bit flip and hand-made malformed record of either input
 * is refused with a reason, as snap_delta_apply refuses it; and random
 * re-sealed corruptions compose to what they apply to.
 */
#include <inttypes.h>

#include "testdelta.h"

static struct snap *fabric(void)
{
	struct snap *s = snap_new();
	tf_tree2(s, 4, 4, 2, 1);
	tf_finish(s, 0);
	s->generation = 10;
	s->sm_guid = 0x1234;
	s->sweep = 3;
	s->timestamp = 1700000000000000ull;
	snprintf(s->engine, sizeof(s->engine), "ftree");
	return s;
}

/* The next capture: link (leaf, up) down or back up at both ends, some of
 * the leaf's LFT entries moved to the next up port, a host renamed, and a
 * new generation. */
static struct snap *next(const struct snap *base, unsigned leafno, unsigned up, int down, const char *name)
{
	struct snap *t = snap_dup(base);
	if (!t)
		tf_die("dup");
	uint32_t leaf = (uint32_t)snap_find_node(t, TF_SW_GUID + leafno);
	struct snap_port *p = &t->ports[t->nodes[leaf].port0 + up];
	struct snap_port *q = &t->ports[t->nodes[p->peer_node].port0 + p->peer_port];
	p->state = q->state = down ? SNAP_PORT_DOWN : SNAP_PORT_ACTIVE;
	uint8_t *lft = tf_lft_get(t, leaf);
	uint32_t len = t->nodes[leaf].lft_len;
	for (uint32_t l = 1 + (uint32_t)(tf_rand() % 50); l < len; l += 1 + (uint32_t)(tf_rand() % 90))
		if (lft[l] == 5 || lft[l] == 6)
			lft[l] = lft[l] == 5 ? 6 : 5; /* the two up ports of tf_tree2(4, 4, 2) */
	tf_lft_put(t, leaf, lft);
	if (name) {
		uint32_t ca = (uint32_t)snap_find_node(t, TF_CA_GUID + 16 * (4 * (tf_rand() % 16) + 1));
		snprintf(t->nodes[ca].desc, sizeof(t->nodes[ca].desc), "%s", name);
	}
	t->generation = base->generation + 1;
	t->sweep = base->sweep + 1;
	t->timestamp = base->timestamp + 1000;
	snprintf(t->engine, sizeof(t->engine), "%s", t->generation % 2 ? "updn" : "ftree");
	return t;
}

static int same(const struct snap *a, const struct snap *b)
{
	return a && b && snap_diff(a, b, SNAP_DIFF_STATE, NULL, NULL) == 0 && a->generation == b->generation &&
	       a->sm_guid == b->sm_guid && a->sweep == b->sweep && a->timestamp == b->timestamp &&
	       a->max_lid == b->max_lid && !strcmp(a->engine, b->engine);
}

static uint8_t *enc(const struct snap *x, const struct snap *y, size_t *len)
{
	char err[SNAP_ERR_LEN];
	uint8_t *d;
	if (snap_delta_encode(x, y, &d, len, err))
		tf_die(err);
	return d;
}

/* compose(d1, d2) applied to a, against a then d1 then d2. */
static int composes(const struct snap *a, const uint8_t *d1, size_t l1, const uint8_t *d2, size_t l2, size_t *cl)
{
	char err[SNAP_ERR_LEN];
	struct snap *b = NULL, *c = NULL, *viac = NULL;
	uint8_t *comp = NULL;
	int ok = snap_delta_apply(a, d1, l1, &b, NULL, err) == 0 && snap_delta_apply(b, d2, l2, &c, NULL, err) == 0 &&
		 snap_delta_compose(a, d1, l1, d2, l2, &comp, cl, err) == 0 &&
		 snap_delta_apply(a, comp, *cl, &viac, NULL, err) == 0 && same(c, viac);
	if (!ok)
		printf("# %s\n", err);
	free(comp);
	snap_free(b);
	snap_free(c);
	snap_free(viac);
	return ok;
}

static void test_equal(void)
{
	char err[SNAP_ERR_LEN];
	tf_rng_state = 3;
	struct snap *a = fabric(), *b = next(a, 0, 5, 1, "renamed HCA-1"), *c = next(b, 0, 5, 0, "again HCA-1");
	struct snap *c2 = next(b, 2, 6, 1, NULL);
	size_t l1, l2, l3, cl;
	uint8_t *d1 = enc(a, b, &l1), *d2 = enc(b, c, &l2), *d3 = enc(b, c2, &l3);
	int ok = composes(a, d1, l1, d2, l2, &cl);
	CHECK(ok, "overlapping reroutes (the same link down then up, the same blocks, two descriptions): compose "
		  "then apply == apply both (%zu + %zu -> %zu bytes)",
	      l1, l2, cl);
	CHECK(cl <= l1 + l2 - SNAP_HEADER_LEN, "the composition is no larger than both inputs");
	CHECK(composes(a, d1, l1, d3, l3, &cl), "disjoint reroutes (another leaf, another link): equal too");
	/* A journal written before block records named their entries,
	 * composed with the deltas after it, either way round. */
	size_t w1l, w2l, wwl;
	uint8_t *w1 = td_whole_blocks(d1, b, &w1l), *w2 = td_whole_blocks(d2, c, &w2l);
	int mixed = composes(a, w1, w1l, d2, l2, &cl) && composes(a, d1, l1, w2, w2l, &cl);
	wwl = 0;
	mixed = mixed && composes(a, w1, w1l, w2, w2l, &wwl);
	CHECK(mixed, "whole blocks (flags 0) compose with named entries either way round, and with whole blocks");
	free(w1);
	free(w2);
	struct snap_delta_info info = { 0 };
	uint8_t *comp = NULL;
	struct snap *r = NULL;
	snap_delta_compose(a, d1, l1, d3, l3, &comp, &cl, err);
	CHECK(snap_delta_peek(comp, cl, &info, err) == 0 && info.base_generation == 10 && info.generation == 12,
	      "the composition is against the first's base (10) and makes the second's generation (12)");
	CHECK(snap_delta_apply(b, comp, cl, &r, NULL, err) == SNAP_DELTA_NOBASE,
	      "and applies to nothing else: %.60s", err);
	free(comp);

	uint8_t *x = NULL;
	CHECK(snap_delta_compose(a, d2, l2, d1, l1, &x, &cl, err) == SNAP_DELTA_NOBASE && !x,
	      "out of order: NOBASE (%.90s)", err);
	CHECK(snap_delta_compose(a, d1, l1, d1, l1, &x, &cl, err) == SNAP_DELTA_NOBASE && !x,
	      "the same delta twice: NOBASE");
	struct snap *small = snap_new();
	tf_tree2(small, 2, 2, 1, 1);
	tf_finish(small, 0);
	CHECK(snap_delta_compose(small, d1, l1, d2, l2, &x, &cl, err) == -1 && !x,
	      "on another fabric's node table: refused (%.60s)", err);
	snap_free(small);

	/* A chain of 200 reroutes, composed as the journal composes them:
	 * each step's cumulative delta gives that step's fabric. */
	struct snap *cur = snap_dup(a);
	uint8_t *cum = NULL;
	size_t cuml = 0;
	int bad = 0, steps = 200;
	size_t maxl = 0, sum = 0;
	for (int i = 0; i < steps; i++) {
		struct snap *n = next(cur, (unsigned)(tf_rand() % 4), 5 + (unsigned)(tf_rand() % 2), (int)(tf_rand() % 2),
				      tf_rand() % 3 ? NULL : "moved");
		size_t dl;
		uint8_t *d = enc(cur, n, &dl), *nc;
		sum += dl;
		if (!cum) {
			nc = d;
			cuml = dl;
		} else if (snap_delta_compose(cur, cum, cuml, d, dl, &nc, &cuml, err)) {
			bad++;
			free(d);
			snap_free(n);
			break;
		} else {
			free(d);
		}
		free(cum);
		cum = nc;
		maxl = cuml > maxl ? cuml : maxl;
		snap_free(r);
		r = NULL;
		if (snap_delta_apply(a, cum, cuml, &r, NULL, err) || !same(r, n))
			bad++;
		snap_free(cur);
		cur = n;
	}
	size_t direct;
	uint8_t *dd = enc(a, cur, &direct);
	CHECK(!bad, "200 reroutes composed step by step: every cumulative delta gives its step's fabric (%d wrong)",
	      bad);
	CHECK(maxl * 20 < sum, "the cumulative delta grows with what changed, not with the steps: at most %zu bytes "
			       "(the direct delta %zu) where the 200 steps sum to %zu", maxl, direct, sum);
	free(dd);
	free(cum);
	snap_free(cur);
	snap_free(r);
	free(d1);
	free(d2);
	free(d3);
	snap_free(a);
	snap_free(b);
	snap_free(c);
	snap_free(c2);
}

/* Both compose and apply refuse m (as the second delta, after d1). */
static int both_refuse(const struct snap *a, const struct snap *b, const uint8_t *d1, size_t l1, const uint8_t *m,
		       size_t ml, const char *want)
{
	char err[SNAP_ERR_LEN] = "", err2[SNAP_ERR_LEN] = "";
	uint8_t *x = NULL;
	struct snap *r = NULL;
	size_t xl;
	int c = snap_delta_compose(a, d1, l1, m, ml, &x, &xl, err);
	int p = snap_delta_apply(b, m, ml, &r, NULL, err2);
	int ok = c == -1 && !x && err[0] && p == -1 && (!want || strstr(err, want));
	printf("# compose: %s | apply: %s\n", err, err2);
	free(x);
	snap_free(r);
	return ok;
}

static void test_malformed(void)
{
	char err[SNAP_ERR_LEN];
	tf_rng_state = 5;
	struct snap *a = fabric(), *b = next(a, 0, 5, 1, "renamed HCA-1"), *c = next(b, 1, 6, 1, "other HCA-1");
	size_t l1, l2, xl;
	uint8_t *d1 = enc(a, b, &l1), *d2 = enc(b, c, &l2), *x = NULL;
	int bad = 0;
	for (size_t n = 0; n < l2; n++) {
		err[0] = 0;
		if (snap_delta_compose(a, d1, l1, d2, n, &x, &xl, err) != -1 || !err[0] || x)
			bad++;
		if (snap_delta_compose(a, d2, n, d1, l1, &x, &xl, err) != -1 || x)
			bad++;
	}
	CHECK(!bad, "every truncation of either delta is refused with a reason (%d accepted)", bad);
	uint8_t *m = malloc(l2);
	for (size_t i = 0; i < l2 * 8; i++) {
		memcpy(m, d2, l2);
		m[i / 8] ^= (uint8_t)(1u << (i % 8));
		if (snap_delta_compose(a, d1, l1, m, l2, &x, &xl, err) == 0) {
			bad++;
			free(x);
		}
	}
	CHECK(!bad, "every single-bit flip is caught (%d accepted)", bad);

	/* Hand-made records, re-sealed so that the structural checks are
	 * reached. */
	size_t desc0, ports_off, blocks_off;
	td_offsets(d2, &desc0, &ports_off, &blocks_off);
	size_t b0 = blocks_off + 4;
	CHECK(rd32(d2 + desc0 - 4) == 1 && rd32(d2 + ports_off) == 2 && rd32(d2 + blocks_off) >= 1,
	      "one description, two port records and LFT blocks where expected");

	memcpy(m, d2, l2);
	uint8_t *w = m + desc0;
	put32(&w, a->nnodes);
	td_reseal(m, l2);
	CHECK(both_refuse(a, b, d1, l1, m, l2, "node"), "a description of a node past the table");
	memcpy(m, d2, l2);
	m[desc0 + 5] = 0;
	td_reseal(m, l2);
	CHECK(both_refuse(a, b, d1, l1, m, l2, "NUL"), "a description holding a NUL");
	memcpy(m, d2, l2);
	m[ports_off + 4 + 4] = 200;
	td_reseal(m, l2);
	CHECK(both_refuse(a, b, d1, l1, m, l2, "port"), "a port past the node's ports");
	memcpy(m, d2, l2);
	m[ports_off + 4 + 5] = 2;
	td_reseal(m, l2);
	CHECK(both_refuse(a, b, d1, l1, m, l2, "presence"), "a presence byte of 2");
	memcpy(m, d2, l2);
	memcpy(m + ports_off + 4, d2 + ports_off + 4 + 26, 26);
	memcpy(m + ports_off + 4 + 26, d2 + ports_off + 4, 26);
	td_reseal(m, l2);
	CHECK(both_refuse(a, b, d1, l1, m, l2, "out of order"), "port records out of order");
	memcpy(m, d2, l2);
	m[b0 + 6 + 8] = 200; /* the first entry, past the key and the entry mask */
	td_reseal(m, l2);
	CHECK(both_refuse(a, b, d1, l1, m, l2, "LFT sends"), "an LFT entry naming a port the switch lacks");
	memcpy(m, d2, l2);
	w = m + b0 + 4;
	put16(&w, 4000);
	td_reseal(m, l2);
	CHECK(both_refuse(a, b, d1, l1, m, l2, "past its table"), "an LFT block past the table");
	memcpy(m, d2, l2);
	w = m + b0;
	put32(&w, 0); /* node 0 is a CA in tf_tree2's GUID order? then "not a switch" */
	td_reseal(m, l2);
	CHECK(a->nodes[0].type == SNAP_NODE_SWITCH || both_refuse(a, b, d1, l1, m, l2, "not a switch"),
	      "an LFT block of a node that is not a switch");
	memcpy(m, d2, l2);
	w = m + SNAP_HEADER_LEN + 24;
	put32(&w, a->nnodes + 1);
	td_reseal(m, l2);
	x = NULL;
	CHECK(snap_delta_compose(a, d1, l1, m, l2, &x, &xl, err) == -1 && !x && strstr(err, "nodes"),
	      "a delta for another node count: %s", err);
	memcpy(m, d2, l2);
	w = m + blocks_off;
	put32(&w, 0x10000000);
	td_reseal(m, l2);
	CHECK(both_refuse(a, b, d1, l1, m, l2, "cannot fit"), "a count the bytes cannot hold");
	uint8_t *longer = malloc(l2 + 1);
	memcpy(longer, d2, l2);
	longer[l2] = 0;
	td_reseal(longer, l2 + 1);
	CHECK(both_refuse(a, b, d1, l1, longer, l2 + 1, "after the last record"), "a byte after the last record");
	free(longer);
	/* The same damage in the first delta. */
	uint8_t *m1 = malloc(l1);
	memcpy(m1, d1, l1);
	td_offsets(d1, &desc0, &ports_off, &blocks_off);
	m1[blocks_off + 4 + 6 + 8] = 200;
	td_reseal(m1, l1);
	x = NULL;
	CHECK(snap_delta_compose(a, m1, l1, d2, l2, &x, &xl, err) == -1 && !x && strstr(err, "first delta") &&
		      strstr(err, "LFT sends"),
	      "damage in the first delta: %.70s", err);
	free(m1);

	/* Re-sealed random corruption of the second: whenever apply takes it,
	 * compose does, and to the same fabric; whatever compose takes applies
	 * as the pair does or is refused when applied. */
	int refused = 0, agreed = 0;
	bad = 0;
	tf_rng_state = 11;
	for (int it = 0; it < 20000; it++) {
		memcpy(m, d2, l2);
		int flips = 1 + (int)(tf_rand() % 3);
		for (int f = 0; f < flips; f++)
			m[SNAP_HEADER_LEN + 32 + tf_rand() % (l2 - SNAP_HEADER_LEN - 32)] = (uint8_t)tf_rand();
		td_reseal(m, l2);
		struct snap *viab = NULL, *viac = NULL;
		x = NULL;
		int pa = snap_delta_apply(b, m, l2, &viab, NULL, err);
		int pc = snap_delta_compose(a, d1, l1, m, l2, &x, &xl, err);
		int pac = pc == 0 ? snap_delta_apply(a, x, xl, &viac, NULL, err) : -1;
		if (pa == 0 && (pac != 0 || !same(viab, viac)))
			bad++;
		if (pa != 0 && pac == 0)
			bad++;
		refused += pa != 0;
		agreed += pa == 0;
		free(x);
		snap_free(viab);
		snap_free(viac);
	}
	CHECK(!bad && refused > 0 && agreed > 0,
	      "20,000 re-sealed corruptions: compose agrees with apply on every one (%d applied, %d refused, %d disagreed)",
	      agreed, refused, bad);
	free(m);
	free(d1);
	free(d2);
	snap_free(a);
	snap_free(b);
	snap_free(c);
}

int main(void)
{
	test_equal();
	test_malformed();
	return tf_failures != 0;
}
