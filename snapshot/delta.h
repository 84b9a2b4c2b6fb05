/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * delta.h - delta snapshots: what changed between two captures of one
 * fabric, so that a reroute that touches a few LFT blocks ships kilobytes
 * instead of the whole fabric.
 *
 * A delta applies to exactly one base, named by its generation, SM GUID and
 * timestamp (the triple that makes a snapshot unique under topod's
 * generation rule). It can express changed NodeDescriptions, changed ports
 * (state, speed, LID, links: a link that went down or came back) and
 * changed 64-entry LFT blocks; the node set itself (the same nodes, types,
 * port counts and table lengths) must be the base's, otherwise the producer
 * sends a full snapshot. The encoding is in docs/snapshot-format.md.
 *
 * The same codec stores topod's history: an older generation is kept as a
 * delta against the next newer one.
 */
#ifndef TOPOD_SNAPSHOT_DELTA_H
#define TOPOD_SNAPSHOT_DELTA_H

#include "snapshot.h"

#define SNAP_DELTA_MAGIC "TOPODLTA"
#define SNAP_DELTA_VERSION 1
#define SNAP_DELTA_BLOCK 64 /* LFT entries per block, as in the LinearForwardingTable SMP */
/* Payload flag: each LFT block record names the entries it brings (a
 * 64-bit mask, then those entries) instead of carrying the whole block.
 * The encoder sets it when that form is the smaller (a reroute's few
 * entries per block); the decoder reads deltas with and without. */
#define SNAP_DELTA_ENTRIES 1u

/* Return values besides 0 and -1. */
#define SNAP_DELTA_FULL 1    /* encode: the change needs a full snapshot (err says why) */
#define SNAP_DELTA_NOBASE -2 /* apply: the delta is against another base (err names both) */

/* Up to this many port records a delta's ports are checked one by one
 * (snap_validate_ports) and listed in snap_delta_info's port_key: a
 * cable's few; past it (a subnet-up rewrites them all) the whole fabric
 * is checked. */
#define SNAP_DELTA_PORT_KEYS 1024

struct snap_delta_info {
	uint64_t generation;      /* of the result */
	uint64_t base_generation; /* the base it applies to */
	uint64_t base_sm_guid;
	uint64_t base_timestamp;
	uint32_t descs, ports, blocks; /* records of each kind */
	/* The ports the port records rewrote, (node index << 8 | port), in
	 * order, when ports <= SNAP_DELTA_PORT_KEYS (else the first
	 * SNAP_DELTA_PORT_KEYS): what a reader of the ports' links needs
	 * to look at instead of every port. */
	uint64_t port_key[SNAP_DELTA_PORT_KEYS];
	/* Set want_blocks before snap_delta_apply() to get block[blocks], the
	 * changed LFT blocks as (node index << 16 | block), in order, and
	 * mask[blocks], the entries of each whose value changed (bit i:
	 * entry i of the block; 0 when the record changed nothing). mask
	 * lives in block's allocation: the caller frees block alone. */
	int want_blocks;
	uint64_t *block;
	uint64_t *mask;
};

/* Gives info's block list (snap_delta_apply's, with want_blocks) back for
 * the next apply to write into (snap_list_keep), and clears it: where
 * memory is faulted in anew, a k=56 cable fault's 4.2 MB list costs
 * milliseconds. free(info->block) is as correct. */
void snap_delta_info_keep(struct snap_delta_info *info);
/* Makes the kept list (snap_list_keep) hold a list of blocks blocks, its
 * pages written: for the first delta after a full snapshot, which has no
 * list of its predecessor's to write into (a k=56 cable fault's 4.2 MB
 * took 12 ms of CPU to fault in, topod's apply beside a busy OpenSM).
 * Nothing when the kept one holds it already. Stops writing when *stop
 * (may be NULL) is raised, and keeps what it made. At most
 * snap_delta_list_most(blocks) blocks, so that the list is kept. Returns
 * the bytes written. */
uint64_t snap_delta_list_ready(uint32_t blocks, const atomic_int *stop);
uint32_t snap_delta_list_most(uint32_t blocks);
/* Frees the kept list if it is over four times a list of blocks blocks,
 * past 1 MiB (snap_list_trim): when the lists wanted ready shrink. */
void snap_delta_list_trim(uint32_t blocks);

/* Is this a delta (by its magic)? buf needs SNAP_MAGIC_LEN bytes. */
int snap_is_delta(const uint8_t *buf, size_t len);

