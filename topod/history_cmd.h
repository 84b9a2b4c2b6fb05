/*
 * history_cmd.h - protocol commands over the history of generations.
 */
#ifndef TOPOD_HISTORY_CMD_H
#define TOPOD_HISTORY_CMD_H

#include "cmd.h"

void answer_history(struct qctx *c);
void answer_diff(struct qctx *c);

#endif
