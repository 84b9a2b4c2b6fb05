/*
 * fuzz_server.c - libFuzzer harness for a live topod: its server (event
 * loop, worker pool, builder) runs in this process on loopback and UNIX
 * sockets, and each input is one client's bytes to one of its doors:
 *
 *   byte 0 % 4 == 0  the TCP query port (16-host tree served, history on)
 *                 1  the HTTP port (/metrics, /api, the page)
 *                 2  the UNIX ingest socket (a producer, as OpenSM's plugin)
 *                 3  the TCP ingest port (keyed: the challenge comes first)
 *
 * The rest is sent, the client half-closes and reads until topod closes
 * (or 3 s pass: a `watch` may wait). The query port's output must be
 * framed (docs/protocol.md: OK with lines=N and N lines, or one ERR line)
 * unless the input asked the unframed seed command `query`; an HTTP answer
 * starts with a status line; ingest answers one OK or ERR line. The server
 * itself runs under ASan and UBSan like the harness.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "build.h"
#include "fabric.h"
#include "history.h"
#include "http.h"
#include "server.h"
#include "store.h"
#include "testfab.h"

static int qport, hport, iport;
static char ipath[108];

static void *run(void *arg)
{
	server_run(arg);
	return NULL;
}

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t l = sizeof(a);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || getsockname(fd, (struct sockaddr *)&a, &l))
		abort();
	close(fd);
	return ntohs(a.sin_port);
}

static void setup(void)
{
	static struct store st;
	static struct snap_key key = { .len = 32 };
	static char tcp_ingest[64], unix_ingest[128], dir[] = "/tmp/fuzz_server.XXXXXX";
	/* as topod's main does: a client gone mid-reply is an error, not a signal */
	signal(SIGPIPE, SIG_IGN);
	store_init(&st);
	struct snap *s = snap_new();
	tf_tree2(s, 4, 4, 2, 1);
	tf_finish(s, 0);
	s->generation = 7;
	char err[SNAP_ERR_LEN];
	struct fabric_index *x = NULL;
	if (fabric_index_build(s, NULL, 1, &x, err))
		abort();
	struct fabric *f = fabric_new(s, "fuzz");
	f->index = x;
	struct builder *b = builder_new(&st, NULL, 1, NULL);
	builder_set_history(b, 4, 1 << 20, NULL);
	builder_set_guard(b, 0.5, 3); /* topod's defaults: ingested fabrics meet the shrink guard */
	history_push(builder_history(b), f, NULL, NULL, 0);
	f->hist = builder_history(b);
	store_publish(&st, f);
	if (!mkdtemp(dir))
		abort();
	snprintf(ipath, sizeof(ipath), "%s/ingest.sock", dir);
	snprintf(unix_ingest, sizeof(unix_ingest), "unix:%s", ipath);
	iport = free_port();
	snprintf(tcp_ingest, sizeof(tcp_ingest), "tcp:127.0.0.1:%d", iport);
	memset(key.k, 0x5a, key.len);
	static struct server_config cfg = {
		.listen = { "127.0.0.1:0" }, .nlisten = 1, .ningest = 2, .max_conns = 64, .max_admin = 2,
		.idle_timeout_s = 5, .max_snapshot = 1 << 20, .ingest_timeout_s = 3, .out_hard = 8 << 20,
		.out_soft = 4 << 20, .out_soft_s = 5, .write_timeout_s = 5, .out_budget = 64 << 20, .threads = 2,
		.heavy_queue = 8, .max_ingest = 4, .request_timeout_s = 5, .client_budget = 256 << 20,
		.max_request_mem = 1ull << 30,
	};
	cfg.ingest[0] = unix_ingest;
	cfg.ingest[1] = tcp_ingest;
	cfg.ingest_key = &key;
	cfg.ingest_has_group = 1;
	cfg.ingest_gid = getegid();
	static struct server_plane pl;
	pl = (struct server_plane){ "default", &st, b };
	struct server *srv = server_new(&cfg, &pl, 1, err);
	if (!srv) {
		fprintf(stderr, "fuzz_server: %s\n", err);
		abort();
	}
	static struct http_config hc = { .addr = "127.0.0.1:0", .max_conns = 16, .per_peer = 4,
					 .header_timeout_s = 2, .body_timeout_s = 2, .timeout_s = 3,
					 .request_timeout_s = 5, .max_reply = 8 << 20, .out_budget = 64 << 20 };
	struct http *h = http_new(&hc, srv, &pl, 1, err);
	if (!h) {
		fprintf(stderr, "fuzz_server: %s\n", err);
		abort();
	}
	builder_start(b);
	qport = server_query_port(srv, 0);
	hport = http_port(h);
	pthread_t thr;
	pthread_create(&thr, NULL, run, srv);
	pthread_detach(thr);
}

