/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * textdump.h - build a snapshot from the standard text dumps, so that a saved
 * fabric can be served and tested without OpenSM:
 *   - a topology file as written by `ibnetdiscover` (links, GUIDs, LIDs,
 *     NodeDescriptions, link width and speed), and
 *   - LFT dumps as written by `ibroute SWITCH` (any number concatenated) or
 *     OpenSM's opensm-lfts.dump: a "Unicast lids [...] of switch ... guid
 *     0x..." header followed by "0xLID PORT : ..." lines.
 *
 * Both are untrusted text: every line is bounded (TEXT_LINE_MAX) and every
 * number range-checked; an error names the file and line.
 * Returns 0 and a canonical, validated snapshot in *out (free with
 * snap_free()), or -1 with err set.
 */
#ifndef TOPOD_TEXTDUMP_H
#define TOPOD_TEXTDUMP_H

#include "snapshot.h"

#define TEXT_LINE_MAX 4096

int snap_load_text(const char *topo_path, const char *lfts_path, struct snap **out,
		   char err[SNAP_ERR_LEN]);

#endif
