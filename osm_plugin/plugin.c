/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin.c - libosmtopo.so, an OpenSM event plugin that publishes the fabric
 * (nodes, ports, links, unicast LFTs) as a snapshot after every unicast
 * routing pass, heavy sweep or reroute, and again when the sweep that
 * routed ends (SUBNET_UP) if the port states changed meanwhile.
 *
 *   event_plugin_name osmtopo
 *   event_plugin_options sink=unix:/run/topod/ingest.sock spool=/var/lib/topod
 *
 * Threads: report() runs on OpenSM's state-manager thread. It copies the
 * subnet under OpenSM's lock (in slices of about a millisecond, and of the
 * LFTs only the blocks OpenSM stored since the last pass: struct hold,
 * lftcopy.h), encodes outside it and hands the buffer to
 * queue.c, whose workers do all I/O. Nothing here may stall a sweep: a slow
 * or dead topod costs a sweep only the copy and the encode.
 *
 * What an operator sees in OpenSM's log:
 *  - options that do not parse: "osmtopo: bad event_plugin_options ...";
 *    create() returns NULL, OpenSM logs "ERR 1000: cannot load plugin" and
 *    goes on without the plugin (it does not exit);
 *  - one INFO line per routing pass, with the generation, the counts, how
 *    long OpenSM's lock was held in all and at most at once, how many
 *    LFTs were kept and blocks copied, and what the slice of most CPU time
 *    covered (nodes walked, block notes applied, page faults taken);
 *  - one ERROR line when a sink starts failing and one INFO line when it
 *    recovers, however many retries lie between;
 *  - at exit (including run-once, -o) up to linger_ms spent delivering the
 *    last snapshot, then "giving up" per sink that still lacks it.
 * The port states of a routing pass's snapshot are those at
 * UCAST_ROUTING_DONE: on a heavy sweep that brings links up, before OpenSM
 * arms and activates them (they read Init). The same sweep's SUBNET_UP then
 * sends the states OpenSM left, as a delta of port records, so the last
 * generation of every sweep has the states iblinkinfo shows.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <complib/cl_passivelock.h>
#include <complib/cl_qmap.h>
#include <opensm/osm_event_plugin.h>
#include <opensm/osm_log.h>
#include <opensm/osm_node.h>
#include <opensm/osm_opensm.h>
#include <opensm/osm_port.h>
#include <opensm/osm_switch.h>
#include <opensm/osm_version.h>

#include "delta.h"
#include "lftcopy.h"
#include "queue.h"
#include "sink.h"
#include "snapshot.h"

#if OSM_EVENT_PLUGIN_INTERFACE_VER != 2
#error "osmtopo implements event plugin interface version 2 only"
#endif

#define TP_NAME "osmtopo"

/* The node map (osm_node_t * -> snapshot node index, a struct ptrmap from
 * lftcopy.h): the copy runs under OpenSM's lock, and a map lookup per link
 * must not be a search. Reused across sweeps (SM thread only), so a steady
 * fabric costs no allocation while the lock is held. */

/*
 * The copy under OpenSM's lock writes into plugin-owned arrays laid out like
 * struct snap (snapshot.h, "Model"), sized and faulted in before the lock is
 * taken and kept from one routing pass to the next; the snapshot is made
 * from them after the lock is released. Building the snapshot with the
 * builder instead grew 3.6 MB of fresh memory under the lock on every pass:
 * on a 4,176-node fat tree that held the lock 6.7-9.0 ms, against 3.0-6.3 ms
 * now (most of the rest is cache misses walking OpenSM's own tables).
 * SM thread only.
 */
struct stage {
	struct snap_node *nodes;
	struct snap_port *ports;
	uint8_t *lft;
	uint64_t *off;                        /* per node: its LFT's offset in lft */
	size_t nodes_cap, ports_cap, lft_cap, off_cap; /* elements allocated */
	uint32_t nnodes, nports;              /* elements used by the last copy */
	uint64_t nlft;
};

struct tp {
	osm_opensm_t *osm; /* borrowed: OpenSM destroys plugins before its log and subnet */
	osm_log_t *log;
	struct tpq *q;     /* NULL when no sink is configured */

