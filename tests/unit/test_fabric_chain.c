/*
 * test_fabric_chain.c - 100 deltas chained as topod applies them
 * (topod/build.c): each encoded against the generation served before it,
 * applied on top of that applied snapshot, and indexed by
 * fabric_index_update() from the previous generation's index, which is then
 * freed. test_fabric_update.c reroutes one base many times; here errors
 * that only a chain shows (a shared hierarchy or route table carried past
 * the change that invalidated it, a reference dropped one generation too
 * early) must show. After every step the index equals one built from
 * scratch from the applied snapshot: every host pair's route port by port,
 * every hop count, the hierarchy; and the applied LFTs are the intended
 * ones, byte for byte. The proof by distance is prepared a slice of the
 * switches per step, as when every delta pauses topod's preparation: its
 * cover, carried from step to step, must be exact once complete.
 */
#include "delta.h"
#include "fabric.h"
#include "ref_cover.h"
#include "testfab.h"
#include "testhier.h"

#define STEPS 100
#define NSAVED 8
#define HOP_CAP 128

/* With TF_CHAIN_OUT=DIR the chain is also written for
 * tests/integration/t_topod_chain.py to feed a real topod: every
 * generation NNN whole (gen.NNN.snap) and, from 2 on, as delta.NNN
 * against NNN - 1. */
static void out_file(const char *dir, const char *fmt, unsigned n, const uint8_t *buf, size_t len)
{
	char p[4096], name[64], err[SNAP_ERR_LEN];
	if (!dir)
		return;
	snprintf(name, sizeof(name), fmt, n);
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (snap_write_atomic(p, buf, len, err))
		tf_die(err);
}

static void out_snap(const char *dir, const struct snap *s)
{
	char err[SNAP_ERR_LEN];
	uint8_t *b;
	size_t n;
	if (!dir)
		return;
	if (snap_encode(s, &b, &n, err))
		tf_die(err);
	out_file(dir, "gen.%03u.snap", (unsigned)s->generation, b, n);
	free(b);
}

/* Every host pair's route on a and on b, hop by hop (switch, in and out
 * port), with the same outcome. Returns the pairs that differ; *walked and
 * *failed count the pairs and the walks that end in an error. */
static unsigned routes_differ(const struct route_tab *a, const struct route_tab *b, unsigned *walked,
			      unsigned *failed)
{
	static struct route_hop ha[HOP_CAP], hb[HOP_CAP];
	unsigned bad = 0;
	if (a->nhosts != b->nhosts)
		return 1;
	for (uint32_t s = 0; s < a->nhosts; s++) {
		if (strcmp(a->hosts[s].name, b->hosts[s].name))
			return 1;
		uint32_t sa = route_host_ep(a, s), sb = route_host_ep(b, s);
		for (uint32_t d = 0; d < a->nhosts; d++) {
			uint16_t la = a->eps[route_host_ep(a, d)].lid, lb = b->eps[route_host_ep(b, d)].lid;
			struct route_res ra, rb;
			memset(ha, 0, sizeof(ha));
			memset(hb, 0, sizeof(hb));
			int ca = route_walk(a, sa, la, ha, HOP_CAP, &ra), cb = route_walk(b, sb, lb, hb, HOP_CAP, &rb);
			size_t n = ra.hops < HOP_CAP ? ra.hops : HOP_CAP;
			(*walked)++;
			*failed += ca != AN_OK;
			if (la != lb || ca != cb || ra.hops != rb.hops || ra.fail_node != rb.fail_node ||
			    ra.fail_port != rb.fail_port || memcmp(ha, hb, n * sizeof(*ha)))
				bad++;
		}
	}
	return bad;
}

/* The applied snapshot holds the intended tables: every switch's LFT byte
 * for byte, and its whole encoding (header, nodes, ports too). */
