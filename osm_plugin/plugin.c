/*
 * plugin.c - libosmtopo.so, an OpenSM event plugin that publishes the fabric
 * (nodes, ports, links, unicast LFTs) as a snapshot after every unicast
 * routing pass, heavy sweep or reroute.
 *
 *   event_plugin_name osmtopo
 *   event_plugin_options sink=unix:/run/topod/ingest.sock spool=/var/lib/topod
 *
 * Threads: report() runs on OpenSM's state-manager thread. It copies the
 * subnet under OpenSM's lock, encodes outside it and hands the buffer to
 * queue.c, whose workers do all I/O. Nothing here may stall a sweep: a slow
 * or dead topod costs a sweep only the copy and the encode.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

#include "queue.h"
#include "sink.h"
#include "snapshot.h"

#if OSM_EVENT_PLUGIN_INTERFACE_VER != 2
#error "osmtopo implements event plugin interface version 2 only"
#endif

#define TP_NAME "osmtopo"

/* osm_node_t * -> snapshot node index. Open addressing on the pointer: the
 * copy runs under OpenSM's lock, and a map lookup per link must not be a
 * search. Reused across sweeps (SM thread only), so a steady fabric costs no
 * allocation while the lock is held. */
struct nodemap {
	const void **key;
	uint32_t *val;
	size_t cap; /* power of two, > 2 x entries */
};

struct tp {
	osm_opensm_t *osm; /* borrowed: OpenSM destroys plugins before its log and subnet */
	osm_log_t *log;
	struct tpq *q;     /* NULL when no sink is configured */

	/* SM thread only: UCAST_ROUTING_DONE is reported by the state manager. */
	uint64_t sweeps;      /* routing passes seen by this process */
	uint64_t last_gen;
	uint64_t max_hold_ns; /* longest time we held OpenSM's lock */
	uint32_t max_hold_nodes;
	struct nodemap map;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
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

/* ---- node map ---------------------------------------------------------- */

static size_t map_slot(const struct nodemap *m, const void *k)
{
	/* Fibonacci hashing: node structs are malloc'd, so low bits are
	 * alignment and carry no information. */
	return (size_t)(((uint64_t)(uintptr_t)k * 0x9E3779B97F4A7C15ull) >> 32) & (m->cap - 1);
}

static int map_reset(struct nodemap *m, size_t n)
{
	size_t cap = 64;

	while (cap < 2 * n + 1)
		cap *= 2;
	if (cap > m->cap) {
		const void **k = malloc(cap * sizeof *k);
		uint32_t *v = malloc(cap * sizeof *v);
		if (!k || !v) {
			free(k);
			free(v);
			return -1;
		}
		free(m->key);
		free(m->val);
		m->key = k;
		m->val = v;
		m->cap = cap;
	}
	memset(m->key, 0, m->cap * sizeof *m->key);
	return 0;
}

static void map_put(struct nodemap *m, const void *k, uint32_t v)
{
	size_t i = map_slot(m, k);

	while (m->key[i] && m->key[i] != k)
		i = (i + 1) & (m->cap - 1);
	m->key[i] = k;
	m->val[i] = v;
}

static int64_t map_get(const struct nodemap *m, const void *k)
{
	size_t i = map_slot(m, k);

	while (m->key[i]) {
		if (m->key[i] == k)
			return m->val[i];
		i = (i + 1) & (m->cap - 1);
	}
	return -1;
}

static void map_free(struct nodemap *m)
{
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof *m);
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
	/* Switch external ports have no LID of their own; their PortInfo
	 * LID/LMC fields are not meaningful. */
	if (!sw || num == 0) {
		sp->lid = cl_ntoh16(pi->base_lid);
		sp->lmc = ib_port_info_get_lmc(pi);
	}
	sp->state = ib_port_info_get_port_state(pi);
	sp->width = pi->link_width_active;
	sp->speed = ib_port_info_get_link_speed_active(pi);
	sp->espeed = (cap & IB_PORT_CAP_HAS_EXT_SPEEDS) ? ib_port_info_get_link_speed_ext_active(pi) : 0;
}

/*
 * Copies the subnet into s. Caller holds osm->lock for reading. One pass over
 * the node table: each link is added when its second end is visited (the
 * first end's index is then in the map), so every link is added once.
 */
