/*
 * collect.c - libibnetdisc fabric + SMP-read LFTs -> struct snap.
 *
 * LFTs are read as directed-route SMPs along the paths discovery found, not
 * LID-routed like ibroute does: the collector exists to look at fabrics whose
 * routing may be broken, and a LID-routed read of a switch is only as good as
 * the LFTs on the way to it and back.
 */
#include "collect.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/ibnetdisc.h>
#include "util.h"

#define LFT_BLOCK IB_SMP_DATA_SIZE    /* 64 LIDs per LinearForwardingTable block */
#define CAP_EXT_SPEEDS 0x00004000u    /* PortInfo:CapabilityMask IsExtendedSpeedsSupported */
#define SM_STATE_MASTER 3             /* SMInfo:SMState */

static int cmp_node_guid(const void *a, const void *b)
{
	uint64_t x = (*(ibnd_node_t *const *)a)->guid, y = (*(ibnd_node_t *const *)b)->guid;
	return x < y ? -1 : x > y;
}

/* Index of guid in the GUID-sorted node array, or -1. */
static int64_t node_index(ibnd_node_t **v, uint32_t n, uint64_t guid)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (v[mid]->guid < guid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo]->guid == guid ? (int64_t)lo : -1;
}

static void desc_of(const ibnd_node_t *nd, char *out, size_t n)
{
	char raw[SNAP_DESC_LEN + 1];
	/* nodedesc holds the 64 wire bytes plus one byte of whatever followed
	 * them in the MAD: never trust it to be terminated. */
	memcpy(raw, nd->nodedesc, SNAP_DESC_LEN);
	raw[SNAP_DESC_LEN] = '\0';
	snap_escape(raw, out, n);
}

