/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * watch.c - change notification: tii_watch ("watch", blocking) and its
 * file-descriptor form for event loops.
 */
#include "tii_impl.h"

#include <stdio.h>
#include <string.h>

/* "OK gen=G changed=1|0" */
static int parse_watch(char *line, uint64_t *gen, int *changed)
{
	struct tii__kv kv;
	long ch;
	if (strncmp(line, "OK ", 3) || tii__kv_parse(line + 3, &kv))
		return TII_E_PROTO;
	kv.row = &tii__cmds[TII__WATCH];
	if (tii__kv_u64(&kv, "gen", gen) || tii__kv_int(&kv, "changed", 0, 1, &ch))
		return TII_E_PROTO;
	*changed = (int)ch;
	return 0;
}

struct watch_ctx {
	uint64_t gen;
	int changed;
};

static int watch_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct watch_ctx *w = ctx;
	long ch;
	if (nlines || tii__kv_u64(kv, "gen", &w->gen) || tii__kv_int(kv, "changed", 0, 1, &ch))
		return TII_E_PROTO;
	w->changed = (int)ch;
	return 0;
}

int tii_watch(tii_t *t, uint64_t after_gen, int timeout_ms, uint64_t *new_gen)
{
	if (!t || !new_gen || timeout_ms < 0 || timeout_ms > TII_WATCH_MAX_MS)
		return TII_E_INVAL;
	static const struct tii__handler h = { watch_head, NULL, 0 };
	struct watch_ctx w = { 0, 0 };
	char g[24];
	int n = snprintf(g, sizeof(g), "%llu", (unsigned long long)after_gen);
	int rc = tii__req_begin(t, TII__WATCH);
	rc = rc ? rc : tii__req_word(t, g, (size_t)n);
	rc = rc ? rc : tii__req_int(t, timeout_ms);
	/* The wait is the server's; the handle's timeout covers the rest. */
	int saved = t->timeout_ms;
	long long total = (long long)timeout_ms + saved;
	t->timeout_ms = total > TII_TIMEOUT_MAX_MS ? TII_TIMEOUT_MAX_MS : (int)total;
	rc = rc ? rc : tii__request(t, &h, &w);
	t->timeout_ms = saved;
	if (rc)
		return rc;
	*new_gen = w.gen;
	return w.changed ? 0 : TII_E_TIMEOUT;
}

void tii_watch_cancel(tii_t *t)
{
	if (t)
		tii__net_close(&t->w);
}

int tii_watch_start(tii_t *t, uint64_t after_gen, int timeout_ms)
{
	if (!t || timeout_ms < 0 || timeout_ms > TII_WATCH_MAX_MS)
		return TII_E_INVAL;
	tii__net_close(&t->w);
	char req[TOPO_PLANE_NAME_MAX + 64];
	int n = 0;
	t->w_plane = t->plane[0] != '\0';
	if (t->w_plane)
		n = snprintf(req, sizeof(req), "%s %s\n", tii__cmds[TII__PLANE].name, t->plane);
	n += snprintf(req + n, sizeof(req) - (size_t)n, "%s %llu %d\n", tii__cmds[TII__WATCH].name,
		      (unsigned long long)after_gen, timeout_ms);
	int rc = TII_E_CONNECT;
	/* The first server that takes the request; the answer comes later. */
	for (size_t k = 0; k < t->nsrv; k++) {
		const struct tii_server *s = &t->srv[(t->cur + k) % t->nsrv];
		char why[128];
		int64_t deadline = tii__net_now_ms() + t->timeout_ms;
		rc = tii__net_connect(&t->w, s->host, s->port, deadline, why, sizeof(why));
		if (!rc)
			rc = tii__net_send(&t->w, req, (size_t)n, deadline);
		if (!rc) {
			t->w.rx = 0;
			t->w.rx_max = 4096;
			t->w_deadline = tii__net_now_ms() + timeout_ms + t->timeout_ms;
			return t->w.fd;
		}
		tii__set_msg(t, "%s: %s", s->spec, why);
		tii__net_close(&t->w);
	}
	return rc;
}

int tii_watch_finish(tii_t *t, uint64_t *new_gen)
{
	if (!t || !new_gen || t->w.fd < 0)
		return TII_E_INVAL;
	char *line;
	size_t len;
	int rc = 0, changed = 0;
	if (t->w_plane) {
		rc = tii__net_readline(&t->w, t->w_deadline, &line, &len);
		if (!rc && strncmp(line, "OK plane=", 9)) {
			tii__set_msg(t, "%s", line);
			rc = !strncmp(line, "ERR NOPLANE ", 12) || !strncmp(line, "ERR NOTFOUND ", 13) ? TII_E_NOPLANE
											  : TII_E_PROTO;
		}
	}
	if (!rc)
		rc = tii__net_readline(&t->w, t->w_deadline, &line, &len);
	if (!rc && !strncmp(line, "ERR ", 4)) {
		tii__set_msg(t, "%s", line + 4);
		rc = TII_E_SERVER;
	} else if (!rc) {
		rc = parse_watch(line, new_gen, &changed);
	}
	tii__net_close(&t->w);
	if (rc)
		return rc;
	return changed ? 0 : TII_E_TIMEOUT;
}
