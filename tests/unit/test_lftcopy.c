/*
 * test_lftcopy.c - the plugin's kept LFT copy (osm_plugin/lftcopy.c): after
 * every pass the stage equals the live tables, whether a table was kept and
 * patched from noted blocks or copied whole; every fallback (no earlier
 * copy, a forced full pass, too many notes, a replaced table buffer, a
 * changed length, a node set that shifts offsets, a failed walk, too few
 * mirror entries) copies whole; notes for switches that are gone or blocks
 * beyond the table are ignored; notes from other threads are all counted.
 * One check runs the contract's negative: a change without a note is not
 * seen, which is why OpenSM's LFT_CHANGE events must cover every change.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../../osm_plugin/lftcopy.h"
#include "tap.h"

#define NSW_MAX 64

/* A fake fabric: nodes in walk order, some of them switches with a table. */
struct fab {
	unsigned n;
	int is_sw[2 * NSW_MAX];
	uint8_t *lft[2 * NSW_MAX]; /* the switch "object" is &lft[i] */
	uint32_t len[2 * NSW_MAX];
	uint64_t guid[2 * NSW_MAX];
};

static struct fab F;
static struct lfc C;
static uint8_t *stage;
static uint64_t stage_cap, nstage;
static uint64_t off_of[2 * NSW_MAX];
static unsigned long rnd = 12345;

static unsigned rnd_u(unsigned m)
{
	rnd = rnd * 6364136223846793005ul + 1442695040888963407ul;
	return (unsigned)(rnd >> 33) % m;
}

static void fab_init(unsigned n)
{
	memset(&F, 0, sizeof F);
	F.n = n;
	for (unsigned i = 0; i < n; i++) {
		F.is_sw[i] = i % 3 != 1; /* every third node a host */
		F.guid[i] = 0x1000 + i;
		if (!F.is_sw[i])
			continue;
		F.len[i] = 700 + 13 * i; /* not a multiple of 64: a partial block */
		F.lft[i] = malloc(F.len[i]);
		for (uint32_t l = 0; l < F.len[i]; l++)
			F.lft[i][l] = (uint8_t)rnd_u(37);
	}
}

static void fab_free(void)
{
	for (unsigned i = 0; i < F.n; i++)
		free(F.lft[i]);
}

/* One routing pass as plugin.c's copy_fabric/copy_lft walk it. Returns the
 * number of tables copied whole. */
static uint32_t pass(const char *full_why, size_t per_slice, int ok)
{
	uint64_t need = 0;
	for (unsigned i = 0; i < F.n; i++)
		need += F.is_sw[i] ? F.len[i] : 0;
	if (need > stage_cap) {
		stage = realloc(stage, need);
		stage_cap = need;
	}
	lfc_prepare(&C, F.n, need / LFC_BLOCK);
	lfc_begin(&C, full_why);
	nstage = 0;
	for (unsigned i = 0; i < F.n; i++) {
		if (!F.is_sw[i]) {
			lfc_switch(&C, i, NULL, NULL, 0, 0, 0);
			continue;
		}
		off_of[i] = nstage;
		if (!lfc_switch(&C, i, &F.lft[i], F.lft[i], F.guid[i], nstage, F.len[i]))
			memcpy(stage + nstage, F.lft[i], F.len[i]);
		nstage += F.len[i];
	}
	while (lfc_apply(&C, stage, per_slice))
		;
	lfc_end(&C, F.n, ok);
	return C.st.whole;
}

static int stage_ok(void)
{
	for (unsigned i = 0; i < F.n; i++)
		if (F.is_sw[i] && memcmp(stage + off_of[i], F.lft[i], F.len[i]))
			return 0;
	return 1;
}

static unsigned nswitches(void)
{
	unsigned k = 0;
	for (unsigned i = 0; i < F.n; i++)
		k += F.is_sw[i];
	return k;
}

/* Rewrites block b of switch i; noted unless quiet. */
static void change(unsigned i, uint32_t b, int quiet)
{
	uint32_t from = b * LFC_BLOCK, to = from + LFC_BLOCK < F.len[i] ? from + LFC_BLOCK : F.len[i];
	for (uint32_t l = from; l < to; l++)
		F.lft[i][l] = (uint8_t)(F.lft[i][l] + 1 + rnd_u(5));
	if (!quiet)
		lfc_note(&C, &F.lft[i], b);
}

static unsigned some_switch(void)
{
	unsigned i;
	do
		i = rnd_u(F.n);
	while (!F.is_sw[i]);
	return i;
}

static void random_changes(unsigned k)
{
	for (unsigned j = 0; j < k; j++) {
		unsigned i = some_switch();
		change(i, rnd_u((F.len[i] + LFC_BLOCK - 1) / LFC_BLOCK), 0);
	}
}

static void *noter(void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;
	for (uint32_t b = 0; b < 100; b++)
		lfc_note(&C, &F.lft[i], b % ((F.len[i] + LFC_BLOCK - 1) / LFC_BLOCK));
	return NULL;
}