/*
 * The header of either a snapshot or a delta: payload length and whether it
 * is a delta, so that a stream reader knows how much follows.
 */
int snap_peek_any(const uint8_t *buf, size_t len, uint64_t *payload, int *is_delta, char err[SNAP_ERR_LEN]);

/*
 * Encodes target as a delta against base (both canonical, LFTs normalised).
 * The result carries target's header fields. Returns 0 (*out malloc'd),
 * SNAP_DELTA_FULL when the node sets differ, -1 on error.
 */
int snap_delta_encode(const struct snap *base, const struct snap *target, uint8_t **out, size_t *outlen,
		      char err[SNAP_ERR_LEN]);
/* The same, SNAP_DELTA_FULL as soon as the delta exceeds max bytes: found
 * while counting, before anything is allocated. */
int snap_delta_encode_max(const struct snap *base, const struct snap *target, size_t max, uint8_t **out,
			  size_t *outlen, char err[SNAP_ERR_LEN]);
/*
 * snap_delta_encode() told where the tables can differ, for two snapshots
 * one of which was made from the other by a delta (topod's history: the
 * served generation against the one it was applied to). block[nblock]
 * lists LFT blocks as snap_delta_info.block does, (node index << 16) |
 * block, strictly ascending; snap_delta_apply() with want_blocks gives
 * that list, and it serves both directions (base to target and back).
 *
 * The caller promises that every LFT entry in which base's and target's
 * tables differ lies in a listed block. Listing more costs one compare per
 * block. A changed block left out is taken as equal without being
 * read and is missing from the result, which then applies to the wrong
 * tables: nothing here can notice. Tables the two share (the same pointer)
 * are skipped with or without a hint; descriptions and ports are compared
 * in full. Entries out of order, repeated or past a table are passed over,
 * so the result is well formed whatever the list holds. block == NULL:
 * exactly snap_delta_encode(). Returns as snap_delta_encode() does.
 */
int snap_delta_encode_hint(const struct snap *base, const struct snap *target, const uint64_t *block,
			   size_t nblock, uint8_t **out, size_t *outlen, char err[SNAP_ERR_LEN]);

/* Reads the header and the base identity without applying anything. */
int snap_delta_peek(const uint8_t *buf, size_t len, struct snap_delta_info *info, char err[SNAP_ERR_LEN]);

/*
 * Applies a delta to a copy of base and validates the result as strictly as
 * snap_decode() does (an LFT-only delta checks just the entries it brings:
 * the base was valid and nothing else changed); base is not modified. Every record is checked: in
 * range, in strictly increasing order, the payload used exactly. Returns 0
 * with *out a new snapshot, SNAP_DELTA_NOBASE when the delta is against
 * another base, -1 when it is malformed. info (may be NULL) gets the counts.
 */
int snap_delta_apply(const struct snap *base, const uint8_t *buf, size_t len, struct snap **out,
		     struct snap_delta_info *info, char err[SNAP_ERR_LEN]);
/* The same, written into copy: snap_dup(base) made beforehand and not
 * changed since, so that its arrays' first writes (fresh memory) were
 * off the delta's way. copy is always consumed: *out on success, freed
 * otherwise; a copy that is not base's (another generation, another
 * shape) is freed and a new one made. */
int snap_delta_apply_to(const struct snap *base, struct snap *copy, const uint8_t *buf, size_t len,
			struct snap **out, struct snap_delta_info *info, char err[SNAP_ERR_LEN]);

/*
 * Composes two deltas into one: a (base B -> X) then b (X -> Y) gives
 * B -> Y, record by record (a record replaces a whole description or port,
 * so the second's wins where both have one; an LFT block record replaces
 * the entries it names, so where both name an entry the second's wins and
 * the result names those of either), in time linear
 * in their sizes; neither the base nor X is needed, only shape: any
 * snapshot of the same node set (its node count, types, port counts and
 * table lengths). Both are checked as snap_delta_apply checks a delta
 * (checksums, every record in range and strictly increasing, payloads used
 * exactly, LFT ports that exist); what only a whole fabric can show (links
 * symmetric, LIDs unique) is checked when the result is applied. Applying
 * the result to B gives what applying a then b gives. Returns 0 (*out
 * malloc'd), SNAP_DELTA_NOBASE when b is not against a's result, -1 when
 * either is malformed (err names which).
 */
int snap_delta_compose(const struct snap *shape, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
		       uint8_t **out, size_t *outlen, char err[SNAP_ERR_LEN]);

#endif
