/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * smpq.h - many SMP Gets in flight at once over one umad port.
 *
 * libibmad's smp_query_via() waits for each reply before sending the next
 * request, so reading 720 switches x 66 LFT blocks costs 47,520 round trips
 * back to back. smpq keeps up to `window` requests on the wire and matches
 * replies by transaction ID, so the round-trip latency overlaps.
 *
 * Functions return 0, or -1 with a reason in err[SNAP_ERR_LEN]. Nothing here
 * prints or exits. One thread per struct smpq at a time.
 */
#ifndef TOPOD_COLLECT_SMPQ_H
#define TOPOD_COLLECT_SMPQ_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/mad.h>

#include "snapshot.h"

/* TIDs carry the slot number in their low byte, which caps the window. */
#define SMPQ_WINDOW_MAX 256

/* Outcome of one request, in smpq_req.status. */
#define SMPQ_OK 0
#define SMPQ_PENDING (-1)     /* not finished (only seen if smpq_run failed) */
#define SMPQ_TIMEOUT (-2)     /* no reply after every retry */
/* A positive status is the MAD status word the responder returned. */

struct smpq_req {
	const ib_portid_t *to;   /* borrowed for the run: lid != 0 sends a LID-routed
				  * SMP to that LID, lid == 0 a directed-route SMP
				  * along to->drpath */
	uint16_t attr;           /* attribute ID, e.g. IB_ATTR_LINEARFORWTBL */
	uint32_t mod;            /* attribute modifier, e.g. the LFT block */
	uint8_t *out;            /* IB_SMP_DATA_SIZE bytes, written on SMPQ_OK */
	int once;                /* 1: no retries, for answers that are nice to have */
	int status;              /* set by smpq_run() */
};

struct smpq_cfg {
	unsigned window;         /* requests on the wire at once, 1..SMPQ_WINDOW_MAX */
	unsigned timeout_ms;     /* per attempt */
	unsigned retries;        /* further attempts after a timeout or a busy reply */
	uint64_t mkey;
};

struct smpq_stats {
	uint64_t sent;           /* attempts, retries included */
	uint64_t retried;
	uint64_t stale;          /* replies that matched no request in flight */
};

struct smpq;

/* Opens the umad port (ca NULL / port 0: the first active port, as
 * umad_open_port() picks it). *out is untouched on error; caller frees with
 * smpq_close(). */
int smpq_open(struct smpq **out, const char *ca, int port, char err[SNAP_ERR_LEN]);
void smpq_close(struct smpq *q); /* NULL is a no-op */

/*
 * Sends every request, at most cfg->window at a time, in array order, and
 * fills in each status. Returns 0 when every request has an outcome (some
 * may have failed: check status), -1 if the port itself failed, in which
 * case unfinished requests say SMPQ_PENDING. stats may be NULL; it is
 * added to, not reset.
 */
int smpq_run(struct smpq *q, struct smpq_req *reqs, size_t n, const struct smpq_cfg *cfg,
	     struct smpq_stats *stats, char err[SNAP_ERR_LEN]);

/* "timeout", "MAD status 0x1c" etc. into buf; returns buf. */
const char *smpq_status_str(int status, char *buf, size_t n);

#endif
