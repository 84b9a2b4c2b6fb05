/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * request.c - one protocol request: build the line, send it to a server,
 * read the reply, and fall over to the next server when one fails.
 *
 * A reply is "OK k=v ... [lines=N]" followed by N lines, or one line
 * "ERR CODE text" (docs/protocol.md). Every attempt on one server runs
 * against one deadline (the handle's timeout), so a silent or stalling
 * server costs at most that. After anything unexpected the connection is
 * closed: a half-read reply would desynchronise every later request.
 * ERR BUSY and refused connections are retried on the same server with
 * jittered exponential backoff before failing over (tii.h, "Busy").
 */
#include "tii_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void tii__set_msg(tii_t *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->msg, sizeof(t->msg), fmt, ap);
	va_end(ap);
	/* Server text is printable already; scrub anything that is not, so a
	 * caller can print the message as one line. */
	for (char *p = t->msg; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f)
			*p = '?';
}

static int req_append(tii_t *t, const char *s, size_t n)
{
	/* +1 for the space, +2 for "\n\0" when sending */
	if (t->reqlen + n + 1 > TII_REQUEST_MAX)
		return TII_E_TOOMANY;
	if (t->reqlen + n + 3 > t->reqcap) {
		size_t cap = t->reqcap ? t->reqcap : 256;
		while (cap < t->reqlen + n + 3)
			cap *= 2;
		char *nr = realloc(t->req, cap);
		if (!nr)
			return TII_E_NOMEM;
		t->req = nr;
		t->reqcap = cap;
	}
	if (t->reqlen)
		t->req[t->reqlen++] = ' ';
	memcpy(t->req + t->reqlen, s, n);
	t->reqlen += n;
	t->req[t->reqlen] = '\0';
	return 0;
}

int tii__req_begin(tii_t *t, enum tii__cmd cmd)
{
	t->msg[0] = '\0';
	t->reqlen = 0;
	t->reqargs = 0;
	t->row = &tii__cmds[cmd];
	return req_append(t, t->row->name, strlen(t->row->name));
}

int tii__req_host(tii_t *t, const char *host)
{
	if (tii__check_name(host)) {
		tii__set_msg(t, "invalid host name");
		return TII_E_INVAL;
	}
	return tii__req_word(t, host, strlen(host));
}

int tii__req_hosts(tii_t *t, const char *const *hosts, size_t n)
{
	if (!hosts || !n)
		return TII_E_INVAL;
	for (size_t i = 0; i < n; i++) {
		int rc = tii__req_host(t, hosts[i]);
		if (rc)
			return rc;
	}
	return 0;
}

int tii__req_word(tii_t *t, const char *w, size_t n)
{
	if (++t->reqargs > TII_ARGS_MAX) {
		tii__set_msg(t, "more than %d arguments in one request", TII_ARGS_MAX);
		return TII_E_TOOMANY;
	}
	int rc = req_append(t, w, n);
	if (rc == TII_E_TOOMANY)
		tii__set_msg(t, "request longer than %d bytes", TII_REQUEST_MAX);
	return rc;
}

int tii__req_int(tii_t *t, long v)
{
	char b[32];
	int n = snprintf(b, sizeof(b), "%ld", v);
	t->reqargs++;
	return req_append(t, b, (size_t)n);
}

/* What topod's ERR codes mean to a caller, and whether another server
 * might do better (final == 0). */
