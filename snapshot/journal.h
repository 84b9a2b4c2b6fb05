/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * journal.h - the state directory's delta journal.
 *
 * A delta that topod accepts is made durable without rewriting the whole
 * fabric: STATE/fabric.delta.<generation> (20 digits), written atomically
 * and fsynced before the producer's OK, is one delta from fabric.snap to
 * that generation (cumulative: the builder composes the previous entry
 * with the new delta, snap_delta_compose(), in time linear in their sizes).
 * So entries do not depend on each other: the newest intact one is the
 * state, and damage to one file can lose at most the generation that file
 * holds itself, never a later one. The builder keeps the previous entry
 * until the next is durable, then removes it; it writes an entry only on
 * top of a generation the directory already reproduces (otherwise it
 * writes the whole fabric, see topod/build.c). A full snapshot, or a
 * compaction when the entry grows, rewrites fabric.snap and then removes
 * the entries; a crash between the two leaves entries fabric.snap already
 * holds, which start-up removes.
 *
 * Start-up (journal_replay) tries the entries above fabric.snap's
 * generation newest first and serves the first that applies. An entry
 * that is damaged (checksum, truncation, a record out of range) or does
 * not apply (another base) is quarantined: renamed to
 * fabric.delta.<generation>.corrupt (.corrupt.N if that exists), reported
 * with its reason, never deleted, and never a reason to ignore the others.
 * Entries written by earlier versions (each against the one before) are
 * still replayed as a chain; topod then folds them into fabric.snap.
 *
 * So the fabric a state directory holds is fabric.snap plus its newest
 * intact entry: snap_read_state() is the one way to read it (topod at
 * start, topo-routeopt --state-dir, topo-snap on a directory), without
 * changing anything.
 */
#ifndef TOPOD_JOURNAL_H
#define TOPOD_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot.h"

#define JOURNAL_PREFIX "fabric.delta."
#define JOURNAL_CORRUPT ".corrupt"

/* Writes the entry of generation gen durably. */
int journal_append(const char *dir, uint64_t gen, const uint8_t *buf, size_t len, char err[SNAP_ERR_LEN]);
/* The entry of generation gen, read whole (*buf malloc'd); -1 with err
 * when it cannot be read. Its contents are not checked. */
int journal_read(const char *dir, uint64_t gen, uint8_t **buf, size_t *len, char err[SNAP_ERR_LEN]);
/* Removes every entry of generation <= upto (never a quarantined one);
 * returns how many. */
int journal_clear(const char *dir, uint64_t upto);

/* What journal_replay() found. */
struct journal_replay {
	int quarantine;   /* in: rename bad entries aside, remove stale ones (topod); 0 changes nothing */
	void (*report)(void *arg, const char *msg); /* in, may be NULL: each bad or stale entry */
	void *arg;
	int applied;      /* out: entries applied (1; more for a chain of the earlier format) */
	int chained;      /* out: the result came through an earlier version's chain */
	uint8_t *entry;   /* out: the entry applied, against fabric.snap (caller frees), or NULL */
	size_t entry_len;
	int bad, stale;   /* out: entries found damaged or inapplicable; entries fabric.snap holds */
	char why[SNAP_ERR_LEN]; /* out: the last bad entry's reason, "" if none */
};

/* Applies the newest intact entry above (*s)->generation (fabric.snap),
 * replacing *s. Returns the entries applied (0: none, *s unchanged). */
int journal_replay(const char *dir, struct snap **s, struct journal_replay *jr);

/* DIR/fabric.snap with its journal applied, read-only. *ndeltas (may be
 * NULL) gets how many entries applied; why (may be NULL) is set when an
 * entry was damaged or did not apply. -1 with err when fabric.snap cannot
 * be read. */
int snap_read_state(const char *dir, struct snap **out, int *ndeltas, char why[SNAP_ERR_LEN],
		    char err[SNAP_ERR_LEN]);

#endif