	/* SM thread only: UCAST_ROUTING_DONE is reported by the state manager. */
	uint64_t sweeps;      /* routing passes seen by this process */
	uint64_t last_gen;
	uint64_t max_hold_ns; /* longest slice we held OpenSM's lock */
	uint32_t max_hold_nodes;
	struct ptrmap map;
	struct lfc lfc;     /* the LFTs: copy what changed (lftcopy.h) */
	struct stage stage;
	struct snap *prev; /* the last snapshot pushed: the base of the next delta */
};

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/*
 * OpenSM's lock, held for reading in slices of at most about TP_SLICE_NS:
 * between slices it is released, so that a receiver waiting to write (a
 * PortInfo or LFT response, a trap) waits one slice, not the whole copy.
 * glibc's rwlock hands a lock its last reader releases to a waiting
 * writer before a new reader may take it.
 *
 * Why a copy made in slices is still one routing pass, never a mix of two:
 * report() runs on OpenSM's state-manager thread, after
 * wait_for_pending_transactions(), so every SMP that thread sent has
 * completed. Routing (new_lft and the LFT Sets), discovery (which adds
 * nodes, ports and links, from responses to that thread's SMPs) and the
 * drop manager (which removes and frees them) all run on that thread, and
 * it is inside our callback: until we return, no routing pass starts, no
 * node, switch or link appears or goes, and no LFT block is stored (OpenSM
 * stores one only from the response to a Set or Get that thread sent). So
 * the LFTs, the node set and the links read across slices are those of
 * this pass, and walking OpenSM's node table across a release is safe.
 * What another thread can change between slices is a port's PortInfo or a
 * NodeDescription (from a trap's follow-up query); each port and node is
 * copied within one slice, so each is whole, and it is as current as a
 * single hold would have made it.
 */
#define TP_SLICE_NS 1000000u
/* Blocks copied between two looks at the clock. Each lands on its own
 * pages of OpenSM's table and of ours: at k=56 on the lab's VM a reroute's
 * scattered blocks cost 8.8 us each (a page walk per page touched), and
 * 4,096 of them held the lock 35.9 ms of CPU at once. On that VM memory
 * left alone for minutes is slow to touch again, and 256 blocks between
 * looks held a cable fault's slice 30.1 ms; with 16, and our pages
 * written before the lock (lfc_warm), that pass's longest slice was
 * 1.8 ms in one of three runs (docs/performance.md). A look at the clock
 * costs about 20 ns. */
#define TP_NOTES_PER_SLICE 16

struct hold {
	osm_opensm_t *osm;
	uint64_t since;   /* this slice began */
	uint64_t cpu;     /* ... in this thread's CPU time */
	uint64_t longest; /* longest slice */
	uint64_t longest_cpu; /* most CPU time of a slice: preemption does
			       * not inflate it, but on the lab's VM the
			       * thread's clock can run ahead of the wall
			       * clock (docs/performance.md, bench_vmstall) */
	uint64_t total;   /* all slices */
	uint64_t waited;  /* waiting to take the lock */
	unsigned slices;
	/* Where the slice of most CPU time was, for the log: the nodes
	 * walked and block notes applied when it began and ended, and the
	 * page faults it took. A slice's work is bounded (one node, or
	 * TP_NOTES_PER_SLICE blocks, past 1 ms); this says whether a long
	 * one was that work, faults, or neither. */
	uint32_t node, note;          /* progress now, set by the copy */
	uint32_t node0, note0;        /* ... when this slice began */
	long faults0, pfaults0;       /* this thread's and the process's page faults then */
	uint32_t lnode0, lnode1, lnote0, lnote1;
	long lfaults, lothers;
};

static long faults_of(int who)
{
	struct rusage ru;

	return getrusage(who, &ru) ? 0 : ru.ru_minflt + ru.ru_majflt;
}

static void hold_take(struct hold *h)
{
	uint64_t t = mono_ns();

	/* syscalls: not inside the lock. The process's count says whether
	 * other threads took faults during the slice: on the lab's VM page
	 * faults elsewhere in the process stalled a thread's loads for tens
	 * of milliseconds, charged as its CPU time (bench_vmstall). */
	h->faults0 = faults_of(RUSAGE_THREAD);
	h->pfaults0 = faults_of(RUSAGE_SELF);
	cl_plock_acquire(&h->osm->lock);
	h->since = mono_ns();
	h->cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	h->waited += h->since - t;
	h->slices++;
	h->node0 = h->node;
	h->note0 = h->note;
}

static void hold_drop(struct hold *h)
{
	uint64_t c = clock_ns(CLOCK_THREAD_CPUTIME_ID) - h->cpu, d = mono_ns() - h->since;
	long f = 0, pf = 0;

	if (c > h->longest_cpu) { /* rare: the first slices, then a longer one */
		f = faults_of(RUSAGE_THREAD);
		pf = faults_of(RUSAGE_SELF);
	}

	cl_plock_release(&h->osm->lock);
	h->total += d;
	if (d > h->longest)
		h->longest = d;
	if (c > h->longest_cpu) {
		h->longest_cpu = c;
		h->lnode0 = h->node0;
		h->lnode1 = h->node;
		h->lnote0 = h->note0;
		h->lnote1 = h->note;
		h->lfaults = f - h->faults0;
		h->lothers = (pf - h->pfaults0) - h->lfaults;
	}
}

/* Ends the slice if it is long enough; the caller holds no pointer into a
 * port's or node's data across this call (see above for OpenSM's tables). */
