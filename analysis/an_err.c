/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * an_err.c - names of the analyses' error codes (an_err.h).
 */
#include "an_err.h"

const char *an_strerror(int err)
{
	switch (err) {
	case AN_OK: return "ok";
	case AN_E_NOMEM: return "out of memory";
	case AN_E_INVAL: return "invalid argument";
	case AN_E_NOTFOUND: return "no such host, port or LID";
	case AN_E_NOLID: return "destination LID is not assigned";
	case AN_E_SRC_NOLINK: return "source port has no link";
	case AN_E_NOENTRY: return "a switch has no LFT entry for the destination";
	case AN_E_NOLINK: return "a switch forwards out of a port with no link";
	case AN_E_DOWN: return "the route uses a link that is not active";
	case AN_E_WRONGDST: return "the route reaches the wrong end port";
	case AN_E_LOOP: return "the route loops";
	case AN_E_RANGE: return "value out of range";
	case AN_E_NOTAPPLIC: return "the algorithm does not apply to this job or fabric";
	case AN_E_ROUTE: return "a route between two hosts of the job fails";
	case AN_E_CHECK: return "the result failed its check";
	case AN_E_CANCEL: return "cancelled (deadline passed)";
	}
	return "unknown error";
}
