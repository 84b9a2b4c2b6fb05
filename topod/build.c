/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * build.c - see build.h.
 */
#include "build.h"

#include <errno.h>
#include <inttypes.h>
#include <omp.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "delta.h"
#include "fabric.h"
#include "gone.h"
#include "history.h"
#include "journal.h"
#include "namemap.h"
#include "log.h"
#include "topo_limits.h"
#include "util.h"

/* The deltas whose copies the ready reserve covers (ready_update). */
#define READY_RECENT 8

struct builder {
	struct store *st;
	const struct route_namemap *map; /* borrowed from main, lives as long as we do */
	int threads;
	char state_file[4096];
	char state_dir[4096];
	/* What the state directory reproduces (journal.h): fabric.snap, or
	 * fabric.snap and the journal entry from it to generation dur_gen
	 * (entry_len bytes; 0: none). A delta is journalled only on top of
	 * that; anything else is written whole. durable = 0: unknown
	 * (nothing written yet, or a write failed): the next snapshot is
	 * written whole. The entry is read back from its file to compose the
	 * next one, not kept: it grows to a quarter of the fabric before a
	 * fold (49 MB at k=56), which topod's memory would follow. base_* is
	 * what it must be against (fabric.snap). */
	int durable;
	uint64_t dur_gen, dur_sm, dur_ts;
	uint64_t base_gen, base_sm, base_ts;
	size_t entry_len, full_bytes;
	unsigned journal_n; /* deltas composed into the entry */

	pthread_t thr;
	int started;
	pthread_mutex_t lock; /* covers pending, room, feed, trim, stop and stats */
	pthread_cond_t cond;
	struct ingest_job *pending;
	uint64_t room; /* bytes of a full snapshot arriving to make room for (builder_make_room) */
	/* The large full snapshot arriving whose tables are copied meanwhile
	 * (builder_feed): its buffer, the bytes in and those fed, the tables
	 * made. busy: this thread reads buf outside the lock; orphan: its
	 * connection let go of buf meanwhile, freed here once read. */
	struct {
		const uint8_t *buf;
		size_t have, fed;
		struct snap_early *e;
		int busy, orphan, nomem;
	} feed;
	int trim; /* a feed let go: give back the room made for it (snap_release_room) */
	int stop;
	struct builder_stats stats;
	struct history *hist; /* NULL until builder_set_history() */
	char plane[TOPO_PLANE_NAME_MAX + 1]; /* for the log */
	/* The shrink guard (build.h): its settings, and the generation held
	 * back with what it reaches and the later ones that agreed (under
	 * lock); held_gen is also read by `info` (fabric.held), on any thread. */
	double shrink;
	unsigned agree;
	struct snap *held;
	char held_source[96];
	_Atomic uint64_t held_gen;
	/* The preparation of the served generation's proof by distance
	 * (prep_main): its thread, the fabric it is to work on next (a
	 * reference) and whether it is at one, under prep_lock; prep_stop
	 * pauses it. */
	pthread_t prep_thr;
	int prep_started, prep_quit, prep_busy;
	struct fabric *prep_f;
	pthread_mutex_t prep_lock;
	pthread_cond_t prep_cond;
	atomic_int prep_stop;
	unsigned warm_ms; /* builder_set_warm; 0: off */
	int warm_spare;
	/* The table chunks this plane asks the pool to keep ready for its
	 * next delta (ready_update), and what the last deltas that changed
	 * tables copied. Builder thread only. */
	uint64_t ready_want;
	struct {
		uint64_t chunks;
		uint32_t blocks; /* the list of LFT blocks its apply made */
	} ready_recent[READY_RECENT];
	unsigned ready_at;
	/* The list the next delta's apply writes (snap_delta_list_ready),
	 * in blocks, by the same rule; read by the preparation thread. */
	atomic_uint list_want;
	/* snap_dup() of the served generation's snapshot, which the next
	 * delta is written into (snap_delta_apply_to), made between
	 * snapshots (warm_one) so that its arrays are not fresh memory
	 * then; spare_of: the snapshot it copies. The preparation thread
	 * makes it, the builder takes or drops it once that has paused
	 * (prep_pause), and drops it whenever it publishes. */
	struct snap *spare;
	const struct snap *spare_of;
};

struct builder *builder_new(struct store *st, const char *state_dir, int threads,
			    const struct route_namemap *map)
{
	struct builder *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->st = st;
	b->map = map;
	b->threads = threads;
	if (state_dir && *state_dir) {
		snprintf(b->state_file, sizeof(b->state_file), "%s/fabric.snap", state_dir);
		snprintf(b->state_dir, sizeof(b->state_dir), "%s", state_dir);
	}
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	pthread_mutex_init(&b->prep_lock, NULL);
	pthread_condattr_t ca; /* prep_wait's interval is monotonic */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->prep_cond, &ca);
	pthread_condattr_destroy(&ca);
	snprintf(b->plane, sizeof(b->plane), "default");
	b->shrink = 1; /* off until builder_set_guard() */
	return b;
}

/* The feed's state, taken (with the lock held): its tables are the
 * caller's to free. */
static struct snap_early *feed_take(struct builder *b)
{
	struct snap_early *e = b->feed.e;
	memset(&b->feed, 0, sizeof(b->feed));
	return e;
}

static void job_free(struct ingest_job *j)
{
	if (!j)
		return;
	if (j->buf && snap_is_delta(j->buf, j->len))
		snap_bytes_keep(j->buf); /* for the next delta to arrive into */
	else
		free(j->buf);
	free(j->journal_entry);
	snap_free(j->snap);
	free(j);
}

/* A job that will not be built: its buffer may be the one being fed. */
static void job_drop(struct builder *b, struct ingest_job *j)
{
	builder_feed_drop(b, j->buf);
	j->buf = NULL;
	job_free(j);
}

static void record_error(struct builder *b, const char *msg)
{
	pthread_mutex_lock(&b->lock);
	b->stats.rejected++;
	snprintf(b->stats.last_error, sizeof(b->stats.last_error), "%s", msg);
	b->stats.last_error_us = snap_now_us();
	pthread_mutex_unlock(&b->lock);
}

/* The generation rule of build.h. Returns 0 to serve s, 1 for a harmless
 * repeat of what is served, -1 with why set to refuse it. */
static int check_generation(const struct snap *cur, const struct snap *s, int force, char *why, size_t n)
{
	if (!cur || force || s->generation > cur->generation)
		return 0;
	if (s->generation == cur->generation) {
		if (s->sm_guid == cur->sm_guid && s->sweep == cur->sweep && s->timestamp == cur->timestamp &&
		    snap_diff(cur, s, SNAP_DIFF_STATE, NULL, NULL) == 0)
			return 1;
		snprintf(why, n, "generation %" PRIu64 " is already served with different contents", s->generation);
		return -1;
	}
	if ((s->sm_guid != cur->sm_guid || s->sweep < cur->sweep) && s->timestamp > cur->timestamp)
		return 0; /* a restarted subnet manager: logged by the caller */
	snprintf(why, n,
		 "generation %" PRIu64 " is older than the served %" PRIu64
		 " (same SM, taken earlier): a rollback; to restore an older fabric use admin `restore PATH force`",
		 s->generation, cur->generation);
	return -1;
}

static void set_durable(struct builder *b, const struct snap *s, size_t entry_len)
{
	if (!entry_len) {
		b->base_gen = s->generation;
		b->base_sm = s->sm_guid;
		b->base_ts = s->timestamp;
	}
	b->entry_len = entry_len;
	b->durable = 1;
	b->dur_gen = s->generation;
	b->dur_sm = s->sm_guid;
	b->dur_ts = s->timestamp;
}

/* fabric.snap, and then the journal it replaces. buf may be NULL (then s
 * is encoded). */
