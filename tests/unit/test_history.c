/*
 * test_history.c - topod's history told where each delta changed the
 * tables, as topod/build.c tells it (history_push with the blocks the
 * apply listed and the snapshot it applied to): over a chain of random
 * reroutes every generation comes back from history_get as it was
 * served. The list is what the history compares: one block short, it
 * loses that block; and only when its base is the snapshot the history
 * serves: given another (equal, at another address) or none, the history
 * compares every table and loses nothing.
 */
#include "delta.h"
#include "fabric.h"
#include "history.h"
#include "store.h"
#include "testfab.h"

#define STEPS 24

/* What each push is told besides the new fabric. */
enum how { RIGHT, SHORT_OTHER_BASE, SHORT_NO_BASE, SHORT };
static const char *const how_name[] = { "the apply's blocks and base", "one block short, with an equal copy as base",
					"one block short, without a base", "one block short, with the right base" };

static struct fabric *publish(struct snap *s)
{
	char err[SNAP_ERR_LEN];
	struct fabric_index *x = NULL;
	if (fabric_index_build(s, NULL, 1, &x, err))
		tf_die(err);
	struct fabric *f = fabric_new(s, "test");
	if (!f)
		tf_die("fabric_new");
	f->index = x;
	return f;
}

/* STEPS deltas after a whole generation, each pushed as how says. Returns
 * how many of the generations do not come back as served; *deltas counts
 * the older ones kept as deltas. */
static unsigned chain(enum how how, unsigned *deltas)
{
	char err[SNAP_ERR_LEN];
	struct history *h = history_new(STEPS + 1, (size_t)1 << 30, NULL);
	struct snap *s = snap_new(), *served[STEPS + 1];
	tf_fattree3(s, 8);
	tf_fattree3_finish(s, 8);
	s->generation = 1;
	s->timestamp = 1;
	served[0] = snap_dup(s);
	struct fabric *cur = publish(s);
	history_push(h, cur, NULL, NULL, 0);
	tf_rng_state = 5;
	for (unsigned it = 0; it < STEPS; it++) {
		struct snap *next = tf_reroute(cur->snap, it), *t = NULL;
		uint8_t *d;
		size_t dl;
		struct snap_delta_info info = { .want_blocks = 1 };
		if (snap_delta_encode(cur->snap, next, &d, &dl, err) ||
		    snap_delta_apply(cur->snap, d, dl, &t, &info, err))
			tf_die(err);
		served[it + 1] = snap_dup(t);
		struct fabric *f = publish(t);
		size_t n = info.blocks - (how != RIGHT && info.blocks);
		struct snap *other = how == SHORT_OTHER_BASE ? snap_dup(cur->snap) : NULL;
		history_push(h, f, how == SHORT_NO_BASE ? NULL : other ? other : cur->snap, info.block, n);
		/* As builder_run(): the base goes only after the push. */
		snap_free(other);
		fabric_put(cur);
		cur = f;
		free(info.block);
		free(d);
		snap_free(next);
	}
	unsigned wrong = 0;
	for (unsigned g = 0; g <= STEPS; g++) {
		struct snap *got = NULL;
		wrong += history_get(h, served[g]->generation, &got, NULL, err) || !tf_same_encoding(got, served[g]);
		snap_free(got);
		snap_free(served[g]);
	}
	struct history_meta *m;
	size_t nm;
	*deltas = 0;
	if (history_list(h, &m, &nm))
		tf_die("history_list");
	for (size_t i = 0; i < nm; i++)
		*deltas += m[i].kind == 'd';
	free(m);
	history_free(h);
	fabric_put(cur);
	return wrong;
}

int main(void)
{
	for (enum how how = RIGHT; how <= SHORT; how++) {
		unsigned deltas, wrong = chain(how, &deltas);
		if (how == SHORT)
			CHECK(wrong && deltas == STEPS, "told %s, the history loses that block: %u of %u generations "
			      "come back otherwise than served (the hint is what it compares)", how_name[how], wrong,
			      STEPS + 1);
		else
			CHECK(!wrong && deltas == STEPS, "told %s: all %u generations come back from history_get as "
			      "served, byte for byte (%u wrong; %u kept as deltas)", how_name[how], STEPS + 1, wrong,
			      deltas);
	}
	return tf_failures != 0;
}
