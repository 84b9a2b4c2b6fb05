/*
 * test_journal.c - journal_replay() on state directories made by hand: the
 * newest intact entry is served whatever is wrong with the others (damaged,
 * truncated, another generation's bytes, against another base), bad ones
 * are renamed aside and reported (or, read-only, left alone), entries
 * fabric.snap already holds are removed, and a chain written by an earlier
 * version (each entry against the one before) still replays.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>

#include "delta.h"
#include "journal.h"
#include "testfab.h"

static struct snap *gen[6]; /* generations 10..15 of one fabric, each a reroute of the one before */

static void make_gens(void)
{
	gen[0] = snap_new();
	tf_tree2(gen[0], 4, 4, 2, 1);
	tf_finish(gen[0], 0);
	gen[0]->generation = 10;
	gen[0]->sm_guid = 0x1234;
	gen[0]->timestamp = 1700000000000000ull;
	for (int i = 1; i < 6; i++) {
		struct snap *t = snap_dup(gen[i - 1]);
		uint32_t ca = (uint32_t)snap_find_node(t, TF_CA_GUID + 16 * (4 * (uint64_t)i + 1));
		snprintf(t->nodes[ca].desc, sizeof(t->nodes[ca].desc), "gen %d", 10 + i);
		uint32_t leaf = (uint32_t)snap_find_node(t, TF_SW_GUID + (uint64_t)(i % 4));
		uint8_t *lft = tf_lft_get(t, leaf);
		for (uint32_t l = (uint32_t)i; l < t->nodes[leaf].lft_len; l += 9)
			if (lft[l] == 5 || lft[l] == 6)
				lft[l] = lft[l] == 5 ? 6 : 5;
		tf_lft_put(t, leaf, lft);
		t->generation = 10 + (uint64_t)i;
		t->timestamp += 1000;
		gen[i] = t;
	}
}

static char dir[64];
static int reports;

static void report(void *arg, const char *msg)
{
	(void)arg;
	reports++;
	printf("# %s\n", msg);
}

static void put_entry(const struct snap *from, const struct snap *to, uint64_t name)
{
	char err[SNAP_ERR_LEN];
	uint8_t *d;
	size_t dl;
	if (snap_delta_encode(from, to, &d, &dl, err) || journal_append(dir, name, d, dl, err))
		tf_die(err);
	free(d);
}

static void reset(void)
{
	char err[SNAP_ERR_LEN], path[512];
	DIR *dd = opendir(dir);
	struct dirent *de;
	while (dd && (de = readdir(dd)))
		if (de->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			unlink(path);
		}
	if (dd)
		closedir(dd);
	snprintf(path, sizeof(path), "%s/fabric.snap", dir);
	if (snap_write_file(gen[0], path, err))
		tf_die(err);
}

static int exists(const char *name)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* What topod's start-up gets: the generation served. */
static uint64_t replay(int quarantine, struct journal_replay *jr)
{
	char err[SNAP_ERR_LEN], path[512];
	struct snap *s;
	snprintf(path, sizeof(path), "%s/fabric.snap", dir);
	if (snap_read_file(path, &s, err))
		tf_die(err);
	*jr = (struct journal_replay){ .quarantine = quarantine, .report = report };
	reports = 0;
	journal_replay(dir, &s, jr);
	uint64_t g = s->generation;
	CHECK(snap_diff(s, gen[g - 10], SNAP_DIFF_STATE, NULL, NULL) == 0, "generation %" PRIu64 " has its contents", g);
	snap_free(s);
	return g;
}

static void damage(uint64_t g, int how)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/" JOURNAL_PREFIX "%020" PRIu64, dir, g);
	FILE *f = fopen(path, "r+b");
	if (!f)
		tf_die(path);
	if (how == 0) {
		fseek(f, 80, SEEK_SET);
		fputc(0x5a, f);
	}
	fclose(f);
	if (how == 1 && truncate(path, 50))
		tf_die("truncate");
}

