/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rate.c - link data rates from PortInfo codes (the table is in rate.h).
 */
#include "rate.h"

/* Lanes of a LinkWidthActive code, 0 for a code that is not one width. */
static unsigned rate_lanes(uint8_t width)
{
	switch (width) {
	case 1: return 1;
	case 2: return 4;
	case 4: return 8;
	case 8: return 12;
	case 16: return 2;
	default: return 0;
	}
}

/* Signalling rates in b/s times the line code's efficiency, in integers so
 * that the figures are exact where the standard's are (EDR is 25 Gb/s). */
static uint64_t rate_lane_bps(uint8_t speed, uint8_t espeed)
{
	/* A port that trained to an extended speed reports it there; the old
	 * field then still says what it could do before, so it must lose. */
	switch (espeed) {
	case 0: break;
	case 1: return 14062500000ull * 64 / 66;
	case 2: return 25781250000ull * 64 / 66;
	case 4: return 53125000000ull * 64 / 66;
	default: return 0;
	}
	switch (speed) {
	case 1: return 2500000000ull * 8 / 10;
	case 2: return 5000000000ull * 8 / 10;
	case 4: return 10000000000ull * 8 / 10;
	default: return 0;
	}
}

uint64_t rate_port_bps(const struct snap_port *p)
{
	return (uint64_t)rate_lanes(p->width) * rate_lane_bps(p->speed, p->espeed);
}

uint64_t rate_cable_bps(const struct snap *s, uint32_t node, unsigned port)
{
	if (node >= s->nnodes || port < 1 || port > s->nodes[node].nports)
		return 0;
	const struct snap_port *a = &s->ports[s->nodes[node].port0 + port];
	if (!a->present || a->peer_node == SNAP_NONE || a->peer_node >= s->nnodes ||
	    a->peer_port > s->nodes[a->peer_node].nports)
		return 0;
	const struct snap_port *b = &s->ports[s->nodes[a->peer_node].port0 + a->peer_port];
	uint64_t ra = rate_port_bps(a), rb = rate_port_bps(b);
	return ra < rb ? ra : rb;
}

const char *rate_width_name(uint8_t width)
{
	switch (width) {
	case 1: return "1X";
	case 2: return "4X";
	case 4: return "8X";
	case 8: return "12X";
	case 16: return "2X";
	default: return "?";
	}
}

const char *rate_speed_name(uint8_t speed, uint8_t espeed)
{
	switch (espeed) {
	case 0: break;
	case 1: return "FDR";
	case 2: return "EDR";
	case 4: return "HDR";
	case 8: return "NDR";
	default: return "?";
	}
	switch (speed) {
	case 1: return "SDR";
	case 2: return "DDR";
	case 4: return "QDR";
	default: return "?";
	}
}

const char *rate_state_name(uint8_t state)
{
	switch (state) {
	case SNAP_PORT_DOWN: return "Down";
	case SNAP_PORT_INIT: return "Init";
	case SNAP_PORT_ARMED: return "Armed";
	case SNAP_PORT_ACTIVE: return "Active";
	default: return "?";
	}
}
