/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net.c - one TCP connection to topod, every wait bounded by a deadline.
 *
 * The socket is non-blocking and every wait is a poll() until the caller's
 * deadline, so a server that accepts and never answers, or stops mid-line,
 * costs at most the timeout. The deadline and the reply-size limit are
 * also checked after every read that returned data: a server that streams
 * without end must not hold a call (or its memory) past either. Writes use MSG_NOSIGNAL: libtii runs inside
 * other people's processes and must never raise SIGPIPE in them.
 */
#include "tii_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "util.h"

/* First receive-buffer allocation; it doubles up to TII_LINE_MAX + READ. */
#define BUF_INIT 16384
/* Bytes asked of recv() at a time. */
#define READ_CHUNK 65536

int64_t tii__net_now_ms(void)
{
	return util_now_ms();
}

/* Waits for events on fd until deadline: 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - tii__net_now_ms();
		if (left <= 0)
			return 0;
		struct pollfd p = { .fd = fd, .events = events };
		int r = poll(&p, 1, left > 60000 ? 60000 : (int)left);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

/* strerror() may use a static buffer; a library shared by threads must not. */
static void errno_text(int err, char *buf, size_t len)
{
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
	char tmp[128];
	const char *m = strerror_r(err, tmp, sizeof(tmp));   /* GNU: may return a static string */
	snprintf(buf, len, "%s", m);
#else
	if (strerror_r(err, buf, len))
		snprintf(buf, len, "error %d", err);
#endif
}

void tii__net_close(struct tii__conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->len = c->off = 0;
	c->rx = 0;
}

static int try_addr(const struct addrinfo *ai, int64_t deadline, int *fdp, int *err)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd < 0) {
		*err = errno;
		return TII_E_CONNECT;
	}
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		if (errno != EINPROGRESS && errno != EINTR) {
			*err = errno;
			close(fd);
			return TII_E_CONNECT;
		}
		int r = wait_fd(fd, POLLOUT, deadline);
		if (r <= 0) {
			*err = r == 0 ? ETIMEDOUT : errno;
			close(fd);
			return r == 0 ? TII_E_TIMEOUT : TII_E_CONNECT;
		}
		int so = 0;
		socklen_t sl = sizeof(so);
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl) < 0 || so) {
			*err = so ? so : errno;
			close(fd);
			return TII_E_CONNECT;
		}
	}
	/* Requests and replies are single small writes; a delayed ACK must not
	 * add 40 ms to each round trip. */
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*fdp = fd;
	return 0;
}

int tii__net_connect(struct tii__conn *c, const char *host, const char *port, int64_t deadline,
		     char *why, size_t whylen)
{
	tii__net_close(c);
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	int g = getaddrinfo(host, port, &hints, &res);
	if (g) {
		snprintf(why, whylen, "%s", gai_strerror(g));
		return TII_E_CONNECT;
	}
	int rc = TII_E_CONNECT, err = 0;
	c->err = 0;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		int fd;
		rc = try_addr(ai, deadline, &fd, &err);
		if (rc == 0) {
			c->fd = fd;
			break;
		}
		if (rc == TII_E_TIMEOUT)
			break;
	}
	freeaddrinfo(res);
	if (rc)
		c->err = err;
	if (rc == TII_E_TIMEOUT)
		snprintf(why, whylen, "connect timed out");
	else if (rc)
		errno_text(err, why, whylen);
	return rc;
}

int tii__net_send(struct tii__conn *c, const char *p, size_t len, int64_t deadline)
{
	while (len) {
		ssize_t w = send(c->fd, p, len, MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			len -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int r = wait_fd(c->fd, POLLOUT, deadline);
			if (r == 0)
				return TII_E_TIMEOUT;
			if (r < 0)
				return TII_E_IO;
			continue;
		}
		return TII_E_IO;
	}
	return 0;
}

/* Makes room for READ_CHUNK more bytes, first dropping consumed ones. */
static int make_room(struct tii__conn *c)
{
	if (c->off) {
		memmove(c->buf, c->buf + c->off, c->len - c->off);
		c->len -= c->off;
		c->off = 0;
	}
	if (c->cap - c->len >= READ_CHUNK)
		return 0;
	size_t cap = c->cap ? c->cap : BUF_INIT;
	while (cap - c->len < READ_CHUNK)
		cap *= 2;
	char *nb = realloc(c->buf, cap);
	if (!nb)
		return TII_E_NOMEM;
	c->buf = nb;
	c->cap = cap;
	return 0;
}

int tii__net_readline(struct tii__conn *c, int64_t deadline, char **line, size_t *len)
{
	size_t scanned = 0;   /* bytes after off already known to hold no '\n' */
	/* The first read of a connection has no buffer yet: c->buf + c->off
	 * would offset a null pointer (undefined, however harmless it looks). */
	if (!c->buf) {
		int rc = make_room(c);
		if (rc)
			return rc;
	}
	for (;;) {
		char *s = c->buf + c->off;
		size_t have = c->len - c->off;
		char *nl = have > scanned ? memchr(s + scanned, '\n', have - scanned) : NULL;
		if (nl) {
			size_t n = (size_t)(nl - s);
			if (n > TII_LINE_MAX)
				return TII_E_PROTO;
			/* A NUL would silently cut the line for every later parser. */
			if (memchr(s, '\0', n))
				return TII_E_PROTO;
			*nl = '\0';
			if (n && s[n - 1] == '\r')
				s[--n] = '\0';
			c->off += (size_t)(nl - s) + 1;
			*line = s;
			*len = n;
			return 0;
		}
		scanned = have;
		if (have > TII_LINE_MAX)
			return TII_E_PROTO;
		int rc = make_room(c);
		if (rc)
			return rc;
		ssize_t r = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
		if (r > 0) {
			c->len += (size_t)r;
			c->rx += (uint64_t)r;
			if (c->rx_max && c->rx > c->rx_max)
				return TII_E_TOOBIG;
			/* recv() returned data without waiting: only this check
			 * bounds a server that never stops sending. */
			if (tii__net_now_ms() >= deadline)
				return TII_E_TIMEOUT;
			continue;
		}
		if (r == 0)
			return TII_E_IO;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return TII_E_IO;
		int w = wait_fd(c->fd, POLLIN, deadline);
		if (w == 0)
			return TII_E_TIMEOUT;
		if (w < 0)
			return TII_E_IO;
	}
}

int tii__net_stale(struct tii__conn *c)
{
	if (c->len > c->off)
		return 1;
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	return poll(&p, 1, 0) != 0;
}
