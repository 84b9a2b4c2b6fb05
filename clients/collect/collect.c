/* SPDX-License-Identifier: BSD-3-Clause */
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

/* One collection after discovery: what to read and where it lands. */
struct run {
	ibnd_node_t **v;         /* discovered nodes, by GUID (= snapshot order) */
	uint32_t n;
	uint32_t max_lid;
	struct sw *sws;
	uint32_t nsw, maxblocks;
	size_t nblk;             /* LFT blocks to read */
	uint8_t *blocks;         /* nblk * LFT_BLOCK bytes */
	struct smpq_req *reqs;   /* nblk block reads, then the optional SMInfo */
	size_t nreq;
	int sm_lid, ask_sm;
	ib_portid_t sm_to;
	uint8_t sminfo[IB_SMP_DATA_SIZE];
};

static void run_free(struct run *r)
{
	free(r->v);
	free(r->sws);
	free(r->reqs);
	free(r->blocks);
}

/* Plans the reads: blocks 0..min(top, max_lid)/64 of every switch, in
 * block-major order, plus SMInfo from the master SM's LID when known. */
static int plan_reads(struct run *r, ibnd_fabric_t *fab, struct collect_stats *st, char *err)
{
	r->sws = calloc(st->switches ? st->switches : 1, sizeof(*r->sws));
	if (!r->sws)
		return util_fail(err, SNAP_ERR_LEN, "out of memory");
	for (uint32_t i = 0; i < r->n; i++) {
		if (r->v[i]->type != IB_NODE_SWITCH)
			continue;
		struct sw *w = &r->sws[r->nsw++];
		w->node = i;
		w->top = mad_get_field(r->v[i]->switchinfo, 0, IB_SW_LINEAR_FDB_TOP_F);
		uint32_t last = w->top < r->max_lid ? w->top : r->max_lid;
		/* Top 0 means the switch forwards nothing: no read needed. */
		w->nblocks = (w->top && r->max_lid) ? last / LFT_BLOCK + 1 : 0;
		w->off = r->nblk * LFT_BLOCK;
		r->nblk += w->nblocks;
		if (w->nblocks > r->maxblocks)
			r->maxblocks = w->nblocks;
	}
	st->lft_blocks = r->nblk;

	ibnd_node_t *from = fab->from_node;
	if (from && fab->from_portnum >= 0 && fab->from_portnum <= from->numports && from->ports[fab->from_portnum])
		r->sm_lid = (int)mad_get_field(from->ports[fab->from_portnum]->info, 0, IB_PORT_SMLID_F);
	r->ask_sm = r->sm_lid > 0 && r->sm_lid <= SNAP_MAX_LID;

	r->blocks = malloc(r->nblk ? r->nblk * LFT_BLOCK : 1);
	r->reqs = calloc(r->nblk + 1, sizeof(*r->reqs));
	if (!r->blocks || !r->reqs)
		return util_fail(err, SNAP_ERR_LEN, "out of memory for %zu LFT blocks", r->nblk);
	/* Block-major order: consecutive requests go to different switches, so
	 * a window of W puts about one SMP on each of W switches instead of W
	 * on one switch's management processor. */
	for (uint32_t b = 0; b < r->maxblocks; b++) {
		for (uint32_t k = 0; k < r->nsw; k++) {
			if (b >= r->sws[k].nblocks)
				continue;
			struct smpq_req *q = &r->reqs[r->nreq++];
			q->to = &r->v[r->sws[k].node]->path_portid;
			q->attr = IB_ATTR_LINEARFORWTBL;
			q->mod = b;
			q->out = r->blocks + r->sws[k].off + (size_t)b * LFT_BLOCK;
		}
	}
	if (r->ask_sm) {
		/* LID-routed: SMInfo is per port, and a directed route ends at
		 * whichever port of a CA discovery happened to reach first. */
		memset(&r->sm_to, 0, sizeof(r->sm_to));
		r->sm_to.lid = r->sm_lid;
		struct smpq_req *q = &r->reqs[r->nreq++];
		q->to = &r->sm_to;
		q->attr = IB_ATTR_SMINFO;
		q->mod = 0;
		q->out = r->sminfo;
		/* Optional: a dead or unreachable SM must not stretch the run. */
		q->once = 1;
	}
	return 0;
}

/* Every block read must have succeeded: a missing block would make topod
 * route through a hole that is not in the fabric, so fail rather than guess. */