static void hold_slice(struct hold *h)
{
	if (mono_ns() - h->since >= TP_SLICE_NS) {
		hold_drop(h);
		hold_take(h);
	}
}

static void queue_log(void *arg, enum tpq_level level, const char *msg)
{
	static const osm_log_level_t lv[] = {
		[TPQ_ERROR] = OSM_LOG_ERROR,
		[TPQ_INFO] = OSM_LOG_INFO,
		[TPQ_VERBOSE] = OSM_LOG_VERBOSE,
		[TPQ_DEBUG] = OSM_LOG_DEBUG,
	};
	struct tp *tp = arg;
	/* osm_log() formats with vsprintf into a 4 KiB buffer: msg is bounded
	 * by queue.c, and goes in as an argument, never as the format. */
	osm_log(tp->log, lv[level], TP_NAME ": %s\n", msg);
}

/* ---- the staging area ---------------------------------------------------- */

/* Grows *arr to hold need elements. touch: fault the new memory in now,
 * which is what we want outside the lock and never inside it. */
static int grow(void **arr, size_t *cap, size_t elem, size_t need, int touch)
{
	size_t c = *cap ? *cap : 64;
	void *p;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2; /* need is bounded by the SNAP_MAX_* limits: no overflow */
	p = realloc(*arr, c * elem);
	if (!p)
		return -1;
	if (touch)
		memset((char *)p + *cap * elem, 0, (c - *cap) * elem);
	*arr = p;
	*cap = c;
	return 0;
}

/* Sizes of the fabric about to be copied, read in a brief separate hold of
 * the lock (table counts and one pass over the switches, microseconds), so
 * that even the first copy writes into memory that is already there. */
struct stage_hint {
	size_t nodes, ports, lft;
};

static void stage_measure(osm_opensm_t *osm, struct stage_hint *h)
{
	cl_qmap_t *sws = &osm->subn.sw_guid_tbl;
	cl_map_item_t *it;
	size_t nsw, nodes;

	cl_plock_acquire(&osm->lock);
	nodes = cl_qmap_count(&osm->subn.node_guid_tbl);
	nsw = cl_qmap_count(sws);
	h->nodes = nodes;
	h->ports = 3 * (nodes > nsw ? nodes - nsw : 0); /* CAs: port 0 slot + 2 ports */
	h->lft = 0;
	for (it = cl_qmap_head(sws); it != cl_qmap_end(sws); it = cl_qmap_next(it)) {
		const osm_switch_t *sw = (const osm_switch_t *)it;
		h->ports += (size_t)sw->num_ports + 1;
		h->lft += (size_t)sw->max_lid_ho + 1;
	}
	cl_plock_release(&osm->lock);
}

/* Outside the lock: room for the larger of the hint and the last fabric,
 * plus an eighth. Failure is not fatal; the copy grows what it needs. */
static void stage_prepare(struct stage *st, const struct stage_hint *h)
{
	size_t n = h->nodes > st->nnodes ? h->nodes : st->nnodes;
	size_t p = h->ports > st->nports ? h->ports : st->nports;
	size_t l = h->lft > st->nlft ? h->lft : st->nlft;

	grow((void **)&st->nodes, &st->nodes_cap, sizeof *st->nodes, n + n / 8 + 64, 1);
	grow((void **)&st->off, &st->off_cap, sizeof *st->off, n + n / 8 + 64, 1);
	grow((void **)&st->ports, &st->ports_cap, sizeof *st->ports, p + p / 8 + 256, 1);
	grow((void **)&st->lft, &st->lft_cap, 1, l + l / 8 + 4096, 1);
	st->nnodes = st->nports = 0;
	st->nlft = 0;
}

static void stage_free(struct stage *st)
{
	free(st->nodes);
	free(st->ports);
	free(st->lft);
	free(st->off);
	memset(st, 0, sizeof *st);
}

static int64_t stage_add_node(struct stage *st, const osm_node_t *node)
{
	unsigned nports = node->node_info.num_ports, p;
	const char *desc = (const char *)node->node_desc.description;
	struct snap_node *n;
	size_t dl;

	if (st->nnodes >= SNAP_MAX_NODES ||
	    grow((void **)&st->nodes, &st->nodes_cap, sizeof *st->nodes, (size_t)st->nnodes + 1, 0) ||
	    grow((void **)&st->off, &st->off_cap, sizeof *st->off, (size_t)st->nnodes + 1, 0) ||
	    grow((void **)&st->ports, &st->ports_cap, sizeof *st->ports,
		 (size_t)st->nports + nports + 1, 0))
		return -1;
	n = &st->nodes[st->nnodes];
	n->guid = cl_ntoh64(node->node_info.node_guid);
	n->sysimg_guid = cl_ntoh64(node->node_info.sys_guid);
	n->port0 = st->nports;
	n->lft = NULL;
	n->lft_len = 0;
	st->off[st->nnodes] = 0;
	n->type = osm_node_get_type(node);
	n->nports = (uint8_t)nports;
	/* NodeDescription is 64 raw bytes and need not hold a NUL. */
	dl = strnlen(desc, SNAP_DESC_LEN < IB_NODE_DESCRIPTION_SIZE ? SNAP_DESC_LEN
								 : IB_NODE_DESCRIPTION_SIZE);
	memcpy(n->desc, desc, dl);
	n->desc[dl] = '\0';
	for (p = 0; p <= nports; p++) {
		struct snap_port *sp = &st->ports[st->nports + p];
		memset(sp, 0, sizeof *sp);
		sp->peer_node = SNAP_NONE;
	}
	st->nports += nports + 1;
	return st->nnodes++;
}