static int persist_full(struct builder *b, const struct snap *s, const uint8_t *buf, size_t len,
			char err[SNAP_ERR_LEN])
{
	uint8_t *enc = NULL;
	int rc = 0;
	if (!buf) {
		rc = snap_encode(s, &enc, &len, err);
		buf = enc;
	}
	if (!rc)
		rc = snap_write_atomic_mode(b->state_file, buf, len, 0600, err);
	free(enc);
	if (rc) {
		/* The old files may or may not be what a restart reads (a
		 * failed fsync after the rename): trust nothing until the next
		 * whole write. */
		b->durable = 0;
		return rc;
	}
	/* Only after the rename: a crash in between leaves entries that
	 * start-up removes (fabric.snap holds them), never a hole. */
	journal_clear(b->state_dir, UINT64_MAX);
	b->journal_n = 0;
	b->full_bytes = len;
	set_durable(b, s, 0);
	return 0;
}

/* The journal entry to dur_gen, read back from its file; NULL with err
 * when it is gone, damaged or not against fabric.snap (then the caller
 * writes the whole fabric). */
static uint8_t *entry_read(const struct builder *b, size_t *len, char err[SNAP_ERR_LEN])
{
	uint8_t *e = NULL;
	struct snap_delta_info in = { 0 };
	if (journal_read(b->state_dir, b->dur_gen, &e, len, err))
		return NULL;
	if (snap_delta_peek(e, *len, &in, err))
		;
	else if (in.generation != b->dur_gen || in.base_generation != b->base_gen || in.base_sm_guid != b->base_sm ||
		 in.base_timestamp != b->base_ts)
		snprintf(err, SNAP_ERR_LEN, "its file holds generation %" PRIu64 " from %" PRIu64
			 ", not %" PRIu64 " from fabric.snap's %" PRIu64, in.generation, in.base_generation,
			 b->dur_gen, b->base_gen);
	else
		return e;
	free(e);
	return NULL;
}

/* A delta durable as a journal entry from fabric.snap: the previous entry
 * composed with it (linear in their sizes, not in the fabric's). Only on
 * top of what the directory reproduces; otherwise, or when composing
 * fails, the whole fabric. */
static int persist_delta(struct builder *b, const struct snap *s, const struct snap_delta_info *in,
			 const uint8_t *buf, size_t len, char err[SNAP_ERR_LEN])
{
	if (!b->durable || in->base_generation != b->dur_gen || in->base_sm_guid != b->dur_sm ||
	    in->base_timestamp != b->dur_ts || s->generation <= b->dur_gen) {
		tlog(TLOG_INFO, "delta to generation %" PRIu64 ": its base %" PRIu64 " is not what %s holds (%s): "
				"writing the whole fabric",
		     s->generation, in->base_generation, b->state_dir,
		     b->durable ? "it holds another generation" : "unknown: nothing written yet, or a write failed");
		pthread_mutex_lock(&b->lock);
		b->stats.journal_full_writes++;
		pthread_mutex_unlock(&b->lock);
		return persist_full(b, s, NULL, 0, err);
	}
	uint8_t *prev = NULL, *e = NULL;
	size_t pl = 0, el = len;
	if (b->entry_len &&
	    (!(prev = entry_read(b, &pl, err)) || snap_delta_compose(s, prev, pl, buf, len, &e, &el, err))) {
		tlog(TLOG_WARN, "journal: cannot compose generation %" PRIu64 " onto %" PRIu64 ": %s; writing the whole fabric",
		     s->generation, b->dur_gen, err);
		free(prev);
		return persist_full(b, s, NULL, 0, err);
	}
	free(prev);
	int rc = journal_append(b->state_dir, s->generation, e ? e : buf, el, err);
	free(e);
	if (rc)
		return -1;
	/* The previous entry stays, a fallback should this one be damaged;
	 * the one before it goes. */
	if (b->entry_len)
		journal_clear(b->state_dir, b->dur_gen - 1);
	b->journal_n++;
	set_durable(b, s, el);
	return 0;
}

static void compact(struct builder *b, const struct snap *s)
{
	char err[SNAP_ERR_LEN];
	uint64_t t0 = util_now_us();
	unsigned n = b->journal_n;
	if (persist_full(b, s, NULL, 0, err))
		tlog(TLOG_WARN, "journal: cannot write generation %" PRIu64 " whole: %s; the journal stays", s->generation,
		     err);
	else
		tlog(TLOG_INFO, "journal: %u deltas folded into %s (generation %" PRIu64 ") in %.1f ms", n,
		     b->state_file, s->generation, util_ms_since(t0));
}

static void reply(struct ingest_job *j, int ok, const char *msg)
{
	if (j->done)
		j->done(j->arg, ok, msg);
	j->done = NULL;
}

/* Drops the spare copy unless it is of s (NULL: drops it). Whoever
 * holds it: the builder with the preparation paused, or that thread. */
static void spare_keep_if_of(struct builder *b, const struct snap *s)
{
	if (b->spare && b->spare_of != s) {
		snap_free(b->spare);
		b->spare = NULL;
	}
}

/* The spare copy if it is of base, else NULL (and it is dropped). The
 * builder's, with the preparation paused. */
static struct snap *spare_take(struct builder *b, const struct snap *base)
{
	spare_keep_if_of(b, base);
	struct snap *s = b->spare;
	b->spare = NULL;
	return s;
}

/* A delta applies to the served generation only: anything else means the
 * producer's idea of what we serve is wrong, and only a full snapshot can
 * fix that (ERR NOBASE tells it so). On success *base keeps a reference to
 * the generation it applied to (its index is reused by the build) and info
 * lists the changed blocks. */
static int apply_delta(struct builder *b, struct ingest_job *j, struct snap **out, struct fabric **base,
		       struct snap_delta_info *info, int *into_spare, char *msg, size_t n)
{
	char err[SNAP_ERR_LEN];
	struct fabric *cur = store_get(b->st);
	int rc;
	info->want_blocks = 1;
	if (!cur->index) {
		snprintf(err, sizeof(err), "no fabric is served yet: send a full snapshot");
		rc = SNAP_DELTA_NOBASE;
	} else {
		struct snap *spare = spare_take(b, cur->snap);
		rc = snap_delta_apply_to(cur->snap, spare, j->buf, j->len, out, info, err);
		/* spare is base's (spare_take), so apply_to wrote it */
		*into_spare = !rc && spare;
	}
	if (rc) {
		fabric_put(cur);
		tlog(TLOG_ERR, "rejected delta from %s (%zu bytes): %s", j->source, j->len, err);
		record_error(b, err);
		snprintf(msg, n, "ERR %s %s", rc == SNAP_DELTA_NOBASE ? "NOBASE" : "INVALID", err);
		return -1;
	}
	*base = cur;
	char got[96] = "";
	if (j->first_us && j->done_us >= j->first_us)
		snprintf(got, sizeof(got), " (received in %.1f ms, %.1f ms before this)",
			 (j->done_us - j->first_us) / 1e3, util_ms_since(j->done_us));
	tlog(TLOG_INFO, "delta from %s: generation %" PRIu64 " from %" PRIu64 ", %zu bytes%s, %u ports, %u LFT blocks",
	     j->source, info->generation, info->base_generation, j->len, got, info->ports, info->blocks);
	return 0;
}

/* One job on its way through builder_run(): what each step hands the next. */
struct run {
	struct ingest_job *j;
	struct snap *s;
	int is_delta;
	/* A delta's base, and in info the blocks it brought: its index is
	 * reused, and both tell the history where the new generation can
	 * differ from it (history_push). Referenced until then, so that
	 * the history's check that base is its head compares live addresses. */
	struct fabric *base;
	struct snap_delta_info info;
	/* A full snapshot indexed as the delta from the served generation
	 * (run_as_delta): s is the equal one built on the base, the decoded
	 * one is freed at once (j->buf is what is persisted whole). */
	int as_delta;
	struct fabric_index *x;
	int reused;
	uint64_t copied; /* table chunks the delta's apply copied */
	int threads;     /* the index's team (threads_now) */
	int into_spare;  /* the delta was written into the builder's spare copy */
	double decode_ms, build_ms, persist_ms;
	/* The LIDs of the index's complete cover when published, -1 when
	 * pending, -2 when none can be made (fabric_index.cover_rc): read
	 * before the preparation thread may write it. */
	int64_t cover;
	char err[SNAP_ERR_LEN], msg[SNAP_ERR_LEN + 64];
	/* b->map plus the CAs that share a hostname and HCA label named by
	 * GUID (namemap.h); NULL when none do. Owned until published. */
	struct route_namemap *map;
	uint32_t ambiguous;
	char amb_example[AN_ERR_LEN];
};

