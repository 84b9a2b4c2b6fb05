/*
 * journal.h - the state directory's delta journal.
 *
 * A delta that topod accepts is made durable as itself, not by rewriting
 * the whole fabric: STATE/fabric.delta.<generation> (20 digits), written
 * atomically and fsynced before the producer's OK, applies to the
 * generation before it (STATE/fabric.snap or the previous journal entry).
 * A full snapshot, or a compaction when the journal grows, rewrites
 * fabric.snap and then removes the entries it covers; a crash between the
 * two leaves entries that start-up skips (generation not above the file's).
 * Start-up (journal_replay) applies the entries above fabric.snap's
 * generation in order and stops at the first that does not apply.
 *
 * So the fabric a state directory holds is fabric.snap plus its journal:
 * snap_read_state() is the one way to read it (topod at start, topo-routeopt
 * --state-dir, topo-snap on a directory).
 */
#ifndef TOPOD_JOURNAL_H
#define TOPOD_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot.h"

#define JOURNAL_PREFIX "fabric.delta."

/* Writes the delta of generation gen durably. */
int journal_append(const char *dir, uint64_t gen, const uint8_t *buf, size_t len, char err[SNAP_ERR_LEN]);
/* Removes every entry of generation <= upto; returns how many. */
int journal_clear(const char *dir, uint64_t upto);
/* Applies the entries above (*s)->generation, oldest first, replacing *s;
 * returns how many applied. A damaged or unrelated entry stops it, with
 * why (may be NULL) saying which: what was applied so far is what a
 * restart serves. */
int journal_replay(const char *dir, struct snap **s, char why[SNAP_ERR_LEN]);

/* DIR/fabric.snap with its journal applied. *ndeltas (may be NULL) gets how
 * many entries applied; why (may be NULL) is set when one stopped the
 * replay. -1 with err when fabric.snap cannot be read. */
int snap_read_state(const char *dir, struct snap **out, int *ndeltas, char why[SNAP_ERR_LEN],
		    char err[SNAP_ERR_LEN]);

#endif
