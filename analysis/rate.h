/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rate.h - the data rate of an InfiniBand link, from the PortInfo fields the
 * snapshot carries for every port (struct snap_port: width, speed, espeed).
 *
 * Source: InfiniBand Architecture Specification Vol. 1, Release 1.4
 * (PortInfo: LinkWidthActive, LinkSpeedActive, LinkSpeedExtActive; 14.2.5.6)
 * and Vol. 2 (physical layer: signalling rates and line codes).
 *
 *   LinkWidthActive   1 = 1x, 2 = 4x, 4 = 8x, 8 = 12x, 16 = 2x  (lanes)
 *   LinkSpeedActive   1 = SDR, 2 = DDR, 4 = QDR
 *   LinkSpeedExtActive 0 = none, 1 = FDR, 2 = EDR, 4 = HDR; when set it
 *                     overrides LinkSpeedActive (the port runs the extended speed)
 *
 *   speed  signalling per lane   line code   data per lane
 *   SDR        2.5 Gb/s           8b/10b       2 Gb/s
 *   DDR        5   Gb/s           8b/10b       4 Gb/s
 *   QDR       10   Gb/s           8b/10b       8 Gb/s
 *   FDR       14.0625 Gb/s        64b/66b     13.636 Gb/s
 *   EDR       25.78125 Gb/s       64b/66b     25 Gb/s
 *   HDR       53.125 Gb/s         64b/66b     51.515 Gb/s (approximation: HDR
 *             signals PAM4 with RS-FEC; 64b/66b is what FDR/EDR lose and is
 *             used here for HDR too, so HDR is ~3 % optimistic at most)
 *
 * A port's data rate is lanes x data per lane. A cable's rate is the lesser
 * of its two ends' rates: both ends train to the same width and speed when
 * the link is up, so they agree; taking the minimum keeps a half-read or
 * inconsistent capture from inventing bandwidth. The rate ignores packet
 * headers and flow-control credits (a few percent at MTU 4096).
 *
 * Pure: no I/O, no globals.
 */
#ifndef AN_RATE_H
#define AN_RATE_H

#include <stdint.h>

#include "snapshot.h"

/* Data bits per second of a port's active link, 0 if width or speed is not
 * a known code (a snapshot taken from a text dump without rates). */
uint64_t rate_port_bps(const struct snap_port *p);

/* Data bits per second of the cable on node's port (1..nports): the lesser
 * of both ends, 0 if the port has no peer or either end's rate is unknown. */
uint64_t rate_cable_bps(const struct snap *s, uint32_t node, unsigned port);

/* iblinkinfo's words for the codes: "4X", "QDR" (the extended speed when
 * set), "Active"; "?" for a code that is not one. */
const char *rate_width_name(uint8_t width);
const char *rate_speed_name(uint8_t speed, uint8_t espeed);
const char *rate_state_name(uint8_t state);

#endif
