/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sink.c - option parsing and one bounded delivery attempt to a sink.
 *
 * Runs inside OpenSM (through the plugin's delivery thread): every socket is
 * non-blocking and every wait goes through poll() with the caller's deadline,
 * so a topod that is down, slow, or accepts and never reads costs at most
 * timeout_ms and never a signal (MSG_NOSIGNAL).
 */
#include "sink.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "util.h"

#define DEFAULT_TIMEOUT_MS 5000
#define DEFAULT_BACKOFF_MAX_MS 30000
#define DEFAULT_LINGER_MS 5000
#define OPT_TOKEN_MAX 512
#define REPLY_MAX 256

static int fail(char *err, const char *what, const char *detail)
{
	/* Bounded pieces: the reason must survive a long socket path. */
	snprintf(err, SNAP_ERR_LEN, "%.100s%s%.140s", what, detail ? ": " : "", detail ? detail : "");
	return -1;
}

/* Parses "unix:PATH" or "tcp:HOST:PORT" (HOST may be [v6]). */
static int sink_parse_addr(const char *spec, struct sink *k, char err[SNAP_ERR_LEN])
{
	memset(k, 0, sizeof(*k));
	if (!strncmp(spec, "unix:", 5)) {
		const char *path = spec + 5;
		/* sun_path is 108 bytes; a longer path would be silently cut. */
		if (!*path || strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
			return fail(err, spec, "UNIX socket path empty or longer than 107 bytes");
		k->kind = SINK_UNIX;
		snprintf(k->path, sizeof(k->path), "%s", path);
		return 0;
	}
	if (!strncmp(spec, "tcp:", 4)) {
		const char *hp;
		size_t hl;
		unsigned pn;
		if (util_parse_hostport(spec + 4, strlen(spec + 4), &hp, &hl, &pn) || hl >= sizeof(k->host) ||
		    pn < 1)
			return fail(err, spec, "expected tcp:HOST:PORT or tcp:[ADDR]:PORT, port 1..65535");
		k->kind = SINK_TCP;
		memcpy(k->host, hp, hl);
		k->host[hl] = '\0';
		snprintf(k->port, sizeof(k->port), "%u", pn);
		return 0;
	}
	return fail(err, spec, "sink must be unix:PATH or tcp:HOST:PORT");
}

static int parse_ms(const char *v, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long x = strtoul(v, &end, 10);
	if (errno || end == v || *end || x > 86400000UL)
		return -1;
	*out = (unsigned)x;
	return 0;
}

int sink_parse_options(const char *opts, struct sink_opts *o, char err[SNAP_ERR_LEN])
{
	memset(o, 0, sizeof(*o));
	o->timeout_ms = DEFAULT_TIMEOUT_MS;
	o->backoff_max_ms = DEFAULT_BACKOFF_MAX_MS;
	o->linger_ms = DEFAULT_LINGER_MS;
	o->delta = 1;
	if (!opts)
		return 0;
	const char *p = opts;
	char keyfile[OPT_TOKEN_MAX] = "", plane[SNAP_AUTH_PLANE_MAX + 1] = "";
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
			p++;
		if (!*p)
			break;
		size_t n = strcspn(p, " \t\r\n");
		char tok[OPT_TOKEN_MAX];
		if (n >= sizeof(tok))
			return fail(err, "option too long", NULL);
		memcpy(tok, p, n);
		tok[n] = '\0';
		p += n;
		char *eq = strchr(tok, '=');
		if (!eq)
			return fail(err, tok, "expected key=value");
		*eq = '\0';
		const char *key = tok, *val = eq + 1;
		if (!strcmp(key, "sink") || !strcmp(key, "spool")) {
			if (o->nsinks == SINK_MAX) {
				snprintf(err, SNAP_ERR_LEN, "more than %d sinks", SINK_MAX);
				return -1;
			}
			struct sink *k = &o->sinks[o->nsinks];
			if (!strcmp(key, "sink")) {
				if (sink_parse_addr(val, k, err))
					return -1;
			} else {
				if (!*val || strlen(val) + sizeof(SINK_SPOOL_NAME) + 1 >= sizeof(k->path))
					return fail(err, "spool", "directory empty or too long");
				memset(k, 0, sizeof(*k));
				k->kind = SINK_SPOOL;
				snprintf(k->path, sizeof(k->path), "%s", val);
			}
			o->nsinks++;
		} else if (!strcmp(key, "timeout_ms")) {
			if (parse_ms(val, &o->timeout_ms) || !o->timeout_ms)
				return fail(err, "timeout_ms", "expected milliseconds, 1..86400000");
		} else if (!strcmp(key, "backoff_max_ms")) {
			if (parse_ms(val, &o->backoff_max_ms) || !o->backoff_max_ms)
				return fail(err, "backoff_max_ms", "expected milliseconds, 1..86400000");
		} else if (!strcmp(key, "linger_ms")) {
			if (parse_ms(val, &o->linger_ms))
				return fail(err, "linger_ms", "expected milliseconds, 0..86400000");
		} else if (!strcmp(key, "delta")) {
			if (strcmp(val, "0") && strcmp(val, "1"))
				return fail(err, "delta", "expected 0 or 1");
			o->delta = val[0] == '1';
		} else if (!strcmp(key, "key_file")) {
			if (!*val)
				return fail(err, "key_file", "expected a path");
			snprintf(keyfile, sizeof(keyfile), "%s", val);
		} else if (!strcmp(key, "plane")) {
			size_t pl = strlen(val);
			if (pl < 1 || pl > SNAP_AUTH_PLANE_MAX || strspn(val, TOPO_PLANE_NAME_CHARS) != pl) {
				snprintf(err, SNAP_ERR_LEN, "plane: expected a plane name (1 to %d letters, digits, '_', '-')",
					 SNAP_AUTH_PLANE_MAX);
				return -1;
			}
			memcpy(plane, val, pl + 1);
		} else {
			snprintf(err, SNAP_ERR_LEN,
				 "unknown option '%.64s' (known: sink, spool, timeout_ms, backoff_max_ms, linger_ms, key_file, plane, delta)",
				 key);
			return -1;
		}
	}
	/* The plane is announced in the authenticated exchange only. */
	if (plane[0] && !keyfile[0])
		return fail(err, "plane", "needs key_file= (topod names its plane in the key's challenge)");
	if (keyfile[0]) {
		/* Loaded once, here (the plugin runs as root at OpenSM's
		 * start), and copied into every socket sink. */
		struct snap_key k;
		if (snap_key_load(keyfile, &k, err))
			return -1;
		for (int i = 0; i < o->nsinks; i++)
			if (o->sinks[i].kind != SINK_SPOOL) {
				o->sinks[i].has_key = 1;
				o->sinks[i].key = k;
				memcpy(o->sinks[i].plane, plane, sizeof(plane));
			}
		memset(&k, 0, sizeof(k));
	}
	return 0;
}

const char *sink_describe(const struct sink *k, char *buf, size_t n)
{
	switch (k->kind) {
	case SINK_UNIX: snprintf(buf, n, "unix:%s", k->path); break;
	case SINK_TCP: snprintf(buf, n, "tcp:%s:%s", k->host, k->port); break;
	case SINK_SPOOL: snprintf(buf, n, "spool:%s", k->path); break;
	default: snprintf(buf, n, "?"); break;
	}
	return buf;
}

/* Waits for events on fd until the deadline: the events that came, 0 on
 * timeout or error. */
static short wait_ev(int fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - util_now_ms();
		if (left <= 0)
			return 0;
		struct pollfd pfd = { .fd = fd, .events = events };
		int r = poll(&pfd, 1, (int)left);
		if (r > 0)
			return pfd.revents;
		if (r < 0 && errno != EINTR)
			return 0;
	}
}