/* What run_decode() or run_as_delta() kept of a delta's base, let go on
 * every way out of builder_run(). */
static void run_release(struct run *r)
{
	fabric_put(r->base);
	r->base = NULL;
	snap_delta_info_keep(&r->info); /* for the next delta to list its blocks in */
}

/* The job's snapshot: given, decoded, or a delta applied to the served
 * generation. On failure the job is answered and freed. */
static int run_decode(struct builder *b, struct run *r)
{
	struct ingest_job *j = r->j;
	uint64_t t0 = util_now_us();
	r->s = j->snap;
	j->snap = NULL;
	r->is_delta = !r->s && snap_is_delta(j->buf, j->len);
	uint64_t taken = snap_lft_taken();
	if (r->is_delta) {
		if (apply_delta(b, j, &r->s, &r->base, &r->info, &r->into_spare, r->msg, sizeof(r->msg)) < 0) {
			reply(j, 0, r->msg);
			job_free(j);
			return -1;
		}
	} else if (!r->s) {
		/* The tables copied while it arrived (builder_feed) */
		struct snap_early *e = NULL;
		pthread_mutex_lock(&b->lock);
		if (b->feed.buf && b->feed.buf == j->buf)
			e = feed_take(b);
		pthread_mutex_unlock(&b->lock);
		int rc = snap_decode_early(j->buf, j->len, e, &r->s, r->err);
		if (e && !rc)
			tlog(TLOG_INFO, "generation %" PRIu64 ": %" PRIu64 " of %" PRIu64 " table entries were copied "
			     "while it arrived", r->s->generation, snap_early_taken(e), r->s->nlft);
		snap_early_free(e);
		if (rc) {
			/* The previous fabric stays served: a bad snapshot only
			 * costs a log line and an error reply to its producer. */
			tlog(TLOG_ERR, "rejected snapshot from %s (%zu bytes): %s", j->source, j->len, r->err);
			record_error(b, r->err);
			snprintf(r->msg, sizeof(r->msg), "ERR INVALID %s", r->err);
			reply(j, 0, r->msg);
			job_free(j);
			return -1;
		}
	}
	if (r->is_delta)
		r->copied = snap_lft_taken() - taken;
	r->decode_ms = util_ms_since(t0);
	return 0;
}

/* A full snapshot of the fabric already served, routed differently in a
 * few places (a collector's next run, OpenSM restarted, a producer that
 * lost its base): indexed as the delta from the served generation, so
 * that the hierarchy is kept when no hop count from a leaf changed rather
 * than rebuilt (1 s at k=56). The proof's walks cost in proportion to
 * the delta's bytes: past 1/64 of the snapshot's (and 64 KiB, which any
 * fabric proves in milliseconds) they would cost about what a rebuild
 * does. Anything the delta cannot say (other nodes, other table sizes)
 * leaves the full build. */
#define AS_DELTA_MIN ((size_t)64 << 10)
static void run_as_delta(struct builder *b, struct run *r)
{
	struct fabric *cur = store_get(b->st);
	uint64_t t0 = util_now_us();
	uint8_t *d = NULL;
	size_t dl = 0;
	struct snap *s = NULL;
	char err[SNAP_ERR_LEN];
	size_t max = r->j->len / 64 > AS_DELTA_MIN ? r->j->len / 64 : AS_DELTA_MIN;
	if (!cur->index || !r->j->buf || cur->snap->nnodes != r->s->nnodes ||
	    snap_delta_encode_max(cur->snap, r->s, max, &d, &dl, err)) {
		free(d);
		fabric_put(cur);
		return;
	}
	r->info.want_blocks = 1;
	uint64_t taken = snap_lft_taken();
	int rc = snap_delta_apply(cur->snap, d, dl, &s, &r->info, err);
	r->copied = snap_lft_taken() - taken;
	free(d);
	if (rc) {
		tlog(TLOG_WARN, "generation %" PRIu64 " as the delta from %" PRIu64 ": %s; building it whole",
		     r->s->generation, cur->snap->generation, err);
		fabric_put(cur);
		return;
	}
	/* Its tables are copies: the base's shared ones serve instead. */
	snap_free(r->s);
	r->as_delta = 1;
	r->s = s;
	r->base = cur;
	r->is_delta = 1;
	r->decode_ms += util_ms_since(t0);
}

/* A producer that resends G after its OK was lost, or after "OK G
 * not-durable", gets a plain OK only if G is on disk: else the served G
 * is written now. */
static void admit_repeat_durable(struct builder *b, struct run *r)
{
	if (!r->j->persist || !b->state_file[0] ||
	    (b->durable && b->dur_gen == r->s->generation && b->dur_sm == r->s->sm_guid &&
	     b->dur_ts == r->s->timestamp))
		return;
	struct fabric *cur = store_get(b->st);
	if (cur->index && cur->snap->generation == r->s->generation && persist_full(b, cur->snap, NULL, 0, r->err)) {
		tlog(TLOG_WARN, "cannot persist generation %" PRIu64 ": %s", cur->snap->generation, r->err);
		snprintf(r->msg, sizeof(r->msg), "OK %" PRIu64 " already served, not-durable: %.200s",
			 cur->snap->generation, r->err);
	}
	fabric_put(cur);
}

/* The generation rule against what is served. Returns 0 to go on; else
 * the job is answered and everything freed, 1 for a harmless repeat, -1
 * for a refusal. */
static int run_admit(struct builder *b, struct run *r)
{
	struct ingest_job *j = r->j;
	struct snap *s = r->s;
	struct fabric *cur = store_get(b->st);
	const struct snap *cs = cur->index ? cur->snap : NULL;
	int rule = check_generation(cs, s, j->force, r->err, sizeof(r->err));
	if (rule == 0 && cs && !j->force && s->generation <= cs->generation)
		tlog(TLOG_WARN, "generation %" PRIu64 " from %s is below the served %" PRIu64
			       " but comes from a restarted subnet manager (SM 0x%016" PRIx64 " sweep %" PRIu64
			       " after 0x%016" PRIx64 " sweep %" PRIu64 "): serving it",
		     s->generation, j->source, cs->generation, s->sm_guid, s->sweep, cs->sm_guid, cs->sweep);
	else if (rule == 0 && cs && j->force && s->generation <= cs->generation)
		tlog(TLOG_WARN, "generation %" PRIu64 " from %s replaces the served %" PRIu64 " by the operator's force",
		     s->generation, j->source, cs->generation);
	fabric_put(cur);
	if (!rule)
		return 0;
	if (rule < 0) {
		tlog(TLOG_ERR, "rejected snapshot from %s: %s", j->source, r->err);
		record_error(b, r->err);
		snprintf(r->msg, sizeof(r->msg), "ERR STALE %s", r->err);
	} else {
		tlog(TLOG_INFO, "generation %" PRIu64 " from %s is already served: nothing to do", s->generation,
		     j->source);
		snprintf(r->msg, sizeof(r->msg), "OK %" PRIu64 " already served", s->generation);
		admit_repeat_durable(b, r);
	}
	reply(j, rule > 0, r->msg);
	snap_free(s);
	job_free(j);
	run_release(r);
	return rule;
}

