/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * route.h - the route engine: routes read from the switches' LFTs, and the
 * name index that turns "host", "host/HCA", GUIDs and LIDs into end ports.
 *
 * Routes come from the LFTs, never from the graph: a fabric's cabling says
 * which paths exist, only the forwarding tables say which one packets take.
 *
 * A link is up when the PortState of both ends is INIT, ARMED or ACTIVE: the
 * plugin's copy is taken at routing-done, before OpenSM activates new ports.
 *
 * Walk semantics (the one definition; route_walk, route_switch_hops and
 * share.c all follow it through route_step()):
 *   - The walk from end port a to destination LID d starts at a's port. A CA
 *     or router port must have a link (else AN_E_SRC_NOLINK) whose two
 *     ends are both up (else AN_E_DOWN); it enters the node at the
 *     other end. A switch's port 0 starts the walk at that switch itself.
 *   - At every switch: out = LFT[d]. SNAP_LFT_NONE, or d beyond the LFT, is
 *     AN_E_NOENTRY. Port 0 means "this switch": it delivers iff the LID
 *     is the switch's own, else AN_E_WRONGDST. Any other out port must
 *     be present and linked (else AN_E_NOLINK) with both ends up
 *     (else AN_E_DOWN). A link into a switch continues the walk; a link
 *     into a CA/router port delivers iff that port owns d, else
 *     AN_E_WRONGDST.
 *   - A walk that has traversed more switches than the fabric has is in a
 *     loop (AN_E_LOOP): a loop-free walk visits each switch at most once.
 *   - Hop count = switches traversed: 1 for two hosts on one leaf, 0 for two
 *     CAs cabled back to back.
 *   - A CA or router port to its own LID (a host to itself: one name twice,
 *     or two names of one port) is 0 hops and an empty path, whatever its
 *     cable's state: the HCA loops the packet back and no cable carries it.
 *     Two rails of one host are two end ports and are walked. A switch's
 *     port 0 to its own LID stays 1 hop (the switch itself), as the
 *     hierarchy's switch distances count it.
 *   - With LMC > 0 the caller names the destination LID; resolving a name
 *     gives the base LID.
 *
 * Hosts. A host is a hostname: the first whitespace-separated token of the
 * CA's NodeDescription, or of its node-name-map entry when the map has the
 * node GUID. The second token is the HCA label ("c401-101 HCA-1": host
 * "c401-101", HCA "HCA-1"). Every present port 1..n of every CA with that
 * hostname is a rail of the host (multi-rail hosts, dual-port HCAs, and
 * duplicate hostnames from different system images alike: they are all kept
 * as rails of one name, never an error). Rails are ordered by HCA label
 * (digit runs compare as numbers: "HCA-2" < "HCA-10"; labels that fell back
 * to a GUID, see below, after all real ones), then node GUID, then port; the first rail is the host's default port, used when a bare
 * hostname is routed and by the hierarchy. A dead default rail is not
 * skipped: the host stays routable only as "host/HCA-2".
 * Tokens are untrusted. A hostname or label is valid only if it has 1 to
 * ROUTE_NAME_MAX bytes of [A-Za-z0-9._-] and is not GUID-shaped ("0x" and
 * hex digits only), so that a description can never shadow an address or
 * smuggle quotes and control bytes into a reply. A CA without a valid
 * hostname is named after its node GUID ("0x0002c90300001234"); a missing
 * or invalid label becomes the node GUID the same way.
 *
 * Names accepted by route_resolve(), tried in this order:
 *   lid:N       the end port owning LID N (decimal or 0x hex), dlid N
 *   0xGUID      a port GUID, else a node GUID (a CA's lowest present port,
 *               a switch's port 0)
 *   host/HCA    that HCA's lowest present port
 *   host        the host's default port
 *
 * Error convention: functions returning int return AN_OK (0) or a
 * negative AN_E_* code; an_strerror() names it. Nothing here prints,
 * exits or aborts.
 *
 * Lifetime: a route_tab borrows its snapshot, which must stay alive and
 * unchanged until route_free(); everything in it is read-only after
 * route_build(), so any number of threads may query it at once.
 */
#ifndef AN_ROUTE_H
#define AN_ROUTE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "an_err.h"
#include "snapshot.h"

#define ROUTE_NAME_MAX 64     /* a NodeDescription is 64 bytes: no token is longer */
#define ROUTE_QUERY_MAX 160   /* "host/HCA" plus slack; a longer query is AN_E_INVAL */
#define ROUTE_NONE UINT32_MAX
#define ROUTE_HOPS_INF 0xFFFFu /* route_switch_hops(): no route */


/* ---- node-name-map -------------------------------------------------------- */

/* infiniband-diags format: lines `0xNODEGUID "name"` (or an unquoted name to
 * the end of the line), '#' starts a comment line, blank lines are skipped.
 * A GUID listed twice keeps its first name. */
#define ROUTE_MAP_LINE_MAX 4096  /* far beyond any real entry; longer is malformed */
#define ROUTE_MAP_MAX_ENTRIES SNAP_MAX_NODES

struct route_namemap;
/* On success *out is new (free with route_namemap_free); on error *out is
 * untouched and err names the line. */
int route_namemap_parse(const char *text, size_t len, struct route_namemap **out,
			char err[AN_ERR_LEN]);
void route_namemap_free(struct route_namemap *m);  /* NULL is a no-op */
/* Borrowed until route_namemap_free(); NULL if the GUID is not in the map. */
const char *route_namemap_get(const struct route_namemap *m, uint64_t node_guid);

/* ---- the table ------------------------------------------------------------ */

/* An end port: a CA or router port 1..n that is present, or a switch's port 0. */
struct route_ep {
	uint64_t guid;     /* port GUID */
	uint32_t node;     /* index into snap->nodes */
	uint32_t host;     /* index into hosts[], ROUTE_NONE for switches and routers */
	uint32_t leaf;     /* switch node it is cabled to, whatever the link state (itself for a
	                    * switch), or ROUTE_NONE; usable for walks only if up == AN_OK */
	uint16_t lid;      /* base LID, 0 if unassigned */
	uint8_t port;
	uint8_t lmc;
	int8_t up;         /* AN_OK if a walk can leave this port, else why not */
	char hca[ROUTE_NAME_MAX + 1]; /* CA/router: HCA label; switch: "" */
};

struct route_host {
	char name[ROUTE_NAME_MAX + 1];
	uint32_t rail0;    /* its rails are rails[rail0 .. rail0 + nrails), default first */
	uint32_t nrails;
};

struct route_tab {
	const struct snap *snap;  /* borrowed */

	uint32_t neps;
	struct route_ep *eps;     /* in node order, then port order */
	uint32_t nhosts;
	struct route_host *hosts; /* sorted by name (strcmp) */
	uint32_t *rails;          /* ep indices, grouped per host */

	uint32_t max_lid;
	uint32_t *lid_ep;         /* [0..max_lid]: ep owning the LID (LMC range too) or ROUTE_NONE */
	uint32_t *guid_ep;        /* ep indices sorted by port GUID (GUID 0 left out) */
	uint32_t nguid;

	/* Switches, compacted so that per-switch tables are dense. */
	uint32_t nsw;
	uint32_t *sw_node;        /* [nsw] node index */
	uint32_t *sw_of_node;     /* [nnodes] switch index or ROUTE_NONE */
	uint32_t *pt_off;         /* [nsw] offset of the switch's ports in pt[] */
	uint32_t *pt;             /* port code, see ROUTE_PT_*; port 0 = the switch's own ep */

	atomic_uint *shared;      /* indexes sharing the tables above (route_repoint, route_relink) */
	/* pt's own count when pt is not the shared one (route_relink), else
	 * NULL; pt_base is the shared one, freed with the tables above */
	atomic_uint *pt_refs;
	uint32_t *pt_base;

	/* [nsw] each switch's table in snap, this index's own (not shared):
	 * a walk's step reads 16 dense bytes, not the switch's node record
	 * (a cache miss each at k=56). Read when built: entries written in
	 * place (snap_lft_own() on a table s holds alone) are seen, but a
	 * table copied because it was shared, or replaced (snap_set_lft()),
	 * is not, and may be freed: repoint the index (route_repoint). */
	struct route_swlft {
		const struct snap_lft *lft;
		uint32_t len;
	} *swlft;
};

/* Port codes: a value below ROUTE_PT_EP is the switch index the port leads
 * to through an up link; ROUTE_PT_EP + e leads to end port e. */
#define ROUTE_PT_EP 0x80000000u
#define ROUTE_PT_DOWN 0xFFFFFFFEu
#define ROUTE_PT_NOLINK 0xFFFFFFFFu

/* s must have passed snap_validate() (snap_decode() does) and be canonical.
 * map may be NULL. On success *out is new: free with route_free(), before
 * the snapshot. O(nodes + ports + CAs log CAs). */
int route_build(const struct snap *s, const struct route_namemap *map, struct route_tab **out);
void route_free(struct route_tab *rt);  /* NULL is a no-op */
/*
 * The index of s, a snapshot whose nodes, ports and descriptions equal
 * those rt was built from (only LFT entries differ, as after an LFT-only
 * delta), built with the same map: everything in it but the snapshot is
 * rt's, so *out shares rt's tables (counted; route_free() of the last one
 * frees them) instead of rebuilding them. O(switches). AN_E_NOMEM.
 */
int route_repoint(const struct route_tab *rt, const struct snap *s, struct route_tab **out);
/*
 * The index of s, a snapshot like rt's but for switch-to-switch links
 * (a cable down or back, a port's state, width or speed): the tables
 * shared as route_repoint shares them, the port codes copied and those
 * of the changed links' ports made again. O(ports) to find them.
 * AN_E_NOTAPPLIC when anything else differs (nodes, end ports, a link
 * to or from an end port, a switch's port 0): route_build it.
 * AN_E_NOMEM.
 */
int route_relink(const struct route_tab *rt, const struct snap *s, struct route_tab **out);

/* ---- names ----------------------------------------------------------------- */

/* Resolves any accepted name (see the top). *ep gets the end port; *dlid,
 * if not NULL, the LID to route to (N for "lid:N", else the base LID).
 * O(log n). AN_E_INVAL for a NULL/over-long name, AN_E_NOTFOUND. */
int route_resolve(const struct route_tab *rt, const char *name, uint32_t *ep, uint16_t *dlid);
/* Hostname only (no "/HCA", no GUID/LID forms). O(log hosts). */
int route_find_host(const struct route_tab *rt, const char *name, uint32_t *host);
/* The host's default end port (first rail). */
static inline uint32_t route_host_ep(const struct route_tab *rt, uint32_t host)
{
	return rt->rails[rt->hosts[host].rail0];
}

/* ---- walking --------------------------------------------------------------- */

/* One switch on a path: the port it was entered by (0 at a switch source)
 * and the port it was left by (0: delivered to itself). */
struct route_hop {
	uint32_t node;
	uint8_t in, out;
};

struct route_res {
	uint32_t hops;      /* switches traversed (on error: walked so far) */
	uint32_t fail_node; /* on error: node where the walk stopped, else ROUTE_NONE */
	uint8_t fail_port;  /* on error: the port concerned (0 if none) */
};

/*
 * Walks from end port src to LID dlid. Stores up to cap hops into hops[]
 * (hops may be NULL when cap is 0; res->hops is the full count even when it
 * exceeds cap). res may be NULL. Returns AN_OK or the first error met.
 * O(hops); an error is found within nsw + 1 steps.
 */
int route_walk(const struct route_tab *rt, uint32_t src, uint16_t dlid, struct route_hop *hops,
	       size_t cap, struct route_res *res);
/* Hop count (>= 0) or a negative AN_E_* code. */
int route_hops(const struct route_tab *rt, uint32_t src, uint16_t dlid);

/* Outcome of one forwarding step. */
#define ROUTE_STEP_NEXT 1   /* *next is the switch index to enter */
#define ROUTE_STEP_DONE 2   /* delivered to dst_ep */

/* The one definition of a forwarding step: leaving by port p a switch whose
 * port codes are pt[0..np] means, for a packet to end port dst_ep,
 * ROUTE_STEP_NEXT (*next = the switch entered), ROUTE_STEP_DONE or a
 * negative AN_E_*. Callers with their own dense copy of the codes
 * (load.c) use it directly. */
static inline int route_step_code(const uint32_t *pt, unsigned np, uint8_t p, uint32_t dst_ep, uint32_t *next)
{
	if (p == SNAP_LFT_NONE)
		return AN_E_NOENTRY;
	if (p > np)
		return AN_E_NOLINK;
	uint32_t c = pt[p];
	if (c < ROUTE_PT_EP) {
		*next = c;
		return ROUTE_STEP_NEXT;
	}
	if (c == ROUTE_PT_NOLINK)
		return AN_E_NOLINK;
	if (c == ROUTE_PT_DOWN)
		return AN_E_DOWN;
	return c - ROUTE_PT_EP == dst_ep ? ROUTE_STEP_DONE : AN_E_WRONGDST;
}

/* What leaving switch sw (switch index) by port p means for a packet to end
 * port dst_ep: ROUTE_STEP_NEXT, ROUTE_STEP_DONE or a negative AN_E_*. */
static inline int route_step_port(const struct route_tab *rt, uint32_t sw, uint8_t p,
				  uint32_t dst_ep, uint32_t *next)
{
	return route_step_code(rt->pt + rt->pt_off[sw], rt->snap->nodes[rt->sw_node[sw]].nports, p, dst_ep, next);
}

static inline uint8_t route_lft(const struct route_tab *rt, uint32_t sw, uint16_t dlid)
{
	const struct route_swlft *t = &rt->swlft[sw];
	return dlid < t->len ? t->lft->chunk[dlid >> SNAP_LFT_CHUNK_SHIFT][dlid & (SNAP_LFT_CHUNK - 1)] : SNAP_LFT_NONE;
}

/* The forwarding decision of switch sw for LID dlid, owned by dst_ep; *port
 * gets the LFT's out port. */
static inline int route_step(const struct route_tab *rt, uint32_t sw, uint16_t dlid,
			     uint32_t dst_ep, uint8_t *port, uint32_t *next)
{
	*port = route_lft(rt, sw, dlid);
	return route_step_port(rt, sw, *port, dst_ep, next);
}

/*
 * Hop counts from many switches to many destinations at once, for the
 * hierarchy: out[i * nsrc + j] = switches traversed from switch node
 * src_nodes[j] (entered from outside) to the base LID of end port dst[i],
 * or ROUTE_HOPS_INF if that walk fails or dst[i] has no LID.
 * Dynamic programming over the LFTs, destination by destination, memoised
 * over all switches: O(ndst * nsw) time, O(ndst * nsrc) output, OpenMP
 * threads over blocks of destinations. AN_E_NOMEM, AN_E_INVAL (a
 * src is not a switch), AN_E_RANGE (a route of >= 65535 switches).
 */
int route_switch_hops(const struct route_tab *rt, const uint32_t *src_nodes, size_t nsrc,
		      const uint32_t *dst, size_t ndst, uint16_t *out);

#endif
