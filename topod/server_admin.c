/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * server_admin.c - the admin socket's own commands, rows of the command
 * table with CMD_ADMIN (cmd.c): they read or change the server itself.
 * Every query command is answered on the admin socket too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "counters.h"
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

/* The `stats` line: its keys, their order and formats are the counter
 * table's (counters.c), which /metrics and the docs read too. */
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
	counters_stats(m, out);
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