static int check_reads(const struct run *r, char *err)
{
	for (size_t i = 0; i < r->nblk; i++) {
		if (r->reqs[i].status == SMPQ_OK)
			continue;
		ibnd_node_t *nd = NULL;
		for (uint32_t k = 0; k < r->nsw && !nd; k++)
			if (r->reqs[i].to == &r->v[r->sws[k].node]->path_portid)
				nd = r->v[r->sws[k].node];
		char why[64], desc[4 * SNAP_DESC_LEN + 1];
		smpq_status_str(r->reqs[i].status, why, sizeof(why));
		if (!nd)
			return util_fail(err, SNAP_ERR_LEN, "LFT block %u: %s", r->reqs[i].mod, why);
		desc_of(nd, desc, sizeof(desc));
		return util_fail(err, SNAP_ERR_LEN, "switch 0x%016llx \"%s\" (%s): LFT block %u: %s",
				 (unsigned long long)nd->guid, desc, portid2str(&nd->path_portid), r->reqs[i].mod, why);
	}
	return 0;
}

/* Every switch's LFT as snap_normalize_lfts() would make it: LIDs
 * 0..max_lid, what the switch has past its top as no path. */
static int fill_lfts(struct snap *s, const struct run *r, char *err)
{
	uint32_t len = r->max_lid ? r->max_lid + 1 : 0;
	uint8_t *lft = malloc(len ? len : 1);
	if (!lft)
		return util_fail(err, SNAP_ERR_LEN, "out of memory");
	for (uint32_t k = 0; k < r->nsw; k++) {
		const struct sw *w = &r->sws[k];
		memset(lft, SNAP_LFT_NONE, len);
		uint32_t have = w->nblocks ? (w->top < r->max_lid ? w->top : r->max_lid) + 1 : 0;
		memcpy(lft, r->blocks + w->off, have);
		if (len)
			lft[0] = SNAP_LFT_NONE;
		if (snap_set_lft(s, w->node, lft, len)) {
			free(lft);
			return util_fail(err, SNAP_ERR_LEN, "out of memory for LFTs");
		}
	}
	free(lft);
	return 0;
}

/* The master SM: SMInfo if it answered as master, else the port at
 * MasterSMLID (a run-once SM has exited, but it is still the last master
 * we know of). */
static void set_sm(struct snap *s, struct run *r, struct collect_stats *st)
{
	uint64_t sm_guid = 0;
	if (r->ask_sm && r->reqs[r->nreq - 1].status == SMPQ_OK &&
	    mad_get_field(r->sminfo, 0, IB_SMINFO_STATE_F) == SM_STATE_MASTER) {
		sm_guid = mad_get_field64(r->sminfo, 0, IB_SMINFO_GUID_F);
		st->sm_from = "SMInfo";
	} else if (r->ask_sm && (sm_guid = guid_of_lid(s, (unsigned)r->sm_lid))) {
		st->sm_from = "MasterSMLID";
	}
	s->sm_guid = sm_guid;
}

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
	struct run r = { 0 };
	for (ibnd_node_t *nd = fab->nodes; nd; nd = nd->next)
		r.n++;
	if (r.n == 0 || r.n > SNAP_MAX_NODES) {
		util_fail(err, SNAP_ERR_LEN, "discovery found %u nodes", r.n);
		goto out;
	}
	r.v = malloc((size_t)r.n * sizeof(*r.v));
	s = snap_new();
	if (!r.v || !s) {
		util_fail(err, SNAP_ERR_LEN, "out of memory for %u nodes", r.n);
		goto out;
	}
	r.n = 0;
	for (ibnd_node_t *nd = fab->nodes; nd; nd = nd->next)
		r.v[r.n++] = nd;
	/* Building in GUID order lets node_index() bsearch ibnd's nodes and
	 * leaves snap_canonicalize() nothing to move. */
	qsort(r.v, r.n, sizeof(*r.v), cmp_node_guid);
	st->nodes = r.n;
	if (add_topology(s, r.v, r.n, st, err))
		goto out;
	r.max_lid = st->max_lid = snap_max_lid(s);
	if (plan_reads(&r, fab, st, err))
		goto out;

	struct smpq_cfg qc = { cfg->window, cfg->timeout_ms, cfg->retries, cfg->mkey };
	uint64_t t2 = util_now_us();
	if (r.nreq && (smpq_open(&q, cfg->ca, cfg->port, err) || smpq_run(q, r.reqs, r.nreq, &qc, &st->smp, err)))
		goto out;
	st->lft_us = util_now_us() - t2;
	if (check_reads(&r, err))
		goto out;

	uint64_t t3 = util_now_us();
	if (fill_lfts(s, &r, err))
		goto out;
	set_sm(s, &r, st);
	snprintf(s->engine, sizeof(s->engine), "unknown");
	if (snap_canonicalize(s)) {
		util_fail(err, SNAP_ERR_LEN, "out of memory sorting the snapshot");
		goto out;
	}
	if (s->max_lid != r.max_lid) {
		util_fail(err, SNAP_ERR_LEN, "internal error: LFTs sized for LID %u, snapshot says %u", r.max_lid,
			  s->max_lid);
		goto out;
	}
	st->build_us = util_now_us() - t3 + (t2 - t1);
	*out = s;
	s = NULL;
	rc = 0;
out:
	smpq_close(q);
	snap_free(s);
	run_free(&r);
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