static void test_basic(void)
{
	unsigned nsw = nswitches();
	CHECK(pass(NULL, 1000, 1) == nsw && C.st.full && stage_ok(), "first pass: all %u tables whole (%s)", nsw,
	      C.st.why);
	CHECK(pass(NULL, 1000, 1) == 0 && C.st.kept == nsw && !C.st.full && stage_ok(),
	      "nothing changed: every table kept, nothing copied");
	random_changes(40);
	CHECK(pass(NULL, 3, 1) == 0 && C.st.notes == 40 && C.st.blocks == 40 && stage_ok(),
	      "40 noted blocks copied, 3 per slice; stage equals the tables");
	for (int round = 0; round < 20; round++)
		random_changes(1 + rnd_u(30));
	/* notes from 20 rounds, one pass: duplicates are harmless */
	CHECK(pass(NULL, 7, 1) == 0 && stage_ok(), "notes piled up over 20 rounds: stage equals the tables");
	unsigned i = some_switch();
	change(i, 0, 0);
	change(i, (F.len[i] - 1) / LFC_BLOCK, 0); /* the partial last block */
	CHECK(pass(NULL, 1000, 1) == 0 && C.st.blocks == 2 && stage_ok(), "the partial last block is copied");
}

static void test_fallbacks(void)
{
	unsigned nsw = nswitches(), i = some_switch();

	change(i, 1, 1);
	CHECK(pass("first master sweep", 1000, 1) == nsw && C.st.full && stage_ok(),
	      "a forced full pass copies a change nobody noted");
	for (unsigned k = 0; k < 5000; k++)
		lfc_note(&C, &F.lft[i], 0);
	change(some_switch(), 2, 1); /* lost among the overflow */
	CHECK(pass(NULL, 1000, 1) == nsw && C.st.full && stage_ok(), "more notes than the list holds: all whole (%s)",
	      C.st.why);
	CHECK(pass(NULL, 1000, 1) == 0, "and the pass after that keeps everything again");

	i = some_switch();
	uint8_t *fresh = malloc(F.len[i]);
	for (uint32_t l = 0; l < F.len[i]; l++)
		fresh[l] = (uint8_t)rnd_u(200);
	free(F.lft[i]);
	F.lft[i] = fresh; /* the unicast cache swaps tables, unannounced */
	CHECK(pass(NULL, 1000, 1) == 1 && stage_ok(), "a replaced table buffer: that switch whole, others kept");

	i = some_switch();
	F.lft[i] = realloc(F.lft[i], F.len[i] + 100);
	memset(F.lft[i] + F.len[i], 0xFF, 100);
	F.len[i] += 100; /* a grown LID space; later offsets move too */
	uint32_t later = 0;
	for (unsigned j = i + 1; j < F.n; j++)
		later += F.is_sw[j];
	CHECK(pass(NULL, 1000, 1) >= 1 + later && stage_ok(), "a longer table: it and the %u after it whole", later);

	change(some_switch(), 0, 0);
	(void)pass(NULL, 1000, 0);
	CHECK(pass(NULL, 1000, 1) == nsw && stage_ok(),
	      "a failed walk: the next pass copies all whole (%s)", C.st.why);

	lfc_note(&C, (void *)&C, 3); /* a switch freed since: only a key */
	i = some_switch();
	lfc_note(&C, &F.lft[i], 100000); /* far beyond the table */
	CHECK(pass(NULL, 1000, 1) == 0 && C.st.blocks == 0 && stage_ok(), "notes for gone switches or blocks ignored");

	lfc_invalidate(&C, "out of memory for the note list");
	CHECK(pass(NULL, 1000, 1) == nsw && stage_ok(), "lfc_invalidate: all whole");
}

/* The notes lfc_warm should touch, from the test's own layout: a live
 * switch's block inside its table, starting below limit in the stage. */
static size_t warm_expected(uint64_t limit)
{
	size_t k = 0;
	for (size_t j = 0; j < C.n; j++)
		for (unsigned i = 0; i < F.n; i++)
			if (F.is_sw[i] && C.note[j].sw == (const void *)&F.lft[i]) {
				uint64_t bo = (uint64_t)C.note[j].block * LFC_BLOCK;
				k += bo < F.len[i] && off_of[i] + bo < limit;
				break;
			}
	return k;
}

/* lfc_warm: one touch (first and last byte) per noted block of a table kept
 * where it is, nothing for the others, and the stage's bytes unchanged. */
