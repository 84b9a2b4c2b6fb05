/*
 * test_fabric_update.c - the incremental index after a delta: the
 * hierarchy is shared only when no hop count can have changed, and then it
 * equals the one built from scratch; otherwise it is rebuilt.
 */
#include "delta.h"
#include "fabric.h"
#include "ref_cover.h"
#include "testfab.h"
#include "testhier.h"

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

/* Hop counts from every leaf (a switch some host is cabled to) to every
 * host's default port: the table the hierarchy is made of. */
static uint16_t *leaf_hops(const struct route_tab *rt, size_t *cells)
{
	uint32_t *leaf = malloc(rt->nsw * sizeof(*leaf)), *dst = malloc((rt->nhosts + 1) * sizeof(*dst)), nl = 0;
	uint8_t *seen = calloc(rt->snap->nnodes, 1);
	if (!leaf || !dst || !seen)
		tf_die("out of memory");
	for (uint32_t x = 0; x < rt->nhosts; x++) {
		const struct route_ep *e = &rt->eps[route_host_ep(rt, x)];
		dst[x] = route_host_ep(rt, x);
		if (e->up == AN_OK && e->leaf != ROUTE_NONE && !seen[e->leaf]++)
			leaf[nl++] = e->leaf;
	}
	*cells = (size_t)nl * rt->nhosts;
	uint16_t *out = malloc(*cells * sizeof(*out) + 1);
	if (!out || route_switch_hops(rt, leaf, nl, dst, rt->nhosts, out))
		tf_die("route_switch_hops");
	free(leaf);
	free(dst);
	free(seen);
	return out;
}

/* Every cluster's ID and name and every switch's name alike. */
static int same_names(const struct hier *a, const struct hier *b)
{
	if (!tf_same_hier(a, b) || a->nsw != b->nsw)
		return 0;
	for (uint32_t c = 0; c < a->nclusters; c++)
		if (a->clusters[c].id != b->clusters[c].id || strcmp(a->names[c], b->names[c]))
			return 0;
	for (uint32_t w = 0; w < a->nsw; w++)
		if (strcmp(a->swnames[w], b->swnames[w]))
			return 0;
	return 1;
}

/* Random cable faults rerouted by shortest paths, as a subnet manager
 * would: one to three links between switches go down (now and then a
 * host's cable), the LFTs are recomputed. The clusters are kept exactly
 * when the hosts and the leaf-to-host hop table are unchanged, and then
 * the renamed hierarchy equals one built from scratch, names included. */