/* Builds nodes, ports and links in GUID order. */
static int add_topology(struct snap *s, ibnd_node_t **v, uint32_t n, struct collect_stats *st,
			char *err)
{
	for (uint32_t i = 0; i < n; i++) {
		ibnd_node_t *nd = v[i];
		uint8_t type;
		switch (nd->type) {
		case IB_NODE_CA: type = SNAP_NODE_CA; break;
		case IB_NODE_SWITCH: type = SNAP_NODE_SWITCH; st->switches++; break;
		case IB_NODE_ROUTER: type = SNAP_NODE_ROUTER; break;
		default:
			return util_fail(err, SNAP_ERR_LEN, "node 0x%016llx: unknown node type %d", (unsigned long long)nd->guid,
				    nd->type);
		}
		if (nd->numports < 0 || nd->numports > SNAP_MAX_PORTS_PER_NODE)
			return util_fail(err, SNAP_ERR_LEN, "node 0x%016llx: %d ports", (unsigned long long)nd->guid, nd->numports);
		uint64_t sysimg = mad_get_field64(nd->info, 0, IB_NODE_SYSTEM_GUID_F);
		if (snap_add_node(s, type, nd->guid, sysimg, (uint8_t)nd->numports, nd->nodedesc,
				  strnlen(nd->nodedesc, SNAP_DESC_LEN)) != (int64_t)i)
			return util_fail(err, SNAP_ERR_LEN, "out of memory adding node %u", i);
		for (int p = 0; p <= nd->numports; p++) {
			ibnd_port_t *ip = nd->ports[p];
			if (!ip || (p == 0 && nd->type != IB_NODE_SWITCH))
				continue;
			struct snap_port *sp = snap_port_of(s, i, (unsigned)p);
			sp->present = 1;
			sp->guid = ip->guid;
			if (snap_is_endport(type, (unsigned)p)) {
				/* LID, not base_lid: libibnetdisc copies the switch's LID
				 * onto external ports, which own none. */
				sp->lid = (uint16_t)mad_get_field(ip->info, 0, IB_PORT_LID_F);
				sp->lmc = (uint8_t)mad_get_field(ip->info, 0, IB_PORT_LMC_F);
			}
			unsigned state = mad_get_field(ip->info, 0, IB_PORT_STATE_F);
			/* 5..15 are reserved; the decoder would reject the whole
			 * snapshot for one odd port, so record "no state" instead. */
			sp->state = (uint8_t)(state <= SNAP_PORT_ACTIVE ? state : SNAP_PORT_NOSTATE);
			/* C14-24-2.1: with PortState Down the rest of PortInfo is
			 * undefined (ibsim reports 4x SDR there); OpenSM keeps only
			 * the state, and so do we. */
			if (sp->state == SNAP_PORT_DOWN)
				continue;
			sp->width = (uint8_t)mad_get_field(ip->info, 0, IB_PORT_LINK_WIDTH_ACTIVE_F);
			sp->speed = (uint8_t)mad_get_field(ip->info, 0, IB_PORT_LINK_SPEED_ACTIVE_F);
			/* LinkSpeedExtActive is reserved unless the capability bit
			 * says otherwise, and a switch has that bit on port 0 only
			 * (OpenSM, hence the plugin, reads it the same way). */
			ibnd_port_t *capp = nd->type == IB_NODE_SWITCH ? nd->ports[0] : ip;
			uint32_t cap = capp ? mad_get_field(capp->info, 0, IB_PORT_CAPMASK_F) : 0;
			sp->espeed = (cap & CAP_EXT_SPEEDS) ?
				(uint8_t)mad_get_field(ip->info, 0, IB_PORT_LINK_SPEED_EXT_ACTIVE_F) : 0;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		ibnd_node_t *nd = v[i];
		for (int p = 1; p <= nd->numports; p++) {
			ibnd_port_t *ip = nd->ports[p];
			if (!ip || !ip->remoteport || !ip->remoteport->node)
				continue;
			int64_t j = node_index(v, n, ip->remoteport->node->guid);
			int pp = ip->remoteport->portnum;
			if (j < 0 || pp < 1 || pp > ip->remoteport->node->numports)
				continue;
			/* Each link is seen from both ends; add it once. */
			if ((uint32_t)j < i || ((uint32_t)j == i && pp <= p))
				continue;
			if (snap_link(s, i, (unsigned)p, (uint32_t)j, (unsigned)pp))
				return util_fail(err, SNAP_ERR_LEN, "cannot link 0x%016llx/%d to 0x%016llx/%d",
					    (unsigned long long)nd->guid, p,
					    (unsigned long long)ip->remoteport->node->guid, pp);
			st->links++;
		}
	}
	return 0;
}

/* The same rule as snap_canonicalize(): highest LID of any end port, LMC
 * range included. */
/* Port GUID of the end port that owns lid, or 0. */
static uint64_t guid_of_lid(const struct snap *s, unsigned lid)
{
	uint32_t node;
	unsigned port;
	if (!lid || lid > SNAP_MAX_LID || snap_find_lid(s, (uint16_t)lid, &node, &port))
		return 0;
	return s->ports[s->nodes[node].port0 + port].guid;
}

struct sw {
	uint32_t node;           /* index in the snapshot (= in the sorted array) */
	uint32_t top;            /* LinearFDBTop */
	uint32_t nblocks;        /* blocks to read */
	size_t off;              /* into the block buffer */
};

int collect_fabric(const struct collect_cfg *cfg, struct snap **out, struct collect_stats *st,
		   char err[SNAP_ERR_LEN])
{
	struct collect_stats dummy;
	if (!st)
		st = &dummy;
	memset(st, 0, sizeof(*st));
	st->sm_from = "unknown";

	struct ibnd_config ic;
	memset(&ic, 0, sizeof(ic));
	ic.max_smps = cfg->window;
	ic.timeout_ms = cfg->timeout_ms;
	ic.retries = cfg->retries;
	ic.mkey = cfg->mkey;

	uint64_t t0 = util_now_us();
	ibnd_fabric_t *fab = ibnd_discover_fabric((char *)cfg->ca, cfg->port, NULL, &ic);
	if (!fab)
		return util_fail(err, SNAP_ERR_LEN, "discovery through %s:%d failed (libibnetdisc said why above)",
			    cfg->ca ? cfg->ca : "default CA", cfg->port);
	uint64_t t1 = util_now_us();
	st->discover_us = t1 - t0;
	st->discover_mads = fab->total_mads_used;

	int rc = -1;
	struct smpq *q = NULL;
	struct snap *s = NULL;
	ibnd_node_t **v = NULL;
	struct sw *sws = NULL;
	struct smpq_req *reqs = NULL;
	uint8_t *blocks = NULL, *lft = NULL;
	ib_portid_t sm_to;
	uint8_t sminfo[IB_SMP_DATA_SIZE];

	uint32_t n = 0;
	for (ibnd_node_t *nd = fab->nodes; nd; nd = nd->next)
		n++;
	if (n == 0 || n > SNAP_MAX_NODES) {
		util_fail(err, SNAP_ERR_LEN, "discovery found %u nodes", n);
		goto out;
	}
	v = malloc((size_t)n * sizeof(*v));
	s = snap_new();
	if (!v || !s) {
		util_fail(err, SNAP_ERR_LEN, "out of memory for %u nodes", n);
		goto out;
	}
	n = 0;
	for (ibnd_node_t *nd = fab->nodes; nd; nd = nd->next)
		v[n++] = nd;
	/* Building in GUID order lets node_index() bsearch ibnd's nodes and
	 * leaves snap_canonicalize() nothing to move. */
	qsort(v, n, sizeof(*v), cmp_node_guid);
	st->nodes = n;
	if (add_topology(s, v, n, st, err))
		goto out;
	uint32_t max_lid = snap_max_lid(s);
	st->max_lid = max_lid;

	/* Plan the reads: blocks 0..min(top, max_lid)/64 of every switch. */
	sws = calloc(st->switches ? st->switches : 1, sizeof(*sws));
	if (!sws) {
		util_fail(err, SNAP_ERR_LEN, "out of memory");
		goto out;
	}
	uint32_t nsw = 0, maxblocks = 0;
	size_t nblk = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (v[i]->type != IB_NODE_SWITCH)
			continue;
		struct sw *w = &sws[nsw++];
		w->node = i;
		w->top = mad_get_field(v[i]->switchinfo, 0, IB_SW_LINEAR_FDB_TOP_F);
		uint32_t last = w->top < max_lid ? w->top : max_lid;
		/* Top 0 means the switch forwards nothing: no read needed. */
		w->nblocks = (w->top && max_lid) ? last / LFT_BLOCK + 1 : 0;
		w->off = nblk * LFT_BLOCK;
		nblk += w->nblocks;
		if (w->nblocks > maxblocks)
			maxblocks = w->nblocks;
	}
	st->lft_blocks = nblk;

	int sm_lid = 0;
	ibnd_node_t *from = fab->from_node;
	if (from && fab->from_portnum >= 0 && fab->from_portnum <= from->numports &&
	    from->ports[fab->from_portnum])
		sm_lid = (int)mad_get_field(from->ports[fab->from_portnum]->info, 0, IB_PORT_SMLID_F);
	int ask_sm = sm_lid > 0 && sm_lid <= SNAP_MAX_LID;

	blocks = malloc(nblk ? nblk * LFT_BLOCK : 1);
	reqs = calloc(nblk + 1, sizeof(*reqs));
	if (!blocks || !reqs) {
		util_fail(err, SNAP_ERR_LEN, "out of memory for %zu LFT blocks", nblk);
		goto out;
	}
	/* Block-major order: consecutive requests go to different switches, so a
	 * window of W puts about one SMP on each of W switches instead of W on
	 * one switch's management processor. */
	size_t r = 0;
	for (uint32_t b = 0; b < maxblocks; b++) {
		for (uint32_t k = 0; k < nsw; k++) {
			if (b >= sws[k].nblocks)
				continue;
			reqs[r].to = &v[sws[k].node]->path_portid;
			reqs[r].attr = IB_ATTR_LINEARFORWTBL;
			reqs[r].mod = b;
			reqs[r].out = blocks + sws[k].off + (size_t)b * LFT_BLOCK;
			r++;
		}
	}
	if (ask_sm) {
		/* LID-routed: SMInfo is per port, and a directed route ends at
		 * whichever port of a CA discovery happened to reach first. */
		memset(&sm_to, 0, sizeof(sm_to));
		sm_to.lid = sm_lid;
		reqs[r].to = &sm_to;
		reqs[r].attr = IB_ATTR_SMINFO;
		reqs[r].mod = 0;
		reqs[r].out = sminfo;
		/* Optional: a dead or unreachable SM must not stretch the run. */
		reqs[r].once = 1;
		r++;
	}
	struct smpq_cfg qc = { cfg->window, cfg->timeout_ms, cfg->retries, cfg->mkey };
	uint64_t t2 = util_now_us();
	if (r && (smpq_open(&q, cfg->ca, cfg->port, err) || smpq_run(q, reqs, r, &qc, &st->smp, err)))
		goto out;
	smpq_close(q);
	q = NULL;
	st->lft_us = util_now_us() - t2;
	for (size_t i = 0; i < nblk; i++) {
		if (reqs[i].status == SMPQ_OK)
			continue;
		/* A missing block would make topod route through a hole that is
		 * not in the fabric: fail rather than guess. */
		ibnd_node_t *nd = NULL;
		for (uint32_t k = 0; k < nsw && !nd; k++)
			if (reqs[i].to == &v[sws[k].node]->path_portid)
				nd = v[sws[k].node];
		char why[64], desc[4 * SNAP_DESC_LEN + 1];
		smpq_status_str(reqs[i].status, why, sizeof(why));
		if (!nd) {
			util_fail(err, SNAP_ERR_LEN, "LFT block %u: %s", reqs[i].mod, why);
			goto out;
		}
		desc_of(nd, desc, sizeof(desc));
		util_fail(err, SNAP_ERR_LEN, "switch 0x%016llx \"%s\" (%s): LFT block %u: %s", (unsigned long long)nd->guid, desc,
		     portid2str(&nd->path_portid), reqs[i].mod, why);
		goto out;
	}

	uint64_t t3 = util_now_us();
	uint32_t len = max_lid ? max_lid + 1 : 0;
	lft = malloc(len ? len : 1);
	if (!lft) {
		util_fail(err, SNAP_ERR_LEN, "out of memory");
		goto out;
	}
	for (uint32_t k = 0; k < nsw; k++) {
		const struct sw *w = &sws[k];
		memset(lft, SNAP_LFT_NONE, len);
		uint32_t have = w->nblocks ? (w->top < max_lid ? w->top : max_lid) + 1 : 0;
		memcpy(lft, blocks + w->off, have);
		if (len)
			lft[0] = SNAP_LFT_NONE;
		if (snap_set_lft(s, w->node, lft, len)) {
			util_fail(err, SNAP_ERR_LEN, "out of memory for LFTs");
			goto out;
		}
	}

	uint64_t sm_guid = 0;
	if (ask_sm && reqs[r - 1].status == SMPQ_OK &&
	    mad_get_field(sminfo, 0, IB_SMINFO_STATE_F) == SM_STATE_MASTER) {
		sm_guid = mad_get_field64(sminfo, 0, IB_SMINFO_GUID_F);
		st->sm_from = "SMInfo";
	} else if (ask_sm && (sm_guid = guid_of_lid(s, (unsigned)sm_lid))) {
		/* No SM answers (e.g. a run-once SM has exited): the port at
		 * MasterSMLID is still the last master we know of. */
		st->sm_from = "MasterSMLID";
	}
	s->sm_guid = sm_guid;
	snprintf(s->engine, sizeof(s->engine), "unknown");
	if (snap_canonicalize(s)) {
		util_fail(err, SNAP_ERR_LEN, "out of memory sorting the snapshot");
		goto out;
	}
	if (s->max_lid != max_lid) {
		util_fail(err, SNAP_ERR_LEN, "internal error: LFTs sized for LID %u, snapshot says %u", max_lid, s->max_lid);
		goto out;
	}
	st->build_us = util_now_us() - t3 + (t2 - t1);
	*out = s;
	s = NULL;
	rc = 0;
out:
	smpq_close(q);
	snap_free(s);
	free(v);
	free(sws);
	free(reqs);
	free(blocks);
	free(lft);
	ibnd_destroy_fabric(fab);
	return rc;
}

static int stop_at_first(void *ctx, const struct snap_diff_item *d)
{
	return 1;
}

int collect_same_fabric(const struct snap *a, const struct snap *b)
{
	return snap_diff(a, b, SNAP_DIFF_STATE, stop_at_first, NULL) == 0;
}
