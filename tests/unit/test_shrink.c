/*
 * test_shrink.c - the shrink guard (build.h; issue 37, item 3) on the real
 * builder, with a state directory: a fabric that reaches no host is never
 * served, neither whole nor by a delta (ERR EMPTY); a generation that
 * reaches far fewer HCAs (links down, as a delta too) is held back (ERR
 * HELD, counted, info's held=), not served and not written; its
 * producer's retry of it is still held and agrees with nothing; later
 * generations that reach as many agree, and the --shrink-agree'th is
 * served; one that does not shrink drops what is held; the operator's
 * confirm serves the held one (through the builder thread), and the
 * operator's own fabrics are never held.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "build.h"
#include "delta.h"
#include "fabric.h"
#include "store.h"
#include "testfab.h"

struct reply {
	int ok;
	char msg[512];
};

static void done(void *arg, int ok, const char *msg)
{
	struct reply *r = arg;
	r->ok = ok;
	snprintf(r->msg, sizeof(r->msg), "%s", msg);
}

static int run(struct builder *b, uint8_t *buf, size_t len, int confirmed, struct reply *r)
{
	struct ingest_job *j = calloc(1, sizeof(*j));
	if (!j)
		tf_die("calloc");
	j->buf = buf;
	j->len = len;
	j->persist = 1;
	j->confirmed = confirmed;
	snprintf(j->source, sizeof(j->source), "test");
	j->done = done;
	j->arg = r;
	*r = (struct reply){ 0, "" };
	return builder_run(b, j);
}

/* s as a producer's full snapshot. */
static int whole(struct builder *b, const struct snap *s, int confirmed, struct reply *r)
{
	char err[SNAP_ERR_LEN];
	uint8_t *buf;
	size_t len;
	if (snap_encode(s, &buf, &len, err))
		tf_die(err);
	return run(b, buf, len, confirmed, r);
}

/* s as a producer's delta from base. */
static int delta(struct builder *b, const struct snap *base, const struct snap *s, struct reply *r)
{
	char err[SNAP_ERR_LEN];
	uint8_t *buf;
	size_t len;
	if (snap_delta_encode(base, s, &buf, &len, err))
		tf_die(err);
	return run(b, buf, len, 0, r);
}

/* A copy of a as generation gen, every HCA's link down but the first keep. */
static struct snap *down(const struct snap *a, uint64_t gen, uint32_t keep)
{
	struct snap *s = snap_dup(a);
	if (!s)
		tf_die("snap_dup");
	uint32_t cas = 0;
	for (uint32_t i = 0; i < s->nnodes; i++)
		if (s->nodes[i].type == SNAP_NODE_CA && cas++ >= keep)
			tf_link_down(s, i, 1);
	s->generation = gen;
	s->timestamp = a->timestamp + gen;
	return s;
}

static uint64_t served_gen(struct store *st, uint64_t *held)
{
	struct fabric *f = store_get(st);
	uint64_t g = f->snap->generation;
	*held = f->held ? atomic_load(f->held) : 0;
	fabric_put(f);
	return g;
}