static struct snap_port *stage_port(struct stage *st, uint32_t node, unsigned port)
{
	return &st->ports[st->nodes[node].port0 + port];
}

static int stage_set_lft(struct stage *st, uint32_t node, const uint8_t *lft, uint32_t len)
{
	if (grow((void **)&st->lft, &st->lft_cap, 1, st->nlft + len, 0))
		return -1;
	memcpy(st->lft + st->nlft, lft, len);
	st->off[node] = st->nlft;
	st->nodes[node].lft_len = len;
	st->nlft += len;
	return 0;
}

/* A new snapshot holding a copy of the stage; caller frees with snap_free(). */
static struct snap *stage_to_snap(const struct stage *st)
{
	struct snap *s = snap_new();

	if (!s)
		return NULL;
	s->nodes = malloc((st->nnodes ? st->nnodes : 1) * sizeof *s->nodes);
	s->ports = malloc((st->nports ? st->nports : 1) * sizeof *s->ports);
	if (!s->nodes || !s->ports) {
		snap_free(s);
		return NULL;
	}
	memcpy(s->nodes, st->nodes, st->nnodes * sizeof *s->nodes);
	memcpy(s->ports, st->ports, st->nports * sizeof *s->ports);
	s->nnodes = st->nnodes;
	s->nports = st->nports;
	for (uint32_t i = 0; i < s->nnodes; i++) {
		uint32_t len = s->nodes[i].lft_len;

		s->nodes[i].lft = NULL;
		s->nodes[i].lft_len = 0;
		if (len && snap_set_lft(s, i, st->lft + st->off[i], len)) {
			snap_free(s);
			return NULL;
		}
	}
	return s;
}

/* ---- the copy ------------------------------------------------------------ */

static void copy_port(struct snap_port *sp, const osm_node_t *node, const osm_physp_t *p,
		      unsigned num)
{
	const ib_port_info_t *pi = &p->port_info;
	int sw = osm_node_get_type(node) == IB_NODE_TYPE_SWITCH;
	/* A switch reports CapabilityMask on port 0 only. */
	ib_net32_t cap = sw ? node->physp_table[0].port_info.capability_mask : pi->capability_mask;

	sp->present = 1;
	sp->guid = cl_ntoh64(p->port_guid);
	sp->state = ib_port_info_get_port_state(pi);
	/* Switch external ports have no LID of their own; their PortInfo
	 * LID/LMC fields are not meaningful. A CA port that went down keeps
	 * the last PortInfo OpenSM read, whose LID may since belong to another
	 * port: one duplicate LID would make topod reject the whole snapshot. */
	if (sw ? num == 0 : sp->state > IB_LINK_DOWN) {
		sp->lid = cl_ntoh16(pi->base_lid);
		sp->lmc = ib_port_info_get_lmc(pi);
	}
	sp->width = pi->link_width_active;
	sp->speed = ib_port_info_get_link_speed_active(pi);
	sp->espeed = (cap & IB_PORT_CAP_HAS_EXT_SPEEDS) ? ib_port_info_get_link_speed_ext_active(pi) : 0;
}

/* Node idx's LFT into the stage: the whole table, or (lftcopy.h) nothing
 * now when the stage still holds it from the last pass at the same place;
 * lfc_apply() then brings the blocks stored since. */
static int copy_lft(struct tp *tp, uint32_t idx, const osm_node_t *node)
{
	struct stage *st = &tp->stage;
	const osm_switch_t *sw = node->sw;
	uint32_t len;

	if (!sw || !sw->lft) {
		lfc_switch(&tp->lfc, idx, NULL, NULL, 0, 0, 0);
		return 0;
	}
	/* OpenSM's LFT is lft_size bytes; LIDs above max_lid_ho are stale or
	 * unused. Entries are copied raw, so OSM_NO_PATH (0xFF) stays distinct
	 * from port 0. */
	len = (uint32_t)sw->max_lid_ho + 1;
	if (len > sw->lft_size)
		len = sw->lft_size;
	if (len > SNAP_MAX_LID + 1)
		len = SNAP_MAX_LID + 1;
	if (lfc_switch(&tp->lfc, idx, sw, sw->lft, cl_ntoh64(node->node_info.node_guid), st->nlft, len) &&
	    st->nlft + len <= st->lft_cap) {
		st->off[idx] = st->nlft;
		st->nodes[idx].lft_len = len;
		st->nlft += len;
		return 0;
	}
	return stage_set_lft(st, idx, sw->lft, len);
}