static int dial(int kind)
{
	int fd;
	if (kind == 2) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", ipath);
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
			abort();
	} else {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in a = { .sin_family = AF_INET };
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		a.sin_port = htons((uint16_t)(kind == 0 ? qport : kind == 1 ? hport : iport));
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
			abort();
	}
	struct timeval tv = { 3, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

/* The query port's replies, one after another, each complete. */
static void check_query(const char *all, size_t len)
{
	const char *p = all, *end = all + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			abort();   /* a reply cut mid-line */
		unsigned long n = 0;
		if (!strncmp(p, "OK", 2) && (p[2] == ' ' || p[2] == '\n')) {
			const char *lk = memmem(p, (size_t)(nl - p), " lines=", 7);
			if (lk)
				n = strtoul(lk + 7, NULL, 10);
		} else if (strncmp(p, "ERR ", 4)) {
			abort();
		}
		p = nl + 1;
		for (unsigned long i = 0; i < n; i++) {
			nl = memchr(p, '\n', (size_t)(end - p));
			if (!nl)
				abort();   /* fewer lines than announced */
			p = nl + 1;
		}
	}
}

/* An HTTP answer starts with a status line, "HTTP/M.N CODE ". evhttp
 * echoes the request's version, whatever it is ("HTTP/0.0 200 OK" to a
 * "GET / HTTP/0.0", "HTTP/1.11 400" to "HTTP/1.11", "HTTP/-1.1 400" or
 * "HTTP/1.-1 200" to a number past an int; tests/fuzz/README.md): the
 * line's form is checked, not the version. */
static const char *digits(const char *p, const char *end)
{
	if (p < end && *p == '-') /* evhttp's -1 for a number past an int */
		p++;
	const char *q = p;
	while (q < end && q - p < 5 && isdigit((unsigned char)*q))
		q++;
	return q > p ? q : NULL;
}

static void check_http(const char *all, size_t len)
{
	const char *end = all + len, *p = all + 5;
	if (len < 13 || memcmp(all, "HTTP/", 5) || !(p = digits(p, end)) || p == end || *p++ != '.' ||
	    !(p = digits(p, end)) || end - p < 5 || p[0] != ' ' || !isdigit((unsigned char)p[1]) ||
	    !isdigit((unsigned char)p[2]) || !isdigit((unsigned char)p[3]) || p[4] != ' ' ||
	    !memmem(all, len, "\r\n\r\n", 4))
		abort();
}

/* An ingest answer: after TCP's 96-byte challenge, nothing or one line
 * "OK ..." / "ERR ...". */
static void check_ingest(const char *all, size_t len)
{
	if (len >= 96 && !memcmp(all, "TOPOCHAL", 8)) {
		all += 96;
		len -= 96;
	}
	if (len && ((strncmp(all, "OK", 2) && strncmp(all, "ERR ", 4)) || all[len - 1] != '\n'))
		abort();
}

/* 1 if a line of the input starts with the unframed `query` command. */
static int asks_query(const uint8_t *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((i == 0 || d[i - 1] == '\n') && n - i >= 5 && !memcmp(d + i, "query", 5))
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (!qport)
		setup();
	int kind = data[0] % 4;
	int fd = dial(kind);
	size_t off = 1;
	while (off < size) {
		ssize_t w = send(fd, data + off, size - off, MSG_NOSIGNAL);
		if (w <= 0)
			break;   /* topod closed on us (ERR PROTO, a refused producer) */
		off += (size_t)w;
	}
	shutdown(fd, SHUT_WR);
	size_t cap = 1 << 16, len = 0;
	char *all = malloc(cap);
	int timed_out = 0;
	for (;;) {
		if (len == cap)
			all = realloc(all, cap *= 2);
		ssize_t r = recv(fd, all + len, cap - len, 0);
		if (r > 0) {
			len += (size_t)r;
			continue;
		}
		timed_out = r < 0;
		break;
	}
	close(fd);
	if (!timed_out && off == size) {
		if (kind == 0 && !asks_query(data + 1, size - 1))
			check_query(all, len);
		else if (kind == 1 && len)
			check_http(all, len);
		else if (kind >= 2)
			check_ingest(all, len);
	}
	free(all);
	return 0;
}
