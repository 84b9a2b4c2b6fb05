/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tii.c - the handle: server list, timeout, messages, error strings.
 * See tii.h for the contract.
 */
#include "tii_impl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tii.h"

const char *tii_strerror(int err)
{
	switch (err) {
	case TII_OK: return "success";
	case TII_E_INVAL: return "invalid argument";
	case TII_E_NOMEM: return "out of memory";
	case TII_E_CONNECT: return "cannot connect to any topod server";
	case TII_E_TIMEOUT: return "topod did not answer in time";
	case TII_E_IO: return "connection to topod lost";
	case TII_E_PROTO: return "topod's reply is malformed";
	case TII_E_NOTFOUND: return "no such host";
	case TII_E_NOROUTE: return "no route";
	case TII_E_NOFABRIC: return "topod has no fabric yet";
	case TII_E_TOOMANY: return "too many hosts for one request";
	case TII_E_BUSY: return "topod is busy";
	case TII_E_SERVER: return "topod refused the request";
	case TII_E_UNSUPPORTED: return "topod does not support this request";
	case TII_E_TOOBIG: return "topod's reply is larger than the handle's limit";
	case TII_E_NOGENERATION: return "no such generation";
	case TII_E_NOPLANE: return "no such plane";
	case TII_E_GONE: return "host is down";
	default: return "unknown error";
	}
}

static void free_servers(tii_t *t)
{
	for (size_t i = 0; i < t->nsrv; i++) {
		free(t->srv[i].spec);
		free(t->srv[i].host);
		free(t->srv[i].port);
	}
	t->nsrv = 0;
}

static char *dupn(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/* One "host:port" or "[v6]:port" of length n into t->srv[t->nsrv]. */
static int add_server(tii_t *t, const char *s, size_t n)
{
	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (!n)
		return TII_E_INVAL;
	if (t->nsrv == TII_SERVERS_MAX)
		return TII_E_INVAL;
	const char *colon, *h = s;
	size_t hn;
	if (*s == '[') {
		const char *rb = memchr(s, ']', n);
		if (!rb || (rb + 1 < s + n && rb[1] != ':'))
			return TII_E_INVAL;
		h = s + 1;
		hn = (size_t)(rb - h);
		colon = rb + 1 < s + n ? rb + 1 : NULL;
	} else {
		colon = NULL;
		for (size_t i = 0; i < n; i++)
			if (s[i] == ':')
				colon = s + i;   /* the last one */
		hn = colon ? (size_t)(colon - s) : n;
		if (memchr(s, ':', hn))
			return TII_E_INVAL;  /* an IPv6 address needs brackets */
	}
	/* "host" alone is host on topod's default port */
	const char *p = colon ? colon + 1 : TOPO_PORT_DEFAULT;
	size_t pn = colon ? (size_t)(s + n - p) : strlen(TOPO_PORT_DEFAULT);
	if (!hn || !pn || pn > 5)
		return TII_E_INVAL;
	unsigned port = 0;
	for (size_t i = 0; i < pn; i++) {
		if (p[i] < '0' || p[i] > '9')
			return TII_E_INVAL;
		port = port * 10 + (unsigned)(p[i] - '0');
	}
	if (port < 1 || port > 65535)
		return TII_E_INVAL;
	for (size_t i = 0; i < hn; i++)
		if ((unsigned char)h[i] <= 0x20 || (unsigned char)h[i] >= 0x7f)
			return TII_E_INVAL;
	struct tii_server *sv = &t->srv[t->nsrv];
	sv->spec = colon ? dupn(s, n) : malloc(n + 1 + pn + 1);
	if (sv->spec && !colon)
		snprintf(sv->spec, n + 1 + pn + 1, "%.*s:%s", (int)n, s, p);   /* messages name the port tried */
	sv->host = dupn(h, hn);
	sv->port = dupn(p, pn);
	if (!sv->spec || !sv->host || !sv->port) {
		free(sv->spec);
		free(sv->host);
		free(sv->port);
		return TII_E_NOMEM;
	}
	t->nsrv++;
	return 0;
}

static int parse_servers(tii_t *t, const char *list)
{
	const char *s = list;
	for (;;) {
		const char *e = strchr(s, ',');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		int rc = add_server(t, s, n);
		if (rc)
			return rc;
		if (!e)
			return 0;
		s = e + 1;
	}
}

int tii_open(tii_t **out, const char *servers)
{
	if (!out)
		return TII_E_INVAL;
	if (!servers) {
		servers = getenv("TII_SERVERS");
		if (!servers || !*servers)
			servers = TII_DEFAULT_SERVERS;
	}
	tii_t *t = calloc(1, sizeof(*t));
	if (!t)
		return TII_E_NOMEM;
	t->c.fd = -1;
	t->w.fd = -1;
	t->last = -1;
	t->timeout_ms = TII_TIMEOUT_DEFAULT_MS;
	t->sched_window = -1;
	t->sched_native = -1;
	t->pick_run = -1;
	const char *env = getenv("TII_TIMEOUT_MS");
	long ms;
	if (env && !tii__parse_long(env, 1, TII_TIMEOUT_MAX_MS, &ms))
		t->timeout_ms = (int)ms;
	t->max_reply = TII_MAX_REPLY_DEFAULT;
	env = getenv("TII_MAX_REPLY_BYTES");
	uint64_t mr;
	if (env && !tii__parse_u64(env, 10, &mr) && mr >= TII_MAX_REPLY_MIN && mr <= SIZE_MAX)
		t->max_reply = (size_t)mr;
	/* Backoff jitter only has to differ between the thousands of ranks
	 * that start together: the clock, the PID and the handle's address. */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	t->rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40) ^
		 (uint64_t)(uintptr_t)t;
	if (!t->rng)
		t->rng = 0x9e3779b97f4a7c15ull;
	int rc = parse_servers(t, servers);
	if (rc) {
		free_servers(t);
		free(t);
		return rc;
	}
	*out = t;
	return 0;
}