int main(void)
{
	struct journal_replay jr;
	snprintf(dir, sizeof(dir), "/tmp/test_journal.XXXXXX");
	if (!mkdtemp(dir))
		tf_die("mkdtemp");
	make_gens();

	/* Cumulative entries (what topod writes): the newest applies alone. */
	reset();
	put_entry(gen[0], gen[2], 12);
	put_entry(gen[0], gen[3], 13);
	CHECK(replay(1, &jr) == 13 && jr.applied == 1 && !jr.bad && jr.entry && !jr.chained,
	      "the newest entry is served, and handed back for the next composition");
	free(jr.entry);

	/* The newest damaged (a byte; truncated; another generation's entry):
	 * quarantined, the previous one served. */
	for (int how = 0; how < 3; how++) {
		reset();
		put_entry(gen[0], gen[2], 12);
		put_entry(gen[0], gen[3], 13);
		if (how < 2)
			damage(13, how);
		else
			put_entry(gen[0], gen[2], 13);
		uint64_t g = replay(1, &jr);
		CHECK(g == 12 && jr.bad == 1 && exists(JOURNAL_PREFIX "00000000000000000013" JOURNAL_CORRUPT) &&
			      !exists(JOURNAL_PREFIX "00000000000000000013") && reports == 1 && jr.why[0],
		      "%s newest entry: quarantined (%s), the one before served", how == 0 ? "a damaged" :
		      how == 1 ? "a truncated" : "another generation's", jr.why);
		free(jr.entry);
	}
	/* The older damaged: never looked at, the newest served. */
	reset();
	put_entry(gen[0], gen[2], 12);
	damage(12, 0);
	put_entry(gen[0], gen[4], 14);
	CHECK(replay(1, &jr) == 14 && !jr.bad, "a damaged older entry costs nothing");
	free(jr.entry);

	/* A second quarantine of the same name keeps the first's evidence. */
	reset();
	put_entry(gen[0], gen[1], 11);
	put_entry(gen[0], gen[3], 13);
	damage(13, 1);
	replay(1, &jr);
	free(jr.entry);
	put_entry(gen[0], gen[3], 13);
	damage(13, 0);
	replay(1, &jr);
	free(jr.entry);
	CHECK(exists(JOURNAL_PREFIX "00000000000000000013" JOURNAL_CORRUPT) &&
		      exists(JOURNAL_PREFIX "00000000000000000013" JOURNAL_CORRUPT ".1"),
	      "quarantined twice under one name: .corrupt and .corrupt.1, nothing overwritten");

	/* Read-only (topo-snap, topo-routeopt): the same answer, nothing moved. */
	reset();
	put_entry(gen[0], gen[2], 12);
	put_entry(gen[0], gen[3], 13);
	damage(13, 0);
	CHECK(replay(0, &jr) == 12 && jr.bad == 1 && exists(JOURNAL_PREFIX "00000000000000000013"),
	      "read-only: 12 served, the damaged entry left where it is");
	free(jr.entry);
	char why[SNAP_ERR_LEN], err[SNAP_ERR_LEN];
	struct snap *s;
	int nd;
	CHECK(snap_read_state(dir, &s, &nd, why, err) == 0 && s->generation == 12 && nd == 1 && strstr(why, "13"),
	      "snap_read_state says which entry was bad: %s", why);
	snap_free(s);

	/* Leftovers of a compaction (a crash after fabric.snap was written). */
	reset();
	put_entry(gen[0], gen[0], 9);
	put_entry(gen[0], gen[0], 10);
	put_entry(gen[0], gen[1], 11);
	CHECK(replay(1, &jr) == 11 && jr.stale == 2 && !jr.bad && !exists(JOURNAL_PREFIX "00000000000000000010"),
	      "entries fabric.snap holds are removed, not quarantined");
	free(jr.entry);

	/* An earlier version's chain: each entry against the one before. */
	reset();
	for (int i = 1; i <= 5; i++)
		put_entry(gen[i - 1], gen[i], 10 + (uint64_t)i);
	CHECK(replay(1, &jr) == 15 && jr.applied == 5 && jr.chained && !jr.entry && !jr.bad,
	      "an earlier version's chain of five replays to its end (topod then folds it)");
	reset();
	for (int i = 1; i <= 5; i++)
		put_entry(gen[i - 1], gen[i], 10 + (uint64_t)i);
	damage(13, 0);
	CHECK(replay(1, &jr) == 12 && jr.bad == 3, "a chain damaged in the middle: served up to the damage, the three "
						     "entries that cannot apply quarantined (%s)", jr.why);

	/* Against another base altogether. */
	reset();
	struct snap *other = snap_dup(gen[0]);
	other->timestamp++;
	put_entry(other, gen[2], 12);
	snap_free(other);
	CHECK(replay(1, &jr) == 10 && jr.bad == 1 && strstr(jr.why, "neither fabric.snap"),
	      "an entry against another base: quarantined, fabric.snap served (%s)", jr.why);

	reset();
	char path[128];
	snprintf(path, sizeof(path), "%s/fabric.snap", dir);
	unlink(path);
	rmdir(dir);
	for (int i = 0; i < 6; i++)
		snap_free(gen[i]);
	return tf_failures != 0;
}
