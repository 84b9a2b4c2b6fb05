/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * history_cmd.h - protocol commands over the history of generations.
 */
#ifndef TOPOD_HISTORY_CMD_H
#define TOPOD_HISTORY_CMD_H

#include "cmd.h"

void answer_history(struct qctx *c);
void answer_diff(struct qctx *c);
/* `watch GEN [TIMEOUT_MS]` answered at once: changed=1 if the served
 * generation is not GEN, else changed=0 (what a wait that timed out says).
 * The server parks the connection instead when it would say changed=0. */
void answer_watch(struct qctx *c);
/* Parses watch's arguments; -1 with the ERR reply written to out. */
int watch_args(const struct proto_req *req, uint64_t *gen, unsigned *ms, struct evbuffer *out);
/* The reply line of a watch. */
void watch_reply(struct evbuffer *out, uint64_t gen, int changed);

#endif