/* 0 when ready, -1 on timeout. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	return wait_ev(fd, events, deadline) ? 0 : -1;
}

/* Sends all of p before the deadline; 0, or -1 with err set. Stops as soon
 * as the receiver answers: that is a refusal, and the caller reads it. */
static int send_all(int fd, const uint8_t *p, size_t len, int64_t deadline, char *err, const char *what,
		    size_t done, size_t total)
{
	size_t off = 0;
	while (off < len) {
		ssize_t w = send(fd, p + off, len - off, MSG_NOSIGNAL);
		if (w > 0) {
			off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			short ev = wait_ev(fd, POLLOUT | POLLIN, deadline);
			if (!ev) {
				char d[96];
				snprintf(d, sizeof(d), "receiver stopped reading after %zu of %zu bytes", done + off, total);
				return fail(err, what, d);
			}
			if (ev & POLLIN)
				return fail(err, what, "receiver answered before the end");
			continue;
		}
		return fail(err, what, w < 0 ? strerror(errno) : "connection closed");
	}
	return 0;
}

/* A receiver's reply line, cleaned (it ends up in OpenSM's log: keep a
 * hostile peer's bytes out), as the reason of a refusal. */
static int rejected(char *err, const char *what, char *reply, size_t rl)
{
	reply[rl] = '\0';
	reply[strcspn(reply, "\r\n")] = '\0';
	for (char *c = reply; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			*c = '?';
	char d[REPLY_MAX + 32];
	snprintf(d, sizeof(d), "rejected: %.200s", reply);
	return fail(err, what, d);
}

/* Reads topod's challenge; if it sent a refusal line instead (ERR BUSY,
 * ERR AUTH), that is the reason. */
static int read_challenge(int fd, uint8_t chal[SNAP_AUTH_CHAL_LEN], int64_t deadline, char *err, const char *what)
{
	size_t got = 0;
	while (got < SNAP_AUTH_CHAL_LEN) {
		if (wait_fd(fd, POLLIN, deadline))
			return fail(err, what, "no authentication challenge from receiver (timed out)");
		ssize_t r = recv(fd, chal + got, SNAP_AUTH_CHAL_LEN - got, 0);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		if (memcmp(chal, SNAP_AUTH_CHAL_MAGIC, got < 8 ? got : 8) && memchr(chal, '\n', got))
			break;
	}
	if (got && memcmp(chal, SNAP_AUTH_CHAL_MAGIC, got < 8 ? got : 8)) {
		char reply[REPLY_MAX];
		size_t n = got < sizeof(reply) - 1 ? got : sizeof(reply) - 1;
		memcpy(reply, chal, n);
		return rejected(err, what, reply, n);
	}
	if (got < SNAP_AUTH_CHAL_LEN)
		return fail(err, what, "receiver closed before its authentication challenge (a topod that predates it?)");
	return 0;
}

/* With a key: hello, challenge (its plane checked against plane=), proof. */
static int authenticate(int fd, const struct sink *k, const uint8_t *buf, size_t len, int64_t deadline,
			char *err, const char *what)
{
	uint8_t hello[SNAP_AUTH_HELLO_LEN], chal[SNAP_AUTH_CHAL_LEN], proof[SNAP_AUTH_PROOF_LEN];
	char plane[SNAP_AUTH_PLANE_MAX + 1], why[SNAP_ERR_LEN];
	snap_auth_hello(hello);
	if (send_all(fd, hello, sizeof(hello), deadline, err, what, 0, sizeof(hello)) ||
	    read_challenge(fd, chal, deadline, err, what))
		return -1;
	if (snap_auth_parse_challenge(chal, plane, why))
		return fail(err, what, why);
	if (k->plane[0] && strcmp(plane, k->plane)) {
		snprintf(why, sizeof(why), "receiver serves plane %s, not plane %s (plane=): not sent", plane, k->plane);
		return fail(err, what, why);
	}
	if (snap_auth_prove(&k->key, chal, buf, len, proof, why))
		return fail(err, what, why);
	int rc = send_all(fd, proof, sizeof(proof), deadline, err, what, 0, sizeof(proof) + len);
	sodium_memzero(proof, sizeof(proof));
	return rc;
}

static int connect_deadline(int fd, const struct sockaddr *sa, socklen_t sl, int64_t deadline,
			    char *err, const char *what)
{
	if (connect(fd, sa, sl) == 0)
		return 0;
	if (errno != EINPROGRESS && errno != EAGAIN)
		return fail(err, what, strerror(errno));
	if (wait_fd(fd, POLLOUT, deadline))
		return fail(err, what, "connect timed out");
	int soerr = 0;
	socklen_t l = sizeof(soerr);
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &l);
	if (soerr)
		return fail(err, what, strerror(soerr));
	return 0;
}