/* The team for this build, a delta's or a whole one: the cores this
 * process may use that nobody else runs on now, at most the configured
 * threads, at least one. An OpenMP team that shares a core with another
 * process's busy thread waits at each barrier for its descheduled
 * member: a k=56 cable fault's index took 50-110 ms on two threads beside
 * a busy thread (OpenSM's, finishing its sweep), 16 ms on an idle
 * machine. /proc/loadavg counts the threads running now on the
 * whole machine, this one included: one sample, taken after the decode
 * or apply, when the event loop that received the snapshot is idle. */
static int threads_now(int threads)
{
	cpu_set_t set;
	long cpus = sched_getaffinity(0, sizeof(set), &set) ? sysconf(_SC_NPROCESSORS_ONLN) : CPU_COUNT(&set);
	int want = threads > 0 ? threads : cpus > 1 ? (int)cpus : 1;
	unsigned running = 0;
	FILE *f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fscanf(f, "%*s %*s %*s %u/", &running) != 1)
			running = 0;
		fclose(f);
	}
	if (!running || cpus < 1)
		return want;
	long idle = cpus - (long)(running - 1);
	return idle < 1 ? 1 : idle < want ? (int)idle : want;
}

/* Routes and hierarchy: updated from the base's for a delta, else built
 * afresh. On failure the job is answered and freed. */
static int run_index(struct builder *b, struct run *r)
{
	struct ingest_job *j = r->j;
	uint64_t t1 = util_now_us();
	/* Names come from descriptions and the map alone: a delta that changed
	 * no description, on a base where no two hosts shared a name, has
	 * none either (the check reads every CA: ~30 ms at k=56). */
	int same_names = r->is_delta && !r->info.descs && !r->base->own_map && r->base->map == b->map;
	if (same_names || !route_namemap_disambiguate(r->s, b->map, &r->map, &r->ambiguous, r->amb_example, r->err)) {
		const struct route_namemap *m = r->map ? r->map : b->map;
		r->threads = threads_now(b->threads);
		if (r->is_delta)
			fabric_index_update(r->s, r->base->index, &r->info, m, r->threads, &r->reused, &r->x, r->err);
		else
			fabric_index_build(r->s, m, r->threads, &r->x, r->err);
	}
	if (!r->x) {
		tlog(TLOG_ERR, "cannot build fabric generation %" PRIu64 " from %s: %s", r->s->generation,
		     j->source, r->err);
		record_error(b, r->err);
		snprintf(r->msg, sizeof(r->msg), "ERR BUILD %s", r->err);
		reply(j, 0, r->msg);
		snap_free(r->s);
		route_namemap_free(r->map);
		run_release(r);
		job_free(j);
		return -1;
	}
	r->build_ms = util_ms_since(t1);
	return 0;
}

/* Persist before acknowledging: an OK the producer saw is what a restart
 * serves again. It follows the publication (builder_run()): at k=56 the
 * write and fsync of a full snapshot take longer than everything else,
 * and the fabric's clients should not wait for our disk. A crash in
 * between serves the previous generation again until the producer, which
 * got no OK, sends this one again. A failed write is said in the reply,
 * not fatal: serving the new fabric matters more than remembering it. */
static void run_persist(struct builder *b, struct run *r)
{
	struct ingest_job *j = r->j;
	struct snap *s = r->s;
	uint64_t t0 = util_now_us();
	snprintf(r->msg, sizeof(r->msg), "OK %" PRIu64, s->generation);
	if (j->from_state && b->state_file[0]) {
		/* Read from the directory: it reproduces this (unless the
		 * job also asks to write it whole, below). */
		struct snap_delta_info in = { 0 };
		char e[SNAP_ERR_LEN];
		if (!j->journal_entry)
			set_durable(b, s, 0);
		else if (!snap_delta_peek(j->journal_entry, j->journal_entry_len, &in, e)) {
			b->base_gen = in.base_generation;
			b->base_sm = in.base_sm_guid;
			b->base_ts = in.base_timestamp;
			set_durable(b, s, j->journal_entry_len);
		}
		pthread_mutex_lock(&b->lock);
		b->stats.journal_quarantined += (uint64_t)j->journal_bad;
		if (j->journal_bad)
			snprintf(b->stats.journal_last, sizeof(b->stats.journal_last), "%s", j->journal_why);
		pthread_mutex_unlock(&b->lock);
	}
	if (j->persist && b->state_file[0]) {
		int rc;
		if (r->is_delta && !r->as_delta)
			rc = persist_delta(b, s, &r->info, j->buf, j->len, r->err);
		else
			rc = persist_full(b, s, j->buf, j->len, r->err);
		if (rc) {
			tlog(TLOG_WARN, "cannot persist generation %" PRIu64 ": %s", s->generation, r->err);
			snprintf(r->msg, sizeof(r->msg), "OK %" PRIu64 " not-durable: %.200s", s->generation, r->err);
			pthread_mutex_lock(&b->lock);
			b->stats.not_durable++;
			pthread_mutex_unlock(&b->lock);
		}
	}
	r->persist_ms = util_ms_since(t0);
}

/* The new fabric goes live. Returns it, or NULL (job freed) when out of
 * memory. */
static struct fabric *run_publish(struct builder *b, struct run *r)
{
	struct ingest_job *j = r->j;
	struct fabric_index *x = r->x;
	struct fabric *f = fabric_new(r->s, j->source);
	if (!f) {
		fabric_index_free(x);
		route_namemap_free(r->map);
		run_release(r);
		record_error(b, "out of memory");
		reply(j, 0, "ERR BUILD out of memory");
		job_free(j);
		return NULL;
	}
	f->index = x;
	f->decode_ms = r->decode_ms;
	f->build_ms = r->build_ms;
	f->hist = b->hist;
	f->held = &b->held_gen;
	f->map = r->map ? r->map : b->map;
	f->own_map = r->map;
	r->map = NULL;
	struct fabric *prev = store_get(b->st);
	/* A route index shared with prev's (route_repoint: no port or
	 * description changed) has its hosts, and its links when its port
	 * codes are prev's too (route_relink makes new ones). */
	int same = prev->index && x->rt->shared == prev->index->rt->shared;
	f->gone = gone_next(prev, x->rt, b->hist, same);
	/* the delta's ports say where links changed, when prev is its base */
	const struct snap_delta_info *from_prev = r->is_delta && r->base && r->base->snap == prev->snap ? &r->info : NULL;
	f->gone_cables = gone_cables_next(prev, f->snap, same && x->rt->pt == prev->index->rt->pt, from_prev);
	fabric_put(prev);
	store_swap(b->st, f); /* watchers: run_after_publish() */
	spare_keep_if_of(b, NULL); /* a copy of what is no longer served */
	return f;
}

/* After the persist, so that one line says it all. */
static void run_log(const struct builder *b, const struct run *r, const struct fabric *f)
{
	const struct fabric_index *x = f->index;
	char as[160] = "";
	if (r->as_delta)
		snprintf(as, sizeof(as), "; whole, indexed as the delta from generation %" PRIu64 " (%u LFT blocks, %u ports, "
			 "%u descriptions differ)", r->info.base_generation, r->info.blocks, r->info.ports, r->info.descs);
	/* The next delta's proof: by distance for these LIDs, or walks until
	 * the preparation thread has made the cover (prepare_one). */
	char cover[48] = "cover: pending";
	if (r->cover == -2)
		snprintf(cover, sizeof(cover), "cover: none");
	else if (r->cover >= 0)
		snprintf(cover, sizeof(cover), "cover: %" PRId64 " LIDs", r->cover);
	tlog(TLOG_INFO,
	     "serving generation %" PRIu64 " from %s: %u nodes (%u switches, %u CAs, %u links, %u hosts, depth %u), "
	     "%s %.1f ms, build %.1f ms on %d thread%s (routes %.1f, hierarchy %.1f%s%s); %s; plane %s; persisted in %.1f ms%s",
	     f->snap->generation, r->j->source, f->snap->nnodes, x->switches, x->cas, x->links, x->rt->nhosts,
	     hier_depth(x->hier), r->is_delta && !r->as_delta ? "delta applied in" : "decode", r->decode_ms, r->build_ms,
	     r->threads, r->threads == 1 ? "" : "s", x->route_ms, x->hier_ms,
	     r->reused == 1   ? ", reused: no hop count changed"
	     : r->reused == 2 ? ", reused: no hop count from a leaf changed, renamed over the new links"
			      : "",
	     as, cover, b->plane, r->persist_ms, r->into_spare ? "; applied to the copy made beforehand" : "");
}

