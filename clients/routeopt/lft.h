/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lft.h - linear forwarding tables: build them from optimised choices, walk
 * them to count link loads, write them as OpenSM's `file` routing engine
 * reads them (opensm/osm_ucast_file.c: "Unicast lids [..] of switch ..
 * guid 0x..:" headers, then "0xLID PORT : (... portguid 0x..: '...')").
 *
 * Error convention: 0, or -1 with a reason in err[LFT_ERR_LEN].
 */
#ifndef ROUTEOPT_LFT_H
#define ROUTEOPT_LFT_H

#include <stdint.h>
#include <stdio.h>
#include "snapshot.h"
#include "xgft.h"
#include "opt.h"
#include "pattern.h"

#define LFT_ERR_LEN 512

struct lfts {
	uint32_t stride;   /* max_lid + 1 */
	uint32_t *row;     /* snapshot node -> row, UINT32_MAX for non-switches */
	uint8_t *t;        /* row * stride + lid -> out port, SNAP_LFT_NONE */
	uint32_t nrows;
};

/* The tables the snapshot carries (what the fabric runs). */
int lft_from_snap(const struct snap *s, struct lfts *out, char err[LFT_ERR_LEN]);
/* Complete tables for every switch and every LID: the pattern's (switch,
 * destination) pairs from res (NULL: none), d-mod-k up-routing for every other
 * host destination, shortest paths to switch LIDs, and min-hop detours where
 * failed links leave no up-down route. */
int lft_build(const struct snap *s, const struct xgft *x, const struct opt_result *res,
	      struct lfts *out, char err[LFT_ERR_LEN]);
void lft_free(struct lfts *t);

/* Walks every flow (host indices: host_node[i] is the CA's snapshot node)
 * through the tables; max directed link load (host links included). */
int lft_load(const struct snap *s, const struct lfts *t, const uint32_t *host_node,
	     const struct flow *f, size_t n, uint64_t *maxload, char err[LFT_ERR_LEN]);

/* OpenSM's unicast dump format, every switch, every routed LID. */
int lft_write_opensm(const struct snap *s, const struct lfts *t, FILE *out, const char *comment);

#endif
