/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sink.h - where producers (the OpenSM plugin, the SMP collector) send
 * snapshots: a topod ingest socket (UNIX or TCP) or a spool directory.
 *
 * Options are whitespace-separated key=value tokens, the form OpenSM's
 * event_plugin_options line and the collector's command line share:
 *   sink=unix:PATH        topod ingest socket (repeatable)
 *   sink=tcp:HOST:PORT    topod ingest over TCP (repeatable)
 *   spool=DIR             latest snapshot written atomically as DIR/fabric.snap
 *   timeout_ms=N          bound on one delivery attempt (default 5000)
 *   backoff_max_ms=N      longest wait between retries (default 30000)
 *   linger_ms=N           at shutdown, how long to keep trying (default 5000)
 *   key_file=PATH         prove every snapshot sent to a socket with this
 *                         ingest key (auth.h); topod requires it on TCP
 *   plane=NAME            with key_file: deliver only to a topod ingest that
 *                         announces this plane
 * Every sink gets every snapshot.
 *
 * Wire: the producer connects; with a key it sends the hello, reads topod's
 * challenge (refusing a plane other than plane=) and sends the proof
 * (auth.h); then one encoded snapshot (header+payload); half-closes, and
 * reads one reply line: "OK <generation>..." or "ERR <reason>".
 *
 * Functions return 0, or -1 with a reason in err[SNAP_ERR_LEN]. No printing,
 * no signals (MSG_NOSIGNAL), no exit: this code runs inside OpenSM.
 */
#ifndef TOPOD_SINK_H
#define TOPOD_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "snapshot.h"

#define SINK_MAX 8
#define SINK_ADDR_LEN 256
#define SINK_SPOOL_NAME "fabric.snap"

enum sink_kind { SINK_UNIX = 1, SINK_TCP = 2, SINK_SPOOL = 3 };

struct sink {
	enum sink_kind kind;
	char path[SINK_ADDR_LEN]; /* UNIX socket path or spool directory */
	char host[SINK_ADDR_LEN];
	char port[16];
	int has_key;              /* socket sinks: prove the key (challenge-response) */
	struct snap_key key;      /* by value: sinks are copied into worker threads */
	char plane[SNAP_AUTH_PLANE_MAX + 1]; /* with a key: the plane topod must announce, "" any */
};

struct sink_opts {
	struct sink sinks[SINK_MAX];
	int nsinks;
	unsigned timeout_ms;
	unsigned backoff_max_ms;
	unsigned linger_ms;
	unsigned delta;           /* socket sinks: send deltas when the sink has the base (default 1) */
};

/* Parses opts (may be NULL or empty: no sinks, defaults). */
int sink_parse_options(const char *opts, struct sink_opts *o, char err[SNAP_ERR_LEN]);

/* One bounded delivery attempt of an encoded snapshot. For a socket sink the
 * whole exchange (connect, write, reply) is bounded by timeout_ms. */
int sink_deliver(const struct sink *k, const uint8_t *buf, size_t len, unsigned timeout_ms,
		 char err[SNAP_ERR_LEN]);

/* "unix:/run/topod/ingest.sock" etc. into buf; returns buf. */
const char *sink_describe(const struct sink *k, char *buf, size_t n);

#endif