static int copy_fabric(struct tp *tp, struct snap *s, char err[SNAP_ERR_LEN])
{
	osm_subn_t *subn = &tp->osm->subn;
	cl_qmap_t *tbl = &subn->node_guid_tbl;
	cl_map_item_t *it;

	if (map_reset(&tp->map, cl_qmap_count(tbl))) {
		snprintf(err, SNAP_ERR_LEN, "out of memory for the node map");
		return -1;
	}

	for (it = cl_qmap_head(tbl); it != cl_qmap_end(tbl); it = cl_qmap_next(it)) {
		osm_node_t *node = (osm_node_t *)it;
		unsigned nphysp = osm_node_get_num_physp(node); /* includes port 0 */
		unsigned nports = node->node_info.num_ports, p;
		int64_t idx;

		idx = snap_add_node(s, osm_node_get_type(node),
				    cl_ntoh64(node->node_info.node_guid),
				    cl_ntoh64(node->node_info.sys_guid), (uint8_t)nports,
				    (const char *)node->node_desc.description,
				    IB_NODE_DESCRIPTION_SIZE);
		if (idx < 0) {
			snprintf(err, SNAP_ERR_LEN, "cannot add node 0x%016" PRIx64 " (%u ports)",
				 cl_ntoh64(node->node_info.node_guid), nports);
			return -1;
		}
		map_put(&tp->map, node, (uint32_t)idx);

		for (p = 0; p <= nports && p < nphysp; p++) {
			osm_physp_t *ph = osm_node_get_physp_ptr(node, p);
			osm_physp_t *rem;
			struct snap_port *sp;
			int64_t ridx;

			if (!ph)
				continue;
			sp = snap_port_of(s, (uint32_t)idx, p);
			if (!sp)
				continue;
			copy_port(sp, node, ph, p);

			rem = ph->p_remote_physp;
			if (!rem || !osm_physp_is_valid(rem) || !rem->p_node)
				continue;
			ridx = map_get(&tp->map, rem->p_node);
			if (ridx < 0)
				continue; /* not visited yet: the far end adds the link */
			if (ridx == idx && rem->port_num <= p)
				continue; /* a loopback cable: add it from its lower port */
			if (snap_link(s, (uint32_t)idx, p, (uint32_t)ridx, rem->port_num)) {
				snprintf(err, SNAP_ERR_LEN, "cannot link 0x%016" PRIx64 "/%u",
					 cl_ntoh64(node->node_info.node_guid), p);
				return -1;
			}
		}

		if (node->sw && node->sw->lft) {
			osm_switch_t *sw = node->sw;
			/* OpenSM's LFT is lft_size bytes; LIDs above max_lid_ho are
			 * stale or unused. Entries are copied raw, so OSM_NO_PATH
			 * (0xFF) stays distinct from port 0. */
			uint32_t len = (uint32_t)sw->max_lid_ho + 1;
			if (len > sw->lft_size)
				len = sw->lft_size;
			if (snap_set_lft(s, (uint32_t)idx, sw->lft, len)) {
				snprintf(err, SNAP_ERR_LEN, "cannot copy the LFT of 0x%016" PRIx64,
					 cl_ntoh64(node->node_info.node_guid));
				return -1;
			}
		}
	}

	s->sm_guid = cl_ntoh64(subn->sm_port_guid);
	if (tp->osm->routing_engine_used)
		snprintf(s->engine, sizeof s->engine, "%s",
			 osm_routing_engine_type_str(tp->osm->routing_engine_used->type));
	return 0;
}

