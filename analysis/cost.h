/*
 * cost.h - the one cost model of the analyses: how long a set of flows takes
 * on the job's real routes and the cables' real rates (docs/cost-model.md).
 *
 * A phase is a set of flows posted at once (a pattern in `load`, one step of
 * a schedule). Its predicted time is
 *     T = max over directed cables c of bytes(c) / rate(c)  +  latency(h)
 * where bytes(c) is what the phase's routes put on c (load.h), rate(c) the
 * cable's data rate in bytes per second (rate.h: width x speed after the
 * line code, the lesser of both ends), and latency(h) that of the longest
 * route of the phase, h switches: (h + 1) cables and h switches, each
 * COST_CABLE_LAT_NS and COST_SWITCH_LAT_NS. A schedule's time is the sum of
 * its steps' times.
 *
 * This is the fluid model SimGrid's SMPI computes with the settings of
 * tests/lib/smpi.sh (equal shares of a cable per flow): the busiest cable
 * cannot finish sooner than its bytes over its rate, so T is a lower bound of
 * the fluid time, reached when no flow on the busiest cable is held back by
 * another cable. It is optimistic where a flow is slowed elsewhere and then
 * leaves the busiest cable idle, and, against real InfiniBand, it has no
 * head-of-line blocking, no credit stalls, no packet headers (a few percent
 * at MTU 4096) and no per-message software overhead.
 *
 * Pure: no I/O, no globals.
 */
#ifndef AN_COST_H
#define AN_COST_H

#include <stdint.h>

#include "an_err.h"
#include "load.h"
#include "route.h"

/* Propagation through one cable: ~20 m of fibre or copper at 5 ns/m. */
#define COST_CABLE_LAT_NS 100
/* Port-to-port cut-through latency of one switch (EDR/HDR ASICs state
 * 90-130 ns). */
#define COST_SWITCH_LAT_NS 100

/* Latency of a route through hops switches, in seconds. */
double cost_route_latency(uint32_t hops);

struct cost_time {
	double seconds;        /* bw_seconds + lat_seconds; 0 for a phase that loads no cable */
	double bw_seconds;     /* the busiest cable's bytes over its rate */
	double lat_seconds;    /* the longest route's latency */
	uint32_t link;         /* index into load->links of that cable, UINT32_MAX if none */
	uint64_t link_bps;     /* its data rate, bits per second */
};

/* The predicted time of the flows of l posted at once. AN_E_RANGE if a
 * loaded cable has no known rate (a snapshot without PortInfo rates; err
 * names the cable). */
int cost_load_time(const struct route_tab *rt, const struct load *l, struct cost_time *out,
		   char err[AN_ERR_LEN]);

#endif
