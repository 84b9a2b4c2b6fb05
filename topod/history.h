/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * history.h - the last N served generations, for `history` and `diff`.
 *
 * The newest generation is the served fabric itself (a reference to it).
 * Each older one is kept as a reverse delta (delta.h): what turns the next
 * newer snapshot back into it, usually a few LFT blocks and ports, so 100
 * generations of a large fabric cost little more than one. When the node
 * set changed between two generations the older one is kept whole
 * (encoded). The history is bounded by a count and by bytes; the oldest
 * entries go first.
 *
 * With a state directory every older entry is also written to
 * STATE/history/ (one file per generation, removed when evicted), so a
 * restarted topod still answers "what changed last night". Entries are
 * immutable once written; one mutex covers the list, and rebuilding an old
 * generation happens outside it on copies.
 */
#ifndef TOPOD_HISTORY_H
#define TOPOD_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot.h"

struct fabric;

struct history_meta {
	uint64_t generation, sm_guid, sweep, timestamp, received_us;
	char engine[SNAP_ENGINE_LEN + 1];
	uint32_t nodes, switches, cas, links, hosts;
	size_t bytes;  /* what the entry costs (0 for the served one) */
	char kind;     /* 's' served, 'd' delta, 'f' full */
};

struct history;

/* max_gens >= 1 (the served one counts); max_bytes bounds the older
 * entries' data; dir (may be NULL) is STATE/history, created if missing. */
struct history *history_new(unsigned max_gens, size_t max_bytes, const char *dir);
void history_free(struct history *h); /* NULL is a no-op */

/* The builder calls this after publishing f (it takes its own reference):
 * the previous served generation becomes a reverse delta. When f was made
 * by applying a delta to base, block[nblock] is what the apply listed
 * (snap_delta_info.block): if base is the snapshot of the generation f
 * replaces here (the history's newest), only the listed blocks of the
 * tables f does not share with it are compared (snap_delta_encode_hint);
 * otherwise, or with base NULL, every block of them. base must stay
 * allocated during the call (its fabric referenced), so that an equal
 * address is that snapshot, not a later one at a freed one's address. */
void history_push(struct history *h, struct fabric *f, const struct snap *base, const uint64_t *block,
		  size_t nblock);

/* After the first push at start-up: adopts the entries found in dir that
 * are older than the served generation. Returns how many. */
int history_load(struct history *h);

/* A copy of the entries, oldest first; caller frees *out. 0 or -1 (ENOMEM). */
int history_list(struct history *h, struct history_meta **out, size_t *n);

/* The snapshot of generation gen, rebuilt from the served one and the
 * deltas after gen (new; free with snap_free). 1 with err naming the
 * generations held when gen is not in the history (ERR NOGENERATION), -1
 * with err when the chain is damaged or memory ran out. meta (may be NULL)
 * gets its entry. */
int history_get(struct history *h, uint64_t gen, struct snap **out, struct history_meta *meta,
		char err[SNAP_ERR_LEN]);

/* The newest entry whose snapshot was taken at or before t_us (Unix µs);
 * 0 if none. For "diff by time". */
uint64_t history_at(struct history *h, uint64_t t_us);

size_t history_bytes(struct history *h);

#endif
