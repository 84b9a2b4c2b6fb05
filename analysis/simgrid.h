/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * simgrid.h - a SimGrid platform (XML, version 4.1, as SimGrid 3.32 reads
 * it) for a job's hosts whose routes are exactly the LFT routes and whose
 * links run at the cables' data rates (rate.h), for `smpirun -platform`.
 *
 * The platform: one zone with routing="Full"; one <host> per job host, named
 * by its hostname, speed SIMGRID_HOST_SPEED; one <link> per direction of
 * every cable a route between two job hosts uses, named "0xNODEGUID:PORT"
 * after the port the direction leaves by (as `load` names directed links),
 * sharing_policy SHARED: a cable is full duplex, so each direction is its own
 * SHARED link. (SPLITDUPLEX would also give two constraints, but its routes
 * must name a direction on every <link_ctn>, and SMPI 3.32's cross-traffic
 * and symmetrical-route rules then flip directions behind the route's back;
 * two plain links make the route list exactly the directed cables.)
 * Bandwidth: the cable's data rate in bits per second. Latency: a directed
 * link that leaves a host costs COST_CABLE_LAT_NS; one that leaves a
 * switch costs COST_SWITCH_LAT_NS + COST_CABLE_LAT_NS (the switch's
 * cut-through delay is charged to the link it forwards on), so a route
 * through h switches has latency (h + 1) cable + h switch.
 * Every ordered pair of distinct hosts gets <route symmetrical="NO"> listing
 * the directed links of the walk from the source's default port to the
 * destination's base LID (route_walk): its cable, then each switch's out
 * port, the last one being the destination's cable.
 *
 * The platform carries the network settings that make SimGrid share
 * bandwidth the way InfiniBand does (<config>; docs/performance.md explains
 * each): network/optim:Full, network/solver:fairbottleneck,
 * network/crosstraffic:0. A command line --cfg overrides them.
 *
 * Pure: no I/O, no globals; the output goes to the caller's buffer.
 */
#ifndef AN_SIMGRID_H
#define AN_SIMGRID_H

#include <stddef.h>
#include <stdint.h>

#include "an_err.h"
#include "cost.h"
#include "route.h"
#include "util.h"

/* CPU speed of a simulated host. Only simulated computation uses it
 * (SMPI_SAMPLE, or smpi/simulate-computation); a network-only study sets
 * that off and the figure does not matter. */
#define SIMGRID_HOST_SPEED "1Gf"

struct simgrid_stats {
	uint32_t hosts;
	uint32_t links;    /* directed links declared */
	uint32_t routes;   /* hosts * (hosts - 1) */
	uint32_t lines;    /* '\n'-terminated lines appended to out */
};

/*
 * Appends the platform for hosts[0..n) (indices into rt->hosts) to out
 * (whatever out->max says, at most TOPO_SIMGRID_BYTES_MAX bytes are
 * appended). 1 <= n <= TOPO_SIMGRID_HOSTS_MAX. st may be NULL.
 * AN_E_INVAL: a host listed twice or out of range (err names it);
 * AN_E_RANGE: too many hosts, too many bytes, a route longer than
 * TOPO_SIMGRID_HOPS_MAX switches; AN_E_ROUTE: the route between two hosts
 * fails or a cable on it has no known rate (err names the pair and why);
 * AN_E_NOMEM. On error out holds what it held before.
 */
int simgrid_platform(const struct route_tab *rt, const uint32_t *hosts, size_t n, struct tbuf *out,
		     struct simgrid_stats *st, char err[AN_ERR_LEN]);


/*
 * The whole fabric in one platform (`simgrid all`), every host of it whose
 * default port is up and has a LID (the others cannot be routed to: they
 * are left out and counted in st->omitted), within TOPO_SIMGRID_ALL_HOSTS_MAX
 * hosts and TOPO_SIMGRID_ALL_BYTES_MAX bytes.
 *
 * One <route> per ordered pair (as simgrid_platform writes) is P^2 routes:
 * 12M at 3,456 hosts, gigabytes. LFT routing is by destination, so hosts
 * cabled to one leaf switch take the same route to any host after their
 * own cable, and SimGrid's hierarchical routing can say exactly that: a
 * route between zones is the route to the source zone's gateway, then the
 * zone route, then the route from the destination zone's gateway. So:
 *   - one zone (routing="Full") per leaf group: "leaf:0xLEAFGUID" (a host
 *     not cabled to a switch is a group of its own, "port:0xPORTGUID");
 *   - in it, its hosts, a router "out:ZONE" (route: each host's own cable)
 *     and one router "in:ZONE<SRCZONE" per other group (route to each host
 *     of the zone: the switch out ports of the LFT walk from the source
 *     group's leaf, the last being the host's cable), and the routes
 *     between its own hosts (their full walks);
 *   - for every ordered pair of zones a zoneRoute from "out:SRC" to
 *     "in:DST<SRC" through one link "glue" (SimGrid forbids an empty
 *     route): FATPIPE, 1 Pbps, 0 ns, so it neither shares nor delays.
 * A route is then the source's cable, the glue, and the walk after the
 * cable: exactly the LFT route, with (leaves x hosts) route lists instead
 * of hosts^2. The directed links (as simgrid_platform's) are declared first,
 * in a zone "cables" with routing="None".
 * Errors as simgrid_platform's; AN_E_RANGE also for no host at all.
 */
struct simgrid_fabric_stats {
	uint32_t hosts, omitted;  /* in the platform; left out (port down, no LID) */
	uint32_t zones;           /* leaf groups */
	uint32_t links;           /* directed links declared, the glue link included */
	uint32_t routes;          /* <route> and <zoneRoute> elements */
	uint32_t lines;
};

int simgrid_fabric(const struct route_tab *rt, struct tbuf *out, struct simgrid_fabric_stats *st,
		   char err[AN_ERR_LEN]);

#endif