static void fault_rounds(unsigned k, unsigned rounds)
{
	char err[SNAP_ERR_LEN];
	struct snap *a = snap_new();
	tf_fattree3(a, k);
	tf_finish(a, 0);
	a->generation = 1;
	struct fabric_index *xa = NULL;
	fabric_index_build(a, NULL, 2, &xa, err);
	if (!xa)
		tf_die(err);
	size_t cells, cb;
	/* xa's proofs walk; the same base prepared (xp) goes by the
	 * distances carried to the new links, and must decide alike. */
	hopcover_free(xa->hc);
	xa->hc = NULL;
	uint16_t *ha = leaf_hops(xa->rt, &cells);
	unsigned kept = 0, rebuilt = 0, wrong = 0, named = 0;
	struct fabric_index *xp = NULL;
	if (fabric_index_build(a, NULL, 2, &xp, err) || fabric_index_prepare(xp, NULL) || !xp->hc)
		tf_die("prepared base");
	unsigned agree = 0, carried = 0, dist_right = 0, cover_right = 0, relinked = 0, relink_right = 0, repointed = 0;
	unsigned carried_rebuilt = 0, rebuilt_right = 0, stale = 0;
	for (unsigned r = 0; r < rounds; r++) {
		struct snap *b = snap_dup(a), *bb = NULL;
		b->generation = 100 + r;
		unsigned downs = 1 + (unsigned)(tf_rand() % 3);
		uint32_t i0 = SNAP_NONE;
		unsigned q0 = 0;
		for (unsigned d = 0; d < downs;) {
			uint32_t i = (uint32_t)(tf_rand() % b->nnodes);
			unsigned q = 1 + (unsigned)(tf_rand() % b->nodes[i].nports);
			struct snap_port *p = snap_port_of(b, i, q);
			if (!p->present || p->peer_node == SNAP_NONE || p->state != SNAP_PORT_ACTIVE)
				continue;
			int to_switch = b->nodes[p->peer_node].type == SNAP_NODE_SWITCH && b->nodes[i].type == SNAP_NODE_SWITCH;
			if (to_switch || (r % 7 == 6 && d == 0)) {
				if (to_switch && i0 == SNAP_NONE) {
					i0 = i;
					q0 = q;
				}
				tf_link_down(b, i, q);
				d++;
			}
		}
		tf_bfs_lft(b);
		/* Every fourth round one entry is left as it was, naming the
		 * cable now down (a snapshot may hold that: the port exists):
		 * its byte did not change, its port's code did. */
		for (uint32_t l = 1; r % 4 == 3 && i0 != SNAP_NONE && l < a->nodes[i0].lft_len; l++)
			if (snap_lft_get(&a->nodes[i0], l) == q0) {
				*tf_lft_at(b, i0, l) = (uint8_t)q0;
				stale++;
				break;
			}
		if (snap_canonicalize(b) || snap_validate(b, err))
			tf_die(err);
		int reused = -1;
		struct fabric_index *xb = update(a, xa, b, &reused, &bb);
		if (!xb)
			tf_die("update");
		uint16_t *hb = leaf_hops(xb->rt, &cb);
		int equal = cb == cells && !memcmp(ha, hb, cells * sizeof(*ha)) && xb->rt->nhosts == xa->rt->nhosts;
		for (uint32_t e = 0; equal && e < xa->rt->neps; e++)
			equal = xa->rt->eps[e].up == xb->rt->eps[e].up;
		kept += reused != 0;
		rebuilt += reused == 0;
		wrong += !!reused != equal;
		int reused_p = -1;
		struct snap *bp = NULL;
		struct fabric_index *xbp = update(a, xp, b, &reused_p, &bp);
		agree += xbp && reused_p == reused;
		/* Carried (the hosts kept, whether the clusters were or not):
		 * its distances are a fresh search's, its cover the walked
		 * hop counts', and a hierarchy rebuilt from it the walks'. */
		struct hopdist *fresh_d = NULL;
		if (xbp && xbp->hc && xbp->hc->hd->pt == xbp->rt->pt && xbp->hc->hd->pt != xp->rt->pt &&
		    hopcover_complete(xbp->hc)) {
			carried++;
			dist_right += !hopdist_build(xbp->rt, UINT64_MAX, &fresh_d) && hopdist_same(fresh_d, xbp->hc->hd);
			uint16_t *hp = all_hops(xbp->rt);
			cover_right += cover_is_exact(xbp->rt, xbp->hc, hp);
			free(hp);
			struct hier *walked = NULL;
			carried_rebuilt += reused_p == 0;
			rebuilt_right += reused_p == 0 && !hier_build(xbp->rt, &walked) && tf_same_hier(xbp->hier, walked);
			hier_free(walked);
		}
		hopdist_free(fresh_d);
		fabric_index_free(xbp);
		snap_free(bp);
		struct hier *fresh = NULL;
		if (reused && hier_build(xb->rt, &fresh) == 0 && same_names(xb->hier, fresh) && xb->hier != xa->hier)
			named++;
		hier_free(fresh);
		/* Switch-to-switch cables alone: the route index is the
		 * base's with the port codes made again (route_relink), equal
		 * to a fresh one's. */
		struct route_tab *fr = NULL;
		size_t npt = xa->rt->pt_off[xa->rt->nsw - 1] + bb->nodes[xa->rt->sw_node[xa->rt->nsw - 1]].nports + 1u;
		if (xb->rt->shared == xa->rt->shared) {
			relinked++;
			relink_right += xb->rt->pt != xa->rt->pt && !route_build(bb, NULL, &fr) &&
					!memcmp(fr->pt, xb->rt->pt, npt * sizeof(*fr->pt));
			/* and an LFT-only delta after it re-points the relinked one */
			struct snap *b2 = snap_dup(bb), *bb2 = NULL;
			b2->generation = bb->generation + 1;
			struct fabric_index *x2 = NULL;
			int r2 = -1;
			x2 = update(bb, xb, b2, &r2, &bb2);
			const uint32_t *xbpt = xb->rt->pt;
			fabric_index_free(xb); /* before the one that shares its codes */
			xb = NULL;
			repointed += x2 && fr && x2->rt->pt == xbpt && !memcmp(x2->rt->pt, fr->pt, npt * sizeof(*fr->pt));
			fabric_index_free(x2);
			snap_free(b2);
			snap_free(bb2);
		}
		route_free(fr);
		free(hb);
		fabric_index_free(xb);
		snap_free(b);
		snap_free(bb);
	}
	CHECK(!wrong && kept && rebuilt,
	      "%u random cable faults rerouted: clusters kept exactly when no leaf-to-host hop count changed "
	      "(%u kept, %u rebuilt, %u wrong)", rounds, kept, rebuilt, wrong);
	CHECK(named == kept, "each kept hierarchy, renamed over the new links, equals one built from scratch "
	      "(%u of %u)", named, kept);
	CHECK(relinked && relink_right == relinked && repointed == relinked,
	      "faults of switch-to-switch cables alone relink the route index: port codes equal to a fresh build's "
	      "(%u of %u), kept by the next LFT-only delta after it (%u)", relink_right, relinked, repointed);
	CHECK(agree == rounds, "from a prepared base, the proof with the distances carried to the new links decides "
	      "as the walks do (%u of %u)", agree, rounds);
	CHECK(carried && dist_right == carried && cover_right == carried && stale,
	      "each kept one carries its cover: distances equal to a fresh search (%u of %u), the cover exact by the "
	      "walks (%u of %u; %u rounds with an entry left naming a cable now down)", dist_right, carried,
	      cover_right, carried, stale);
	CHECK(rebuilt_right == carried_rebuilt, "a hierarchy rebuilt from a carried cover equals the walks' (%u of %u)",
	      rebuilt_right, carried_rebuilt);
	fabric_index_free(xp);
	free(ha);
	fabric_index_free(xa);
	snap_free(a);
}