/* What the copy takes from OpenSM besides the stage. */
struct copy_meta {
	uint64_t sm_guid;
	char engine[SNAP_ENGINE_LEN + 1];
};

/*
 * Copies the subnet into the stage. Caller holds osm->lock for reading
 * (h), which this releases and takes again between nodes (struct hold). One
 * pass over the node table: each link is recorded when its second end is
 * visited (the first end's index is then in the map), so exactly once.
 */
static int copy_fabric(struct tp *tp, struct hold *h, struct copy_meta *m, int subnet_up, char err[SNAP_ERR_LEN])
{
	osm_subn_t *subn = &tp->osm->subn;
	cl_qmap_t *tbl = &subn->node_guid_tbl;
	struct stage *st = &tp->stage;
	cl_map_item_t *it;

	/* OpenSM reports no stored block while first_time_master_sweep is
	 * set, and a failed Set leaves a zeroed block unreported: then every
	 * table is copied whole (lftcopy.h). A pass with a failed Set that is
	 * not reported (a reroute is not) needs nothing more: the next pass
	 * finds the zeroed block unlike its new one and sends it again, so it
	 * is noted when stored, or fails again and is seen here.
	 * At SUBNET_UP no unicast LFT has been Set since the routing pass
	 * (multicast, link states and congestion control follow it), and
	 * a Set that failed in routing made that pass copy whole: a failure
	 * since (a PortInfo Set, say) is no reason to copy any table. */
	lfc_begin(&tp->lfc, subnet_up ? NULL
			    : subn->first_time_master_sweep ? "first master sweep"
			    : subn->coming_out_of_standby ? "out of standby"
			    : subn->subnet_initialization_error ? "a Set failed in this pass" : NULL);

	/* Normally cleared and sized by on_routing_done() before the lock. */
	if (2 * cl_qmap_count(tbl) + 1 > tp->map.cap && ptrmap_reset(&tp->map, cl_qmap_count(tbl))) {
		snprintf(err, SNAP_ERR_LEN, "out of memory for the node map");
		return -1;
	}

	for (it = cl_qmap_head(tbl); it != cl_qmap_end(tbl); it = cl_qmap_next(it)) {
		osm_node_t *node = (osm_node_t *)it;
		/* every node: a switch's table is up to 48 KB, and 16 of them,
		 * freshly touched, held the lock 21.7 ms of CPU at k=56 */
		h->node = st->nnodes;
		hold_slice(h);
		unsigned nphysp = osm_node_get_num_physp(node); /* includes port 0 */
		unsigned nports = node->node_info.num_ports, p;
		int64_t idx = stage_add_node(st, node);

		if (idx < 0) {
			snprintf(err, SNAP_ERR_LEN, "out of memory or over %u nodes at node 0x%016"
				 PRIx64, SNAP_MAX_NODES, cl_ntoh64(node->node_info.node_guid));
			return -1;
		}
		ptrmap_put(&tp->map, node, (uint32_t)idx);

		for (p = 0; p <= nports && p < nphysp; p++) {
			osm_physp_t *ph = osm_node_get_physp_ptr(node, p);
			osm_physp_t *rem;
			struct snap_port *sp, *rp;
			int64_t ridx;

			if (!ph)
				continue;
			sp = stage_port(st, (uint32_t)idx, p);
			copy_port(sp, node, ph, p);

			rem = ph->p_remote_physp;
			if (p == 0 || !rem || !osm_physp_is_valid(rem) || !rem->p_node ||
			    rem->port_num == 0)
				continue;
			ridx = ptrmap_get(&tp->map, rem->p_node);
			if (ridx < 0)
				continue; /* not visited yet: the far end records the link */
			if (ridx == idx && rem->port_num <= p)
				continue; /* a loopback cable: record it from its lower port */
			if (rem->port_num > st->nodes[ridx].nports)
				continue; /* cannot happen in a consistent subnet */
			rp = stage_port(st, (uint32_t)ridx, rem->port_num);
			sp->peer_node = (uint32_t)ridx;
			sp->peer_port = rem->port_num;
			rp->peer_node = (uint32_t)idx;
			rp->peer_port = (uint8_t)p;
		}

		if (copy_lft(tp, (uint32_t)idx, node)) {
			snprintf(err, SNAP_ERR_LEN, "out of memory copying the LFT of 0x%016"
				 PRIx64, cl_ntoh64(node->node_info.node_guid));
			return -1;
		}
	}
	/* The blocks stored since the last pass, into the kept tables. */
	h->node = st->nnodes;
	while (lfc_apply(&tp->lfc, st->lft, TP_NOTES_PER_SLICE)) {
		h->note = (uint32_t)tp->lfc.done;
		hold_slice(h);
	}
	h->note = (uint32_t)tp->lfc.done;

	m->sm_guid = cl_ntoh64(subn->sm_port_guid);
	/* re->name is the module name that osm_routing_engine_type_str()
	 * would return; that function lives in the opensm executable, not in
	 * libopensm, so calling it would break -z defs and any other host. */
	m->engine[0] = '\0';
	if (tp->osm->routing_engine_used && tp->osm->routing_engine_used->name)
		snprintf(m->engine, sizeof m->engine, "%s", tp->osm->routing_engine_used->name);
	return 0;
}

