/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * delay_cmd.h - the `delaymatrix` command (docs/protocol.md): seed 004
 * chapter 4's delay matrix, hops and link rates as the predicted time of one
 * message per pair (analysis/matrix.h, matrix_delay).
 */
#ifndef TOPOD_DELAY_CMD_H
#define TOPOD_DELAY_CMD_H

#include "cmd.h"

cmd_answer_fn answer_delaymatrix;

#endif
