/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto.h - the query protocol's parsing: one request per line, no I/O, no
 * allocation, so it can be fuzzed and unit-tested on its own.
 *
 * A request is a command word and up to PROTO_ARGS_MAX arguments separated by
 * spaces or tabs. Replies are one line "OK <payload>" or "ERR <CODE> <text>"
 * (multi-line replies announce their line count first; see docs/protocol.md).
 */
#ifndef TOPOD_PROTO_H
#define TOPOD_PROTO_H

#include <stddef.h>
#include <sys/types.h>

#include "topo_limits.h"

/* The limits are libtii's too: one definition, in topo_limits.h. */
#define PROTO_LINE_MAX TOPO_LINE_MAX
#define PROTO_ARGS_MAX TOPO_ARGS_MAX

struct proto_req {
	const char *cmd;
	size_t argc;
	const char *argv[PROTO_ARGS_MAX];
};

/*
 * Splits line (NUL-terminated, len bytes, no newline) in place into req.
 * Returns 0, or -1 with *why set to a static reason (empty line, control
 * byte, too many arguments).
 */
int proto_split(char *line, size_t len, struct proto_req *req, const char **why);

#endif