/* Does s differ from the last snapshot pushed in anything a sink would
 * see (port states, widths and speeds included)? */
static int stop_at_first(void *ctx, const struct snap_diff_item *d)
{
	(void)ctx;
	(void)d;
	return 1;
}

static int differs_from_prev(const struct tp *tp, const struct snap *s)
{
	return !tp->prev || s->nnodes != tp->prev->nnodes ||
	       snap_diff(tp->prev, s, SNAP_DIFF_STATE, stop_at_first, NULL) != 0;
}

/* What one copy under the lock cost, for the log line. */
struct capture_cost {
	struct hold h;
	uint64_t t0, t2, cpu; /* start, lock released, CPU time inside */
};

/*
 * Copies the fabric into the stage under OpenSM's lock (in slices) and
 * makes a snapshot of it, stamped but not yet canonical. NULL (logged) when
 * the copy failed.
 */
static struct snap *capture(struct tp *tp, int subnet_up, struct capture_cost *cc)
{
	char err[SNAP_ERR_LEN] = "";
	struct copy_meta meta;
	struct stage_hint hint;
	struct snap *s;
	uint64_t c1, now_us;
	int rc;

	stage_measure(tp->osm, &hint);
	stage_prepare(&tp->stage, &hint);
	/* Our pages the noted blocks land on, faulted in on this thread's
	 * time rather than in a slice of OpenSM's lock. */
	lfc_warm(&tp->lfc, tp->stage.lft, tp->stage.lft_cap);
	lfc_prepare(&tp->lfc, hint.nodes > tp->stage.nodes_cap ? hint.nodes : tp->stage.nodes_cap,
		    hint.lft / LFC_BLOCK);
	if (ptrmap_reset(&tp->map, hint.nodes + hint.nodes / 8)) {
		osm_log(tp->log, OSM_LOG_ERROR, TP_NAME ": out of memory; snapshot skipped\n");
		return NULL;
	}

	/* Read lock: the SA and the receivers may keep reading while we copy;
	 * only OpenSM's writers wait, and only for one slice. */
	memset(cc, 0, sizeof *cc);
	cc->h.osm = tp->osm;
	cc->t0 = mono_ns();
	hold_take(&cc->h);
	/* CPU time as well as wall time: on a loaded host the thread can be
	 * preempted while holding the lock, and the log should show which. */
	c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	now_us = snap_now_us();
	rc = copy_fabric(tp, &cc->h, &meta, subnet_up, err);
	lfc_end(&tp->lfc, tp->stage.nnodes, rc == 0);
	cc->cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c1;
	hold_drop(&cc->h);
	cc->t2 = mono_ns();

	if (cc->h.longest > tp->max_hold_ns) {
		tp->max_hold_ns = cc->h.longest;
		tp->max_hold_nodes = tp->stage.nnodes;
	}
	if (rc) {
		osm_log(tp->log, OSM_LOG_ERROR, TP_NAME ": snapshot skipped: %s\n", err);
		return NULL;
	}
	s = stage_to_snap(&tp->stage);
	if (!s) {
		osm_log(tp->log, OSM_LOG_ERROR, TP_NAME ": out of memory; snapshot skipped\n");
		return NULL;
	}
	s->timestamp = now_us;
	s->sweep = tp->sweeps;
	s->sm_guid = meta.sm_guid;
	memcpy(s->engine, meta.engine, sizeof s->engine);
	return s;
}

/* tpq_push_delta's drop: a snapshot the queue frees once the sinks have
 * answered. */
static void drop_snap(void *s)
{
	snap_free(s);
}

/*
 * One capture, published: after a routing pass (what is "heavy sweep" or
 * "reroute"), and at SUBNET_UP ("subnet up"), when OpenSM has armed and
 * activated the ports that routing saw at Init. The second is published
 * only when something differs from the first, as a delta of port records.
 */
