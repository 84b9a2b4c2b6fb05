/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * an_err.h - the one error convention of the analyses (analysis/README.md).
 *
 * Every function of the library that can fail returns AN_OK (0) or one
 * negative code of enum an_err. Where a caller needs more than the code (a
 * spec that did not parse, a host that has no route), the function takes a
 * buffer char err[AN_ERR_LEN] and writes one NUL-terminated line into it; a
 * function may leave it untouched when the code says everything. Nothing in
 * the library prints, exits, aborts or sets errno as its result.
 *
 * The codes are stable: topod maps them to protocol error codes
 * (topod/query.c, qctx_route_code) and tests compare them.
 */
#ifndef AN_ERR_H
#define AN_ERR_H

#include <stdatomic.h>

#define AN_ERR_LEN 256

/* Cooperative cancellation: an analysis whose argument struct has a
 * `cancel` member (NULL: never) reads it between steps of its longest
 * loops and returns AN_E_CANCEL once it is non-zero. Another thread raises
 * it (topod, at a request's deadline); results are unchanged when it is
 * never raised. */
#define AN_CANCELLED(p) ((p) && atomic_load_explicit((p), memory_order_relaxed))

enum an_err {
	AN_OK = 0,
	AN_E_NOMEM = -1,
	AN_E_INVAL = -2,       /* bad argument: malformed spec, rank or host out of range, repeats */
	AN_E_NOTFOUND = -3,    /* the name, GUID or LID names no end port */
	AN_E_NOLID = -4,       /* the destination LID belongs to no end port */
	AN_E_SRC_NOLINK = -5,  /* the source port is not cabled */
	AN_E_NOENTRY = -6,     /* a switch's LFT has no entry (0xFF) for the LID */
	AN_E_NOLINK = -7,      /* the LFT sends the LID out of an uncabled port */
	AN_E_DOWN = -8,        /* a link on the way is DOWN at one end */
	AN_E_WRONGDST = -9,    /* the walk delivered to an end port that is not the LID's */
	AN_E_LOOP = -10,       /* the walk revisits a switch */
	AN_E_RANGE = -11,      /* beyond a limit, or a request that cannot be met (too few hosts) */
	AN_E_NOTAPPLIC = -12,  /* the algorithm does not apply to this job or fabric */
	AN_E_ROUTE = -13,      /* a route between two hosts of the job fails (err names them) */
	AN_E_CHECK = -14,      /* a checker found the result incomplete or wrong (err says where) */
	AN_E_CANCEL = -15,     /* the caller's cancel flag was raised (a deadline): nothing is returned */
};

/* A static string, never NULL ("unknown error" for anything else). */
const char *an_strerror(int err);

#endif
