/*
 * test_build_whole.c - the builder given a full snapshot of the fabric it
 * serves indexes it as the delta from the served generation (under ASan:
 * the received bytes, the decoded snapshot and the one built on the base
 * each freed once): the hierarchy is kept when no hop count changed, the
 * result equals a fresh build, and a snapshot the delta cannot express
 * (other nodes) is built whole. With a state directory: what a restart
 * would serve (fabric.snap) is what was sent, header and engine included.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "fabric.h"
#include "store.h"
#include "testfab.h"
#include "testhier.h"

struct reply {
	int ok;
	char msg[256];
};

static void done(void *arg, int ok, const char *msg)
{
	struct reply *r = arg;
	r->ok = ok;
	snprintf(r->msg, sizeof(r->msg), "%s", msg);
}

/* s encoded and run through the builder as a producer's snapshot. */
static int ingest(struct builder *b, const struct snap *s, struct reply *r)
{
	char err[SNAP_ERR_LEN];
	struct ingest_job *j = calloc(1, sizeof(*j));
	if (!j || snap_encode(s, &j->buf, &j->len, err))
		tf_die("encode");
	j->persist = 1;
	snprintf(j->source, sizeof(j->source), "test");
	j->done = done;
	j->arg = r;
	*r = (struct reply){ 0 };
	return builder_run(b, j);
}

/* The served generation, its hierarchy, and whether it equals the one
 * built from scratch from the same snapshot (hop counts to every LID from
 * every switch, and the clusters). */
static const struct hier *served(struct store *st, uint64_t *gen, int *fresh_equal)
{
	struct fabric *f = store_get(st);
	char err[SNAP_ERR_LEN];
	struct fabric_index *x = NULL;
	*gen = f->snap->generation;
	*fresh_equal = 0;
	if (f->index && !fabric_index_build(f->snap, NULL, 1, &x, err)) {
		const struct route_tab *a = f->index->rt, *b = x->rt;
		int eq = a->nhosts == b->nhosts && tf_same_hier(f->index->hier, x->hier);
		for (uint32_t e = 0; eq && e < a->nhosts; e++)
			for (uint32_t g = 0; eq && g < a->nhosts; g++) {
				uint32_t sa = a->rails[a->hosts[e].rail0], da = a->rails[a->hosts[g].rail0];
				uint32_t sb = b->rails[b->hosts[e].rail0], db = b->rails[b->hosts[g].rail0];
				eq = route_hops(a, sa, a->eps[da].lid) == route_hops(b, sb, b->eps[db].lid);
			}
		*fresh_equal = eq;
		fabric_index_free(x);
	}
	const struct hier *h = f->index ? f->index->hier : NULL;
	fabric_put(f); /* the store still holds it */
	return h;
}

int main(void)
{
	struct store st;
	store_init(&st);
	char dir[] = "/tmp/test_build_whole.XXXXXX", path[64];
	if (!mkdtemp(dir))
		tf_die("mkdtemp");
	snprintf(path, sizeof(path), "%s/fabric.snap", dir);
	struct builder *b = builder_new(&st, dir, 2, NULL);
	struct reply r;
	int rc;
	struct builder_stats bs;
	uint64_t gen;
	int fresh;

	struct snap *a = snap_new();
	tf_fattree3(a, 4);
	tf_finish(a, 0);
	a->generation = 1;
	CHECK(ingest(b, a, &r) == 0 && r.ok && !strcmp(r.msg, "OK 1"), "generation 1 whole: %s", r.msg);
	const struct hier *h1 = served(&st, &gen, &fresh);
	CHECK(gen == 1 && h1 && fresh, "generation 1 served, equal to a fresh build");

	/* The same fabric again, a new generation (a collector's next run). */
	a->generation = 2;
	a->timestamp += 1;
	CHECK(ingest(b, a, &r) == 0 && !strcmp(r.msg, "OK 2"), "the same fabric as generation 2: %s", r.msg);
	const struct hier *h2 = served(&st, &gen, &fresh);
	builder_get_stats(b, &bs);
	CHECK(gen == 2 && h2 == h1 && fresh && bs.deltas == 0,
	      "served as the delta from generation 1: the hierarchy kept (%s), equal to a fresh build, "
	      "not counted as a producer's delta (%llu)", h2 == h1 ? "same" : "rebuilt", (unsigned long long)bs.deltas);

	/* A switch renamed and another routing engine named, sweep and SM
	 * changed: served and written as sent. */
	struct snap *e = snap_dup(a);
	e->generation = 3;
	e->timestamp += 2;
	e->sweep = 77;
	snprintf(e->engine, sizeof(e->engine), "minhop");
	for (uint32_t i = 0; i < e->nnodes; i++)
		if (e->nodes[i].type == SNAP_NODE_SWITCH) {
			snprintf(e->nodes[i].desc, sizeof(e->nodes[i].desc), "renamed switch");
			break;
		}
	rc = ingest(b, e, &r);
	served(&st, &gen, &fresh);
	struct snap *back = NULL;
	char err[SNAP_ERR_LEN] = "";
	int rd = snap_read_file(path, &back, err);
	struct fabric *cf = store_get(&st);
	CHECK(rc == 0 && gen == 3 && fresh && !rd && back->generation == 3 && back->sweep == 77 &&
	      back->timestamp == e->timestamp && !snap_diff(back, e, SNAP_DIFF_STATE, NULL, NULL) &&
	      !snap_diff(cf->snap, e, SNAP_DIFF_STATE, NULL, NULL) && !strcmp(cf->snap->engine, "minhop"),
	      "a description and the engine changed (%s): served and in %s as sent %s", r.msg, path, err);
	fabric_put(cf);
	snap_free(back);
	snap_free(e);

	/* One switch's entries moved to other ports: whatever the proof
	 * decides, the result equals a fresh build. */
	struct snap *c = snap_dup(a);
	c->generation = 4;
	c->timestamp += 3;
	unsigned moved = 0;
	for (uint32_t i = 0; i < c->nnodes && !moved; i++) {
		if (c->nodes[i].type != SNAP_NODE_SWITCH || !c->nodes[i].lft_len)
			continue;
		uint8_t *t = tf_lft_get(c, i);
		for (uint32_t l = 1; l < c->nodes[i].lft_len; l++)
			if (t[l] != SNAP_LFT_NONE && t[l] > 1) {
				t[l] = (uint8_t)(t[l] - 1);
				moved++;
			}
		tf_lft_put(c, i, t);
	}
	rc = ingest(b, c, &r);
	const struct hier *h3 = served(&st, &gen, &fresh);
	CHECK(rc == 0 && gen == 4 && fresh, "%u entries of a switch moved (%s): generation 4 equals a fresh build",
	      moved, r.msg);
	(void)h3;

	/* Other nodes: the delta cannot say it, built whole. */
	struct snap *d = snap_new();
	tf_fattree3(d, 6);
	tf_finish(d, 0);
	d->generation = 5;
	d->timestamp = c->timestamp + 1;
	rc = ingest(b, d, &r);
	const struct hier *h4 = served(&st, &gen, &fresh);
	CHECK(rc == 0 && gen == 5 && h4 && h4 != h3 && fresh, "a k=6 fabric after k=4: built whole (%s)", r.msg);

	snap_free(a);
	snap_free(c);
	snap_free(d);
	builder_free(b);
	store_destroy(&st);
	unlink(path);
	rmdir(dir);
	return tf_failures != 0;
}