static int same_tables(const struct snap *applied, const struct snap *want)
{
	if (applied->nnodes != want->nnodes || applied->nlft != want->nlft)
		return 0;
	for (uint32_t i = 0; i < want->nnodes; i++) {
		const struct snap_node *p = &applied->nodes[i], *q = &want->nodes[i];
		if (p->guid != q->guid || p->lft_len != q->lft_len ||
		    (q->lft_len && !tf_lft_same(p, q)))
			return 0;
	}
	return tf_same_encoding(applied, want);
}

/* The intended tables of step i, from those of step i - 1: up-port moves
 * (a route keeps its length while the tables below are the d-mod-k ones),
 * now and then one entry sent to any port or nowhere, or a restore of an
 * earlier step's tables. Returns what it did, for the counts. */
enum { MOVE, ANYWHERE, NOWHERE, RESTORE, NOTHING };
static int mutate(struct snap *t, unsigned i, unsigned h, struct snap *const *saved, unsigned nsaved)
{
	if (i % 25 == 0)
		return NOTHING;
	if (i % 10 == 7 && nsaved) {
		const struct snap *from = saved[tf_rand() % nsaved];
		if (from->nlft != t->nlft)
			tf_die("restore: another table layout");
		for (uint32_t k = 0; k < t->nnodes; k++)
			if (t->nodes[k].lft_len)
				tf_lft_put(t, k, tf_lft_get(from, k));
		return RESTORE;
	}
	int what = MOVE;
	unsigned changes = 1 + (unsigned)(tf_rand() % 40);
	for (unsigned c = 0; c < changes; c++) {
		struct snap_node *n;
		do
			n = &t->nodes[tf_rand() % t->nnodes];
		while (n->type != SNAP_NODE_SWITCH);
		uint8_t *e = tf_lft_at(t, (uint32_t)(n - t->nodes), 1 + tf_rand() % (n->lft_len - 1));
		if (i % 3 == 2 && c == 0) {
			*e = (uint8_t)(tf_rand() % (2 * h + 1));
			what = ANYWHERE;
		} else if (i % 5 == 4 && c == 0) {
			*e = SNAP_LFT_NONE;
			what = NOWHERE;
		} else if (*e != SNAP_LFT_NONE && *e > h && n->guid - TF_SW_GUID < 200000) {
			*e = (uint8_t)(h + 1 + (*e - h) % h);
		}
	}
	return what;
}