static int open_sink(const struct sink *k, int64_t deadline, char *err, const char *what)
{
	if (k->kind == SINK_UNIX) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return fail(err, what, strerror(errno));
		struct sockaddr_un sun = { .sun_family = AF_UNIX };
		/* sink_parse_addr() bounded the path to fit sun_path. */
		size_t pl = strnlen(k->path, sizeof(sun.sun_path) - 1);
		memcpy(sun.sun_path, k->path, pl);
		if (connect_deadline(fd, (struct sockaddr *)&sun, sizeof(sun), deadline, err, what)) {
			close(fd);
			return -1;
		}
		return fd;
	}
	/* getaddrinfo may block on DNS; sinks are normally numeric or in
	 * /etc/hosts, and the plugin calls this from its own thread only. */
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	int gai = getaddrinfo(k->host, k->port, &hints, &res);
	if (gai)
		return fail(err, what, gai_strerror(gai));
	int fd = -1;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
			continue;
		if (!connect_deadline(fd, ai->ai_addr, ai->ai_addrlen, deadline, err, what))
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0 && !*err)
		fail(err, what, "no usable address");
	return fd;
}

int sink_deliver(const struct sink *k, const uint8_t *buf, size_t len, unsigned timeout_ms,
		 char err[SNAP_ERR_LEN])
{
	char what[SINK_ADDR_LEN + 16];
	sink_describe(k, what, sizeof(what));
	err[0] = '\0';
	if (k->kind == SINK_SPOOL) {
		char path[SINK_ADDR_LEN + sizeof(SINK_SPOOL_NAME) + 2];
		snprintf(path, sizeof(path), "%s/%s", k->path, SINK_SPOOL_NAME);
		return snap_write_atomic(path, buf, len, err);
	}
	int64_t deadline = util_now_ms() + timeout_ms;
	int fd = open_sink(k, deadline, err, what);
	if (fd < 0)
		return -1;
	if ((k->has_key && authenticate(fd, k, buf, len, deadline, err, what)) ||
	    send_all(fd, buf, len, deadline, err, what, 0, len)) {
		/* topod may have said why before it closed (ERR BUSY at accept,
		 * a refusal): that beats "Broken pipe". */
		char early[REPLY_MAX];
		ssize_t r = strstr(err, "rejected: ") ? 0 : recv(fd, early, sizeof(early) - 1, MSG_DONTWAIT);
		if (r > 0)
			rejected(err, what, early, (size_t)r);
		close(fd);
		return -1;
	}
	shutdown(fd, SHUT_WR);
	/* The reply tells us topod accepted (validated) the snapshot; without
	 * it a receiver that died mid-way would look like a success. */
	char reply[REPLY_MAX];
	size_t rl = 0;
	for (;;) {
		if (wait_fd(fd, POLLIN, deadline)) {
			fail(err, what, "no reply from receiver");
			close(fd);
			return -1;
		}
		ssize_t r = recv(fd, reply + rl, sizeof(reply) - 1 - rl, 0);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			break;
		rl += (size_t)r;
		if (memchr(reply, '\n', rl) || rl == sizeof(reply) - 1)
			break;
	}
	close(fd);
	reply[rl] = '\0';
	if (!strncmp(reply, "OK", 2))
		return 0;
	if (!rl)
		return fail(err, what, "receiver closed without a reply");
	return rejected(err, what, reply, rl);
}
