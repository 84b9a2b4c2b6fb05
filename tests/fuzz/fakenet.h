/*
 * fakenet.h - a hostile topod inside the fuzzing process, for harnesses
 * that run libtii's real transport (net.c) and parsers: the system calls
 * under net.c are replaced by the linker (-Wl,--wrap=recv and friends,
 * FUZZ_WRAP in the Makefile). While F.active: socket() gives a real
 * descriptor (/dev/null) that connect() "connects"; send() swallows the
 * request; recv() hands out F.data in chunks of F.chunk bytes, then end
 * of file; poll() is always ready (and says a kept connection has nothing
 * unasked for); the busy back-off does not sleep. Descriptors it did not
 * hand out, and every call while not active, go to the real functions.
 * Include in one file of a harness.
 */
#ifndef FAKENET_H
#define FAKENET_H

#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct fakenet {
	const uint8_t *data;
	size_t len, pos, chunk;
	int active;        /* inside a call: the wrappers fake */
	int fd[8];         /* descriptors socket() handed out */
	int nfd;
} F;

static int is_fake(int fd)
{
	for (int i = 0; i < F.nfd; i++)
		if (F.fd[i] == fd)
			return 1;
	return 0;
}

int __real_socket(int domain, int type, int protocol);
int __real_connect(int fd, const struct sockaddr *a, socklen_t l);
ssize_t __real_send(int fd, const void *buf, size_t len, int flags);
ssize_t __real_recv(int fd, void *buf, size_t len, int flags);
int __real_poll(struct pollfd *p, nfds_t n, int timeout);
int __real_setsockopt(int fd, int level, int name, const void *v, socklen_t l);
int __real_getsockopt(int fd, int level, int name, void *v, socklen_t *l);
int __real_nanosleep(const struct timespec *req, struct timespec *rem);

int __wrap_socket(int domain, int type, int protocol)
{
	if (!F.active)
		return __real_socket(domain, type, protocol);
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0 && F.nfd < (int)(sizeof(F.fd) / sizeof(F.fd[0])))
		F.fd[F.nfd++] = fd;
	return fd;
}

int __wrap_connect(int fd, const struct sockaddr *a, socklen_t l)
{
	return is_fake(fd) ? 0 : __real_connect(fd, a, l);
}

int __wrap_setsockopt(int fd, int level, int name, const void *v, socklen_t l)
{
	return is_fake(fd) ? 0 : __real_setsockopt(fd, level, name, v, l);
}

int __wrap_getsockopt(int fd, int level, int name, void *v, socklen_t *l)
{
	if (!is_fake(fd))
		return __real_getsockopt(fd, level, name, v, l);
	memset(v, 0, *l);
	return 0;
}

ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags)
{
	return is_fake(fd) ? (ssize_t)len : __real_send(fd, buf, len, flags);
}

ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags)
{
	if (!is_fake(fd))
		return __real_recv(fd, buf, len, flags);
	size_t n = F.len - F.pos;
	if (n > len)
		n = len;
	if (n > F.chunk)
		n = F.chunk;
	memcpy(buf, F.data + F.pos, n);
	F.pos += n;
	return (ssize_t)n;
}

int __wrap_poll(struct pollfd *p, nfds_t n, int timeout)
{
	if (n != 1 || !is_fake(p[0].fd))
		return __real_poll(p, n, timeout);
	/* tii__net_stale() asks with timeout 0 whether a kept connection has
	 * something unasked for: never, so it is reused. Every other wait is
	 * ready at once (data, or the end of the input). */
	if (timeout == 0)
		return 0;
	p[0].revents = p[0].events;
	return 1;
}

int __wrap_nanosleep(const struct timespec *req, struct timespec *rem)
{
	return F.active ? 0 : __real_nanosleep(req, rem);
}

#endif