int main(void)
{
	char err[SNAP_ERR_LEN];
	const unsigned k = 8, h = k / 2;
	/* As topod: each generation is a copy of the one before, sharing
	 * the tables it did not change. */
	tf_rng_state = 22;
	const char *outdir = getenv("TF_CHAIN_OUT");

	/* Generation 1 arrives whole: decoded, indexed from scratch. */
	struct snap *want = snap_new(), *cur = NULL;
	tf_fattree3(want, k);
	tf_fattree3_finish(want, k);
	want->generation = 1;
	want->sweep = 1;
	want->timestamp = 1000000;
	uint8_t *enc;
	size_t enc_len;
	if (snap_encode(want, &enc, &enc_len, err) || snap_decode(enc, enc_len, &cur, err))
		tf_die(err);
	out_snap(outdir, want);
	free(enc);
	struct fabric_index *x = NULL;
	if (fabric_index_build(cur, NULL, 2, &x, err))
		tf_die(err);
	/* A full build prepares the cover at once; here it is made a slice
	 * per step instead, as when deltas keep pausing topod's thread. */
	hopcover_free(x->hc);
	x->hc = NULL;
	uint16_t *hops_prev = all_hops(x->rt);
	size_t cells = (size_t)x->rt->neps * x->rt->nsw;

	struct snap *saved[NSAVED];
	unsigned nsaved = 0;
	saved[nsaved++] = snap_dup(want);
	unsigned kinds[NOTHING + 1] = { 0 }, shared = 0, rebuilt = 0, blocks = 0;
	unsigned bad_tables = 0, bad_routes = 0, bad_hops = 0, bad_hier = 0, bad_exact = 0, bad_snap = 0;
	unsigned walked = 0, failed = 0, first_bad = 0, by_distance = 0, cover_shared = 0, cover_should = 0;
	unsigned bad_cover = 0, slices = 0, complete_at = 0;
	const uint32_t slice = (x->rt->nsw + 7) / 8, need = (x->rt->nsw + slice - 1) / slice;
	/* The host LIDs some generation so far did not route along shortest
	 * paths: the carried cover may lack them (it never takes one back). */
	uint8_t *everbad = calloc((size_t)x->rt->max_lid + 1, 1), *ref = malloc((size_t)x->rt->max_lid + 1);
	if (!everbad || !ref)
		tf_die("out of memory");
	for (unsigned i = 1; i <= STEPS; i++) {
		struct snap *next = snap_dup(want);
		if (!next)
			tf_die("snap_dup");
		next->generation = i + 1;
		next->sweep = i + 1;
		next->timestamp = 1000000 + 1000 * (uint64_t)i;
		kinds[mutate(next, i, h, saved, nsaved)]++;

		/* topod/build.c, apply_delta and run_index. */
		uint8_t *d;
		size_t dl;
		struct snap *applied = NULL;
		struct snap_delta_info info = { .want_blocks = 1 };
		if (snap_delta_encode(cur, next, &d, &dl, err) || snap_delta_apply(cur, d, dl, &applied, &info, err))
			tf_die(err);
		out_file(outdir, "delta.%03u", i + 1, d, dl);
		out_snap(outdir, next);
		free(d);
		blocks += info.blocks;
		struct fabric_index *nx = NULL;
		int reused = -1;
		/* As topod does after serving it (topod/build.c, prepare_one),
		 * a slice at a time: once complete, most steps' proofs go by
		 * distance (hopdist.h). */
		if (!x->hc) {
			struct hopdist *hd = NULL;
			if (hopdist_build(x->rt, UINT64_MAX, &hd) || hopcover_new(hd, &x->hc))
				tf_die("prepare: no distances");
			hopdist_free(hd);
		}
		if (!hopcover_complete(x->hc)) {
			if (hopcover_run(x->rt, x->hc, slices * slice, (slices + 1) * slice, NULL))
				tf_die("prepare: a slice");
			slices++;
		}
		int whole = hopcover_complete(x->hc);
		by_distance += whole;
		if (whole && !complete_at)
			complete_at = i;
		if (fabric_index_update(applied, x, &info, NULL, 2, &reused, &nx, err))
			tf_die(err);
		cover_shared += nx->hc == x->hc;
		cover_should += whole && reused == 1;
		free(info.block);
		/* The generation before goes, as topod drops a fabric its
		 * last reader released: whatever the new one shares must
		 * outlive it. */
		fabric_index_free(x);
		snap_free(cur);
		x = nx;
		cur = applied;
		shared += reused == 1;
		rebuilt += reused == 0;

		/* The reference: routes and a hierarchy whose hop table is
		 * walked (hier_build), not read from distances as the index's
		 * builds (build_hier in fabric.c) read it. */
		struct { struct route_tab *rt; struct hier *hier; } fresh_, *fresh = &fresh_;
		if (route_build(cur, NULL, &fresh->rt) || hier_build(fresh->rt, &fresh->hier))
			tf_die("the reference index");
		uint16_t *hx = all_hops(x->rt), *hf = all_hops(fresh->rt);
		unsigned bad = 0;
		bad += !same_tables(cur, next) && ++bad_tables;
		bad += x->rt->snap != cur && ++bad_snap;
		bad += routes_differ(x->rt, fresh->rt, &walked, &failed) && ++bad_routes;
		bad += memcmp(hx, hf, cells * sizeof(*hx)) != 0 && ++bad_hops;
		bad += !tf_same_hier(x->hier, fresh->hier) && ++bad_hier;
		/* Shared exactly when no hop count changed since the step
		 * before. */
		bad += reused != !memcmp(hops_prev, hf, cells * sizeof(*hf)) && ++bad_exact;
		/* Carried or shared, the cover is whatever the walks say,
		 * less the LIDs some generation spoiled. */
		int cover_ok = x->hc && ref_shortest(x->rt, x->hc->hd, hx, ref);
		for (uint32_t l = 0; cover_ok && l <= x->rt->max_lid; l++) {
			everbad[l] |= x->hc->hd->lid_leaf[l] != ROUTE_NONE && !ref[l];
			int in = hopcover_complete(x->hc) && hopcover_leaf(x->hc, l) != ROUTE_NONE;
			cover_ok = !in || ref[l];
			cover_ok &= !hopcover_complete(x->hc) || !ref[l] || everbad[l] || in;
		}
		bad += !cover_ok && ++bad_cover;
		if (bad && !first_bad) {
			first_bad = i;
			fprintf(stderr, "step %u: first difference (reused %d, %u blocks)\n", i, reused, info.blocks);
		}
		free(hops_prev);
		free(hx);
		hops_prev = hf;
		hier_free(fresh->hier);
		route_free(fresh->rt);

		if (i % 12 == 5) {
			if (nsaved == NSAVED)
				snap_free(saved[--nsaved]);
			saved[nsaved++] = snap_dup(next);
		}
		snap_free(want);
		want = next;
	}
	printf("# %u steps: %u up-port moves only, %u with an entry sent anywhere, %u with one sent nowhere, "
	       "%u restores of earlier tables, %u without change; %u LFT blocks in all\n",
	       STEPS, kinds[MOVE], kinds[ANYWHERE], kinds[NOWHERE], kinds[RESTORE], kinds[NOTHING], blocks);
	CHECK(!bad_tables, "%u chained deltas: the applied snapshot holds the intended LFTs byte for byte (%u steps differ)",
	      STEPS, bad_tables);
	CHECK(!bad_snap, "every updated route index walks the applied snapshot (%u steps do not)", bad_snap);
	CHECK(!bad_routes && walked == STEPS * x->rt->nhosts * x->rt->nhosts,
	      "every host pair's route, port by port, equals the one from scratch (%u walks, %u of them failing, "
	      "%u steps differ)", walked, failed, bad_routes);
	CHECK(!bad_hops, "every switch-to-end-port hop count equals the one from scratch (%u steps differ)", bad_hops);
	CHECK(!bad_hier, "the hierarchy equals the one from scratch (%u steps differ)", bad_hier);
	CHECK(!bad_exact && shared && rebuilt,
	      "the hierarchy is shared exactly when no hop count changed (%u shared, %u rebuilt, %u wrong)", shared,
	      rebuilt, bad_exact);
	CHECK(complete_at > 1 && ((slices == need && complete_at == need) || (slices < need && complete_at == slices + 1)) &&
	      by_distance == STEPS - complete_at + 1,
	      "prepared a slice of %u switches per step (%u slices; a rebuild completes the cover at once), the cover "
	      "carried over, the proofs went by distance from step %u on (%u of %u steps)", slice, slices, complete_at,
	      by_distance, STEPS);
	CHECK(cover_shared == cover_should && cover_should,
	      "the cover was shared exactly when complete and the hierarchy was shared (%u of %u times), else carried",
	      cover_shared, cover_should);
	CHECK(!bad_cover, "every complete cover, carried step to step, holds only LIDs routed along shortest paths by "
	      "the walks, and every one no generation spoiled (%u steps differ)", bad_cover);
	CHECK(kinds[RESTORE] && kinds[ANYWHERE] && kinds[NOWHERE] && failed,
	      "the chain restores earlier tables (%u times) and breaks routes (%u failing walks)", kinds[RESTORE],
	      failed);
	if (first_bad)
		printf("# first step that differs: %u\n", first_bad);
	free(hops_prev);
	free(everbad);
	free(ref);
	fabric_index_free(x);
	snap_free(cur);
	snap_free(want);
	for (unsigned s = 0; s < nsaved; s++)
		snap_free(saved[s]);
	return tf_failures != 0;
}
