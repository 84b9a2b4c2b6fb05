/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plane_cmd.h - `planes` and `plane`: the fabric planes (subnets) one topod
 * serves, and which one a connection asks about.
 */
#ifndef TOPOD_PLANE_CMD_H
#define TOPOD_PLANE_CMD_H

#include "cmd.h"

void answer_planes(struct qctx *c);
void answer_plane(struct qctx *c);

/* A plane name: 1..TOPO_PLANE_NAME_MAX of [A-Za-z0-9_-]. */
int plane_name_ok(const char *s);

#endif