int main(void)
{
	struct store st;
	store_init(&st);
	char dir[] = "/tmp/test_shrink.XXXXXX", path[64], err[SNAP_ERR_LEN];
	if (!mkdtemp(dir))
		tf_die("mkdtemp");
	snprintf(path, sizeof(path), "%s/fabric.snap", dir);
	struct builder *b = builder_new(&st, dir, 2, NULL);
	builder_set_guard(b, 0.5, 2);
	struct reply r;
	struct builder_stats bs;
	uint64_t held;
	int rc;

	struct snap *a = snap_new();
	tf_fattree3(a, 4);
	tf_finish(a, 0);
	a->generation = 1;
	CHECK(whole(b, a, 0, &r) == 0 && !strcmp(r.msg, "OK 1"), "generation 1, 16 HCAs: %s", r.msg);

	/* Empty: no node at all, and every HCA's link down by a delta. */
	struct snap *e = snap_new();
	e->generation = 2;
	e->timestamp = a->timestamp + 2;
	CHECK(whole(b, e, 1, &r) && !r.ok && !strncmp(r.msg, "ERR EMPTY generation 2: an empty fabric", 39),
	      "a snapshot of no node, even the operator's: %s", r.msg);
	struct snap *z = down(a, 3, 0);
	CHECK(delta(b, a, z, &r) && !strncmp(r.msg, "ERR EMPTY generation 3", 22) && strstr(r.msg, "16 CAs"),
	      "a delta that takes every HCA's link down: %s", r.msg);
	CHECK(served_gen(&st, &held) == 1 && !held, "generation 1 still served");

	/* One HCA of 16 left: held, as a whole snapshot and as a delta. */
	struct snap *s4 = down(a, 4, 1), *s5 = down(a, 5, 1), *s6 = down(a, 6, 1);
	CHECK(whole(b, s4, 0, &r) && !r.ok &&
	      !strcmp(r.msg, "ERR HELD generation 4 reaches 1 of 16 HCAs, 20 of 20 switches: held back; admin confirm 4 "
		      "serves it, or 2 more like it"),
	      "generation 4 reaching 1 of 16 HCAs: %s", r.msg);
	builder_get_stats(b, &bs);
	struct snap *back = NULL;
	int rd = snap_read_file(path, &back, err);
	uint64_t g = served_gen(&st, &held);
	CHECK(g == 1 && held == 4 && bs.held_gen == 4 && bs.held_total == 1 &&
	      bs.held_live.cas == 1 && bs.served_live.cas == 16 && !rd && back->generation == 1,
	      "held back: generation 1 served and on disk, info's held=%llu, counted (%llu)", (unsigned long long)held,
	      (unsigned long long)bs.held_total);
	snap_free(back);
	CHECK(whole(b, s4, 0, &r) && !strncmp(r.msg, "ERR HELD generation 4", 21), "its producer sending it again: "
	      "still held (%s)", r.msg);
	CHECK(builder_confirm(b, 3, err) && strstr(err, "holds back generation 4, not 3"), "confirm 3: %s", err);
	builder_get_stats(b, &bs);
	unsigned agreed4 = bs.held_agreed;
	rc = delta(b, a, s5, &r);
	builder_get_stats(b, &bs);
	CHECK(rc && !strncmp(r.msg, "ERR HELD generation 5", 21) && agreed4 == 0 && bs.held_agreed == 1,
	      "generation 5 as a delta, reaching as many: held, agreeing with 4, which had none after its retry (%s)",
	      r.msg);
	CHECK(served_gen(&st, &held) == 1 && held == 5, "still generation 1 served, held=%llu", (unsigned long long)held);
	CHECK(whole(b, s6, 0, &r) == 0 && !strcmp(r.msg, "OK 6") && served_gen(&st, &held) == 6 && !held,
	      "generation 6, the second that agrees (--shrink-agree 2): served (%s)", r.msg);

	/* Growing back is no shrink; a shrink then a whole fabric drops it. */
	a->generation = 7;
	a->timestamp += 7;
	CHECK(whole(b, a, 0, &r) == 0 && !strcmp(r.msg, "OK 7"), "16 HCAs again: %s", r.msg);
	struct snap *s8 = down(a, 8, 2);
	CHECK(whole(b, s8, 0, &r) && strstr(r.msg, "ERR HELD generation 8 reaches 2 of 16 HCAs"), "generation 8: %s",
	      r.msg);
	struct snap *s9 = down(a, 9, 10);
	CHECK(whole(b, s9, 0, &r) == 0 && served_gen(&st, &held) == 9 && !held,
	      "generation 9 reaching 10 of 16 (less than half lost): served, 8 dropped (%s)", r.msg);
	CHECK(builder_confirm(b, 8, err) && strstr(err, "holds back no generation"), "confirm 8 then: %s", err);

	/* The operator's own (start-up, reload, restore) is not held. */
	struct snap *s10 = down(s9, 10, 1);
	CHECK(whole(b, s10, 1, &r) == 0 && served_gen(&st, &held) == 10, "the operator's generation 10 reaching "
	      "1 HCA: served (%s)", r.msg);

	/* confirm: through the builder thread, as the admin socket does. */
	a->generation = 11;
	a->timestamp += 11;
	CHECK(whole(b, a, 0, &r) == 0, "generation 11, 16 HCAs: %s", r.msg);
	struct snap *s13 = down(a, 13, 3);
	CHECK(whole(b, s13, 0, &r) && strstr(r.msg, "ERR HELD generation 13"), "generation 13: %s", r.msg);
	/* Confirmed before the builder thread runs (the job waits in its
	 * queue), then the producer's retry of 13 arrives: the confirmed job
	 * must stay, or the retry is held back again and nothing is served. */
	builder_get_stats(b, &bs);
	uint64_t accepted = bs.accepted;
	int ok = builder_confirm(b, 13, err) == 0;
	{
		char e2[SNAP_ERR_LEN];
		struct reply r2 = { -1, "" };
		struct ingest_job *j = calloc(1, sizeof(*j));
		if (!j || snap_encode(s13, &j->buf, &j->len, e2))
			tf_die("retry of 13");
		j->persist = 1;
		snprintf(j->source, sizeof(j->source), "test retry");
		j->done = done;
		j->arg = &r2;
		builder_submit(b, j);
		CHECK(r2.ok == 1 && !strcmp(r2.msg, "OK superseded"),
		      "the producer's retry of 13 after the confirm: answered as superseded, the confirmed job kept (%d %s)",
		      r2.ok, r2.msg);
	}
	if (builder_start(b))
		tf_die("builder_start");
	for (int i = 0; i < 500 && bs.accepted == accepted; i++) { /* counted once written */
		usleep(10000);
		builder_get_stats(b, &bs);
	}
	rd = snap_read_file(path, &back, err);
	CHECK(ok && served_gen(&st, &held) == 13 && !held && bs.confirmed_total == 1 && !rd && back->generation == 13,
	      "confirm 13: served, written to %s, counted", path);
	snap_free(back);
	builder_stop(b);

	snap_free(a);
	snap_free(e);
	snap_free(z);
	snap_free(s4);
	snap_free(s5);
	snap_free(s6);
	snap_free(s8);
	snap_free(s9);
	snap_free(s10);
	snap_free(s13);
	builder_free(b);
	store_destroy(&st);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		return 1;
	return tf_failures != 0;
}