static void test_warm(void)
{
	unsigned nsw = nswitches();

	(void)pass("first master sweep", 1000, 0);
	random_changes(5);
	CHECK(lfc_warm(&C, stage, stage_cap) == 0, "warm after a failed walk: no last pass to go by, nothing touched");
	(void)pass(NULL, 1000, 1); /* copies all whole: no earlier copy */
	CHECK(pass(NULL, 1000, 1) == 0, "then a pass that keeps every table");
	random_changes(25);
	unsigned i = some_switch();
	while (off_of[i] == 0 || off_of[i] + F.len[i] + LFC_BLOCK >= nstage)
		i = some_switch(); /* tables before it, and one after it */
	change(i, (F.len[i] - 1) / LFC_BLOCK, 0);                   /* the partial last block */
	lfc_note(&C, (void *)&C, 3);                                /* a switch freed since */
	lfc_note(&C, &F.lft[i], (F.len[i] + LFC_BLOCK - 1) / LFC_BLOCK); /* just past its table */
	lfc_note(&C, &F.lft[i], 100000);                            /* far beyond the stage */
	uint8_t *before = malloc(stage_cap);
	memcpy(before, stage, stage_cap);
	size_t t = lfc_warm(&C, stage, stage_cap);
	CHECK(t == 26 && warm_expected(stage_cap) == 26 && !memcmp(before, stage, stage_cap),
	      "warm: the 26 blocks of live tables touched (%zu), the stage unchanged", t);
	size_t below = warm_expected(off_of[i]);
	t = lfc_warm(&C, stage, off_of[i]);
	CHECK(t == below, "warm: only blocks below the length given (%zu of %zu)", t, below);
	lfc_invalidate(&C, "out of memory for the note list");
	CHECK(lfc_warm(&C, stage, stage_cap) == 0, "warm before a pass that copies all whole: nothing touched");
	CHECK(pass(NULL, 4, 1) == nsw && stage_ok(), "and that pass copies every table whole");
	random_changes(26);
	CHECK(lfc_warm(&C, stage, stage_cap) == 26 && pass(NULL, 4, 1) == 0 && C.st.blocks == 26 && stage_ok(),
	      "warm, then the pass copies the 26 blocks");
	free(before);
}

static void test_shape_and_threads(void)
{
	unsigned nsw;

	/* a node disappears from the middle: the tables behind it move */
	free(F.lft[F.n / 2]);
	memmove(&F.is_sw[F.n / 2], &F.is_sw[F.n / 2 + 1], (F.n - F.n / 2 - 1) * sizeof F.is_sw[0]);
	memmove(&F.lft[F.n / 2], &F.lft[F.n / 2 + 1], (F.n - F.n / 2 - 1) * sizeof F.lft[0]);
	memmove(&F.len[F.n / 2], &F.len[F.n / 2 + 1], (F.n - F.n / 2 - 1) * sizeof F.len[0]);
	memmove(&F.guid[F.n / 2], &F.guid[F.n / 2 + 1], (F.n - F.n / 2 - 1) * sizeof F.guid[0]);
	F.lft[--F.n] = NULL;
	nsw = nswitches();
	uint32_t w = pass(NULL, 1000, 1);
	CHECK(w >= 1 && w < nsw && stage_ok(), "a node gone: %u of %u tables whole, the rest kept", w, nsw);

	pthread_t t[2];
	unsigned a = some_switch(), b = some_switch();
	pthread_create(&t[0], NULL, noter, (void *)(uintptr_t)a);
	pthread_create(&t[1], NULL, noter, (void *)(uintptr_t)b);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	CHECK(pass(NULL, 16, 1) == 0 && C.st.notes == 200 && stage_ok(), "200 notes from two threads all seen");

	/* The contract's negative: an unnoted change stays unseen. */
	unsigned i = some_switch();
	change(i, 0, 1);
	pass(NULL, 1000, 1);
	CHECK(!stage_ok(), "a change without a note is not copied (events must cover every change)");
	change(i, 0, 0);
	CHECK(pass(NULL, 1000, 1) == 0 && stage_ok(), "its next note brings the block back in line");

	/* fewer mirror entries than nodes (prepare told too few): whole */
	struct lfc_mirror *m = C.mir;
	size_t cap = C.mir_cap;
	C.mir_cap = F.n / 2;
	lfc_begin(&C, NULL);
	for (unsigned j = 0; j < F.n; j++)
		lfc_switch(&C, j, F.is_sw[j] ? (void *)&F.lft[j] : NULL, F.lft[j], F.guid[j], off_of[j], F.len[j]);
	lfc_end(&C, F.n, 1);
	C.mir = m;
	C.mir_cap = cap;
	CHECK(!C.valid, "a walk longer than the mirror is not remembered");
	CHECK(pass(NULL, 1000, 1) == nsw && stage_ok(), "so the next pass copies all whole");
}

static void test_ptrmap(void)
{
	struct ptrmap m = { 0 };
	int ok = ptrmap_reset(&m, 1000) == 0;
	static int keys[1000];
	for (uint32_t i = 0; i < 1000; i++)
		ptrmap_put(&m, &keys[i], i);
	for (uint32_t i = 0; i < 1000; i++)
		ok = ok && ptrmap_get(&m, &keys[i]) == i;
	ok = ok && ptrmap_get(&m, &m) == -1;
	ok = ok && ptrmap_reset(&m, 10) == 0 && ptrmap_get(&m, &keys[0]) == -1;
	ptrmap_free(&m);
	CHECK(ok, "ptrmap: 1000 keys found, others not, reset empties it");
}

int main(void)
{
	if (lfc_init(&C))
		return 1;
	fab_init(90);
	test_basic();
	test_fallbacks();
	test_warm();
	test_shape_and_threads();
	test_ptrmap();
	lfc_free(&C);
	fab_free();
	free(stage);
	return TAP_DONE();
}
