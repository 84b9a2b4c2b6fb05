/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * smpq.c - a window of SMP Gets in flight over raw umad.
 *
 * Timeouts are ours, not only the kernel's: we pass timeout_ms to umad_send()
 * so that a real HCA driver reports a lost MAD, but we also keep a deadline
 * per slot, because umad2sim (the simulator shim) never reports one. Whichever
 * fires first wins; the other then carries a TID that no slot holds any more
 * and is dropped as stale.
 */
#include "smpq.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/umad.h>
#include "util.h"

#define BUSY_BIT 0x0001 /* MAD status bit 0: "busy, try again", the only retryable status */

struct slot {
	size_t req;          /* index into the caller's array */
	uint32_t tid;        /* low 32 bits of the TID in flight; slot number in the low byte */
	unsigned tries;
	uint64_t deadline;   /* monotonic ms */
	bool busy;
};

struct smpq {
	int fd;
	int agent_dr;        /* IB_SMI_DIRECT_CLASS */
	int agent_lid;       /* IB_SMI_CLASS */
	uint32_t seq;        /* kept across runs so a late reply to an old run is stale, not matched */
	uint8_t *sbuf, *rbuf;
	size_t bufsz;        /* umad header + one MAD */
};

static int fail(char *err, const char *what, int e)
{
	return util_fail(err, SNAP_ERR_LEN, "%s: %s", what, strerror(e));
}

int smpq_open(struct smpq **out, const char *ca, int port, char err[SNAP_ERR_LEN])
{
	if (umad_init() < 0)
		return fail(err, "umad_init", errno ? errno : EIO);
	struct smpq *q = calloc(1, sizeof(*q));
	if (!q)
		return fail(err, "smpq", ENOMEM);
	q->fd = umad_open_port(ca, port);
	if (q->fd < 0) {
		int e = errno ? errno : ENODEV;
		char what[128];
		snprintf(what, sizeof(what), "cannot open umad port %s:%d", ca ? ca : "(default)", port);
		free(q);
		return fail(err, what, e);
	}
	/* umad_size() depends on the ABI the open negotiated: ask only now. */
	q->bufsz = (size_t)umad_size() + IB_MAD_SIZE;
	q->sbuf = calloc(1, q->bufsz);
	q->rbuf = calloc(1, q->bufsz);
	if (!q->sbuf || !q->rbuf) {
		smpq_close(q);
		return fail(err, "smpq", ENOMEM);
	}
	q->agent_dr = umad_register(q->fd, IB_SMI_DIRECT_CLASS, 1, 0, NULL);
	q->agent_lid = umad_register(q->fd, IB_SMI_CLASS, 1, 0, NULL);
	if (q->agent_dr < 0 || q->agent_lid < 0) {
		int e = errno ? errno : EIO;
		smpq_close(q);
		return fail(err, "cannot register SMI agents (is this a privileged user?)", e);
	}
	q->seq = (uint32_t)mad_trid();
	*out = q;
	return 0;
}

void smpq_close(struct smpq *q)
{
	if (!q)
		return;
	if (q->fd >= 0)
		umad_close_port(q->fd);
	free(q->sbuf);
	free(q->rbuf);
	free(q);
}

const char *smpq_status_str(int status, char *buf, size_t n)
{
	switch (status) {
	case SMPQ_OK: snprintf(buf, n, "ok"); break;
	case SMPQ_PENDING: snprintf(buf, n, "not sent"); break;
	case SMPQ_TIMEOUT: snprintf(buf, n, "timed out"); break;
	default: snprintf(buf, n, "MAD status 0x%04x", (unsigned)status); break;
	}
	return buf;
}

static int send_one(struct smpq *q, struct slot *sl, unsigned idx, struct smpq_req *r,
		    const struct smpq_cfg *cfg, struct smpq_stats *st, char *err)
{
	ib_portid_t to = *r->to;
	ib_rpc_t rpc;
	memset(&rpc, 0, sizeof(rpc));
	/* SMPs always go to QP0; the copy keeps mad_build_pkt() off the caller's path. */
	to.qp = 0;
	to.sl = 0;
	rpc.mgtclass = to.lid ? IB_SMI_CLASS : IB_SMI_DIRECT_CLASS;
	rpc.method = IB_MAD_METHOD_GET;
	rpc.attr.id = r->attr;
	rpc.attr.mod = r->mod;
	rpc.timeout = (int)cfg->timeout_ms;
	rpc.datasz = IB_SMP_DATA_SIZE;
	rpc.dataoffs = IB_SMP_DATA_OFFS;
	rpc.mkey = cfg->mkey;
	q->seq++;
	sl->tid = (q->seq << 8) | idx;
	/* A zero TID would make mad_encode() pick a random one we cannot match. */
	if (sl->tid == 0)
		sl->tid = (++q->seq << 8) | idx;
	rpc.trid = sl->tid;

	memset(q->sbuf, 0, q->bufsz);
	if (mad_build_pkt(q->sbuf, &rpc, &to, NULL, NULL) < 0)
		return fail(err, "cannot build SMP (directed route too long?)", errno ? errno : EINVAL);
	int agent = to.lid ? q->agent_lid : q->agent_dr;
	if (umad_send(q->fd, agent, q->sbuf, IB_MAD_SIZE, (int)cfg->timeout_ms, 0) < 0)
		return fail(err, "umad_send", errno ? errno : EIO);
	sl->deadline = (uint64_t)util_now_ms() + cfg->timeout_ms;
	sl->tries++;
	sl->busy = true;
	st->sent++;
	return 0;
}

