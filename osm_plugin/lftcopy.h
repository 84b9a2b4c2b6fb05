/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lftcopy.h - the plugin's copy of every switch's LFT, kept from one routing
 * pass to the next so that the copy under OpenSM's lock costs what changed.
 *
 * OpenSM (3.3.x, osm_lin_fwd_rcv.c) stores an LFT block into the switch's
 * table only when the switch acknowledges it, and reports each stored block
 * as OSM_EVENT_ID_LFT_CHANGE (LFT_CHANGED_BLOCK, the switch and the block),
 * with its lock held exclusively. The plugin notes those (switch, block)
 * pairs here; at the next routing pass, with the lock held for reading,
 * it copies the noted blocks and keeps the rest of its own last copy.
 *
 * The copy is then exactly OpenSM's tables as long as every change to a
 * switch's table came with an event. Where OpenSM changes a table without
 * one, or may have, the whole table (or the whole fabric) is copied:
 *  - no previous copy, or the last one failed;
 *  - more noted blocks than the list holds (a whole-fabric reroute: copying
 *    everything is then about as cheap);
 *  - the first master sweep or a return from standby (OpenSM reports no
 *    LFT_CHANGE while first_time_master_sweep is set);
 *  - a failed Set in this pass (OpenSM zeroes its copy of a block before
 *    sending it and reports nothing if the Set fails; a failed Set raises
 *    subnet_initialization_error, which the plugin reads at the routing
 *    pass; after an unreported pass the next one sends the zeroed block
 *    again, see copy_fabric());
 *  - per switch: a switch object, table buffer (the unicast cache and a
 *    growing LID space replace it), length or position not the ones of the
 *    last copy.
 * Pointers noted from events are keys only, never dereferenced: a switch
 * freed since is simply not found among the live ones.
 *
 * Threads: lfc_note() and lfc_invalidate() from any thread; everything else
 * from OpenSM's state-manager thread. Nothing here allocates between
 * lfc_begin() and lfc_end(), which run under OpenSM's lock.
 */
#ifndef OSMTOPO_LFTCOPY_H
#define OSMTOPO_LFTCOPY_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define LFC_BLOCK 64 /* LFT entries per block (IB_SMP_DATA_SIZE) */

/* Pointer -> index, open addressing; reused across passes. */
struct ptrmap {
	const void **key;
	uint32_t *val;
	size_t cap; /* power of two, > 2 x entries */
};

int ptrmap_reset(struct ptrmap *m, size_t n);
void ptrmap_put(struct ptrmap *m, const void *k, uint32_t v);
int64_t ptrmap_get(const struct ptrmap *m, const void *k);
void ptrmap_free(struct ptrmap *m);

struct lfc_note {
	const void *sw;
	uint32_t block;
};

/* What the stage held for node i after the last copy (sw NULL: no LFT). */
struct lfc_mirror {
	const void *sw;
	const void *lft;
	uint64_t guid;
	uint64_t off;
	uint32_t len;
};

struct lfc_stats {
	uint32_t whole;   /* switches whose table was copied whole */
	uint32_t kept;    /* switches whose last copy was kept */
	uint64_t notes;   /* block notes consumed */
	uint64_t blocks;  /* blocks copied from notes */
	int full;         /* the pass copied every table whole */
	const char *why;  /* why, when full */
};

struct lfc {
	pthread_mutex_t lock;   /* guards note[], n, cap, lost, lost_why */
	struct lfc_note *note;
	size_t n, cap;
	int lost;               /* a change may have gone unnoted: copy all */
	const char *lost_why;

	/* state-manager thread only */
	struct lfc_mirror *mir;
	size_t mir_cap;
	uint32_t mir_n;
	int valid;              /* mir[] and the stage hold the last pass */
	int overflow;           /* this walk had more nodes than mir[] */
	struct ptrmap kept;     /* kept switch -> node index, this pass */
	struct ptrmap last;     /* switch -> node index of the last pass (lfc_warm) */
	size_t done;            /* notes lfc_apply() went through, this pass */
	struct lfc_stats st;
};

int lfc_init(struct lfc *c);
void lfc_free(struct lfc *c);

/* An event: block of switch sw was stored. Never allocates. */
void lfc_note(struct lfc *c, const void *sw, uint32_t block);
/* The next pass copies every table whole (why: a static string). */
void lfc_invalidate(struct lfc *c, const char *why);

/* Outside OpenSM's lock: room for nodes mirror entries, and a note list of
 * half the blocks (beyond that a full copy is cheaper). */
int lfc_prepare(struct lfc *c, size_t nodes, size_t blocks);

/* Outside the lock, before lfc_prepare(): writes back the first and last
 * byte of every stage block the notes so far will overwrite, where the
 * last pass left its table, so that lfc_apply() under the lock does not
 * take their page faults (stage: the stage as it is now, len bytes).
 * Nothing is changed; a table that moves this pass was warmed in vain.
 * Returns the blocks touched (0 when the pass will copy all whole). */
size_t lfc_warm(struct lfc *c, uint8_t *stage, size_t len);

/* Under the lock, before the walk. full_why: non-NULL forces whole copies. */
void lfc_begin(struct lfc *c, const char *full_why);
/* Node idx of the walk: its table (sw NULL for a node without one) is to
 * sit at stage offset off. Returns 1 if the stage already holds it there
 * from the last pass (the caller copies nothing now; lfc_apply() brings
 * the noted blocks), 0 if the caller must copy it whole. Call for every
 * node, in walk order; idx < the nodes given to lfc_prepare(). */
int lfc_switch(struct lfc *c, uint32_t idx, const void *sw, const void *lft, uint64_t guid, uint64_t off,
	       uint32_t len);
/* After the walk: copy up to max noted blocks of kept tables into stage.
 * Returns 1 while notes remain (the caller may release OpenSM's lock
 * between calls; see plugin.c, struct hold), 0 when done. */
int lfc_apply(struct lfc *c, uint8_t *stage, size_t max);
/* End of the pass (ok: the walk finished): notes consumed. */
void lfc_end(struct lfc *c, uint32_t nnodes, int ok);

#endif