void tii_close(tii_t *t)
{
	if (!t)
		return;
	tii__net_close(&t->c);
	tii__net_close(&t->w);
	free(t->c.buf);
	free(t->w.buf);
	free(t->req);
	free_servers(t);
	free(t);
}

int tii_set_plane(tii_t *t, const char *plane)
{
	if (!t)
		return TII_E_INVAL;
	if (!plane || !strcmp(plane, "auto")) {
		plane = "";
	} else {
		size_t n = strlen(plane);
		if (!n || n > TII_PLANE_NAME_MAX ||
		    strspn(plane, TOPO_PLANE_NAME_CHARS) != n)
			return TII_E_INVAL;
	}
	if (strcmp(t->plane, plane)) {
		snprintf(t->plane, sizeof(t->plane), "%s", plane);
		/* The choice lives in topod's connection: start a new one. */
		tii__net_close(&t->c);
	}
	return 0;
}

const char *tii_get_plane(const tii_t *t)
{
	return t && t->plane[0] ? t->plane : "auto";
}

int tii_set_timeout(tii_t *t, int ms)
{
	if (!t || ms < 1 || ms > TII_TIMEOUT_MAX_MS)
		return TII_E_INVAL;
	t->timeout_ms = ms;
	return 0;
}

int tii_get_timeout(const tii_t *t)
{
	return t ? t->timeout_ms : TII_E_INVAL;
}

int tii_set_max_reply_bytes(tii_t *t, size_t bytes)
{
	if (!t || bytes < TII_MAX_REPLY_MIN)
		return TII_E_INVAL;
	t->max_reply = bytes;
	return 0;
}

size_t tii_get_max_reply_bytes(const tii_t *t)
{
	return t ? t->max_reply : 0;
}

uint64_t tii_last_generation(const tii_t *t)
{
	return t ? t->gen : 0;
}

const char *tii_last_message(const tii_t *t)
{
	return t ? t->msg : "";
}

const char *tii_current_server(const tii_t *t)
{
	return t && t->last >= 0 ? t->srv[t->last].spec : NULL;
}
