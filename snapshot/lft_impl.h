/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lft_impl.h - the forwarding tables' chunks, inside the snapshot library
 * (lft.c). Readers use snapshot.h's snap_lft_get()/snap_lft_span().
 */
#ifndef TOPOD_LFT_IMPL_H
#define TOPOD_LFT_IMPL_H

#include <stdint.h>

#include "snapshot.h"

/* A new table of len entries (len > 0) copied from src, held once; NULL on
 * ENOMEM. */
struct snap_lft *lft_new_from(const uint8_t *src, uint32_t len);
/* Makes the next nchunks chunks of whole tables come from slabs the pool
 * holds, mapping and first touching the missing ones in parallel; -1 on
 * ENOMEM (those it could map are kept). lft_trim() then gives back what a
 * reserve left unused. */
int lft_reserve(uint64_t nchunks);
void lft_trim(void);
/* Asks for every line of the chunk holding entry l of n's table and for
 * its holder count: what snap_lft_own reads to copy it. */
void lft_prefetch_chunk(const struct snap_node *n, uint32_t l);
/* One more holder (snap_dup). */
void lft_ref(const struct snap_lft *t);
/* One holder less: the table, and each chunk no other table holds, are
 * freed with the last. NULL is ignored. */
void lft_unref(const struct snap_lft *t);

#endif