static int map_err(const char *code, int *final)
{
	static const struct { const char *code; int err, final; } tab[] = {
		{ "NOTFOUND", TII_E_NOTFOUND, 1 },
		{ "NOGENERATION", TII_E_NOGENERATION, 1 },
		{ "NOPLANE", TII_E_NOPLANE, 1 },
		{ "GONE", TII_E_GONE, 1 },
		{ "NOROUTE", TII_E_NOROUTE, 1 },
		/* "shared" and "pathmatrix" name the route failure itself */
		{ "NOLID", TII_E_NOROUTE, 1 },
		{ "SRC_NOLINK", TII_E_NOROUTE, 1 },
		{ "NOENTRY", TII_E_NOROUTE, 1 },
		{ "NOLINK", TII_E_NOROUTE, 1 },
		{ "DOWN", TII_E_NOROUTE, 1 },
		{ "WRONGDST", TII_E_NOROUTE, 1 },
		{ "LOOP", TII_E_NOROUTE, 1 },
		/* the reply would pass topod's per-client output limit */
		{ "TOOBIG", TII_E_TOOBIG, 1 },
		{ "TOOMANY", TII_E_TOOMANY, 1 },
		{ "TOOLONG", TII_E_TOOMANY, 1 },
		{ "USAGE", TII_E_SERVER, 1 },
		/* a depth out of range or a host listed twice: the caller's argument */
		{ "RANGE", TII_E_INVAL, 1 },
		{ "DUPLICATE", TII_E_INVAL, 1 },
		{ "RAIL", TII_E_INVAL, 1 },
		/* pick/map: more hosts than free, fewer slots than ranks */
		{ "TOOFEW", TII_E_INVAL, 1 },
		{ "SLOTS", TII_E_INVAL, 1 },
		{ "PROTO", TII_E_SERVER, 1 },
		{ "DENIED", TII_E_SERVER, 1 },
		/* the request itself cannot be answered as asked: another server
		 * would say the same (tii_last_message() has topod's reason) */
		{ "NOTAPPLICABLE", TII_E_SERVER, 1 },
		{ "NOTHELD", TII_E_SERVER, 1 },
		{ "NOSOURCE", TII_E_SERVER, 1 },
		{ "RELOAD", TII_E_SERVER, 1 },
		{ "BUILD", TII_E_SERVER, 1 },
		{ "INTERNAL", TII_E_SERVER, 1 },
		/* a heavy request past topod's deadline: another server would take
		 * as long, and libtii's own timeout is usually shorter */
		{ "TIMEOUT", TII_E_TIMEOUT, 1 },
		{ "NOFABRIC", TII_E_NOFABRIC, 0 },
		{ "BUSY", TII_E_BUSY, 0 },
		{ "UNKNOWN", TII_E_UNSUPPORTED, 0 },
		{ "NOMEM", TII_E_NOMEM, 0 },
		/* the server closed an idle connection: a stale reply, retry */
		{ "IDLE", TII_E_IO, 0 },
		{ "SHUTDOWN", TII_E_IO, 0 },
	};
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (!strcmp(code, tab[i].code)) {
			*final = tab[i].final;
			return tab[i].err;
		}
	*final = 1;
	return TII_E_SERVER;
}

/* After ERR, which codes leave the connection usable. */
static int keeps_conn(const char *code)
{
	return strcmp(code, "TOOLONG") && strcmp(code, "IDLE") && strcmp(code, "BUSY") &&
	       strcmp(code, "SHUTDOWN") && strcmp(code, "TOOBIG");
}

/* How telling an error is when every server failed (higher wins): a
 * server's own answer beats a garbled one beats silence beats refusal. */
static int rank(int err)
{
	switch (err) {
	case TII_E_TOOBIG: return 9;
	case TII_E_NOFABRIC: return 8;
	case TII_E_UNSUPPORTED: return 7;
	case TII_E_NOMEM: return 6;
	case TII_E_BUSY: return 5;
	case TII_E_PROTO: return 4;
	case TII_E_TIMEOUT: return 3;
	case TII_E_IO: return 2;
	default: return 1;
	}
}

static const char *io_what(int rc)
{
	switch (rc) {
	case TII_E_TIMEOUT: return "no complete reply in time";
	case TII_E_IO: return "connection closed mid-reply";
	case TII_E_PROTO: return "reply is not topod's protocol (line too long or NUL byte)";
	case TII_E_NOMEM: return "out of memory";
	case TII_E_TOOBIG: return "reply larger than the handle's limit (tii_set_max_reply_bytes)";
	default: return "error";
	}
}

/* A new connection asks of the handle's plane: "plane NAME" first, its
 * "OK plane=..." read before the request goes out. */