static void publish(struct tp *tp, const char *what, int only_if_changed)
{
	char err[SNAP_ERR_LEN] = "";
	struct capture_cost cc;
	struct snap *s;
	uint8_t *buf = NULL;
	size_t len = 0;
	uint64_t t3;
	int rc;

	s = capture(tp, only_if_changed, &cc);
	if (!s)
		return;
	/* Validating here costs a few ms on the SM thread, outside the lock; it
	 * keeps a snapshot topod would reject (say, a LID briefly on two ports
	 * while OpenSM reassigns) from replacing a good pending one. */
	/* Normalized LFTs (LIDs 0..max_lid) make this byte-identical to what
	 * topo-collect reads from the switches of the same fabric. */
	if (snap_canonicalize(s) || snap_normalize_lfts(s)) {
		snprintf(err, sizeof err, "out of memory canonicalizing");
		rc = -1;
	} else if (only_if_changed && !differs_from_prev(tp, s)) {
		osm_log(tp->log, OSM_LOG_VERBOSE, TP_NAME ": %s: the fabric is as generation %"
			PRIu64 " has it; nothing sent\n", what, tp->last_gen);
		snap_free(s);
		return;
	} else if (snap_validate(s, err) == 0) {
		/* Microseconds since the epoch, bumped past the previous value:
		 * unique and increasing across OpenSM restarts too, so topod
		 * never mistakes a restarted SM's first snapshot for an old one. */
		s->generation = s->timestamp > tp->last_gen ? s->timestamp : tp->last_gen + 1;
		rc = snap_encode(s, &buf, &len, err);
	} else {
		rc = -1;
	}
	t3 = mono_ns();
	if (rc) {
		osm_log(tp->log, OSM_LOG_ERROR, TP_NAME ": snapshot of %s (routing pass #%" PRIu64
			") not published: %s\n", what, tp->sweeps, err);
		snap_free(s);
		return;
	}
	tp->last_gen = s->generation;

	/* A reroute usually changes a few LFT blocks, a subnet-up a few port
	 * states: the delta against the previous snapshot is what a sink that
	 * has it receives. When the node set changed (or the delta would be no
	 * smaller) only the full snapshot goes. */
	uint8_t *delta = NULL;
	size_t dlen = 0;
	uint64_t base_gen = 0;
	if (tp->prev && snap_delta_encode(tp->prev, s, &delta, &dlen, err) == 0 && dlen < len) {
		base_gen = tp->prev->generation;
	} else {
		free(delta);
		delta = NULL;
		dlen = 0;
	}
	uint64_t t4 = mono_ns();

	osm_log(tp->log, OSM_LOG_INFO, TP_NAME ": generation %" PRIu64 " (%s #%" PRIu64
		", engine %s): %u nodes, %u ports, %" PRIu64 " LFT bytes; lock waited %.3f ms,"
		" held %.3f ms (%.3f ms CPU) in %u slices, longest %.3f ms (%.3f ms CPU); copy %.3f ms; encode %.3f ms; %zu bytes; delta %zu bytes (%.3f ms);"
		" LFTs: %u whole, %u kept + %" PRIu64 " blocks of %" PRIu64 " noted%s%s;"
		" longest slice (CPU): nodes %u-%u, notes %u-%u, %ld page faults (%ld in other threads)\n",
		s->generation, what, tp->sweeps, s->engine[0] ? s->engine : "?", s->nnodes, s->nports, s->nlft,
		cc.h.waited / 1e6, cc.h.total / 1e6, cc.cpu / 1e6, cc.h.slices, cc.h.longest / 1e6,
		cc.h.longest_cpu / 1e6, (cc.t2 - cc.t0) / 1e6, (t3 - cc.t2) / 1e6, len, dlen, (t4 - t3) / 1e6,
		tp->lfc.st.whole, tp->lfc.st.kept, tp->lfc.st.blocks, tp->lfc.st.notes,
		tp->lfc.st.full ? "; all whole: " : "", tp->lfc.st.full ? tp->lfc.st.why : "", cc.h.lnode0,
		cc.h.lnode1, cc.h.lnote0, cc.h.lnote1, cc.h.lfaults, cc.h.lothers);
	/* The previous snapshot (195 MB of tables at k=56) is the queue's to
	 * free once the sinks have answered: freed here, its unmaps stalled
	 * the delivery topod waited for (tpq_push_delta). */
	struct snap *was = tp->prev;
	tp->prev = s;
	if (tp->q)
		tpq_push_delta(tp->q, buf, len, tp->last_gen, delta, dlen, base_gen, drop_snap, was);
	else {
		free(buf);
		free(delta);
		snap_free(was);
	}
}

/* ---- the plugin interface -------------------------------------------------- */

