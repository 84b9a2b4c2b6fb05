/*
 * query.c - see query.h.
 */
#include "query.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fabric.h"
#include "log.h"

void query_error(struct evbuffer *out, const char *code, const char *fmt, ...)
{
	char msg[512], clean[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	evbuffer_add_printf(out, "ERR %s %s\n", code, log_clean(msg, strlen(msg), clean, sizeof(clean)));
}

static void answer_info(const struct fabric *f, struct evbuffer *out)
{
	const struct snap *s = f->snap;
	const struct fabric_index *x = f->index;
	char src[sizeof(f->source) * 4];
	snap_escape(f->source, src, sizeof(src));
	evbuffer_add_printf(out,
			    "OK generation=%" PRIu64 " nodes=%u switches=%u cas=%u links=%u max_lid=%u "
			    "engine=%s sm_guid=0x%016" PRIx64 " sweep=%" PRIu64 " snapshot_us=%" PRIu64
			    " received_us=%" PRIu64 " decode_ms=%.1f build_ms=%.1f source=\"%s\"\n",
			    s->generation, s->nnodes, x ? x->switches : 0, x ? x->cas : 0, x ? x->links : 0,
			    s->max_lid, s->engine[0] ? s->engine : "-", s->sm_guid, s->sweep, s->timestamp,
			    f->received_us, f->decode_ms, f->build_ms, src);
}

enum query_result query_answer(const struct fabric *f, const struct proto_req *req, struct evbuffer *out)
{
	const char *c = req->cmd;
	if (!strcmp(c, "ping")) {
		evbuffer_add_printf(out, "OK pong\n");
		return QUERY_OK;
	}
	if (!strcmp(c, "quit")) {
		evbuffer_add_printf(out, "OK bye\n");
		return QUERY_CLOSE;
	}
	if (!strcmp(c, "info")) {
		answer_info(f, out);
		return QUERY_OK;
	}
	if (!strcmp(c, "help")) {
		evbuffer_add_printf(out, "OK commands: ping info help quit\n");
		return QUERY_OK;
	}
	return QUERY_UNKNOWN;
}