/* Random reroutes of the base: a few up-port moves and now and then one
 * entry sent anywhere (some of them entries that led nowhere). The
 * hierarchy must be shared exactly when no hop count changed: the proof
 * in fabric.c is exact, not only sound. */
static void random_rounds(const struct snap *a, const struct fabric_index *xa, unsigned h, unsigned rounds)
{
	char err[SNAP_ERR_LEN];
	uint16_t *ha = all_hops(xa->rt);
	size_t cells = (size_t)xa->rt->neps * xa->rt->nsw;
	unsigned shared = 0, rebuilt = 0, wrong = 0, agree = 0, covers = 0, cover_right = 0, carried_right = 0;
	/* The same base prepared (fabric_index_prepare): its proofs go by
	 * distance, and must decide as the walks do. */
	struct fabric_index *xp = NULL;
	if (fabric_index_build(a, NULL, 2, &xp, err) || fabric_index_prepare(xp, NULL) || !xp->hc)
		tf_die("prepared base");
	unsigned same_hier = 0;
	for (unsigned r = 0; r < rounds; r++) {
		struct snap *b = snap_dup(a), *bb = NULL;
		b->generation = 100 + r;
		unsigned changes = 1 + (unsigned)(tf_rand() % 40);
		for (unsigned c = 0; c < changes; c++) {
			uint32_t i = (uint32_t)(tf_rand() % b->nnodes);
			struct snap_node *n = &b->nodes[i];
			if (n->type != SNAP_NODE_SWITCH)
				continue;
			uint8_t *e = tf_lft_at(b, (uint32_t)(n - b->nodes), 1 + tf_rand() % (n->lft_len - 1));
			if (r % 3 == 2 && c == 0)
				*e = (uint8_t)(tf_rand() % (2 * h + 1));
			else if (*e != SNAP_LFT_NONE && *e > h && n->guid - TF_SW_GUID < 200000)
				*e = (uint8_t)(h + 1 + (*e - h) % h);
		}
		int reused = -1, reused_p = -1;
		struct snap *bp = NULL;
		struct fabric_index *xb = update(a, xa, b, &reused, &bb), *xbp = update(a, xp, b, &reused_p, &bp);
		if (!xb || !xbp)
			tf_die("update");
		uint16_t *hb = all_hops(xb->rt);
		int equal = !memcmp(ha, hb, cells * sizeof(*ha));
		shared += reused == 1;
		rebuilt += reused == 0;
		wrong += reused != equal;
		/* xa has no cover: its proofs walk, and a rebuild makes one. */
		agree += reused_p == reused && (xbp->hc == xp->hc) == (reused == 1) && !xb->hc == (reused == 1);
		/* A rebuilt one: the cover carried over the changed entries
		 * (the base routes every host along shortest paths, so only
		 * they can have spoiled one), and one prepared anew, are
		 * exactly the LIDs whose every walked hop count is the
		 * distance plus one. */
		struct fabric_index *xn = NULL;
		if (reused == 0 && !fabric_index_build(bp, NULL, 2, &xn, err) && fabric_index_prepare(xn, NULL) == AN_OK) {
			covers++;
			cover_right += cover_is_exact(xn->rt, xn->hc, hb);
			carried_right += xbp->hc != xp->hc && cover_is_exact(xbp->rt, xbp->hc, hb);
			/* Its hierarchy, the hop table read from distances where
			 * covered, is the one the walks make. */
			struct hier *walked = NULL;
			same_hier += !hier_build(xbp->rt, &walked) && tf_same_hier(xbp->hier, walked) &&
				     tf_same_hier(xb->hier, walked);
			hier_free(walked);
		}
		fabric_index_free(xn);
		fabric_index_free(xbp);
		snap_free(bp);
		free(hb);
		fabric_index_free(xb);
		snap_free(b);
		snap_free(bb);
	}
	CHECK(!wrong && shared && rebuilt,
	      "%u random reroutes: hierarchy shared exactly when no hop count changed (%u shared, %u rebuilt, %u wrong)",
	      rounds, shared, rebuilt, wrong);
	CHECK(agree == rounds, "from a prepared base the proof by distance decides as the walks do, and passes the "
	      "cover on exactly when shared (%u of %u)", agree, rounds);
	CHECK(covers && cover_right == covers, "each rebuilt reroute's cover, prepared anew, is exactly the LIDs "
	      "routed along shortest paths by the walked hop counts (%u of %u)", cover_right, covers);
	CHECK(carried_right == covers, "and so is the cover the update carried over the changed entries (%u of %u)",
	      carried_right, covers);
	CHECK(same_hier == covers, "each rebuilt hierarchy, its hop table from distances where covered, equals the "
	      "one from walked hop counts (%u of %u)", same_hier, covers);
	fabric_index_free(xp);
	free(ha);
}