static void *tp_create(struct osm_opensm *osm)
{
	const char *opts = osm->subn.opt.event_plugin_options;
	char err[SNAP_ERR_LEN], name[SINK_ADDR_LEN + 16];
	struct sink_opts so;
	struct tp *tp;
	int i;

	if (sink_parse_options(opts, &so, err)) {
		/* OpenSM then logs "cannot load plugin" and runs without us. */
		osm_log(&osm->log, OSM_LOG_ERROR, TP_NAME ": bad event_plugin_options \"%s\": %s;"
			" plugin not loaded\n", opts ? opts : "", err);
		return NULL;
	}
	tp = calloc(1, sizeof *tp);
	if (!tp) {
		osm_log(&osm->log, OSM_LOG_ERROR, TP_NAME ": out of memory; plugin not loaded\n");
		return NULL;
	}
	tp->osm = osm;
	tp->log = &osm->log;
	if (lfc_init(&tp->lfc)) {
		osm_log(&osm->log, OSM_LOG_ERROR, TP_NAME ": cannot make a mutex; plugin not loaded\n");
		free(tp);
		return NULL;
	}

	if (so.nsinks == 0)
		osm_log(tp->log, OSM_LOG_ERROR, TP_NAME ": no sink= or spool= in"
			" event_plugin_options; snapshots will be built and discarded\n");
	else {
		tp->q = tpq_start(&so, queue_log, tp, err);
		if (!tp->q) {
			osm_log(tp->log, OSM_LOG_ERROR, TP_NAME ": %s; plugin not loaded\n", err);
			lfc_free(&tp->lfc);
			free(tp);
			return NULL;
		}
	}
	for (i = 0; i < so.nsinks; i++)
		osm_log(tp->log, OSM_LOG_INFO, TP_NAME ": sink %s (timeout_ms=%u"
			" backoff_max_ms=%u linger_ms=%u%s%s%s)\n",
			sink_describe(&so.sinks[i], name, sizeof name), so.timeout_ms,
			so.backoff_max_ms, so.linger_ms,
			so.sinks[i].has_key ? " key_file: challenge-response" : "",
			so.sinks[i].plane[0] ? " plane=" : "", so.sinks[i].plane);
	return tp;
}

static void tp_delete(void *ctx)
{
	struct tp *tp = ctx;
	struct tpq_stats st = { 0 };

	if (!tp)
		return;
	if (tp->q) {
		tpq_get_stats(tp->q, &st);
		/* Run-once mode exits right after the first routing pass: this
		 * linger is what gets that snapshot out at all. */
		tpq_stop(tp->q);
	}
	osm_log(tp->log, OSM_LOG_INFO, TP_NAME ": unloaded after %" PRIu64 " routing passes, %"
		PRIu64 " snapshots queued, %" PRIu64 " superseded before every sink had them, %" PRIu64
		" delivered as deltas (%" PRIu64 " refused, sent whole);"
		" longest lock hold %.3f ms with %u nodes\n", tp->sweeps, st.pushed,
		st.superseded, st.deltas, st.delta_refused, tp->max_hold_ns / 1e6, tp->max_hold_nodes);
	ptrmap_free(&tp->map);
	lfc_free(&tp->lfc);
	stage_free(&tp->stage);
	snap_free(tp->prev);
	free(tp);
}

static void tp_report(void *ctx, osm_epi_event_id_t id, void *data)
{
	struct tp *tp = ctx;

	switch (id) {
	case OSM_EVENT_ID_UCAST_ROUTING_DONE:
		/* data is the routing kind cast to a pointer, not a pointer. */
		tp->sweeps++;
		publish(tp, (osm_epi_ucast_routing_flags_t)(uintptr_t)data == UCAST_ROUTING_REROUTE
			    ? "reroute" : "heavy sweep", 0);
		break;
	case OSM_EVENT_ID_SUBNET_UP:
		/* The end of every heavy sweep, on the state-manager thread
		 * after the ports were armed and activated (and after the drop
		 * manager): the port states routing saw at Init are now what
		 * iblinkinfo shows. Same thread and guarantees as a routing
		 * pass (copy_fabric); nothing is sent when nothing changed. */
		publish(tp, "subnet up", 1);
		break;
	case OSM_EVENT_ID_LFT_CHANGE: {
		/* Raised from MAD receivers with OpenSM's lock held
		 * exclusively: taking it here would deadlock. Noting the block
		 * is all we do; the next routing pass copies it. */
		const osm_epi_lft_change_event_t *ev = data;
		if (ev && (ev->flags & LFT_CHANGED_BLOCK))
			lfc_note(&tp->lfc, ev->p_sw, ev->block_num);
		break;
	}
	default:
		/* Counters, traps and sweep markers: not ours. */
		break;
	}
}

__attribute__((visibility("default"))) osm_event_plugin_t osm_event_plugin = {
	.osm_version = OSM_VERSION,
	.create = tp_create,
	.delete = tp_delete,
	.report = tp_report,
};