/* Work the producer does not wait for: the history, waking watchers,
 * journal compaction, the counters. */
static void run_after_publish(struct builder *b, struct run *r, struct fabric *f)
{
	struct ingest_job *j = r->j;
	/* After the persist: a generation in the history files is durable.
	 * Only then are `watch` clients woken, so that they find it there;
	 * queries have seen it since run_publish(). */
	history_push(b->hist, f, r->base ? r->base->snap : NULL, r->info.block, r->info.blocks);
	store_notify(b->st);
	/* The entry grows with what changed since fabric.snap, and composing
	 * costs its size: past a quarter of the fabric's size, or a few dozen
	 * deltas, write the whole fabric once. Off the acknowledgement path:
	 * the producer already has its OK. */
	if (r->is_delta && j->persist && b->state_file[0] && !b->full_bytes) {
		struct stat st;
		if (!stat(b->state_file, &st))
			b->full_bytes = (size_t)st.st_size;
	}
	if (r->is_delta && j->persist && b->state_file[0] && b->entry_len && b->dur_gen == f->snap->generation &&
	    (b->journal_n >= 32 || (b->full_bytes && b->entry_len * 4 >= b->full_bytes)))
		compact(b, f->snap);
	struct snap_live live;
	snap_count_live(f->snap, &live);
	pthread_mutex_lock(&b->lock);
	b->stats.served_live = live;
	b->stats.accepted++;
	b->stats.published++;
	b->stats.deltas += r->is_delta && !r->as_delta;
	b->stats.last_decode_ms = r->decode_ms;
	b->stats.last_build_ms = r->build_ms;
	int amb_changed = b->stats.ambiguous_names != r->ambiguous;
	b->stats.ambiguous_names = r->ambiguous;
	snprintf(b->stats.ambiguous_example, sizeof(b->stats.ambiguous_example), "%s", r->amb_example);
	pthread_mutex_unlock(&b->lock);
	/* Once per change, not once per sweep: OpenSM delivers every few seconds. */
	if (amb_changed && r->ambiguous)
		tlog(TLOG_WARN, "generation %" PRIu64 ": %u CAs share a hostname and HCA label with another (e.g. \"%s\"): "
		     "each is named by its node GUID; give them their names in the node-name-map",
		     f->snap->generation, r->ambiguous, r->amb_example);
	else if (amb_changed)
		tlog(TLOG_INFO, "generation %" PRIu64 ": no two CAs share a hostname and HCA label any more",
		     f->snap->generation);
}

/* The table chunks to keep ready for this plane's next delta
 * (snap_lft_want_ready; made between snapshots by warm_one): the most
 * that any of the last READY_RECENT deltas that changed tables copied,
 * and after a full snapshot, until the first such delta, the most a
 * reroute is let keep ready: 1/READY_MAX_PART of its tables. The
 * generation a delta replaces gives back about as many chunks when it is
 * freed, so the reserve costs memory only before the first reroute and
 * when reroutes grow. A real OpenSM ftree cable fault at k=56, the first
 * reroute after the subnet manager started, copied 21.6 % of the chunks
 * (79,482 of 368,480: 40.7 MB), every one fresh memory without the
 * reserve. Nothing without the warm interval, which makes it. The list
 * of blocks the apply writes follows the same rule, in blocks: the same
 * fault's 4.2 MB list was fresh memory too. */
#define READY_MAX_PART 4
static void ready_update(struct builder *b, const struct run *r, const struct fabric *f)
{
	uint64_t held = snap_lft_held(f->snap);
	uint64_t most = (held >> SNAP_LFT_CHUNK_SHIFT) / READY_MAX_PART;
	uint64_t most_blocks = held / SNAP_DELTA_BLOCK / READY_MAX_PART;
	most_blocks = snap_delta_list_most(most_blocks > UINT32_MAX ? UINT32_MAX : (uint32_t)most_blocks);
	if (!r->is_delta) {
		memset(b->ready_recent, 0, sizeof(b->ready_recent));
		b->ready_recent[0].chunks = most;
		b->ready_recent[0].blocks = (uint32_t)most_blocks;
		b->ready_at = 0; /* the first reroute's copies replace it */
	} else if (r->copied) {
		unsigned at = b->ready_at++ % READY_RECENT;
		b->ready_recent[at].chunks = r->copied < most ? r->copied : most;
		b->ready_recent[at].blocks = r->info.blocks < most_blocks ? r->info.blocks : (uint32_t)most_blocks;
	} else {
		return;
	}
	uint64_t want = 0;
	uint32_t list = 0;
	for (unsigned i = 0; b->warm_ms && i < READY_RECENT; i++) {
		want = b->ready_recent[i].chunks > want ? b->ready_recent[i].chunks : want;
		list = b->ready_recent[i].blocks > list ? b->ready_recent[i].blocks : list;
	}
	snap_lft_want_ready((int64_t)want - (int64_t)b->ready_want);
	b->ready_want = want;
	/* The list is the process's: the plane that makes it ready (the
	 * first) sizes it (and trims it: builder_run). */
	if (b->warm_ms && b->warm_spare)
		atomic_store(&b->list_want, list);
}

/* The fraction of was that now lacks (0 when it grew). */
static double lost(uint32_t was, uint32_t now)
{
	return was > now ? (double)(was - now) / was : 0;
}

/* r->s shrinks the fabric: held back in place of what was held (agreeing
 * with it if it reaches as many), unless enough agreed. Under b->lock.
 * Returns 1 if it is held (then b owns it and r->s is NULL, unless it
 * repeats the held one), 0 if it is served after all. */
static int hold(struct builder *b, struct run *r, const struct snap_live *now, struct snap **drop)
{
	struct snap *s = r->s;
	if (b->held && b->held->generation == s->generation)
		return 1; /* its producer retrying: still held, no agreement */
	int agrees = b->held && s->generation > b->held->generation && now->cas == b->stats.held_live.cas &&
		     now->switches == b->stats.held_live.switches;
	*drop = b->held;
	b->held = s;
	snprintf(b->held_source, sizeof(b->held_source), "%s", r->j->source);
	b->stats.held_live = *now;
	b->stats.held_agreed = agrees ? b->stats.held_agreed + 1 : 0;
	b->stats.held_gen = s->generation;
	atomic_store(&b->held_gen, s->generation);
	if (!b->agree || b->stats.held_agreed < b->agree) {
		b->stats.held_total++;
		r->s = NULL;
		return 1;
	}
	b->held = NULL;
	b->stats.held_gen = 0;
	atomic_store(&b->held_gen, 0);
	return 0;
}

/* The shrink guard (build.h), before anything is built: an empty fabric is
 * refused, a shrinking one held back. Returns 0 to go on; else the job is
 * answered (ERR EMPTY, ERR HELD) and freed. */