static void on_routing_done(struct tp *tp, osm_epi_ucast_routing_flags_t how)
{
	char err[SNAP_ERR_LEN] = "";
	struct snap *s = snap_new();
	uint8_t *buf = NULL;
	size_t len = 0;
	uint64_t t0, t1, t2, t3;
	int rc;

	if (!s) {
		osm_log(tp->log, OSM_LOG_ERROR, TP_NAME ": out of memory; snapshot skipped\n");
		return;
	}
	tp->sweeps++;

	t0 = mono_ns();
	/* Read lock: the SA and the receivers may keep reading while we copy;
	 * only OpenSM's writers wait, and only for the copy. */
	cl_plock_acquire(&tp->osm->lock);
	t1 = mono_ns();
	s->timestamp = snap_now_us();
	rc = copy_fabric(tp, s, err);
	t2 = mono_ns();
	cl_plock_release(&tp->osm->lock);

	if (t2 - t1 > tp->max_hold_ns) {
		tp->max_hold_ns = t2 - t1;
		tp->max_hold_nodes = s->nnodes;
	}
	if (rc) {
		osm_log(tp->log, OSM_LOG_ERROR, TP_NAME ": snapshot skipped: %s\n", err);
		snap_free(s);
		return;
	}

	/* Microseconds since the epoch, bumped past the previous value: unique
	 * and increasing across OpenSM restarts too, so topod never mistakes a
	 * restarted SM's first snapshot for an old one. */
	s->generation = s->timestamp > tp->last_gen ? s->timestamp : tp->last_gen + 1;
	s->sweep = tp->sweeps;

	if (snap_canonicalize(s) || snap_encode(s, &buf, &len, err)) {
		osm_log(tp->log, OSM_LOG_ERROR, TP_NAME ": cannot encode snapshot: %s\n",
			err[0] ? err : "canonicalize failed");
		snap_free(s);
		return;
	}
	t3 = mono_ns();
	tp->last_gen = s->generation;

	osm_log(tp->log, OSM_LOG_INFO, TP_NAME ": generation %" PRIu64 " (%s #%" PRIu64
		", engine %s): %u nodes, %u ports, %" PRIu64 " LFT bytes; lock waited %.3f ms,"
		" held %.3f ms; encode %.3f ms; %zu bytes\n",
		s->generation, how == UCAST_ROUTING_REROUTE ? "reroute" : "heavy sweep",
		tp->sweeps, s->engine[0] ? s->engine : "?", s->nnodes, s->nports, s->nlft,
		(t1 - t0) / 1e6, (t2 - t1) / 1e6, (t3 - t2) / 1e6, len);
	snap_free(s);

	if (tp->q)
		tpq_push(tp->q, buf, len, tp->last_gen);
	else
		free(buf);
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

	if (so.nsinks == 0)
		osm_log(tp->log, OSM_LOG_ERROR, TP_NAME ": no sink= or spool= in"
			" event_plugin_options; snapshots will be built and discarded\n");
	else {
		tp->q = tpq_start(&so, queue_log, tp, err);
		if (!tp->q) {
			osm_log(tp->log, OSM_LOG_ERROR, TP_NAME ": %s; plugin not loaded\n", err);
			free(tp);
			return NULL;
		}
	}
	for (i = 0; i < so.nsinks; i++)
		osm_log(tp->log, OSM_LOG_INFO, TP_NAME ": sink %s (timeout_ms=%u"
			" backoff_max_ms=%u linger_ms=%u)\n",
			sink_describe(&so.sinks[i], name, sizeof name), so.timeout_ms,
			so.backoff_max_ms, so.linger_ms);
	return tp;
}

static void tp_delete(void *ctx)
{
	struct tp *tp = ctx;
	struct tpq_stats st = { 0, 0 };

	if (!tp)
		return;
	if (tp->q) {
		tpq_get_stats(tp->q, &st);
		/* Run-once mode exits right after the first routing pass: this
		 * linger is what gets that snapshot out at all. */
		tpq_stop(tp->q);
	}
	osm_log(tp->log, OSM_LOG_INFO, TP_NAME ": unloaded after %" PRIu64 " snapshots (%"
		PRIu64 " superseded before every sink had them); longest lock hold %.3f ms"
		" with %u nodes\n", st.pushed, st.superseded, tp->max_hold_ns / 1e6,
		tp->max_hold_nodes);
	map_free(&tp->map);
	free(tp);
}

static void tp_report(void *ctx, osm_epi_event_id_t id, void *data)
{
	struct tp *tp = ctx;

	switch (id) {
	case OSM_EVENT_ID_UCAST_ROUTING_DONE:
		/* data is the routing kind cast to a pointer, not a pointer. */
		on_routing_done(tp, (osm_epi_ucast_routing_flags_t)(uintptr_t)data);
		break;
	case OSM_EVENT_ID_LFT_CHANGE:
		/* Raised from MAD receivers, possibly with OpenSM's lock held:
		 * taking it here could deadlock. The routing-done snapshot that
		 * follows carries these LFTs anyway. */
		break;
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
