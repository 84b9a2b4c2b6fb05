/*
 * gone.h - hosts the fabric had and lost: remembered so that a Slurm
 * topology.conf keeps a rebooting node under its leaf (issue 26).
 *
 * Each generation's list is the previous generation's hosts, and its list,
 * minus the hosts present now. An entry names the host, the node GUID of
 * the switch its default port was cabled to when last seen, and that
 * generation. It is kept while the history (history.h: --history N, default
 * 100 generations, and --history-bytes) still holds the generation it was
 * last seen in; a restarted topod starts with an empty list. At most
 * GONE_MAX entries (the most recently seen first).
 */
#ifndef TOPOD_GONE_H
#define TOPOD_GONE_H

#include <stddef.h>
#include <stdint.h>

#include "route.h"

#define GONE_MAX 65536u

struct gone_host {
	char name[ROUTE_NAME_MAX + 1];
	uint64_t leaf;      /* node GUID of its leaf switch then, 0 if none */
	uint64_t last_gen;  /* the last generation it was in */
};

struct gone {
	size_t n;
	struct gone_host *v;   /* sorted by name */
};

struct fabric;
struct history;

/* The list for a fabric of route table rt that follows prev (may be NULL or
 * the empty fabric). NULL for an empty list or when out of memory (then
 * the memory is lost, never the fabric). */
struct gone *gone_next(const struct fabric *prev, const struct route_tab *rt, struct history *hist);
void gone_free(struct gone *g);   /* NULL is a no-op */

#endif