static int run_guard(struct builder *b, struct run *r)
{
	struct ingest_job *j = r->j;
	struct snap *s = r->s, *drop = NULL;
	uint64_t gen = s->generation; /* s may be the builder's, and confirmed, once held */
	struct snap_live now, was = { 0, 0 };
	if (snap_check_hosts(s, r->err)) {
		tlog(TLOG_ERR, "refused generation %" PRIu64 " from %s: %s", gen, j->source, r->err);
		record_error(b, r->err);
		snprintf(r->msg, sizeof(r->msg), "ERR EMPTY generation %" PRIu64 ": %s", gen, r->err);
		goto answered;
	}
	snap_count_live(s, &now);
	struct fabric *cur = store_get(b->st);
	uint64_t cur_gen = cur->snap->generation;
	if (cur->index)
		snap_count_live(cur->snap, &was);
	fabric_put(cur);
	int shrinks = lost(was.cas, now.cas) > b->shrink || lost(was.switches, now.switches) > b->shrink;
	pthread_mutex_lock(&b->lock);
	int held = shrinks && !j->confirmed ? hold(b, r, &now, &drop) : 0;
	unsigned agreed = b->stats.held_agreed;
	if (!held && b->held) {
		tlog(TLOG_INFO, "generation %" PRIu64 " is no longer held back: generation %" PRIu64 " from %s is served",
		     b->held->generation, gen, j->source);
		drop = b->held;
		b->held = NULL;
		b->stats.held_gen = 0;
		atomic_store(&b->held_gen, 0);
	}
	pthread_mutex_unlock(&b->lock);
	snap_free(drop);
	if (!held) {
		if (shrinks && !j->confirmed)
			tlog(TLOG_WARN, "generation %" PRIu64 " from %s reaches %u HCAs and %u switches of the %u and %u of "
			     "generation %" PRIu64 ", as the %u generations held back before it did (--shrink-agree): serving it",
			     gen, j->source, now.cas, now.switches, was.cas, was.switches, cur_gen, agreed);
		return 0;
	}
	/* Short: a producer keeps 200 characters of a refusal (sink.c), less
	 * its sink's name. What it reaches, and how it is served. */
	char more[32] = "", sofar[48] = "";
	if (b->agree) {
		snprintf(more, sizeof(more), ", or %u more like it", b->agree);
		snprintf(sofar, sizeof(sofar), " (%u so far)", agreed);
	}
	snprintf(r->msg, sizeof(r->msg),
		 "ERR HELD generation %" PRIu64 " reaches %u of %u HCAs, %u of %u switches: held back; admin confirm %" PRIu64
		 " serves it%s", gen, now.cas, was.cas, now.switches, was.switches, gen, more);
	tlog(r->s ? TLOG_INFO : TLOG_WARN, "%s generation %" PRIu64 " from %s: it reaches %u of the %u HCAs and %u of the "
	     "%u switches generation %" PRIu64 " reaches, more than %g%% fewer (--shrink-guard %g): not served until the "
	     "operator confirms it (admin: confirm %" PRIu64 ")%s%s", r->s ? "still holding back" : "holding back", gen,
	     j->source, now.cas, was.cas, now.switches, was.switches, cur_gen, b->shrink * 100, b->shrink, gen, more,
	     sofar);
answered:
	reply(j, 0, r->msg);
	snap_free(r->s);
	run_release(r);
	job_free(j);
	return -1;
}

/* What makes the next delta cheap to index (fabric_index_prepare: a pass
 * over every table, 0.3 s of CPU at k=56), for the served generation f:
 * on its own thread, so that it uses the time the builder spends waiting
 * for the disk (the journal's fsync before each OK) and for the next
 * snapshot; paused as soon as one is to be built (prep_pause), and taken
 * up again where it stopped, on the generation the delta made. */
static void prepare_one(struct builder *b, struct fabric *f)
{
	struct fabric_index *x = f->index;
	/* cover_rc: none can be made (the serving line said so). */
	if (!x || x->cover_rc || (x->hc && hopcover_complete(x->hc)))
		return;
	uint64_t t0 = util_now_us();
	uint32_t before = x->hc ? x->hc->ndone : 0;
	int rc = fabric_index_prepare(x, &b->prep_stop);
	if (rc == AN_E_CANCEL)
		tlog(TLOG_DEBUG, "generation %" PRIu64 ": proof by distance paused after %" PRIu32 " of %" PRIu32
		     " switches (%.1f ms): a snapshot arrived", f->snap->generation, x->hc->ndone, x->hc->hd->nsw,
		     util_ms_since(t0));
	else if (rc)
		tlog(TLOG_INFO, "generation %" PRIu64 ": a delta's proof walks (%s, %.1f ms)", f->snap->generation,
		     an_strerror(rc), util_ms_since(t0));
	else
		tlog(TLOG_INFO, "generation %" PRIu64 ": %" PRIu32 " LIDs routed along shortest paths, which a "
		     "delta's proof checks without walks (%.1f ms, %" PRIu32 " of %" PRIu32 " switches checked "
		     "before)", f->snap->generation, x->hc->covered, util_ms_since(t0), before, x->hc->hd->nsw);
}

/* The copy the next delta is written into (b->spare), made once per
 * served generation; read again with the rest. Returns the bytes it
 * read. The copy is not stopped part way: a snapshot that arrives
 * meanwhile waits for it (prep_pause): 12.4 MB at k=56, 2 ms, up to
 * 30 ms where its memory is fresh on the lab's VM. */
static uint64_t warm_spare_copy(struct builder *b, const struct snap *s)
{
	spare_keep_if_of(b, s);
	if (!b->spare && !atomic_load(&b->prep_stop) && (b->spare = snap_dup(s)))
		b->spare_of = s;
	if (!b->spare)
		return 0;
	return util_touch(b->spare->nodes, (size_t)b->spare->nnodes * sizeof(*b->spare->nodes)) +
	       util_touch(b->spare->ports, (size_t)b->spare->nports * sizeof(*b->spare->ports));
}

/* builder_set_warm: the memory the next delta writes made ready (the
 * table chunks it copies to: ready_update; the copy of the served
 * snapshot it is applied to), and the served generation read again,
 * unless a snapshot is to be built (prep_stop, raised until its
 * preparation begins). Here, an interval after the last snapshot, not at
 * once: the generation it replaced has given its chunks back by then,
 * and a delta that follows at once finds the memory its predecessor
 * freed, which the VM's host has not taken back yet. */
static void warm_one(struct builder *b)
{
	if (atomic_load(&b->prep_stop))
		return;
	uint64_t t0 = util_now_us();
	uint64_t made = snap_lft_make_ready(&b->prep_stop);
	if (made)
		tlog(TLOG_INFO, "%.1f MiB of table memory made ready for the next delta's copies (%.1f ms)",
		     made / 1048576.0, util_ms_since(t0));
	struct fabric *f = store_get(b->st);
	t0 = util_now_us();
	uint64_t n = snap_touch(f->snap, &b->prep_stop) + fabric_index_touch(f->index, &b->prep_stop) +
		     warm_spare_copy(b, f->snap);
	if (b->warm_spare) {
		unsigned blocks = atomic_load(&b->list_want);
		uint64_t list = snap_delta_list_ready(blocks, &b->prep_stop);
		if (list)
			tlog(TLOG_INFO, "a list for %u LFT blocks made ready for the next delta (%.1f MiB)", blocks,
			     list / 1048576.0);
		n += snap_lft_touch_spare(&b->prep_stop) + list + snap_bytes_touch_kept();
	}
	double ms = util_ms_since(t0);
	fabric_put(f);
	pthread_mutex_lock(&b->lock);
	b->stats.warm_bytes = n;
	b->stats.warm_ms = ms;
	pthread_mutex_unlock(&b->lock);
}

/* Waits for the next generation to prepare, for the end, or with
 * builder_set_warm for the interval to pass (then neither is set):
 * with prep_lock held. */
static void prep_wait(struct builder *b)
{
	if (!b->warm_ms) {
		while (!b->prep_f && !b->prep_quit)
			pthread_cond_wait(&b->prep_cond, &b->prep_lock);
		return;
	}
	struct timespec until = util_deadline(CLOCK_MONOTONIC, b->warm_ms);
	while (!b->prep_f && !b->prep_quit)
		if (pthread_cond_timedwait(&b->prep_cond, &b->prep_lock, &until) == ETIMEDOUT)
			return;
}