static int choose_plane(tii_t *t, const struct tii_server *s, int64_t deadline, int *final)
{
	char line0[TOPO_PLANE_NAME_MAX + 16], *line;
	size_t len;
	int n = snprintf(line0, sizeof(line0), "%s %s\n", tii__cmds[TII__PLANE].name, t->plane);
	t->c.rx = 0;
	t->c.rx_max = t->max_reply;
	int rc = tii__net_send(&t->c, line0, (size_t)n, deadline);
	if (!rc)
		rc = tii__net_readline(&t->c, deadline, &line, &len);
	if (rc) {
		tii__net_close(&t->c);
		tii__set_msg(t, "%s: %s", s->spec, io_what(rc));
		return rc;
	}
	if (!strncmp(line, "OK plane=", 9))
		return 0;
	/* An unknown plane is the caller's error, not this server's (a topod
	 * before 1.9 says ERR NOTFOUND). */
	*final = !strncmp(line, "ERR NOPLANE ", 12) || !strncmp(line, "ERR NOTFOUND ", 13);
	if (*final)   /* topod's text names the planes: the code word is the category */
		tii__set_msg(t, "%s: %s", s->spec, line + 4 + strcspn(line + 4, " ") + (line[4 + strcspn(line + 4, " ")] == ' '));
	else
		tii__set_msg(t, "%s: %s", s->spec, strncmp(line, "ERR ", 4) ? "reply is not topod's protocol" : line + 4);
	tii__net_close(&t->c);
	return *final ? TII_E_NOPLANE : strncmp(line, "ERR UNKNOWN", 11) ? TII_E_PROTO : TII_E_UNSUPPORTED;
}

/*
 * One attempt on server t->cur, to finish before deadline. Returns 0, or an
 * error with *final set when no other server should be tried. *reused_fail
 * tells whether the failure came on a kept-open connection before any reply
 * byte (one the server dropped meanwhile, e.g. its idle timeout): then the
 * caller reconnects to the same server once, within the same deadline.
 */
static int attempt(tii_t *t, const struct tii__handler *h, void *ctx, int64_t deadline, int *final,
		   int *reused_fail)
{
	struct tii_server *s = &t->srv[t->cur];
	int reused = t->c.fd >= 0;
	*final = 0;
	*reused_fail = 0;

	if (reused && tii__net_stale(&t->c)) {
		tii__net_close(&t->c);
		reused = 0;
	}
	if (t->c.fd < 0) {
		char why[128];
		int rc = tii__net_connect(&t->c, s->host, s->port, deadline, why, sizeof(why));
		if (rc) {
			tii__set_msg(t, "%s: %s", s->spec, why);
			return rc;
		}
		if (t->plane[0] && (rc = choose_plane(t, s, deadline, final)))
			return rc;
	}
	t->c.rx = 0;
	t->c.rx_max = t->max_reply;
	t->req[t->reqlen] = '\n';
	int rc = tii__net_send(&t->c, t->req, t->reqlen + 1, deadline);
	t->req[t->reqlen] = '\0';
	char *line;
	size_t len;
	if (!rc)
		rc = tii__net_readline(&t->c, deadline, &line, &len);
	if (rc) {
		int silent = rc == TII_E_IO && t->c.rx == 0;
		*reused_fail = reused && silent;
		tii__net_close(&t->c);
		tii__set_msg(t, "%s: %s", s->spec, silent ? "connection closed without a reply" : io_what(rc));
		return rc;
	}

	if (!strncmp(line, "ERR ", 4)) {
		char *p = line + 4;
		char *code = tii__word(&p);
		while (*p == ' ')
			p++;
		if (!code) {
			tii__net_close(&t->c);
			tii__set_msg(t, "%s: malformed ERR reply", s->spec);
			return TII_E_PROTO;
		}
		int err = map_err(code, final);
		tii__set_msg(t, "%s", *p ? p : code);
		if (!keeps_conn(code))
			tii__net_close(&t->c);
		else
			t->last = (long)t->cur;
		return err;
	}
	if (strncmp(line, "OK", 2) || (line[2] != ' ' && line[2] != '\0')) {
		tii__net_close(&t->c);
		tii__set_msg(t, "%s: reply is not topod's protocol", s->spec);
		return TII_E_PROTO;
	}

	struct tii__kv kv;
	uint64_t gen = 0, nl = 0;
	const char *g;
	rc = tii__kv_parse(line + 2, &kv);
	if (!rc) {
		/* Every fabric answer names its generation; "info" spells it
		 * "generation=" too. */
		g = tii__kv_get(&kv, "gen");
		if (!g)
			g = tii__kv_get(&kv, "generation");
		if (h->nogen ? g != NULL : (!g || tii__parse_u64(g, 10, &gen)))
			rc = TII_E_PROTO;
	}
	if (!rc && tii__kv_get(&kv, "lines") &&
	    (tii__kv_u64(&kv, "lines", &nl) || nl > TII_REPLY_LINES_MAX))
		rc = TII_E_PROTO;
	kv.row = t->row;   /* the parser sees the keys cmds.c declares */
	if (!rc)
		rc = h->head ? h->head(ctx, &kv, (size_t)nl) : 0;
	if (rc) {
		tii__net_close(&t->c);
		*final = rc != TII_E_PROTO;
		tii__set_msg(t, "%s: %s", s->spec, rc == TII_E_PROTO ? "malformed reply header" : tii_strerror(rc));
		return rc;
	}
	for (uint64_t i = 0; i < nl; i++) {
		rc = tii__net_readline(&t->c, deadline, &line, &len);
		if (rc) {
			tii__net_close(&t->c);
			*final = rc == TII_E_NOMEM;
			tii__set_msg(t, "%s: %s (line %llu of %llu)", s->spec, io_what(rc),
				     (unsigned long long)i + 1, (unsigned long long)nl);
			return rc;
		}
		rc = h->line ? h->line(ctx, (size_t)i, line, len) : 0;
		if (rc) {
			tii__net_close(&t->c);
			*final = rc != TII_E_PROTO;
			if (rc == TII_E_PROTO)
				tii__set_msg(t, "%s: malformed reply line %llu", s->spec, (unsigned long long)i + 1);
			else
				tii__set_msg(t, "%s", tii_strerror(rc));
			return rc;
		}
	}
	t->last = (long)t->cur;
	if (!h->nogen)
		t->gen = gen;
	t->msg[0] = '\0';
	return 0;
}