/* big (a k=12 fat tree: 12 pods of 6 leaves, numbered pod by pod) with
 * leaves [a0, a1) cabled no more to their pod's first aggregation switch
 * (leaf port 7) and leaves [b0, b1) to its second (port 8); and its
 * route index. */
static struct snap *cut_pods(const struct snap *big, unsigned a0, unsigned a1, unsigned b0, unsigned b1,
			     struct route_tab **rt)
{
	struct snap *s = snap_dup(big);
	for (unsigned leaf = a0; leaf < a1; leaf++)
		tf_link_down(s, (uint32_t)snap_find_node(s, TF_SW_GUID + leaf), 6 + 1);
	for (unsigned leaf = b0; leaf < b1; leaf++)
		tf_link_down(s, (uint32_t)snap_find_node(s, TF_SW_GUID + leaf), 6 + 2);
	*rt = NULL;
	if (route_build(s, NULL, rt) != AN_OK)
		tf_die("route_build");
	return s;
}

/* hd relinked from was to rt: equal to a fresh search of rt, with nocol
 * columns kept apart (-1: copied whole, none apart)? The moved leaves'
 * count in *moved. */
static struct hopdist *relink_checked(struct hopdist *hd, const struct route_tab *was, const struct route_tab *rt,
				      int nocol, unsigned *moved, int *ok)
{
	uint8_t *mv = malloc(hd->nleaf);
	struct hopdist *rel = NULL, *fresh = NULL;
	*moved = 0;
	*ok = mv && hopdist_relink(hd, was, rt, UINT32_MAX, mv, &rel) == AN_OK &&
	      !hopdist_build(rt, UINT64_MAX, &fresh) && hopdist_same(fresh, rel) &&
	      (nocol < 0 ? !rel->owner && !rel->ocol && rel->d != hd->d : rel->d == hd->d && rel->nocol == (uint32_t)nocol);
	for (uint32_t k = 0; rel && k < rel->nleaf; k++)
		*moved += mv[k];
	hopdist_free(fresh);
	free(mv);
	return rel;
}

