/*
 * test_server.c - the server's request handling, in process (so that ASan
 * and UBSan watch the event loop, the worker pool and their hand-over):
 * pipelined requests with heavy ones in the middle come back in order, a
 * half-closed client gets every answer, a reply larger than the output
 * limit is refused and the connection stays usable, the admin socket is
 * counted apart from the query limit, and shutdown with heavy work queued
 * frees everything.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "build.h"
#include "fabric.h"
#include "server.h"
#include "store.h"
#include "testfab.h"

static int port;

static int dial(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	struct timeval tv = { 20, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static int dial_unix(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Everything until the peer closes (or 1 MiB). */
static char *slurp(int fd, size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	char *b = malloc(cap + 1);
	ssize_t r;
	while (n < cap && (r = read(fd, b + n, cap - n)) > 0)
		n += (size_t)r;
	b[n] = '\0';
	*len = n;
	return b;
}

/* The first word of each reply's head line, in order: heads are the lines
 * starting with OK or ERR that are not inside an announced block. */
static int heads(const char *all, char out[][16], int max)
{
	int k = 0;
	const char *p = all;
	while (*p && k < max) {
		const char *e = strchr(p, '\n');
		if (!e)
			break;
		unsigned long lines = 0;
		const char *l = strstr(p, " lines=");
		if (l && l < e)
			lines = strtoul(l + 7, NULL, 10);
		snprintf(out[k++], 16, "%.*s", (int)(strcspn(p, " \n") < 15 ? strcspn(p, " \n") : 15), p);
		p = e + 1;
		for (unsigned long i = 0; i < lines && *p; i++) {
			e = strchr(p, '\n');
			p = e ? e + 1 : p + strlen(p);
		}
	}
	return k;
}

static void *run(void *arg)
{
	server_run(arg);
	return NULL;
}

int main(void)
{
	struct store st;
	store_init(&st);
	struct snap *s = snap_new();
	tf_tree2(s, 4, 4, 2, 1);
	tf_finish(s, 0);
	char err[SNAP_ERR_LEN];
	struct fabric_index *x = NULL;
	fabric_index_build(s, NULL, 1, &x, err);
	struct fabric *f = fabric_new(s, "test");
	f->index = x;
	store_publish(&st, f);
	struct builder *b = builder_new(&st, NULL, 1, NULL);

	char dir[] = "/tmp/test_server.XXXXXX";
	if (!mkdtemp(dir))
		return 99;
	char admin[128];
	snprintf(admin, sizeof(admin), "%s/admin.sock", dir);
	struct server_config cfg = {
		.listen = { "127.0.0.1:0" }, .nlisten = 1, .admin = admin, .max_conns = 3, .max_admin = 2,
		.idle_timeout_s = 30, .max_snapshot = 1 << 20, .ingest_timeout_s = 5, .out_hard = 1024,
		.out_soft = 1 << 20, .out_soft_s = 5, .write_timeout_s = 5, .out_budget = 1 << 20, .threads = 2,
		.heavy_queue = 8,
	};
	struct server_plane pl = { "default", &st, b };
	struct server *srv = server_new(&cfg, &pl, 1, err);
	CHECK(srv != NULL, "server starts: %s", srv ? "" : err);
	port = server_query_port(srv, 0);
	pthread_t thr;
	pthread_create(&thr, NULL, run, srv);

	/* Pipelined, heavy requests in the middle, half-closed at once. */
	int fd = dial();
	const char *req = "ping\n"
			  "hopsmatrix h0000 h0005 h0010 h0015\n"
			  "hops h0000 h0015\n"
			  "shared h0000 h0005\n"
			  "pathmatrix h0000 h0015\n"
			  "info\n";
	CHECK(write(fd, req, strlen(req)) == (ssize_t)strlen(req), "send 6 pipelined requests");
	shutdown(fd, SHUT_WR);
	size_t len;
	char *all = slurp(fd, &len);
	close(fd);
	char h[16][16];
	int n = heads(all, h, 16);
	CHECK(n == 6 && !strcmp(h[0], "OK") && !strcmp(h[5], "OK"), "6 replies to 6 requests, half-closed (%d)", n);
	const char *want = "OK pong\nOK gen=";
	CHECK(!strncmp(all, want, strlen(want)), "ping first, then the hop matrix: %.7s", all);
	const char *hp = strstr(all, "hops=");
	const char *sh = strstr(all, "sharing=");
	const char *inf = strstr(all, "generation=");
	CHECK(hp && sh && inf && hp < sh && sh < inf, "hops before shared before info: replies in request order");
	free(all);

	/* A reply over the 1,024-byte output limit: refused, connection
	 * usable. (hopsmatrix takes repeated hosts: 48 ranks, ~4.6 KB.) */
	fd = dial();
	const char *big = "hopsmatrix h0000 h0001 h0002 h0003 h0004 h0005 h0006 h0007 h0008 h0009 h0010 h0011 "
			  "h0012 h0013 h0014 h0015 h0000 h0001 h0002 h0003 h0004 h0005 h0006 h0007 h0008 h0009 "
			  "h0010 h0011 h0012 h0013 h0014 h0015 h0000 h0001 h0002 h0003 h0004 h0005 h0006 h0007 "
			  "h0008 h0009 h0010 h0011 h0012 h0013 h0014 h0015\nping\n";
	write(fd, big, strlen(big));
	shutdown(fd, SHUT_WR);
	all = slurp(fd, &len);
	close(fd);
	CHECK(!strncmp(all, "ERR TOOBIG ", 11) && strstr(all, "\nOK pong\n"), "ERR TOOBIG, then ping answered: %.60s", all);
	free(all);

	/* Query connections full; the admin socket still answers. */
	int q[4];
	for (int i = 0; i < 4; i++)
		q[i] = dial();
	usleep(200000);
	char buf[256] = "";
	ssize_t r = read(q[3], buf, sizeof(buf) - 1);
	buf[r > 0 ? r : 0] = '\0';
	CHECK(!strncmp(buf, "ERR BUSY", 8), "a 4th query connection over max_conns 3: %s", buf);
	int a = dial_unix(admin);
	write(a, "stats\n", 6);
	r = read(a, buf, sizeof(buf) - 1);
	buf[r > 0 ? r : 0] = '\0';
	CHECK(!strncmp(buf, "OK connections=3 admin_connections=1", 36), "admin answers beside 3 query clients: %.50s", buf);
	close(a);
	for (int i = 0; i < 4; i++)
		close(q[i]);

	/* Shutdown with heavy requests queued or running: nothing leaks
	 * (ASan), nothing is answered after the loop stops. */
	fd = dial();
	for (int i = 0; i < 20; i++)
		write(fd, "pathmatrix h0000 h0001 h0002\n", 29);
	a = dial_unix(admin);
	write(a, "shutdown\n", 9);
	r = read(a, buf, sizeof(buf) - 1);
	close(a);
	pthread_join(thr, NULL);
	close(fd);
	server_free(srv);
	builder_free(b);
	store_destroy(&st);
	rmdir(dir);
	CHECK(1, "shutdown with heavy requests in flight returns and frees");
	return tf_failures ? 1 : 0;
}
