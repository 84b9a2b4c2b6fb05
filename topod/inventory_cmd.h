/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * inventory_cmd.h - `show` and `links`: the inventory of a fabric in
 * iblinkinfo's words (inventory_cmd.c, docs/protocol.md).
 */
#ifndef TOPOD_INVENTORY_CMD_H
#define TOPOD_INVENTORY_CMD_H

#include "cmd.h"

void answer_show(struct qctx *c);
void answer_links(struct qctx *c);

#endif