/* The attempt in slot sl failed in a way worth repeating: send again with a
 * fresh TID, or give up. Returns 1 if the request is now finished. */
static int retry_or_finish(struct smpq *q, struct slot *sl, unsigned idx, struct smpq_req *reqs,
			   const struct smpq_cfg *cfg, struct smpq_stats *st, int status, int *rc,
			   char *err)
{
	struct smpq_req *r = &reqs[sl->req];
	if (!r->once && sl->tries <= cfg->retries) {
		st->retried++;
		if (send_one(q, sl, idx, r, cfg, st, err)) {
			*rc = -1;
			sl->busy = false;
			return 0;
		}
		return 0;
	}
	r->status = status;
	sl->busy = false;
	return 1;
}

int smpq_run(struct smpq *q, struct smpq_req *reqs, size_t n, const struct smpq_cfg *cfg,
	     struct smpq_stats *stats, char err[SNAP_ERR_LEN])
{
	struct smpq_stats dummy;
	if (!stats) {
		memset(&dummy, 0, sizeof(dummy));
		stats = &dummy;
	}
	for (size_t i = 0; i < n; i++)
		reqs[i].status = SMPQ_PENDING;
	unsigned w = cfg->window;
	if (w < 1)
		w = 1;
	if (w > SMPQ_WINDOW_MAX)
		w = SMPQ_WINDOW_MAX;
	if (w > n)
		w = n ? (unsigned)n : 1;
	struct slot slots[SMPQ_WINDOW_MAX];
	memset(slots, 0, sizeof(slots));

	size_t next = 0, done = 0;
	unsigned inflight = 0;
	int rc = 0;
	while (done < n && rc == 0) {
		for (unsigned i = 0; i < w && next < n && rc == 0; i++) {
			if (slots[i].busy)
				continue;
			slots[i].req = next;
			slots[i].tries = 0;
			if (send_one(q, &slots[i], i, &reqs[next], cfg, stats, err))
				rc = -1;
			else {
				next++;
				inflight++;
			}
		}
		if (rc || inflight == 0)
			break;

		uint64_t now = (uint64_t)util_now_ms(), first = UINT64_MAX;
		for (unsigned i = 0; i < w; i++)
			if (slots[i].busy && slots[i].deadline < first)
				first = slots[i].deadline;
		/* umad_recv() treats 0 as "block without poll", so never pass it. */
		int wait = first > now ? (int)(first - now) : 1;
		int len = IB_MAD_SIZE;
		int got = umad_recv(q->fd, q->rbuf, &len, wait);
		if (got >= 0) {
			uint8_t *mad = umad_get_mad(q->rbuf);
			uint32_t tid = (uint32_t)mad_get_field64(mad, 0, IB_MAD_TRID_F);
			unsigned idx = tid & 0xFF;
			struct slot *sl = &slots[idx];
			if (idx >= w || !sl->busy || sl->tid != tid) {
				stats->stale++;
			} else if (umad_status(q->rbuf)) {
				/* The kernel gave our request back unanswered. */
				if (retry_or_finish(q, sl, idx, reqs, cfg, stats, SMPQ_TIMEOUT, &rc, err))
					done++, inflight--;
			} else {
				struct smpq_req *r = &reqs[sl->req];
				int dr = mad_get_field(mad, 0, IB_MAD_MGMTCLASS_F) == IB_SMI_DIRECT_CLASS;
				int status = (int)mad_get_field(mad, 0, dr ? IB_DRSMP_STATUS_F : IB_MAD_STATUS_F);
				/* IB_MAD_METHOD_F excludes the response bit (0x80). */
				if (!mad_get_field(mad, 0, IB_MAD_RESPONSE_F) ||
				    mad_get_field(mad, 0, IB_MAD_METHOD_F) != IB_MAD_METHOD_GET ||
				    mad_get_field(mad, 0, IB_MAD_ATTRID_F) != r->attr ||
				    mad_get_field(mad, 0, IB_MAD_ATTRMOD_F) != r->mod) {
					stats->stale++;
				} else if (status & BUSY_BIT) {
					if (retry_or_finish(q, sl, idx, reqs, cfg, stats, status, &rc, err))
						done++, inflight--;
				} else {
					if (status == 0)
						memcpy(r->out, mad + IB_SMP_DATA_OFFS, IB_SMP_DATA_SIZE);
					r->status = status;
					sl->busy = false;
					done++, inflight--;
				}
			}
		} else if (got != -ETIMEDOUT && errno != EINTR) {
			rc = fail(err, "umad_recv", errno ? errno : -got);
			break;
		}

		now = (uint64_t)util_now_ms();
		for (unsigned i = 0; i < w && rc == 0; i++) {
			if (slots[i].busy && slots[i].deadline <= now &&
			    retry_or_finish(q, &slots[i], i, reqs, cfg, stats, SMPQ_TIMEOUT, &rc, err))
				done++, inflight--;
		}
	}
	return rc;
}
