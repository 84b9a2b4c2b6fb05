/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * server_query.c - query and admin connections: request lines read,
 * dispatched by the command table (cmd.h), and the per-client output
 * limits.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "query.h"
#include "route.h"
#include "server_impl.h"

void cut_client(struct conn *c, const char *why)
{
	size_t n = evbuffer_get_length(bufferevent_get_output(c->bev));
	tlog(TLOG_WARN, "%s: closing the connection: %s (%zu reply bytes unread)", c->peer, why, n);
	/* What is queued will not be read: drop it, do not flush. */
	conn_close(c);
}

static void soft_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	struct server *srv = c->srv;
	if (!c->bev)
		return;
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) > srv->cfg.out_soft) {
		srv->cut_soft++;
		char why[128];
		snprintf(why, sizeof(why), "unread replies stayed above the soft output limit of %" PRIu64 " bytes for %u s",
			 srv->cfg.out_soft, srv->cfg.out_soft_s);
		cut_client(c, why);
	}
}

/* Enforces the per-client limits after output grew. The soft limit is
 * checked again by a timer when it has been held out_soft_s seconds. */
void check_output(struct conn *c)
{
	struct server *srv = c->srv;
	/* The admin socket is the operator's (root, topod's user): its
	 * replies (stats grows with every counter) are never cut. */
	if (!c->bev || c->kind != CONN_QUERY)
		return;
	size_t n = evbuffer_get_length(bufferevent_get_output(c->bev));
	if (srv->cfg.out_hard && n > srv->cfg.out_hard) {
		srv->cut_hard++;
		char why[96];
		snprintf(why, sizeof(why), "unread replies passed the hard output limit of %" PRIu64 " bytes",
			 srv->cfg.out_hard);
		cut_client(c, why);
		return;
	}
	if (!srv->cfg.out_soft || n <= srv->cfg.out_soft) {
		if (c->soft_ev)
			evtimer_del(c->soft_ev);
		return;
	}
	if (!c->soft_ev && !(c->soft_ev = evtimer_new(srv->base, soft_cb, c)))
		return;
	if (!evtimer_pending(c->soft_ev, NULL)) {
		struct timeval tv = { srv->cfg.out_soft_s, 0 };
		evtimer_add(c->soft_ev, &tv);
	}
}


/* The plane a request is answered from: the connection's choice, else the
 * first plane on which one of the first arguments names an end port (a
 * host on two rails is on both: the first plane wins), else the first.
 * Lookups only: O(planes * log hosts). */
int pick_plane(const struct conn *c, const struct proto_req *req)
{
	const struct server *srv = c->srv;
	if (c->plane >= 0 && c->plane < srv->nplanes)
		return c->plane;
	if (srv->nplanes == 1)
		return 0;
	for (size_t a = 0; a < req->argc && a < 3; a++) {
		char name[TOPO_QUERY_NAME_MAX + 1];
		/* "host*slots" in rank lists */
		size_t n = strcspn(req->argv[a], "*:");
		if (!strncmp(req->argv[a], "lid:", 4) || !n || n > TOPO_QUERY_NAME_MAX)
			continue;
		memcpy(name, req->argv[a], n);
		name[n] = '\0';
		for (int i = 0; i < srv->nplanes; i++) {
			struct fabric *f = store_get(srv->plane[i].st);
			uint32_t ep;
			uint16_t dl;
			int hit = f->index && route_resolve(f->index->rt, name, &ep, &dl) == AN_OK;
			fabric_put(f);
			if (hit)
				return i;
		}
	}
	return 0;
}

/* An admin row: answered on the admin socket, ERR DENIED elsewhere. */
static void answer_admin(struct conn *c, const struct cmd *k, const struct proto_req *req, struct evbuffer *out)
{
	size_t max = k->max_args < 0 ? PROTO_ARGS_MAX : (size_t)k->max_args;
	if (c->kind != CONN_ADMIN) {
		c->srv->errors++;
		query_error(out, "DENIED", "%s is only available on the admin socket", k->name);
	} else if (req->argc < (size_t)k->min_args || req->argc > max) {
		query_error(out, "USAGE", "%s", k->usage);
	} else {
		k->admin(c, req, out);
	}
}

/* Answers one line; 1 if the reply comes later (a heavy request on the
 * pool, a parked watch), else 0 with it written and *k its command. */
static int answer_line(struct conn *c, char *line, size_t len, struct evbuffer *out, const struct cmd **kp)
{
	struct server *srv = c->srv;
	/* proto_req is large (PROTO_ARGS_MAX pointers): one per thread, not
	 * per call on the stack. The loop is single-threaded. */
	static struct proto_req req;
	const char *why;
	srv->requests++;
	if (proto_split(line, len, &req, &why)) {
		srv->errors++;
		query_error(out, "PROTO", "%s", why);
		return 0;
	}
	const struct cmd *k = cmd_find(req.cmd);
	*kp = k;
	if (k && (k->flags & CMD_ADMIN)) {
		*kp = NULL; /* counted with what is not a query command, as the metrics say */
		answer_admin(c, k, &req, out);
		return 0;
	}
	if (k && (k->flags & CMD_WATCH)) {
		size_t max = k->max_args < 0 ? PROTO_ARGS_MAX : (size_t)k->max_args;
		if (req.argc < (size_t)k->min_args || req.argc > max) {
			query_error(out, "USAGE", "%s", k->usage);
			return 0;
		}
		handle_watch(c, &req, out);
		return 1;
	}
	if (k && (k->flags & CMD_HEAVY))
		return submit_heavy(c, k, &req, out) == 0;
	if (k) {
		struct qplanes qp = { .n = srv->nplanes, .selected = &c->plane };
		int p = pick_plane(c, &req);
		struct fabric *f = store_get(srv->plane[p].st);
		if (k->flags & CMD_PLANES) {
			qp.current = p;
			for (int i = 0; i < srv->nplanes; i++) {
				qp.name[i] = srv->plane[i].name;
				qp.f[i] = store_get(srv->plane[i].st);
			}
		}
		enum query_result r = query_run(k, f, &req, out, (k->flags & CMD_PLANES) ? &qp : NULL);
		fabric_put(f);
		if (k->flags & CMD_PLANES)
			for (int i = 0; i < srv->nplanes; i++)
				fabric_put((struct fabric *)qp.f[i]);
		if (r == QUERY_CLOSE)
			conn_finish(c);
		return 0;
	}
	if (c->kind == CONN_ADMIN) {
		/* the admin commands by the table, in its order */
		char names[128] = "";
		for (size_t i = 0; i < cmd_count; i++)
			if (cmd_table[i].flags & CMD_ADMIN)
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", *names ? " " : "",
					 cmd_table[i].name);
		query_error(out, "UNKNOWN", "unknown command; admin commands: %s, and every query", names);
	} else {
		srv->errors++;
		query_error(out, "UNKNOWN", "unknown command; try help");
	}
	return 0;
}

