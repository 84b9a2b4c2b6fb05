/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * simgrid_cmd.h - the `simgrid` command (docs/protocol.md): a SimGrid
 * platform of a job's hosts (analysis/simgrid.h) from one generation.
 */
#ifndef TOPOD_SIMGRID_CMD_H
#define TOPOD_SIMGRID_CMD_H

#include "cmd.h"

cmd_answer_fn answer_simgrid;

#endif
