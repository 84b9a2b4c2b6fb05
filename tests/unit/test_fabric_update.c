/*
 * test_fabric_update.c - the incremental index after a delta: the
 * hierarchy is shared only when no hop count can have changed, and then it
 * equals the one built from scratch; otherwise it is rebuilt.
 */
#include "delta.h"
#include "fabric.h"
#include "testfab.h"

/* Every host's cluster ID at every level, as a fingerprint. */
static int same_hier(const struct hier *a, const struct hier *b)
{
	if (a->nhosts != b->nhosts || a->depth != b->depth || a->nclusters != b->nclusters)
		return 0;
	for (uint32_t h = 0; h < a->nhosts; h++)
		for (uint32_t l = 0; l < a->depth; l++) {
			uint64_t x, y;
			if (hier_cluster_at(a, h, l, &x) || hier_cluster_at(b, h, l, &y) || x != y)
				return 0;
		}
	return 1;
}

static struct fabric_index *update(const struct snap *a, const struct fabric_index *xa, const struct snap *b,
				   int *reused, struct snap **applied)
{
	char err[SNAP_ERR_LEN];
	uint8_t *d;
	size_t dl;
	struct snap_delta_info info = { .want_blocks = 1 };
	if (snap_delta_encode(a, b, &d, &dl, err) || snap_delta_apply(a, d, dl, applied, &info, err))
		tf_die(err);
	struct fabric_index *x = NULL;
	fabric_index_update(*applied, xa, &info, NULL, 2, reused, &x, err);
	free(info.block);
	free(d);
	return x;
}

/* Hop counts from every switch to every end port: what the hierarchy and
 * every route's length are made of. */
static uint16_t *all_hops(const struct route_tab *rt)
{
	uint32_t *dst = malloc(rt->neps * sizeof(*dst));
	uint16_t *out = malloc((size_t)rt->neps * rt->nsw * sizeof(*out));
	if (!dst || !out)
		tf_die("out of memory");
	for (uint32_t e = 0; e < rt->neps; e++)
		dst[e] = e;
	if (route_switch_hops(rt, rt->sw_node, rt->nsw, dst, rt->neps, out))
		tf_die("route_switch_hops");
	free(dst);
	return out;
}

/* Random reroutes of the base: a few up-port moves and now and then one
 * entry sent anywhere (some of them entries that led nowhere). The
 * hierarchy must be shared exactly when no hop count changed: the proof
 * in fabric.c is exact, not only sound. */
static void random_rounds(const struct snap *a, const struct fabric_index *xa, unsigned h, unsigned rounds)
{
	uint16_t *ha = all_hops(xa->rt);
	size_t cells = (size_t)xa->rt->neps * xa->rt->nsw;
	unsigned shared = 0, rebuilt = 0, wrong = 0;
	for (unsigned r = 0; r < rounds; r++) {
		struct snap *b = snap_dup(a), *bb = NULL;
		b->generation = 100 + r;
		unsigned changes = 1 + (unsigned)(tf_rand() % 40);
		for (unsigned c = 0; c < changes; c++) {
			uint32_t i = (uint32_t)(tf_rand() % b->nnodes);
			struct snap_node *n = &b->nodes[i];
			if (n->type != SNAP_NODE_SWITCH)
				continue;
			uint8_t *e = &b->lft[n->lft_off + 1 + tf_rand() % (n->lft_len - 1)];
			if (r % 3 == 2 && c == 0)
				*e = (uint8_t)(tf_rand() % (2 * h + 1));
			else if (*e != SNAP_LFT_NONE && *e > h && n->guid - TF_SW_GUID < 200000)
				*e = (uint8_t)(h + 1 + (*e - h) % h);
		}
		int reused = -1;
		struct fabric_index *xb = update(a, xa, b, &reused, &bb);
		if (!xb)
			tf_die("update");
		uint16_t *hb = all_hops(xb->rt);
		int equal = !memcmp(ha, hb, cells * sizeof(*ha));
		shared += reused == 1;
		rebuilt += reused == 0;
		wrong += reused != equal;
		free(hb);
		fabric_index_free(xb);
		snap_free(b);
		snap_free(bb);
	}
	CHECK(!wrong && shared && rebuilt,
	      "%u random reroutes: hierarchy shared exactly when no hop count changed (%u shared, %u rebuilt, %u wrong)",
	      rounds, shared, rebuilt, wrong);
	free(ha);
}

