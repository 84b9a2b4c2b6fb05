/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * server_admin.c - the admin socket's own commands, rows of the command
 * table with CMD_ADMIN (cmd.c): they read or change the server itself.
 * Every query command is answered on the admin socket too.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "server_impl.h"

/* The shrink guard's way past it (build.h): `confirm G` serves the
 * generation G a plane holds back. The result is in the log and in `info`;
 * the reply says it was queued. */
void admin_confirm(struct conn *c, const struct proto_req *req, struct evbuffer *out)
{
	struct server *srv = c->srv;
	char *end = NULL, why[SNAP_ERR_LEN * 2] = "", err[SNAP_ERR_LEN];
	errno = 0;
	unsigned long long gen = req->argc == 1 ? strtoull(req->argv[0], &end, 10) : 0;
	if (req->argc != 1 || errno || !gen || *end || req->argv[0][0] == '-') {
		query_error(out, "USAGE", "confirm GENERATION (the one held back: info's held=, the log, "
			    "topod_generation_held)");
		return;
	}
	for (int i = 0; i < srv->nplanes; i++) {
		if (!builder_confirm(srv->plane[i].b, gen, err)) {
			evbuffer_add_printf(out, "OK confirmed generation %llu (plane %s): queued to be served\n", gen,
					    srv->plane[i].name);
			return;
		}
		size_t n = strlen(why);
		snprintf(why + n, sizeof(why) - n, "%s%s", n ? "; " : "", err);
	}
	query_error(out, "NOTHELD", "generation %llu is not held back: %s", gen, why);
}

/* The `stats` line: one row per counter, its key beside the field of
 * struct server_metrics it shows (server.h), so that no two can be
 * swapped; the kind comes from the field's type. Counters over every plane
 * are summed (builder_stats_add: the last error is the newest). */
enum stat_kind { ST_UNS, ST_INT, ST_U64, ST_MS, ST_TEXT };
struct stat_field {
	const char *key;
	size_t off;
	enum stat_kind kind;
};
#define STAT(key, field)                                                                                           \
	{ key, offsetof(struct server_metrics, field),                                                             \
	  _Generic(((struct server_metrics *)0)->field, unsigned: ST_UNS, int: ST_INT, uint64_t: ST_U64,          \
		   double: ST_MS, char *: ST_TEXT) }

static const struct stat_field stat_fields[] = {
	STAT("connections", conns), STAT("admin_connections", admin_conns), STAT("max_conns", max_conns),
	STAT("requests", requests), STAT("errors", errors), STAT("refused", refused),
	STAT("reply_bytes_unread", out_pending), STAT("cut_hard", cut_hard), STAT("cut_soft", cut_soft),
	STAT("cut_write_timeout", cut_write), STAT("toobig", toobig), STAT("busy_heavy", busy_heavy),
	STAT("half_closed", half_closed), STAT("heavy_queued", pool.queued), STAT("heavy_running", pool.running),
	STAT("heavy_done", pool.completed), STAT("workers", workers), STAT("ingest_connections", ingest_conns),
	STAT("ingest_denied", ingest_denied), STAT("ingest_unsigned", ingest_unsigned),
	STAT("ingest_truncated", ingest_truncated), STAT("ingest_trailing", ingest_trailing),
	STAT("snapshots_received", all.received), STAT("accepted", all.accepted), STAT("rejected", all.rejected),
	STAT("superseded", all.superseded), STAT("deltas", all.deltas), STAT("planes", nplanes),
	STAT("watching", watching), STAT("watch_answered", watch_answered), STAT("watch_timeouts", watch_timeouts),
	STAT("last_decode_ms", all.last_decode_ms), STAT("last_build_ms", all.last_build_ms),
	STAT("last_error_us", all.last_error_us), STAT("last_error", all.last_error),
	STAT("journal_quarantined", all.journal_quarantined), STAT("journal_full_writes", all.journal_full_writes),
	STAT("not_durable", all.not_durable), STAT("journal_last", all.journal_last),
	STAT("heavy_light_queued", pool.light_queued), STAT("heavy_light_done", pool.light_done),
	STAT("heavy_reserved", pool.reserved), STAT("max_request_memory", pool.budget),
	STAT("heavy_toobig", heavy_toobig), STAT("heavy_expired", pool.expired), STAT("heavy_cancelled", pool.stopped),
	STAT("heavy_timeouts", heavy_timeouts), STAT("client_input_bytes", client_in), STAT("client_bytes", client_bytes),
	STAT("client_budget", client_budget), STAT("cut_budget", cut_budget), STAT("ambiguous_names", all.ambiguous_names),
	STAT("ambiguous_example", all.ambiguous_example),
};

