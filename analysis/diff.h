/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * diff.h - what changed between two generations of a fabric, for topod's
 * `diff` (docs/protocol.md): nodes, links, ports and LFTs, and whose routes.
 *
 * Input: the route tables of both generations (route.h), each with the
 * snapshot it borrows; "from" is the older one by convention, nothing here
 * depends on it. Nodes are matched by GUID, so node-set changes are fine.
 *
 * Definitions
 *   node gone/new  a node GUID in one snapshot only.
 *   link           seen from a port: present, with a peer, and both ends'
 *                  states linked (the route engine's rule). A
 *                  link of one snapshot that the other does not have from the
 *                  same node and port to the same far end (GUID, port) went
 *                  down (in from) or came up (in to); each is named once,
 *                  from its lower (GUID, port) end.
 *   port           for nodes in both, ports 0 .. the smaller port count:
 *                  DIFF_PORT_LID when presence, LID or LMC differ; else, for
 *                  a present port, DIFF_PORT_ATTR when width, speed or
 *                  espeed differ or the state changed between two linked
 *                  states (INIT -> ACTIVE: not a link going down or up).
 *   lft            for switches in both: the entries that differ over the
 *                  longer LFT (past a table's end is SNAP_LFT_NONE).
 *   changed LID    a LID with a differing LFT entry, or owned (LMC range
 *                  included) by a port with a DIFF_PORT_LID change on
 *                  either side.
 *   route          from host s to host d: route_walk() from s's default
 *                  port to d's base LID in each generation with its own
 *                  tables, compared as the first DIFF_HOPS_MAX (switch
 *                  GUID, out port) steps, the step count (capped alike) and
 *                  the walk's code; any difference is a changed route.
 *
 * Hosts. With a list of names every ordered pair of the names found in both
 * generations (positions i != j, so a name listed twice pairs with itself)
 * is walked, and the names missing from either are reported in list order.
 * The fabric's records are then kept only for the listed hosts' nodes, the
 * switches their default ports are cabled to, and the switches any walk
 * crossed in either generation (a link if either end or its peer is one):
 * what the listed hosts' traffic uses; the fabric counts follow the records.
 * Without one, all hosts of "to" that "from" also has, in to's order, are
 * considered, but only destinations whose base LID (in either generation)
 * is changed are walked: with every table and port the same, a route cannot
 * change (docs/protocol.md says when that falls short).
 *
 * Records come in reply order: nodes gone (from's node order), nodes new
 * (to's), links down (from's node, port order), links up (to's), then per
 * node of from that to also has: its port changes in port order, then its
 * LFT change.
 *
 * Cost: O(nodes log nodes + ports + LFT entries) for the fabric, then
 * O(destinations walked * hosts * hops) for the routes, which max_walks
 * bounds before any walk. Errors: AN_E_NOMEM; AN_E_RANGE (err says how many
 * routes it would take) when more than max_walks routes would be compared.
 * Lifetime: a diff borrows both route tables (node indices point into
 * their snapshots) and the names; it is read-only once built.
 */
#ifndef AN_DIFF_H
#define AN_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "an_err.h"
#include "route.h"

#define DIFF_HOPS_MAX 64   /* route steps compared */
#define DIFF_NONE UINT32_MAX

enum diff_kind {
	DIFF_NODE_GONE,   /* from_node */
	DIFF_NODE_NEW,    /* to_node */
	DIFF_LINK_DOWN,   /* from_node/port -> peer/peer_port, all in from */
	DIFF_LINK_UP,     /* to_node/port -> peer/peer_port, all in to */
	DIFF_PORT_LID,    /* from_node/port and to_node/port: presence, LID or LMC */
	DIFF_PORT_ATTR,   /* from_node/port and to_node/port: state, width or speed */
	DIFF_LFT,         /* from_node and to_node: entries, first_lid */
};

struct diff_change {
	uint8_t kind;        /* enum diff_kind */
	uint8_t port;
	uint8_t peer_port;   /* links */
	uint32_t from_node;  /* node index in from's snapshot, or DIFF_NONE */
	uint32_t to_node;    /* node index in to's snapshot, or DIFF_NONE */
	uint32_t peer;       /* links: the far end's node, in the snapshot the link is up in */
	uint32_t entries;    /* DIFF_LFT: entries that differ */
	uint32_t first_lid;  /* DIFF_LFT: the lowest of them */
};

/* Where a listed name is missing. */
enum diff_where {
	DIFF_IN_NEITHER,
	DIFF_ONLY_IN_TO,
	DIFF_ONLY_IN_FROM,
};

struct diff_missing {
	const char *name;    /* borrowed from the caller's list */
	uint8_t where;       /* enum diff_where */
};

struct diff_host {
	const char *name;    /* borrowed: the caller's list or to's host table */
	uint32_t from, to;   /* host index in each route table */
	uint32_t changed;    /* changed routes with this host at either end */
};

struct diff_pair {
	uint32_t src, dst;   /* positions in hosts[] */
};

struct diff {
	/* the fabric */
	size_t nchanges;
	struct diff_change *changes;
	uint32_t links_down, links_up, nodes_gone, nodes_new;
	uint32_t ports;           /* DIFF_PORT_LID and DIFF_PORT_ATTR records */
	uint32_t lft_switches, lft_entries;

	/* the routes */
	size_t nmissing;
	struct diff_missing *missing;  /* only with a list of names */
	size_t nhosts;
	struct diff_host *hosts;       /* in both generations, in list (or to's) order */
	size_t ndest;                  /* destinations walked: every host with a list */
	uint64_t routes_changed;       /* ordered pairs */
	uint32_t hosts_changed;        /* hosts with changed > 0 */
	size_t npairs;
	struct diff_pair *pairs;       /* changed pairs, by destination then source;
					* only with a list, at most max_pairs */
};

/*
 * Compares from and to (see the top). names: the hosts to compare, or NULL
 * for all (then nnames is ignored). max_walks bounds the route pairs
 * compared (destinations walked x hosts); max_pairs the changed pairs
 * listed (the counts cover all). On success *out is new (free with
 * diff_free); on error it is untouched.
 */
int diff_build(const struct route_tab *from, const struct route_tab *to, const char *const *names, size_t nnames,
	       uint64_t max_walks, size_t max_pairs, struct diff **out, char err[AN_ERR_LEN]);
void diff_free(struct diff *d);  /* NULL is a no-op */

#endif
