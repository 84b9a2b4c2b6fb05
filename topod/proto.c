/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto.c - see proto.h.
 */
#include "proto.h"

int proto_split(char *line, size_t len, struct proto_req *req, const char **why)
{
	req->cmd = NULL;
	req->argc = 0;
	if (len && line[len - 1] == '\r')
		line[--len] = '\0';
	size_t i = 0;
	for (;;) {
		while (i < len && (line[i] == ' ' || line[i] == '\t'))
			line[i++] = '\0';
		if (i >= len)
			break;
		const char *tok = line + i;
		while (i < len && line[i] != ' ' && line[i] != '\t') {
			unsigned char c = (unsigned char)line[i];
			/* Control bytes (NUL included) never belong in a request;
			 * refusing them keeps replies and logs one line each. */
			if (c < 0x20 || c == 0x7f) {
				*why = "control character in request";
				return -1;
			}
			i++;
		}
		if (!req->cmd) {
			req->cmd = tok;
		} else {
			if (req->argc == PROTO_ARGS_MAX) {
				*why = "too many arguments";
				return -1;
			}
			req->argv[req->argc++] = tok;
		}
	}
	if (!req->cmd) {
		*why = "empty request";
		return -1;
	}
	return 0;
}