void admin_stats(struct conn *c, const struct proto_req *req, struct evbuffer *out)
{
	(void)req;
	struct server_metrics *m = malloc(sizeof(*m));
	if (!m) {
		query_error(out, "NOMEM", "no memory for the counters");
		return;
	}
	server_get_metrics(c->srv, m);
	evbuffer_add_printf(out, "OK");
	for (size_t i = 0; i < sizeof(stat_fields) / sizeof(stat_fields[0]); i++) {
		const struct stat_field *f = &stat_fields[i];
		const char *p = (const char *)m + f->off;
		char clean[SNAP_ERR_LEN];
		switch (f->kind) {
		case ST_UNS: evbuffer_add_printf(out, " %s=%u", f->key, *(const unsigned *)p); break;
		case ST_INT: evbuffer_add_printf(out, " %s=%d", f->key, *(const int *)p); break;
		case ST_U64: evbuffer_add_printf(out, " %s=%" PRIu64, f->key, *(const uint64_t *)p); break;
		case ST_MS: evbuffer_add_printf(out, " %s=%.1f", f->key, *(const double *)p); break;
		case ST_TEXT:
			log_clean(p, strnlen(p, SNAP_ERR_LEN), clean, sizeof(clean));
			evbuffer_add_printf(out, " %s=\"%s\"", f->key, clean);
			break;
		}
	}
	evbuffer_add_printf(out, "\n");
	free(m);
}

void admin_shutdown(struct conn *c, const struct proto_req *req, struct evbuffer *out)
{
	(void)req;
	evbuffer_add_printf(out, "OK shutting down\n");
	tlog(TLOG_INFO, "shutdown requested on the admin socket");
	/* Stop once the reply is written, so the caller sees it. */
	c->stop_after = 1;
	conn_finish(c);
}

void admin_reload(struct conn *c, const struct proto_req *req, struct evbuffer *out)
{
	struct server *srv = c->srv;
	char err[SNAP_ERR_LEN];
	(void)req;
	if (!srv->reload)
		query_error(out, "NOSOURCE", "no --load or state file to reload from");
	else if (srv->reload(srv->reload_arg, NULL, 0, err))
		query_error(out, "RELOAD", "%s", err);
	else
		evbuffer_add_printf(out, "OK reloaded\n");
}

/* The operator's way past the generation rule: restoring a backup of an
 * older fabric. The result is in the log and in `info`; the reply says it
 * was queued. */
void admin_restore(struct conn *c, const struct proto_req *req, struct evbuffer *out)
{
	struct server *srv = c->srv;
	char err[SNAP_ERR_LEN];
	int force = req->argc == 2 && !strcmp(req->argv[1], "force");
	if (req->argc < 1 || req->argc > 2 || (req->argc == 2 && !force))
		query_error(out, "USAGE", "restore PATH [force]");
	else if (!srv->reload || srv->reload(srv->reload_arg, req->argv[0], force, err))
		query_error(out, "RELOAD", "%s", srv->reload ? err : "not available");
	else
		evbuffer_add_printf(out, "OK queued%s\n", force ? " (forced past the generation rule)" : "");
}
