/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * server_watch.c - `watch`: long polls parked until a plane serves another
 * generation, woken by the builder's publish hook.
 */
#include <stdlib.h>

#include "history_cmd.h"
#include "query.h"
#include "server_impl.h"

/* Takes c off its plane's watcher list and gives back what parking took. */
void watch_unpark(struct conn *c)
{
	if (!c->watch_plane)
		return;
	struct server *srv = c->srv;
	int p = c->watch_plane - 1;
	if (c->wprev)
		c->wprev->wnext = c->wnext;
	else
		srv->watchers[p] = c->wnext;
	if (c->wnext)
		c->wnext->wprev = c->wprev;
	c->wprev = c->wnext = NULL;
	c->watch_plane = 0;
	srv->nwatch--;
	if (c->watch_ev) {
		event_free(c->watch_ev);
		c->watch_ev = NULL;
	}
	if (c->bev) {
		struct timeval tv = { srv->cfg.idle_timeout_s, 0 }, wtv = { srv->cfg.write_timeout_s, 0 };
		bufferevent_set_timeouts(c->bev, &tv, srv->cfg.write_timeout_s ? &wtv : NULL);
	}
}

/* The answer, then whatever the client pipelined behind the watch. */
void watch_answer(struct conn *c, uint64_t gen, int changed)
{
	struct server *srv = c->srv;
	watch_unpark(c);
	if (changed)
		srv->watch_answered++;
	else
		srv->watch_timeouts++;
	if (!c->bev || c->closing)
		return;
	watch_reply(bufferevent_get_output(c->bev), gen, changed);
	set_busy(c, 0);
	check_output(c);
	if (c->bev && !c->closing)
		line_read_cb(c->bev, c);
}

static void watch_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	struct fabric *f = store_get(c->srv->plane[c->watch_plane - 1].st);
	uint64_t g = f->snap->generation;
	fabric_put(f);
	watch_answer(c, g, g != c->watch_gen);
}

/* Loop thread, after a publish on wake->plane: every watcher of that plane
 * whose generation is no longer served hears of it. O(its watchers). */
void watch_wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct watch_wake *w = arg;
	struct server *srv = w->srv;
	struct fabric *f = store_get(srv->plane[w->plane].st);
	uint64_t g = f->snap->generation;
	qstats_note_gen(&srv->qs, w->plane, f);
	fabric_put(f);
	for (struct conn *c = srv->watchers[w->plane], *next; c; c = next) {
		next = c->wnext;
		if (c->watch_gen != g)
			watch_answer(c, g, 1);
	}
}

/* Builder thread: event_active() is the one libevent call that may come
 * from another thread (evthread_use_pthreads). */
void watch_publish_hook(void *arg)
{
	event_active(((struct watch_wake *)arg)->ev, EV_READ, 0);
}

/* watch GEN [TIMEOUT_MS]: answered now if the plane already serves another
 * generation (or the timeout is 0), else parked: no thread, no pool slot,
 * a timer and a list entry; no further request is parsed until answered,
 * so replies stay in order. */
void handle_watch(struct conn *c, const struct proto_req *req, struct evbuffer *out)
{
	struct server *srv = c->srv;
	uint64_t gen;
	unsigned ms;
	if (watch_args(req, &gen, &ms, out)) {
		srv->errors++;
		return;
	}
	int p = c->plane >= 0 && c->plane < srv->nplanes ? c->plane : 0;
	struct fabric *f = store_get(srv->plane[p].st);
	uint64_t g = f->snap->generation;
	fabric_put(f);
	if (g != gen || !ms) {
		watch_reply(out, g, g != gen);
		return;
	}
	c->watch_ev = evtimer_new(srv->base, watch_timeout_cb, c);
	if (!c->watch_ev) {
		query_error(out, "NOMEM", "cannot wait");
		return;
	}
	struct timeval tv = { ms / 1000, (long)(ms % 1000) * 1000 };
	evtimer_add(c->watch_ev, &tv);
	c->watch_gen = gen;
	c->watch_plane = p + 1;
	c->wprev = NULL;
	c->wnext = srv->watchers[p];
	if (c->wnext)
		c->wnext->wprev = c;
	srv->watchers[p] = c;
	srv->nwatch++;
	set_busy(c, 1);
	/* The idle timeout would cut a watch longer than it: the watch has
	 * its own. */
	struct timeval wtv = { srv->cfg.write_timeout_s, 0 };
	bufferevent_set_timeouts(c->bev, NULL, srv->cfg.write_timeout_s ? &wtv : NULL);
}