/* The next wait before retrying a busy or refusing server: 10 ms doubling
 * per try up to 500 ms, drawn uniformly between half and all of it so that
 * thousands of ranks refused together do not come back together. */
static int64_t backoff_ms(tii_t *t, int tries)
{
	int64_t d = (int64_t)10 << (tries < 6 ? tries : 6);
	if (d > 500)
		d = 500;
	t->rng ^= t->rng << 13;
	t->rng ^= t->rng >> 7;
	t->rng ^= t->rng << 17;
	return d / 2 + (int64_t)(t->rng % (uint64_t)(d / 2 + 1));
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Tries server t->cur until it answers, fails for good, or stays busy /
 * refusing past its budget. */
static int on_server(tii_t *t, const struct tii__handler *h, void *ctx, int *final)
{
	int64_t start = tii__net_now_ms(), deadline = start + t->timeout_ms;
	int prev = 0;   /* BUSY or refused before this retry */
	char prevmsg[sizeof(t->msg)];
	for (int tries = 0;; tries++) {
		int reused_fail;
		int rc = attempt(t, h, ctx, deadline, final, &reused_fail);
		if (rc && reused_fail) /* the server dropped a kept-open connection */
			rc = attempt(t, h, ctx, deadline, final, &reused_fail);
		if (!rc || *final)
			return rc;
		if (prev && rc == TII_E_TIMEOUT) {
			/* the retry ran out of time: the refusal is the news */
			memcpy(t->msg, prevmsg, sizeof(t->msg));
			return prev;
		}
		int refused = rc == TII_E_CONNECT && t->c.err == ECONNREFUSED;
		if (rc != TII_E_BUSY && !refused)
			return rc;
		int64_t now = tii__net_now_ms(), wait = backoff_ms(t, tries);
		if (now + wait >= deadline || (refused && now + wait - start > TII_REFUSED_RETRY_MS))
			return rc;
		prev = rc;
		memcpy(prevmsg, t->msg, sizeof(prevmsg));
		sleep_ms(wait);
	}
}

int tii__request(tii_t *t, const struct tii__handler *h, void *ctx)
{
	int best = 0;
	char bestmsg[sizeof(t->msg)];
	bestmsg[0] = '\0';
	for (size_t k = 0; k < t->nsrv; k++) {
		int final;
		int rc = on_server(t, h, ctx, &final);
		if (!rc || final)
			return rc;
		if (!best || rank(rc) > rank(best)) {
			best = rc;
			memcpy(bestmsg, t->msg, sizeof(bestmsg));
		}
		tii__net_close(&t->c);
		t->cur = (t->cur + 1) % t->nsrv;
	}
	memcpy(t->msg, bestmsg, sizeof(t->msg));
	return best;
}
