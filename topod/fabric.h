/*
 * fabric.h - the query structures built from one snapshot: counts, the route
 * index and the hierarchy. Built off the event loop (OpenMP inside), then
 * immutable and shared by every reader of its struct fabric.
 */
#ifndef TOPOD_FABRIC_H
#define TOPOD_FABRIC_H

#include <stdint.h>

#include "snapshot.h"

struct fabric_index {
	uint32_t switches, cas, routers, links, hosts;
};

/* Builds the index of s with up to threads OpenMP threads (0: default).
 * Returns NULL with err set. s must outlive the index. */
struct fabric_index *fabric_index_build(const struct snap *s, int threads, char err[SNAP_ERR_LEN]);
void fabric_index_free(struct fabric_index *x); /* NULL is a no-op */

#endif