static void *prep_main(void *arg)
{
	struct builder *b = arg;
	/* The builder's team size (index_new), for this thread's team too;
	 * background work, at the heavy workers' priority (pool.c), which
	 * its OpenMP team's threads inherit. */
	if (b->threads > 0)
		omp_set_num_threads(b->threads);
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	pthread_mutex_lock(&b->prep_lock);
	for (;;) {
		prep_wait(b);
		if (b->prep_quit)
			break;
		struct fabric *f = b->prep_f;
		b->prep_f = NULL;
		b->prep_busy = 1;
		pthread_mutex_unlock(&b->prep_lock);
		if (f) {
			prepare_one(b, f);
			fabric_put(f);
		} else {
			warm_one(b); /* the interval passed */
		}
		pthread_mutex_lock(&b->prep_lock);
		b->prep_busy = 0;
		pthread_cond_broadcast(&b->prep_cond);
	}
	pthread_mutex_unlock(&b->prep_lock);
	return NULL;
}

/* Prepares the served generation from now on (a no-op without the
 * thread: builder_run() called synchronously). */
static void prep_begin(struct builder *b)
{
	if (!b->prep_started)
		return;
	struct fabric *f = store_get(b->st), *drop;
	pthread_mutex_lock(&b->prep_lock);
	drop = b->prep_f;
	b->prep_f = f;
	atomic_store(&b->prep_stop, 0);
	pthread_cond_signal(&b->prep_cond);
	pthread_mutex_unlock(&b->prep_lock);
	fabric_put(drop);
}

/* Before anything reads or replaces the served index: the preparation
 * writes its cover. Returns once it has stopped: within a switch's table
 * (a fraction of a millisecond), or after the search for distances when
 * it is in that (~13 ms at k=56, once per new set of links). */
static void prep_pause(struct builder *b)
{
	if (!b->prep_started)
		return;
	atomic_store(&b->prep_stop, 1);
	pthread_mutex_lock(&b->prep_lock);
	struct fabric *drop = b->prep_f;
	b->prep_f = NULL;
	while (b->prep_busy)
		pthread_cond_wait(&b->prep_cond, &b->prep_lock);
	pthread_mutex_unlock(&b->prep_lock);
	fabric_put(drop);
}

int builder_run(struct builder *b, struct ingest_job *j)
{
	struct run r = { .j = j };
	prep_pause(b);
	if (run_decode(b, &r))
		return -1;
	int rule = run_admit(b, &r);
	if (rule)
		return rule > 0 ? 0 : -1;
	if (run_guard(b, &r))
		return -1;
	if (!r.is_delta)
		run_as_delta(b, &r);
	if (run_index(b, &r))
		return -1;
	struct fabric *f = run_publish(b, &r);
	if (!f)
		return -1;
	r.cover = f->index->cover_rc ? -2 : -1;
	if (f->index->hc && hopcover_complete(f->index->hc))
		r.cover = f->index->hc->covered;
	ready_update(b, &r, f);
	prep_begin(b);
	run_persist(b, &r);
	run_log(b, &r, f);
	/* Only now: a client that queries right after its producer's OK must
	 * see this generation, not the one before. */
	reply(j, 1, r.msg);
	run_after_publish(b, &r, f);
	run_release(&r);
	/* Once the delta's list is kept again: one far larger than the
	 * lists wanted ready (a full snapshot's, a cable fault's 8 reroutes
	 * ago) is freed, else every small delta would take it and keep it. */
	if (b->warm_ms && b->warm_spare)
		snap_delta_list_trim(atomic_load(&b->list_want));
	job_free(j);
#ifdef __GLIBC__
	/* After a full snapshot: the generation it replaced and the decoded
	 * copy were freed, and glibc keeps their free pages in the builder's
	 * arena (k=56: 388 MiB held after a whole replacement, 348 after a
	 * trim). Not after a delta: the pages a trim gives back are the next
	 * apply's to fault again (apply median 9 -> 15 ms at k=56), for
	 * 4.5 MB. */
	if (!r.is_delta || r.as_delta)
		malloc_trim(0);
#endif
	return 0;
}

/* The generation a job claims: the header's for an encoded snapshot. */
static uint64_t job_generation(const struct ingest_job *j)
{
	if (j->snap)
		return j->snap->generation;
	uint64_t g = 0;
	if (j->buf && j->len >= 24)
		for (int i = 7; i >= 0; i--)
			g = g << 8 | j->buf[16 + i];
	return g;
}

static int feed_due(const struct builder *b)
{
	return b->feed.buf && !b->feed.orphan && !b->feed.nomem && b->feed.have > b->feed.fed;
}

/* The tables of the bytes that arrived since the last step, with the lock
 * held (let go meanwhile): room for them first, made on several cores
 * (lft_reserve), then their copies. At most 4 steps' worth at a time, so
 * that a snapshot to build or a stop waits for 100 ms at most. */
static void feed_step(struct builder *b)
{
	const uint8_t *buf = b->feed.buf;
	size_t fed = b->feed.fed, have = b->feed.have - fed > 4 * SNAP_EARLY_STEP ? fed + 4 * SNAP_EARLY_STEP
										  : b->feed.have;
	struct snap_early *e = b->feed.e;
	b->feed.busy = 1;
	pthread_mutex_unlock(&b->lock);
	(void)snap_make_room(have - fed);
	int nomem = snap_early_feed(e, buf, have);
	if (nomem)
		tlog(TLOG_WARN, "out of memory copying an arriving snapshot's tables: its decode copies the rest");
	pthread_mutex_lock(&b->lock);
	b->feed.busy = 0;
	b->feed.fed = have;
	b->feed.nomem = nomem;
	if (b->feed.orphan) {
		e = feed_take(b);
		pthread_mutex_unlock(&b->lock);
		free((void *)buf);
		snap_early_free(e);
		snap_release_room();
		pthread_mutex_lock(&b->lock);
	}
}

static void *builder_main(void *arg)
{
	struct builder *b = arg;
	pthread_mutex_lock(&b->lock);
	for (;;) {
		while (!b->pending && !b->room && !feed_due(b) && !b->trim && !b->stop)
			pthread_cond_wait(&b->cond, &b->lock);
		if (b->stop)
			break;
		if (!b->pending && feed_due(b)) {
			feed_step(b);
			continue;
		}
		if (!b->pending && b->trim) {
			b->trim = 0;
			pthread_mutex_unlock(&b->lock);
			snap_release_room();
			pthread_mutex_lock(&b->lock);
			continue;
		}
		uint64_t room = b->room;
		b->room = 0;
		if (!b->pending) {
			pthread_mutex_unlock(&b->lock);
			(void)snap_make_room(room);
			pthread_mutex_lock(&b->lock);
			continue;
		}
		struct ingest_job *j = b->pending;
		b->pending = NULL;
		pthread_mutex_unlock(&b->lock);
		/* A snapshot refused or already served paused the preparation
		 * too: it goes on (after a publish it runs already, and the
		 * second hand-over finds the cover complete or goes on). */
		builder_run(b, j);
		snap_release_room();
		prep_begin(b);
		pthread_mutex_lock(&b->lock);
	}
	struct ingest_job *left = b->pending;
	b->pending = NULL;
	pthread_mutex_unlock(&b->lock);
	if (left) {
		if (left->done)
			left->done(left->arg, 0, "ERR SHUTDOWN topod is stopping");
		job_drop(b, left);
	}
	return NULL;
}

int builder_start(struct builder *b)
{
	if (pthread_create(&b->prep_thr, NULL, prep_main, b))
		return -1;
	b->prep_started = 1;
	/* What was served before (the state directory's) gets its
	 * preparation too; before the builder runs, which pauses it. */
	prep_begin(b);
	if (pthread_create(&b->thr, NULL, builder_main, b)) {
		builder_stop(b);
		return -1;
	}
	b->started = 1;
	return 0;
}