/* answer_line, counted by command, outcome and time for the metrics. */
static void handle_line(struct conn *c, char *line, size_t len, struct evbuffer *out)
{
	const struct cmd *k = NULL;
	size_t from = evbuffer_get_length(out);
	uint64_t t0 = pool_now_ns();
	if (!answer_line(c, line, len, out, &k))
		qstats_note(&c->srv->qs, k, qstats_outcome(out, from), QS_LANE_LOOP, pool_now_ns() - t0);
}

/* The idle timeout restarts with every byte, so a client trickling one
 * byte a second would hold its connection for ever (slowloris): a request
 * line must also be complete within the idle timeout of its first byte,
 * as Apache's mod_reqtimeout and nginx's client_header_timeout ask. */
static int line_overdue(struct conn *c)
{
	struct timeval now;
	event_base_gettimeofday_cached(c->srv->base, &now);
	uint64_t ms = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_usec / 1000;
	if (!c->line_since) {
		c->line_since = ms;
		return 0;
	}
	return c->srv->cfg.idle_timeout_s && ms - c->line_since >= (uint64_t)c->srv->cfg.idle_timeout_s * 1000;
}

void line_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev), *out = bufferevent_get_output(bev);
	while (!c->closing && !c->busy && c->bev) {
		if (evbuffer_get_length(out) > OUT_HIGH) {
			/* Back-pressure: resume from the write callback. */
			bufferevent_disable(bev, EV_READ);
			return;
		}
		/* Search only what arrived since the last look: a slow client
		 * sending a long line a few bytes at a time would otherwise
		 * have the loop rescan up to 256 KiB per read. */
		struct evbuffer_ptr from;
		size_t have = evbuffer_get_length(in);
		if (c->scanned > have)
			c->scanned = 0;
		if (evbuffer_ptr_set(in, &from, c->scanned, EVBUFFER_PTR_SET)) {
			c->scanned = 0;
			evbuffer_ptr_set(in, &from, 0, EVBUFFER_PTR_SET);
		}
		struct evbuffer_ptr eol = evbuffer_search_eol(in, &from, NULL, EVBUFFER_EOL_LF);
		if (eol.pos < 0) {
			c->scanned = have;
			if (have && line_overdue(c)) {
				c->srv->errors++;
				evbuffer_add_printf(out, "ERR IDLE request line not completed within %u s\n",
						    c->srv->cfg.idle_timeout_s);
				tlog(TLOG_INFO, "%s: a request line trickled in for over %u s, closing", c->peer,
				     c->srv->cfg.idle_timeout_s);
				conn_finish(c);
				return;
			}
			if (evbuffer_get_length(in) > PROTO_LINE_MAX) {
				c->srv->errors++;
				query_error(out, "TOOLONG", "request line longer than %d bytes", PROTO_LINE_MAX);
				char sample[64];
				size_t n = evbuffer_copyout(in, sample, sizeof(sample) - 1);
				char clean[64];
				tlog(TLOG_WARN, "%s: request line too long, closing; it began \"%s\"", c->peer,
				     log_clean(sample, n, clean, sizeof(clean)));
				conn_finish(c);
				return;
			}
			break; /* wait for the rest of the line */
		}
		if ((size_t)eol.pos > PROTO_LINE_MAX) {
			c->srv->errors++;
			query_error(out, "TOOLONG", "request line longer than %d bytes", PROTO_LINE_MAX);
			conn_finish(c);
			return;
		}
		size_t len;
		c->scanned = 0;
		c->line_since = 0;
		char *line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF);
		if (!line)
			break;
		/* evbuffer_readln stops at an embedded NUL only in its length,
		 * not its scan; len is authoritative. */
		handle_line(c, line, len, out);
		free(line);
		check_output(c);
	}
	/* Half-closed and everything it sent is answered: flush, then close
	 * (a trailing partial line is not a request). */
	if (c->bev && c->eof && !c->busy && !c->closing)
		conn_finish(c);
}

void conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	size_t left = evbuffer_get_length(bufferevent_get_output(bev));
	if (c->closing) {
		if (left == 0)
			conn_close(c);
		return;
	}
	/* Back-pressure released: parse what is waiting (reading stays off
	 * once the client has half-closed). */
	if (c->kind != CONN_INGEST && left <= OUT_HIGH / 2 && !c->busy &&
	    (c->eof || !(bufferevent_get_enabled(bev) & EV_READ))) {
		if (!c->eof)
			bufferevent_enable(bev, EV_READ);
		line_read_cb(bev, c);
	}
}
