/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * collect.h - build a fabric snapshot from SMPs alone, without the SM's help:
 * libibnetdisc for nodes, ports and links, then every switch's LFT.
 *
 * The result must equal what the OpenSM plugin builds for the same fabric,
 * so the conventions that both sides follow are fixed here:
 *   - every switch's LFT covers LIDs 0..max_lid, max_lid being the highest
 *     LID assigned to any end port (LMC range included); entries above the
 *     switch's LinearFDBTop are SNAP_LFT_NONE, since the switch drops those
 *     LIDs whatever its table holds; an unassigned fabric (max_lid 0) has
 *     empty LFTs;
 *   - entry 0 is always SNAP_LFT_NONE: LID 0 is reserved, never a destination;
 *   - switch external ports carry LID 0 / LMC 0 (snap_canonicalize() agrees);
 *   - a CA or router port is present only if discovery reached it, as in
 *     OpenSM, which also knows only the CA ports it walked through.
 *
 * Returns 0, or -1 with a reason in err[SNAP_ERR_LEN]. Nothing here prints
 * or exits, though libibnetdisc itself may warn on stderr.
 */
#ifndef TOPOD_COLLECT_H
#define TOPOD_COLLECT_H

#include <stdint.h>

#include "smpq.h"
#include "snapshot.h"

struct collect_cfg {
	const char *ca;          /* NULL: the default CA */
	int port;                /* 0: its first active port */
	unsigned timeout_ms;     /* per SMP attempt */
	unsigned retries;
	unsigned window;         /* SMPs in flight, for discovery and LFT reads alike */
	uint64_t mkey;
};

struct collect_stats {
	uint64_t discover_us;    /* libibnetdisc */
	uint64_t lft_us;         /* LFT blocks (and SMInfo) */
	uint64_t build_us;       /* snapshot assembly and canonical sort */
	uint32_t nodes, switches, links, max_lid;
	uint64_t lft_blocks;
	unsigned discover_mads;  /* as counted by libibnetdisc */
	struct smpq_stats smp;
	const char *sm_from;     /* how sm_guid was found: "SMInfo", "MasterSMLID", "unknown" */
};

/*
 * Discovers the fabric through port cfg->ca:cfg->port, then reads the LFTs
 * through that same port (the directed routes discovery found start there).
 * The port is opened only after libibnetdisc has closed its own: umad2sim,
 * the simulator's shim, crashes with two open at once. On success *out is a
 * canonical snapshot with engine "unknown" and sm_guid set if it could be
 * found; generation, sweep and timestamp are the caller's. Caller frees *out
 * with snap_free().
 */
int collect_fabric(const struct collect_cfg *cfg, struct snap **out, struct collect_stats *st,
		   char err[SNAP_ERR_LEN]);

/* 1 if a and b describe the same fabric (nodes, ports, links, LFTs, engine),
 * ignoring the header fields a producer sets per run. */
int collect_same_fabric(const struct snap *a, const struct snap *b);

#endif
