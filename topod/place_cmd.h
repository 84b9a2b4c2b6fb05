/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * place_cmd.h - protocol handlers of order, pick and map (place_cmd.c;
 * replies in docs/protocol.md). Rows in cmd.c; CMD_FABRIC | CMD_HEAVY.
 */
#ifndef TOPOD_PLACE_CMD_H
#define TOPOD_PLACE_CMD_H

#include "cmd.h"

void answer_order(struct qctx *c);
void answer_pick(struct qctx *c);
void answer_map(struct qctx *c);

#endif
