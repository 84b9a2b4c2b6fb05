/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * build.h - ingest pipeline: decode -> validate -> generation check ->
 * build -> persist -> acknowledge -> publish.
 *
 * One builder thread does the work so that the event loop keeps answering
 * queries from the previous fabric meanwhile. Only the newest submission
 * waits: a snapshot that arrives while another is still queued replaces it
 * (the replaced one is reported "superseded"), so a burst of reroutes costs
 * one build, not one per reroute. "Newest" is by generation, not arrival: a
 * late older snapshot never replaces a queued newer one.
 *
 * Generations never go backwards. A snapshot is served only if its
 * generation is above the served one; an equal generation with the same
 * contents is a harmless repeat ("OK G already served"), with different
 * contents it is refused (ERR STALE), and so is an older one, unless
 *   - the subnet manager restarted: a different SM GUID, or its sweep
 *     counter went back, with a snapshot taken later than the served one
 *     (a producer whose generation counter restarted), or
 *   - the operator forces it (admin `restore PATH force`: restoring a backup).
 * The state file keeps the rule across restarts of topod.
 *
 * A delta snapshot (delta.h) applies to the served generation only; one
 * against anything else is refused with ERR NOBASE, and the producer sends
 * a full snapshot.
 *
 * Acknowledgement: "OK G" is sent once the snapshot is decoded, built and
 * persisted (fsync of the file and of the directory), so an OK survives a
 * crash; if persisting fails the reply says so ("OK G not-durable: why")
 * and the fabric is served anyway.
 *
 * The shrink guard (docs/reliability.md, i37.3): a fabric that reaches no
 * host (snap_check_hosts) is never served, whoever sends it (ERR EMPTY).
 * A producer's generation that reaches more than a fraction fewer of the
 * served HCAs or switches (snap_count_live; builder_set_guard) is held
 * back, not served, and answered ERR HELD, which a producer takes as a
 * failed delivery and retries: it is served when the operator confirms it
 * (builder_confirm: admin `confirm G`), or when `agree` later generations
 * reach as many HCAs and switches as it does; a generation that does not
 * shrink is served and drops it. The operator's own fabrics (start-up,
 * reload, restore, confirm) are not held. One held generation per plane,
 * in memory only: a restarted topod gets it again from its producer,
 * which never had an OK for it. A delta is persisted as a journal entry
 * (journal.h) only when its base is what the state directory reproduces;
 * otherwise (its base was not-durable, or a write failed) as the whole
 * fabric, so a plain OK always means a restart serves G.
 */
#ifndef TOPOD_BUILD_H
#define TOPOD_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "route.h"
#include "snapshot.h"
#include "store.h"

/* ok: 1 accepted (msg "OK <generation>..."), 0 rejected (msg "ERR ...").
 * Called from the builder thread, or from builder_run() synchronously. */
typedef void (*ingest_done_fn)(void *arg, int ok, const char *msg);

struct ingest_job {
	uint8_t *buf;       /* encoded snapshot (owned), or NULL if snap is set */
	size_t len;
	struct snap *snap;  /* already decoded (owned), e.g. from text dumps */
	int persist;        /* write it to the state directory once accepted */
	int force;          /* operator's restore: skip the generation rule */
	int confirmed;      /* the operator's (start-up, reload, restore, confirm): not held by the shrink guard */
	char source[96];    /* "ingest unix", "file /path", ... for logs and info */
	/* Read from the state directory (startup_job): its fabric is what the
	 * directory reproduces, so the next delta is journalled on top of it. */
	int from_state;
	/* Ingest: when its first bytes and its last were read (util_now_us;
	 * 0: not from a socket), for the log. */
	uint64_t first_us, done_us;
	uint8_t *journal_entry;  /* the journal entry it came through (owned), NULL: fabric.snap alone */
	size_t journal_entry_len;
	int journal_bad;         /* entries quarantined reading it, and the last reason */
	char journal_why[SNAP_ERR_LEN];
	ingest_done_fn done;
	void *arg;
};