void builder_make_room(struct builder *b, uint64_t bytes)
{
	pthread_mutex_lock(&b->lock);
	b->room = bytes;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

int builder_feeding(struct builder *b)
{
	pthread_mutex_lock(&b->lock);
	int busy = b->feed.buf != NULL;
	pthread_mutex_unlock(&b->lock);
	return busy;
}

int builder_feed(struct builder *b, const uint8_t *buf, size_t have)
{
	pthread_mutex_lock(&b->lock);
	int mine = b->feed.buf == buf && !b->feed.orphan;
	if (!b->feed.buf && (b->feed.e = snap_early_new())) {
		b->feed.buf = buf;
		mine = 1;
	}
	if (mine && have > b->feed.have) {
		b->feed.have = have;
		pthread_cond_signal(&b->cond);
	}
	pthread_mutex_unlock(&b->lock);
	return mine ? 0 : -1;
}

void builder_feed_drop(struct builder *b, uint8_t *buf)
{
	struct snap_early *e = NULL;
	int later = 0;
	pthread_mutex_lock(&b->lock);
	if (buf && b->feed.buf == buf) {
		if (b->feed.busy) {
			later = b->feed.orphan = 1;
		} else {
			e = feed_take(b);
			b->trim = 1;
			pthread_cond_signal(&b->cond);
		}
	}
	pthread_mutex_unlock(&b->lock);
	snap_early_free(e);
	if (!later)
		free(buf);
}

void builder_submit(struct builder *b, struct ingest_job *j)
{
	pthread_mutex_lock(&b->lock);
	b->stats.received++;
	struct ingest_job *old = b->pending, *refused = NULL, *retry = NULL;
	uint64_t queued = old ? job_generation(old) : 0;
	if (old && !j->force && !old->force && job_generation(j) < queued) {
		/* Arrival order is not generation order (producers retry with
		 * backoff): the queued newer one stays. */
		refused = j;
		old = NULL;
		b->stats.rejected++;
	} else if (old && old->confirmed && !j->confirmed && !j->force && job_generation(j) == queued) {
		/* The producer's retry of the generation the operator has just
		 * confirmed: the confirmed one stays (the retry would be held
		 * back again), and the retry is answered as superseded. */
		b->stats.superseded++;
		retry = j;
		old = NULL;
	} else {
		b->pending = j;
		if (old)
			b->stats.superseded++;
	}
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
	if (refused) {
		char msg[160];
		snprintf(msg, sizeof(msg), "ERR STALE generation %" PRIu64 " is older than generation %" PRIu64
					   ", which is queued",
			 job_generation(refused), queued);
		tlog(TLOG_WARN, "snapshot from %s: %s", refused->source, msg + 10);
		if (refused->done)
			refused->done(refused->arg, 0, msg);
		job_drop(b, refused);
	}
	if (retry) {
		tlog(TLOG_INFO, "generation %" PRIu64 " from %s: the operator's confirmed copy is queued", queued,
		     retry->source);
		if (retry->done)
			retry->done(retry->arg, 1, "OK superseded");
		job_drop(b, retry);
	}
	if (old) {
		/* Never validated, but a newer snapshot of the same fabric is
		 * queued behind it: the producer has nothing to resend. */
		tlog(TLOG_INFO, "snapshot from %s superseded by a newer one before it was built", old->source);
		if (old->done)
			old->done(old->arg, 1, "OK superseded");
		job_drop(b, old);
	}
}

void builder_stop(struct builder *b)
{
	if (b->started) {
		pthread_mutex_lock(&b->lock);
		b->stop = 1;
		pthread_cond_signal(&b->cond);
		pthread_mutex_unlock(&b->lock);
		pthread_join(b->thr, NULL);
		b->started = 0;
	}
	if (b->prep_started) {
		prep_pause(b);
		pthread_mutex_lock(&b->prep_lock);
		b->prep_quit = 1;
		pthread_cond_signal(&b->prep_cond);
		pthread_mutex_unlock(&b->prep_lock);
		pthread_join(b->prep_thr, NULL);
		b->prep_started = 0;
	}
}

void builder_free(struct builder *b)
{
	if (!b)
		return;
	builder_stop(b);
	job_free(b->pending);
	if (b->feed.orphan)
		free((void *)b->feed.buf);
	snap_early_free(feed_take(b));
	snap_free(b->held);
	history_free(b->hist);
	snap_free(b->spare);
	snap_lft_want_ready(-(int64_t)b->ready_want);
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cond);
	pthread_mutex_destroy(&b->prep_lock);
	pthread_cond_destroy(&b->prep_cond);
	free(b);
}

void builder_note_rejected(struct builder *b, const char *why)
{
	pthread_mutex_lock(&b->lock);
	b->stats.received++;
	pthread_mutex_unlock(&b->lock);
	record_error(b, why);
}

void builder_get_stats(struct builder *b, struct builder_stats *out)
{
	pthread_mutex_lock(&b->lock);
	*out = b->stats;
	pthread_mutex_unlock(&b->lock);
}

void builder_stats_add(struct builder_stats *to, const struct builder_stats *o)
{
	to->received += o->received;
	to->accepted += o->accepted;
	to->rejected += o->rejected;
	to->superseded += o->superseded;
	to->published += o->published;
	to->deltas += o->deltas;
	to->journal_quarantined += o->journal_quarantined;
	to->journal_full_writes += o->journal_full_writes;
	to->not_durable += o->not_durable;
	to->ambiguous_names += o->ambiguous_names;
	to->warm_bytes += o->warm_bytes;
	if (o->ambiguous_example[0])
		memcpy(to->ambiguous_example, o->ambiguous_example, sizeof(to->ambiguous_example));
	if (o->journal_last[0])
		memcpy(to->journal_last, o->journal_last, sizeof(to->journal_last));
	if (o->last_error_us > to->last_error_us) {
		to->last_error_us = o->last_error_us;
		memcpy(to->last_error, o->last_error, sizeof(to->last_error));
	}
}

const char *builder_state_file(const struct builder *b)
{
	return b->state_file;
}

int builder_set_history(struct builder *b, unsigned gens, size_t bytes, const char *state_dir)
{
	char dir[4200] = "";
	if (state_dir && *state_dir)
		snprintf(dir, sizeof(dir), "%s/history", state_dir);
	b->hist = history_new(gens, bytes, dir[0] ? dir : NULL);
	return b->hist ? 0 : -1;
}

struct history *builder_history(struct builder *b)
{
	return b->hist;
}

void builder_set_plane(struct builder *b, const char *name)
{
	snprintf(b->plane, sizeof(b->plane), "%s", name);
}

void builder_set_guard(struct builder *b, double shrink, unsigned agree)
{
	b->shrink = shrink;
	b->agree = agree;
}

void builder_set_warm(struct builder *b, unsigned ms, int spare)
{
	b->warm_ms = ms;
	b->warm_spare = spare;
}

int builder_confirm(struct builder *b, uint64_t gen, char err[SNAP_ERR_LEN])
{
	struct ingest_job *j = calloc(1, sizeof(*j));
	pthread_mutex_lock(&b->lock);
	if (!j || !b->held || b->held->generation != gen) {
		if (!j)
			snprintf(err, SNAP_ERR_LEN, "out of memory");
		else if (b->held)
			snprintf(err, SNAP_ERR_LEN, "plane %s holds back generation %" PRIu64 ", not %" PRIu64, b->plane,
				 b->held->generation, gen);
		else
			snprintf(err, SNAP_ERR_LEN, "plane %s holds back no generation", b->plane);
		pthread_mutex_unlock(&b->lock);
		free(j);
		return -1;
	}
	j->snap = b->held;
	b->held = NULL;
	b->stats.held_gen = 0;
	atomic_store(&b->held_gen, 0);
	b->stats.confirmed_total++;
	snprintf(j->source, sizeof(j->source), "%.80s, confirmed", b->held_source);
	pthread_mutex_unlock(&b->lock);
	j->persist = 1;
	j->confirmed = 1;
	tlog(TLOG_WARN, "generation %" PRIu64 " confirmed by the operator: serving it (plane %s)", gen, b->plane);
	builder_submit(b, j);
	return 0;
}
