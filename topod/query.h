/*
 * query.h - answers to query-protocol requests, computed from one fabric.
 *
 * query_answer() appends the complete reply (one or more lines, each ending
 * in '\n') to out. It never blocks and never touches the store: the caller
 * passes the fabric it took a reference on, so a reply never mixes two
 * generations.
 */
#ifndef TOPOD_QUERY_H
#define TOPOD_QUERY_H

#include <event2/buffer.h>

#include "proto.h"
#include "store.h"

enum query_result {
	QUERY_OK = 0,
	QUERY_CLOSE = 1,   /* "quit": flush and close */
	QUERY_UNKNOWN = 2, /* not a query command; the caller may try others */
};

enum query_result query_answer(const struct fabric *f, const struct proto_req *req, struct evbuffer *out);

/* "ERR <code> <text>\n" with text cleaned of control bytes. */
void query_error(struct evbuffer *out, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