/* Relinks after relinks, the distances alone (the cables' ends down,
 * the tables unchanged): pod 0's leaves lose a cable (their 6 columns
 * kept apart); then pod 1's first leaf loses one, which moves its column
 * alone (pod 0's copied as they were); then pod 0's come back (their
 * columns the table's again, dropped). A cover made over the middle one,
 * its kept and its moved columns read by entry_off_apart, is exact. From
 * pod 0's columns apart, the 66 other leaves losing their cable to their
 * pod's second aggregation switch copy the whole table, pod 0's kept
 * columns written into it. */
static void relink_chain(const struct snap *big, const struct fabric_index *xg)
{
	struct route_tab *r1, *r2, *r3, *r4;
	struct snap *s1 = cut_pods(big, 0, 6, 0, 0, &r1), *s2 = cut_pods(big, 0, 6, 6, 7, &r2),
		    *s3 = cut_pods(big, 0, 0, 6, 7, &r3), *s4 = cut_pods(big, 0, 6, 6, 72, &r4);
	unsigned m1 = 0, m2 = 0, m3 = 0, m4 = 0;
	int ok1 = 0, ok2 = 0, ok3 = 0, ok4 = 0;
	struct hopdist *h1 = relink_checked(xg->hc->hd, xg->rt, r1, 6, &m1, &ok1);
	struct hopdist *h2 = h1 ? relink_checked(h1, r1, r2, 7, &m2, &ok2) : NULL;
	struct hopdist *h3 = h2 ? relink_checked(h2, r2, r3, 1, &m3, &ok3) : NULL;
	struct hopdist *h4 = h1 ? relink_checked(h1, r1, r4, -1, &m4, &ok4) : NULL;
	CHECK(h1 && ok1 && m1 == 6, "pod 0's leaves cut off agg 0: 6 leaves moved (%u), their columns apart", m1);
	CHECK(h2 && ok2 && m2 == 1, "then one leaf of pod 1: its column alone searched (%u moved), pod 0's copied; "
	      "7 apart, equal to a fresh search", m2);
	CHECK(h3 && ok3 && m3 == 6, "pod 0's cables back: its columns found the table's again (%u moved), 1 apart", m3);
	CHECK(h4 && ok4 && m4 == 66, "the other pods' leaves cut from their second: %u moved, pod 0's kept, the whole "
	      "copied, equal to a fresh search", m4);
	struct hopcover *c = NULL;
	uint16_t *hops = all_hops(r2);
	int run = h2 && !hopcover_new(h2, &c) && !hopcover_run(r2, c, 0, r2->nsw, NULL);
	CHECK(run && c->covered > 0 && cover_is_exact(r2, c, hops), "a cover over 7 columns apart is exact (%u LIDs "
	      "covered)", run ? c->covered : 0);
	free(hops);
	hopcover_free(c);
	hopdist_free(h1);
	hopdist_free(h2);
	hopdist_free(h3);
	hopdist_free(h4);
	route_free(r1);
	route_free(r2);
	route_free(r3);
	route_free(r4);
	snap_free(s1);
	snap_free(s2);
	snap_free(s3);
	snap_free(s4);
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
	struct fabric_index *xp = NULL;
	int prep_a = fabric_index_build(a, NULL, 2, &xp, err) ? AN_E_NOMEM : fabric_index_prepare(xp, NULL);
	CHECK(!prep_a && xp->hc && xp->hc->covered == xp->rt->nhosts,
	      "prepared, it routes every host's LID along shortest paths (%u of %u)", xp && xp->hc ? xp->hc->covered : 0,
	      xp ? xp->rt->nhosts : 0);
	CHECK(xa && xa->hc && xa->hc->covered == xp->hc->covered, "a full build has the cover already");
	/* Without it (as after a rename), the preparation makes it. */
	atomic_int raised = 1;
	struct fabric_index *xq = NULL;
	if (!fabric_index_build(a, NULL, 2, &xq, err)) {
		hopcover_free(xq->hc);
		xq->hc = NULL;
	}
	CHECK(xq && fabric_index_prepare(xq, &raised) == AN_E_CANCEL && xq->hc && xq->hc->ndone == 0,
	      "a raised cancel flag stops the preparation before any switch is checked");
	CHECK(xq && fabric_index_prepare(xq, NULL) == AN_OK && xq->hc->covered == xp->hc->covered,
	      "and a later call finishes it");
	fabric_index_free(xq);
	/* The proofs of xa walk from here on (the other base, xp, goes by
	 * distance), so that each way is checked against the other. */
	hopcover_free(xa->hc);
	xa->hc = NULL;

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
			uint8_t *e = tf_lft_at(b, (uint32_t)(n - b->nodes), l);
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
	struct snap *bp = NULL;
	struct fabric_index *xbp = update(a, xp, b, &reused, &bp);
	CHECK(xbp && reused == 1 && xbp->hc == xp->hc, "from a prepared base too, by distance, and the new index "
	      "keeps the base's shortest-path cover");
	fabric_index_free(xbp);
	snap_free(bp);
	struct hier *fresh = NULL;
	CHECK(xb && hier_build(xb->rt, &fresh) == 0 && tf_same_hier(xb->hier, fresh),
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
	      hop[0].out == snap_lft_get(&bb2->nodes[mnode], mlid) &&
	      hop[0].out != snap_lft_get(&a->nodes[mnode], mlid),
	      "a re-pointed index walks the new LFTs (switch %u, LID %u), after the base's index is freed", mnode, mlid);
	fabric_index_free(xb2);
	snap_free(bb2);

	/* 2. A leaf sends one of its own hosts up: routes to it from elsewhere
	 *    now come down to the leaf and go up again, a loop. */
	struct snap *c = snap_dup(a), *cc = NULL;
	c->generation = 3;
	uint32_t leaf0 = (uint32_t)snap_find_node(c, TF_SW_GUID + 0);
	uint32_t lid_local = 2; /* host 1 of leaf 0: LID 2 */
	*tf_lft_at(c, leaf0, lid_local) = (uint8_t)(h + 1);
	struct fabric_index *xc = update(a, xa, c, &reused, &cc);
	CHECK(xc && reused == 0, "a route that changes its length (here: loops) rebuilds the hierarchy");
	struct snap *cp = NULL;
	struct fabric_index *xcp = update(a, xp, c, &reused, &cp);
	uint16_t *hc_walked = xcp ? all_hops(xcp->rt) : NULL;
	CHECK(xcp && reused == 0 && xcp->hc && xcp->hc != xp->hc && hopcover_leaf(xcp->hc, lid_local) == ROUTE_NONE &&
	      xcp->hc->covered == xp->hc->covered - 1 && cover_is_exact(xcp->rt, xcp->hc, hc_walked),
	      "by distance too; the rebuilt index carries a cover without the looping LID, exact by the walks");
	free(hc_walked);
	fabric_index_free(xcp);
	snap_free(cp);
	CHECK(xc && xc->hier != xa->hier, "with a hierarchy of its own");

	/* 3. A link down with the LFTs left as they were: walks die on it. */
	struct snap *e = snap_dup(a), *ee = NULL;
	e->generation = 4;
	uint32_t agg = (uint32_t)snap_find_node(e, TF_SW_GUID + 100000);
	tf_link_down(e, agg, h + 1);
	struct fabric_index *xe = update(a, xa, e, &reused, &ee);
	CHECK(xe && reused == 0, "a link going down with no reroute rebuilds the hierarchy");
	/* One end of a cable says Down, the other not yet: the far end's
	 * code reads the near end's state too. */
	struct snap *e1 = snap_dup(a);
	snap_port_of(e1, agg, h + 2)->state = SNAP_PORT_DOWN;
	struct route_tab *rr = NULL, *rf = NULL;
	size_t npt_a = xa->rt->pt_off[xa->rt->nsw - 1] + a->nodes[xa->rt->sw_node[xa->rt->nsw - 1]].nports + 1u;
	CHECK(route_relink(xa->rt, e1, &rr) == AN_OK && route_build(e1, NULL, &rf) == AN_OK &&
	      !memcmp(rr->pt, rf->pt, npt_a * sizeof(*rf->pt)) && memcmp(rr->pt, xa->rt->pt, npt_a * sizeof(*rf->pt)),
	      "one end of a cable down: the relinked port codes, both ends', equal a fresh build's");
	route_free(rr);
	route_free(rf);
	rr = NULL;
	snap_port_of(e1, (uint32_t)snap_find_node(e1, TF_CA_GUID), 1)->state = SNAP_PORT_DOWN;
	CHECK(route_relink(xa->rt, e1, &rr) == AN_E_NOTAPPLIC && !rr, "a host's port down: not relinked, built");
	snap_free(e1);

	/* 3b. A real fault (issue 22): pod 0's leaves lose their cables to
	 *     aggregation switch 0 and the subnet manager routes round them.
	 *     Those leaves send everything up their other uplinks, every other
	 *     leaf sends pod 0's hosts up a way that comes down through another
	 *     aggregation switch, and agg 0 no longer reaches pod 0's hosts: its
	 *     hop counts (and those of the cores above it) change, the leaves' do
	 *     not. The clusters are kept; the pod's name, which climbs the links
	 *     from its leaves to the smallest GUID one rank up, moves to agg 1. */
	struct snap *f = snap_dup(a), *ff = NULL;
	f->generation = 5;
	tf_fault_pod0(f, h);
	struct fabric_index *xf = update(a, xa, f, &reused, &ff);
	size_t nall = xa->rt->neps * (size_t)xa->rt->nsw;
	uint16_t *h0 = all_hops(xa->rt), *h1 = xf ? all_hops(xf->rt) : NULL;
	CHECK(h1 && memcmp(h0, h1, nall * sizeof(*h0)), "the fault changes hop counts above the leaves");
	free(h0);
	free(h1);
	struct hier *fresh_f = NULL;
	CHECK(xf && reused == 2 && xf->hier != xa->hier, "a rerouted cable fault keeps the clusters, in a hierarchy of its own");
	CHECK(xf && hier_build(xf->rt, &fresh_f) == 0 && same_names(xf->hier, fresh_f),
	      "which equals one built from scratch, every cluster's and switch's name included");
	CHECK(xf && tf_same_hier(xf->hier, xa->hier) && !same_names(xf->hier, xa->hier),
	      "with the base's clusters under other names: sharing the base's would be wrong");
	hier_free(fresh_f);
	/* From the prepared base: agg 0's distances to pod 0's leaves (and
	 * those of the switches above it) changed, so those leaves' columns
	 * are searched again; the proof goes by distance for the other
	 * leaves' LIDs and walks for pod 0's. */
	uint8_t *mv = malloc(xp->hc->hd->nleaf);
	struct hopdist *rel = NULL, *fd = NULL;
	unsigned nmoved = 0, pod0 = 1;
	int rrc = xf && mv ? hopdist_relink(xp->hc->hd, xp->rt, xf->rt, UINT32_MAX, mv, &rel) : AN_E_NOMEM;
	for (uint32_t k2 = 0; !rrc && k2 < rel->nleaf; k2++)
		nmoved += mv[k2];
	for (uint32_t sw = 0; !rrc && sw < xf->rt->nsw; sw++) {
		const struct snap_node *sn = &ff->nodes[xf->rt->sw_node[sw]];
		uint32_t kk = sn->guid - TF_SW_GUID < h ? (uint32_t)(sn->guid - TF_SW_GUID) : ROUTE_NONE;
		if (kk != ROUTE_NONE) /* pod 0's leaves are the first h leaves in switch order */
			pod0 &= mv[kk] == 1;
	}
	CHECK(!rrc && nmoved == h && pod0 && !hopdist_build(xf->rt, UINT64_MAX, &fd) &&
	      hopdist_same(fd, rel) && rel->d == xp->hc->hd->d && rel->nocol == h,
	      "the fault's distances, carried to its links: pod 0's %u leaves searched again (%u), equal to a fresh "
	      "search, their columns kept apart from the shared table", h, nmoved);
	hopdist_free(fd);
	/* The cable back: the columns are the table's again, nothing apart. */
	struct hopdist *back = NULL;
	CHECK(!rrc && hopdist_relink(rel, xf->rt, xp->rt, UINT32_MAX, mv, &back) == AN_OK && back->nocol == 0 &&
	      back->d == xp->hc->hd->d && hopdist_same(back, xp->hc->hd),
	      "the cable back: its leaves searched again find the table's columns, none kept apart");
	hopdist_free(back);
	hopdist_free(rel);
	rel = NULL;
	CHECK(hopdist_relink(xp->hc->hd, xp->rt, xp->rt, 0, mv, &rel) == AN_OK && rel->d == xp->hc->hd->d &&
	      memchr(mv, 1, rel->nleaf) == NULL, "links unchanged: nothing searched, the distances shared");
	hopdist_free(rel);
	free(mv);
	struct snap *fp = NULL;
	struct fabric_index *xfp = update(a, xp, f, &reused, &fp);
	uint16_t *hfp = xfp ? all_hops(xfp->rt) : NULL;
	CHECK(xfp && reused == 2 && hopcover_complete(xfp->hc) && xfp->hc->hd->pt == xfp->rt->pt &&
	      xfp->hc->covered == xfp->rt->nhosts - h * h && cover_is_exact(xfp->rt, xfp->hc, hfp) &&
	      tf_same_hier(xfp->hier, xa->hier),
	      "from the prepared base it keeps the clusters too, and carries a complete cover to the new links, "
	      "exact by the walks: all but pod 0's %u hosts, which agg 0 no longer routes (%u LIDs)", h * h,
	      xfp && xfp->hc ? xfp->hc->covered : 0);
	free(hfp);
	fabric_index_free(xfp);
	snap_free(fp);
	struct fabric_index *xf2 = NULL;
	fabric_index_build(ff, NULL, 2, &xf2, err);
	CHECK(xf && xf2 && xf->links == xf2->links && xf->switches == xf2->switches && xf->cas == xf2->cas,
	      "its counts are those of a fresh index (%u links)", xf ? xf->links : 0);
	fabric_index_free(xf2);
	fabric_index_free(xf);
	snap_free(f);
	snap_free(ff);

	/* 3c. More than 64 leaves: the distances come 64 leaves to a search
	 *     (hopdist.c); each must match the walked hop counts. */
	struct snap *big = snap_new();
	tf_fattree3(big, 12);
	tf_fattree3_finish(big, 12);
	struct fabric_index *xg = NULL;
	int prep = fabric_index_build(big, NULL, 2, &xg, err) ? AN_E_NOMEM : fabric_index_prepare(xg, NULL);
	CHECK(!prep && xg->hc && xg->hc->hd->nleaf > 64, "a k=12 fat tree (%u leaves) is prepared",
	      xg && xg->hc ? xg->hc->hd->nleaf : 0);
	if (xg && xg->hc) {
		uint16_t *hg = all_hops(xg->rt);
		CHECK(cover_is_exact(xg->rt, xg->hc, hg) && xg->hc->covered == xg->rt->nhosts,
		      "its distances and cover agree with every walked hop count (%u hosts' LIDs covered)",
		      xg->hc->covered);
		free(hg);
		relink_chain(big, xg);
	}
	fabric_index_free(xg);
	snap_free(big);

	/* 4. Many random reroutes, each checked against every hop count. */
	random_rounds(a, xa, h, 150);
	fault_rounds(k, 60);

	fabric_index_free(xb);
	fabric_index_free(xc);
	fabric_index_free(xe);
	CHECK(atomic_load(&xa->hier->refs) == 1, "freeing the newer index leaves the base's hierarchy");
	fabric_index_free(xa);
	fabric_index_free(xp);
	snap_free(a);
	snap_free(b);
	snap_free(bb);
	snap_free(c);
	snap_free(cc);
	snap_free(e);
	snap_free(ee);
	return tf_failures != 0;
}
