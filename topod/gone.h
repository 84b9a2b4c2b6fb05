/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gone.h - hosts the fabric had and lost: remembered so that a Slurm
 * topology.conf keeps a rebooting node under its leaf (docs/protocol.md,
 * `tree [gone]`).
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
	uint64_t since_gen; /* the first generation without it */
	uint64_t since_us;  /* when that generation's snapshot was taken (Unix us) */
};

struct gone {
	size_t n;
	struct gone_host *v;   /* sorted by name */
};

struct fabric;
struct history;

/* The list for a fabric of route table rt that follows prev (may be NULL or
 * the empty fabric). NULL for an empty list or when out of memory (then
 * the memory is lost, never the fabric). same_hosts: rt has prev's hosts
 * (a delta that changed no port or description), so none of them went:
 * only prev's list is carried (~10 ms of name lookups saved at k=56). */
struct gone *gone_next(const struct fabric *prev, const struct route_tab *rt, struct history *hist,
		       int same_hosts);
void gone_free(struct gone *g);   /* NULL is a no-op */
/* The entry of host name (a bare hostname), or NULL; g may be NULL. */
const struct gone_host *gone_find(const struct gone *g, const char *name);

/*
 * Cables earlier generations had that are now unplugged at both ends: both
 * ports still there, linked to nothing (ibsim's Unlink, a pulled or dead
 * cable). OpenSM's subnet has no link there any more, but an administrator
 * asking `links --state notactive` after a cable fault wants it named, as
 * Down. An entry is kept while both ports stay unlinked and both nodes
 * present; a restarted topod starts with none. Each port is in at most one
 * entry, so there are fewer entries than ports.
 */
struct gone_cable {
	uint32_t node[2]; /* in this generation's snapshot, node[0] the lower GUID */
	uint8_t port[2];
};

struct gone_cables {
	size_t n;
	struct gone_cable *v; /* in (node[0], port[0]) order */
};

struct snap;
struct snap_delta_info;
/* The list for snapshot s (canonical) that follows prev (may be NULL).
 * NULL for none or when out of memory. same_links: s has prev's nodes and
 * ports (a delta that changed neither), so the list is prev's, copied
 * instead of found again among every port (~5 ms at k=56). info: s is
 * prev's snapshot with that delta applied (else NULL): only the cables
 * at the ports it rewrote are looked at (2.6 ms at k=56 for all). */
struct gone_cables *gone_cables_next(const struct fabric *prev, const struct snap *s, int same_links,
				     const struct snap_delta_info *info);
void gone_cables_free(struct gone_cables *g); /* NULL is a no-op */

#endif