int main(void)
{
	char err[SNAP_ERR_LEN];
	const unsigned k = 8, h = k / 2;
	struct snap *a = snap_new();
	tf_fattree3(a, k);
	tf_fattree3_finish(a, k);
	a->generation = 1;
	struct fabric_index *xa = NULL;
	fabric_index_build(a, NULL, 2, &xa, err);
	CHECK(xa, "the base index builds");

	/* 1. Leaves and aggregation switches move remote destinations to the
	 *    next up port: every route keeps its length. */
	struct snap *b = snap_dup(a), *bb = NULL;
	b->generation = 2;
	int moved = 0;
	uint32_t mnode = 0, mlid = 0;
	for (uint32_t i = 0; i < b->nnodes; i++) {
		struct snap_node *n = &b->nodes[i];
		if (n->type != SNAP_NODE_SWITCH || n->guid - TF_SW_GUID >= 200000)
			continue;
		for (uint32_t l = 1; l < n->lft_len; l += 3) {
			uint8_t *e = &b->lft[n->lft_off + l];
			if (*e != SNAP_LFT_NONE && *e > h) {
				*e = (uint8_t)(h + 1 + (*e - h) % h);
				if (!moved++) {
					mnode = i;
					mlid = l;
				}
			}
		}
	}
	int reused = -1;
	struct fabric_index *xb = update(a, xa, b, &reused, &bb);
	CHECK(xb && reused == 1, "an up-port change (%d entries) shares the hierarchy", moved);
	struct hier *fresh = NULL;
	CHECK(xb && hier_build(xb->rt, &fresh) == 0 && same_hier(xb->hier, fresh),
	      "and the shared hierarchy equals one built from scratch");
	CHECK(xb && xb->hier == xa->hier && atomic_load(&xa->hier->refs) == 2, "it is the same object, referenced twice");
	hier_free(fresh);
	CHECK(xb && xb->rt != xa->rt && xb->rt->eps == xa->rt->eps && xb->rt->snap == bb &&
	      atomic_load(xa->rt->shared) == 2, "the route index is the base's, re-pointed at the new snapshot");
	/* It walks the new tables, and outlives the base's index. */
	struct fabric_index *xa2 = NULL, *xb2 = NULL;
	fabric_index_build(a, NULL, 2, &xa2, err);
	struct snap *bb2 = NULL;
	if (xa2)
		xb2 = update(a, xa2, b, &reused, &bb2);
	fabric_index_free(xa2);
	uint32_t sep = ROUTE_NONE;
	for (uint32_t e2 = 0; xb2 && e2 < xb2->rt->neps; e2++)
		if (xb2->rt->eps[e2].node == mnode)
			sep = e2;
	struct route_hop hop[8];
	struct route_res res;
	CHECK(xb2 && sep != ROUTE_NONE && route_walk(xb2->rt, sep, (uint16_t)mlid, hop, 8, &res) == AN_OK &&
	      hop[0].out == bb2->lft[bb2->nodes[mnode].lft_off + mlid] &&
	      hop[0].out != a->lft[a->nodes[mnode].lft_off + mlid],
	      "a re-pointed index walks the new LFTs (switch %u, LID %u), after the base's index is freed", mnode, mlid);
	fabric_index_free(xb2);
	snap_free(bb2);

	/* 2. A leaf sends one of its own hosts up: routes to it from elsewhere
	 *    now come down to the leaf and go up again, a loop. */
	struct snap *c = snap_dup(a), *cc = NULL;
	c->generation = 3;
	uint32_t leaf0 = (uint32_t)snap_find_node(c, TF_SW_GUID + 0);
	uint32_t lid_local = 2; /* host 1 of leaf 0: LID 2 */
	c->lft[c->nodes[leaf0].lft_off + lid_local] = (uint8_t)(h + 1);
	struct fabric_index *xc = update(a, xa, c, &reused, &cc);
	CHECK(xc && reused == 0, "a route that changes its length (here: loops) rebuilds the hierarchy");
	CHECK(xc && xc->hier != xa->hier, "with a hierarchy of its own");

	/* 3. A port change (a link down) always rebuilds. */
	struct snap *e = snap_dup(a), *ee = NULL;
	e->generation = 4;
	uint32_t agg = (uint32_t)snap_find_node(e, TF_SW_GUID + 100000);
	tf_link_down(e, agg, h + 1);
	struct fabric_index *xe = update(a, xa, e, &reused, &ee);
	CHECK(xe && reused == 0, "a link going down rebuilds everything");

	/* 4. Many random reroutes, each checked against every hop count. */
	random_rounds(a, xa, h, 150);

	fabric_index_free(xb);
	fabric_index_free(xc);
	fabric_index_free(xe);
	CHECK(atomic_load(&xa->hier->refs) == 1, "freeing the newer index leaves the base's hierarchy");
	fabric_index_free(xa);
	snap_free(a);
	snap_free(b);
	snap_free(bb);
	snap_free(c);
	snap_free(cc);
	snap_free(e);
	snap_free(ee);
	return tf_failures != 0;
}