struct builder_stats {
	uint64_t received, accepted, rejected, superseded, published, deltas;
	double last_decode_ms, last_build_ms;
	char last_error[SNAP_ERR_LEN];
	uint64_t last_error_us;
	/* The state directory: journal entries quarantined (at start), deltas
	 * written as the whole fabric because their base was not on disk, and
	 * replies "not-durable"; the last quarantine's reason. */
	uint64_t journal_quarantined, journal_full_writes, not_durable;
	char journal_last[SNAP_ERR_LEN];
	/* CAs of the served generation named by GUID because another CA has
	 * their hostname and HCA label too (namemap.h), and one such name. */
	uint32_t ambiguous_names;
	char ambiguous_example[SNAP_ERR_LEN];
	/* The shrink guard: the generation held back (0: none), what it and
	 * the served one reach (snap_count_live), how many later generations
	 * agreed with it; generations held back and confirmed, ever. */
	uint64_t held_gen;
	struct snap_live held_live, served_live;
	unsigned held_agreed;
	uint64_t held_total, confirmed_total;
	/* builder_set_warm: the bytes the last reading covered, and its time. */
	uint64_t warm_bytes;
	double warm_ms;
};

struct builder;

/* state_dir may be NULL (no persistence); map (may be NULL) names hosts and
 * must outlive the builder. */
struct builder *builder_new(struct store *st, const char *state_dir, int threads,
			    const struct route_namemap *map);
int builder_start(struct builder *b);   /* starts the thread */
void builder_stop(struct builder *b);   /* finishes the running job, drops queued ones, joins */
void builder_free(struct builder *b);

/* Keeps the last gens generations within bytes (history.h), in
 * STATE/history too when state_dir is set. Before the first job. */
int builder_set_history(struct builder *b, unsigned gens, size_t bytes, const char *state_dir);
struct history *builder_history(struct builder *b);
/* The plane it builds, for its log lines. */
void builder_set_plane(struct builder *b, const char *name);
/* The shrink guard: a generation that reaches more than shrink (0..1) of
 * the served HCAs or switches fewer is held back (1: never), and served
 * once agree later ones reach as many as it does (0: only by confirming).
 * Before the first job. */
void builder_set_guard(struct builder *b, double shrink, unsigned agree);
/* Every ms milliseconds (0: never) while no snapshot is being built, the
 * preparation thread reads the served generation's tables and index one
 * byte a page (snap_touch, fabric_index_touch), and with spare the LFT
 * pool's free chunks (snap_lft_touch_spare: the process's, one builder's
 * job), so that under shadow paging the next delta does not find them
 * unmapped. Before the start. */
void builder_set_warm(struct builder *b, unsigned ms, int spare);
/* Serves the generation held back if it is gen: queued as the operator's.
 * 0, or -1 with err saying what is held (on which plane: plane names it). */
int builder_confirm(struct builder *b, uint64_t gen, char err[SNAP_ERR_LEN]);

/* Queues a job (takes ownership of job and its buffers). */
void builder_submit(struct builder *b, struct ingest_job *job);
/* bytes of a full snapshot have arrived: while the rest does, the builder
 * thread, when idle, makes room for its tables (snap_make_room), so that
 * the decode after builder_submit() does not fault fresh memory in. What
 * is left unused is given back after the builder's next job. */
void builder_make_room(struct builder *b, uint64_t bytes);
/* A large full snapshot is arriving into buf, which stays where it is
 * until it is let go: the builder thread, when idle, copies the tables of
 * its first have bytes into chunks (snap_early_feed, after making room for
 * them), so that its decode takes them instead. One snapshot at a time per
 * builder: 0 when it feeds this one (have may then grow), -1 when it feeds
 * another or is out of memory (the caller makes room instead). */
int builder_feed(struct builder *b, const uint8_t *buf, size_t have);
/* Is it feeding one? (A hint: the answer may change at once.) */
int builder_feeding(struct builder *b);
/* Frees a buffer given to builder_feed(): now, or once the builder thread
 * has finished reading it. Every way a fed buffer is freed goes through
 * here, but as a job's buffer (builder_submit: the decode takes the
 * tables). */
void builder_feed_drop(struct builder *b, uint8_t *buf);
/* Runs a job in the calling thread; returns 0 if it was published. */
int builder_run(struct builder *b, struct ingest_job *job);

/* Counts a snapshot refused before it reached the builder (bad header). */
void builder_note_rejected(struct builder *b, const char *why);
void builder_get_stats(struct builder *b, struct builder_stats *out);
/* Adds o's counts to to, as one fabric's counters over several planes: the
 * newest last error, the last journal quarantine and ambiguous name seen;
 * the times and the shrink guard stay to's. */
void builder_stats_add(struct builder_stats *to, const struct builder_stats *o);
/* The state file path ("" when none). Borrowed until builder_free(). */
const char *builder_state_file(const struct builder *b);

#endif
