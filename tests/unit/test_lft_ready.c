/*
 * test_lft_ready.c - the table chunks the pool keeps ready for the next
 * delta's copies (snap_lft_want_ready, snap_lft_make_ready; topod's
 * builder asks for them, its preparation thread makes them): made up to
 * what was asked and no further, copies taken from them without a slab
 * mapped, kept when the copies are freed again, given back once the
 * want is withdrawn, nothing made after the stop flag; and the chunks a
 * thread took (snap_lft_taken) are the chunks its copies made.
 */
#include "testfab.h"

/* Every chunk the pool has mapped, used or free. */
static uint64_t mapped(void)
{
	uint64_t used, spare;
	snap_lft_pool(&used, &spare);
	return used + spare;
}

static uint64_t spare_chunks(void)
{
	uint64_t used, spare;
	snap_lft_pool(&used, &spare);
	return spare / SNAP_LFT_CHUNK;
}

/* Owns entry 0 of every chunk of every switch's table in c: one copy per
 * chunk the base still holds. Returns the chunks owned. */
static uint64_t own_all(struct snap *c)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < c->nnodes; i++)
		for (uint32_t l = 0; l < c->nodes[i].lft_len; l += SNAP_LFT_CHUNK)
			n += snap_lft_own(c, i, l, 1) != NULL;
	return n;
}

int main(void)
{
	struct snap *s = snap_new();
	tf_fattree3(s, 16);
	tf_fattree3_finish(s, 16);
	uint64_t held = snap_lft_held(s) / SNAP_LFT_CHUNK;

	/* Nothing asked: nothing made. */
	CHECK(snap_lft_make_ready(NULL) == 0, "no want: no slab made");

	/* Ready for the chunks free now and three slabs' more (a slab holds
	 * about 4,000): made now, the spare that large, nothing in use
	 * changed. */
	uint64_t used0, spare0;
	snap_lft_pool(&used0, &spare0);
	uint64_t ready = spare0 / SNAP_LFT_CHUNK + 3 * 4096;
	int64_t want = (int64_t)ready;
	snap_lft_want_ready(want);
	atomic_int stop = 1;
	CHECK(snap_lft_make_ready(&stop) == 0, "stopped: no slab made");
	uint64_t made = snap_lft_make_ready(NULL);
	uint64_t used1, spare1;
	snap_lft_pool(&used1, &spare1);
	CHECK(made >= 3 * ((uint64_t)2 << 20) && spare1 / SNAP_LFT_CHUNK >= ready && used1 == used0,
	      "made %llu bytes: spare %llu chunks for a want of %llu, used unchanged",
	      (unsigned long long)made, (unsigned long long)(spare1 / SNAP_LFT_CHUNK), (unsigned long long)ready);
	CHECK(snap_lft_make_ready(NULL) == 0, "made once: nothing more to make");

	/* A delta's copies come out of the reserve, past the chunks that were
	 * free before it was made: no slab mapped, and the thread's count
	 * says how many chunks they took. */
	enum { COPIES = 5 };
	CHECK(COPIES * held > spare0 / SNAP_LFT_CHUNK && COPIES * held <= ready, "%d copies need %llu chunks: more than "
	      "were free before (%llu), no more than are ready", COPIES, (unsigned long long)(COPIES * held),
	      (unsigned long long)(spare0 / SNAP_LFT_CHUNK));
	uint64_t before = mapped(), taken = snap_lft_taken(), owned = 0;
	struct snap *c[COPIES];
	for (int i = 0; i < COPIES; i++) {
		c[i] = snap_dup(s);
		owned += own_all(c[i]);
	}
	CHECK(owned == COPIES * held && snap_lft_taken() - taken == owned,
	      "every chunk copied once per copy: %llu chunks, %llu taken", (unsigned long long)owned,
	      (unsigned long long)(snap_lft_taken() - taken));
	CHECK(mapped() == before, "the copies took no fresh slab (%llu bytes mapped before and after)",
	      (unsigned long long)before);
	CHECK(own_all(c[0]) == held && snap_lft_taken() - taken == owned, "owned already: no second copy");

	/* The copies freed: the slabs they emptied are kept while the spare
	 * is below the want. */
	for (int i = 0; i < COPIES; i++)
		snap_free(c[i]);
	CHECK(mapped() == before && spare_chunks() >= ready, "freed copies stay ready (%llu chunks spare)",
	      (unsigned long long)spare_chunks());

	/* The want withdrawn: the next making gives the empty slabs back,
	 * all but one. */
	snap_lft_want_ready(-want);
	snap_lft_make_ready(NULL);
	uint64_t used2, spare2;
	snap_lft_pool(&used2, &spare2);
	CHECK(used2 == used0 && spare2 <= spare0 + ((uint64_t)2 << 20),
	      "want withdrawn: spare back to %llu chunks (%llu before, %llu while ready)",
	      (unsigned long long)(spare2 / SNAP_LFT_CHUNK), (unsigned long long)(spare0 / SNAP_LFT_CHUNK),
	      (unsigned long long)(spare1 / SNAP_LFT_CHUNK));
	/* Withdrawing more than is wanted leaves none wanted, not a wrapped
	 * count that would make slabs without end. */
	snap_lft_want_ready(-1);
	CHECK(snap_lft_make_ready(NULL) == 0, "no want left: nothing made");

	snap_free(s);
	return tf_failures != 0;
}
