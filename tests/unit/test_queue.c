/*
 * test_queue.c - the plugin's delivery queue (osm_plugin/queue.c) without
 * OpenSM: the newest snapshot wins, a dead sink is logged once and never
 * delays the others, shutdown is bounded by the linger time, and a
 * snapshot topod holds back (ERR HELD: the shrink guard) is neither lost
 * nor taken as delivered: sent again until topod answers OK; what a push
 * gives up is freed once the sink has answered.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../../osm_plugin/queue.h"
#include "snapshot.h"
#include "tap.h"

static atomic_int nerrors, ninfo;

static void logfn(void *arg, enum tpq_level level, const char *msg)
{
	if (level == TPQ_ERROR)
		atomic_fetch_add(&nerrors, 1);
	else if (level == TPQ_INFO)
		atomic_fetch_add(&ninfo, 1);
	(void)arg;
	(void)msg;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* An encoded empty snapshot of the given generation. */
static uint8_t *snapshot(uint64_t gen, size_t *len)
{
	struct snap *s = snap_new();
	s->generation = gen;
	uint8_t *buf;
	char err[SNAP_ERR_LEN];
	snap_encode(s, &buf, len, err);
	snap_free(s);
	return buf;
}

/* Encodes first: in tpq_push(q, snapshot(g, &len), len, g) the order in
 * which C evaluates the arguments would decide whether len is set. */
static void push(struct tpq *q, uint64_t gen)
{
	size_t len;
	uint8_t *buf = snapshot(gen, &len);
	tpq_push(q, buf, len, gen);
}

/* What a push gives up (tpq_push_delta's drop): when, and on which thread,
 * the queue let it go. */
struct garbage {
	atomic_int dropped;
	pthread_t by;
};

static void drop_garbage(void *arg)
{
	struct garbage *g = arg;
	g->by = pthread_self();
	atomic_fetch_add(&g->dropped, 1);
}

static void push_giving_up(struct tpq *q, uint64_t gen, struct garbage *g)
{
	size_t len;
	uint8_t *buf = snapshot(gen, &len);
	tpq_push_delta(q, buf, len, gen, NULL, 0, 0, drop_garbage, g);
}

static uint64_t file_generation(const char *path)
{
	struct snap *s;
	char err[SNAP_ERR_LEN];
	if (snap_read_file(path, &s, err))
		return 0;
	uint64_t g = s->generation;
	snap_free(s);
	return g;
}

/* A receiver on a UNIX socket: reads whole snapshots, answers OK, records
 * the last generation; optionally slow, to let snapshots pile up, or
 * answering the first `held` snapshots as topod does one it holds back. */
struct receiver {
	int fd;
	pthread_t th;
	int delay_ms;
	int held;
	atomic_ulong last;
	atomic_int count;
	atomic_int stop;
};

static void *receiver_main(void *arg)
{
	struct receiver *r = arg;
	while (!atomic_load(&r->stop)) {
		int c = accept(r->fd, NULL, NULL);
		if (c < 0)
			continue;
		uint8_t hdr[SNAP_HEADER_LEN];
		size_t got = 0;
		while (got < sizeof(hdr)) {
			ssize_t n = read(c, hdr + got, sizeof(hdr) - got);
			if (n <= 0)
				break;
			got += (size_t)n;
		}
		uint64_t plen = 0;
		char err[SNAP_ERR_LEN];
		if (got == sizeof(hdr) && !snap_peek_header(hdr, got, &plen, err)) {
			uint8_t *buf = malloc(SNAP_HEADER_LEN + plen);
			memcpy(buf, hdr, SNAP_HEADER_LEN);
			size_t have = 0;
			while (have < plen) {
				ssize_t n = read(c, buf + SNAP_HEADER_LEN + have, plen - have);
				if (n <= 0)
					break;
				have += (size_t)n;
			}
			struct snap *s;
			if (have == plen && !snap_decode(buf, SNAP_HEADER_LEN + plen, &s, err)) {
				if (r->delay_ms)
					usleep((useconds_t)r->delay_ms * 1000);
				atomic_store(&r->last, s->generation);
				int n = atomic_fetch_add(&r->count, 1);
				char reply[256];
				if (n < r->held)
					snprintf(reply, sizeof(reply), "ERR HELD generation %llu reaches 1 HCAs and 1 switches of "
						 "the 16 and 20 served (generation 1): more than 50%% fewer; held back\n",
						 (unsigned long long)s->generation);
				else
					snprintf(reply, sizeof(reply), "OK %llu%s\n", (unsigned long long)s->generation,
						 r->held ? " already served" : "");
				snap_free(s);
				/* the sender may have given up (linger): no SIGPIPE */
				ssize_t w = send(c, reply, strlen(reply), MSG_NOSIGNAL);
				(void)w;
			}
			free(buf);
		}
		close(c);
	}
	return NULL;
}

static int listen_unix(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) || listen(fd, 8))
		return -1;
	/* accept() wakes every 100 ms so the thread can see stop. */
	struct timeval tv = { 0, 100000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* r listening on path, on its own thread, until receiver_stop(). */
static void receiver_start(struct receiver *r, const char *path)
{
	r->fd = listen_unix(path);
	pthread_create(&r->th, NULL, receiver_main, r);
}

static void receiver_stop(struct receiver *r)
{
	atomic_store(&r->stop, 1);
	pthread_join(r->th, NULL);
	close(r->fd);
}

int main(void)
{
	char dir[] = "/tmp/test_queue_XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char opts[1024], err[SNAP_ERR_LEN], spool_file[64], sock[64];
	snprintf(spool_file, sizeof(spool_file), "%s/fabric.snap", dir);
	snprintf(sock, sizeof(sock), "%s/ingest.sock", dir);

	/* 1. A dead UNIX sink next to a spool: the spool gets every snapshot
	 * at once; the dead sink is logged once, however often it is retried;
	 * shutdown waits about linger_ms, not forever. */
	snprintf(opts, sizeof(opts), "sink=unix:%s/nobody.sock spool=%s timeout_ms=200 backoff_max_ms=50 linger_ms=300",
		 dir, dir);
	struct sink_opts o;
	CHECK(sink_parse_options(opts, &o, err) == 0, "options parse");
	struct tpq *q = tpq_start(&o, logfn, NULL, err);
	CHECK(q != NULL, "queue starts with two workers");
	push(q, 10);
	usleep(200000);
	CHECK(file_generation(spool_file) == 10, "the spool has the snapshot while the other sink is dead");
	usleep(500000); /* several retries of the dead sink */
	CHECK(atomic_load(&nerrors) == 1, "a dead sink is logged once, not per retry (%d)", atomic_load(&nerrors));
	push(q, 9);
	push(q, 11);
	double t0 = now_s();
	tpq_stop(q);
	double dt = now_s() - t0;
	CHECK(file_generation(spool_file) == 11, "an older generation is dropped; the newest is spooled");
	CHECK(dt < 0.3 + 0.2 + 0.3, "shutdown with a dead sink took %.2f s (linger 0.3 + timeout 0.2)", dt);

	/* 2. A slow receiver while snapshots keep coming: it gets the newest,
	 * the queue never holds more than one, and recovery after a start
	 * with the receiver down is logged. */
	atomic_store(&nerrors, 0);
	atomic_store(&ninfo, 0);
	snprintf(opts, sizeof(opts), "sink=unix:%s timeout_ms=2000 backoff_max_ms=100 linger_ms=2000", sock);
	sink_parse_options(opts, &o, err);
	q = tpq_start(&o, logfn, NULL, err);
	push(q, 100); /* nobody listens yet */
	usleep(300000);
	CHECK(atomic_load(&nerrors) == 1, "receiver down: one error line");
	struct receiver r = { .delay_ms = 50 };
	receiver_start(&r, sock);
	for (uint64_t g = 101; g <= 140; g++) {
		push(q, g);
		usleep(5000);
	}
	tpq_stop(q);
	struct tpq_stats st;
	(void)st;
	receiver_stop(&r);
	CHECK(atomic_load(&r.last) == 140, "the receiver ends with the newest generation (%lu)",
	      (unsigned long)atomic_load(&r.last));
	CHECK(atomic_load(&r.count) < 41, "a slow receiver gets fewer snapshots than were pushed (%d of 41): "
	      "older ones were superseded, not queued", atomic_load(&r.count));
	CHECK(atomic_load(&ninfo) >= 1, "recovery is logged");

	/* 3. topod holds the snapshot back (ERR HELD) three times, then the
	 * operator confirms it and the next attempt is "OK G already served":
	 * the queue keeps sending the same generation until then (a failure,
	 * logged once), takes the OK as delivered, and sends no more. */
	atomic_store(&nerrors, 0);
	atomic_store(&ninfo, 0);
	snprintf(opts, sizeof(opts), "sink=unix:%s timeout_ms=2000 backoff_max_ms=50 linger_ms=500", sock);
	sink_parse_options(opts, &o, err);
	struct receiver h = { .held = 3 };
	receiver_start(&h, sock);
	q = tpq_start(&o, logfn, NULL, err);
	push(q, 200);
	for (int i = 0; i < 100 && atomic_load(&h.count) < 4; i++)
		usleep(20000);
	usleep(300000); /* would it send again? */
	int sent = atomic_load(&h.count);
	tpq_stop(q);
	receiver_stop(&h);
	CHECK(sent == 4 && atomic_load(&h.last) == 200, "held back 3 times: generation 200 sent again each time, "
	      "and once more (%d deliveries), then no more", sent);
	CHECK(atomic_load(&nerrors) == 1 && atomic_load(&ninfo) >= 1, "one error line while held (%d), and the "
	      "delivery logged once it landed", atomic_load(&nerrors));

	/* 4. A spool next to a healthy sink that answers 400 ms after the
	 * snapshot arrived (topod applying and indexing it): the spool writes
	 * only once the sink has answered, so that it does not compete with
	 * topod for the CPU; next to a sink that fails it does not wait. */
	unlink(spool_file);
	snprintf(opts, sizeof(opts), "sink=unix:%s spool=%s timeout_ms=3000 backoff_max_ms=50 linger_ms=500", sock,
		 dir);
	sink_parse_options(opts, &o, err);
	struct receiver sl = { .delay_ms = 400 };
	receiver_start(&sl, sock);
	q = tpq_start(&o, logfn, NULL, err);
	push(q, 300);
	usleep(250000);
	uint64_t early = file_generation(spool_file);
	double t1 = now_s();
	while (atomic_load(&sl.last) != 300 && now_s() - t1 < 3)
		usleep(2000);
	double answered = now_s();
	while (file_generation(spool_file) != 300 && now_s() - t1 < 5)
		usleep(2000);
	double spooled = now_s();
	CHECK(early == 0 && atomic_load(&sl.last) == 300 && spooled - answered < 0.5,
	      "the spool waits for the sink's answer (nothing at 250 ms, written %.0f ms after it)",
	      (spooled - answered) * 1e3);
	receiver_stop(&sl);
	push(q, 301); /* the sink is gone now */
	t1 = now_s();
	while (file_generation(spool_file) != 301 && now_s() - t1 < 5)
		usleep(2000);
	CHECK(file_generation(spool_file) == 301 && now_s() - t1 < 1.0,
	      "with the sink failing the spool writes at once (%.0f ms), not after timeout_ms",
	      (now_s() - t1) * 1e3);
	tpq_stop(q);

	/* 5. Snapshots every 100 ms, each answered 400 ms after it came: the
	 * sink never has the newest when the spool looks, yet the spool
	 * writes within timeout_ms of when it began to wait, not after the
	 * pushes stop. */
	unlink(spool_file);
	snprintf(opts, sizeof(opts), "sink=unix:%s spool=%s timeout_ms=1000 backoff_max_ms=50 linger_ms=500", sock,
		 dir);
	sink_parse_options(opts, &o, err);
	struct receiver busy = { .delay_ms = 400 };
	receiver_start(&busy, sock);
	q = tpq_start(&o, logfn, NULL, err);
	double t5 = now_s(), spooled5 = 0;
	for (uint64_t g = 400; g < 430; g++) {
		push(q, g);
		usleep(100000);
		if (!spooled5 && file_generation(spool_file))
			spooled5 = now_s() - t5;
	}
	tpq_stop(q);
	receiver_stop(&busy);
	CHECK(spooled5 > 0 && spooled5 < 1.6, "pushed every 100 ms and answered 400 ms late, the spool is written "
	      "%.2f s after the first push (timeout_ms 1 s), not when the pushes stop (3 s)", spooled5);

	/* 6. What a push gives up (the plugin's previous snapshot, 195 MB at
	 * k=56) is freed on a worker once the sink has answered, not on the
	 * pusher's thread while topod waits; at the next push when the sink
	 * has not answered by then; at shutdown; and at once when the push is
	 * dropped. */
	char fast_sock[80];
	snprintf(fast_sock, sizeof(fast_sock), "%s/fast.sock", dir);
	snprintf(opts, sizeof(opts),
		 "sink=unix:%s sink=unix:%s spool=%s timeout_ms=3000 backoff_max_ms=50 linger_ms=300", fast_sock,
		 sock, dir);
	CHECK(sink_parse_options(opts, &o, err) == 0, "two sinks and a spool: %s", err);
	/* the slower sink answers 1 s after a snapshot came: the drop must
	 * wait for it, not for the faster one */
	struct receiver gr = { .delay_ms = 1000 }, fast = { 0 };
	receiver_start(&gr, sock);
	receiver_start(&fast, fast_sock);
	q = tpq_start(&o, logfn, NULL, err);
	struct garbage ga = { 0 }, gb = { 0 }, gc = { 0 }, gd = { 0 }, ge = { 0 };
	push_giving_up(q, 500, &ga);
	double t6 = now_s();
	while (atomic_load(&fast.last) != 500 && now_s() - t6 < 5)
		usleep(2000);
	usleep(50000); /* time for a worker that did not wait to drop it */
	/* read in this order: dropped while the slower had not answered is
	 * the defect, whatever the scheduler did meanwhile */
	int early_drop = atomic_load(&ga.dropped), slow_had = (int)atomic_load(&gr.last);
	while (!atomic_load(&ga.dropped) && now_s() - t6 < 5)
		usleep(2000);
	CHECK(atomic_load(&fast.last) == 500 && !(early_drop && slow_had != 500) && atomic_load(&ga.dropped) == 1 &&
	      atomic_load(&gr.last) == 500 && !pthread_equal(ga.by, pthread_self()),
	      "given up with a push: freed on a worker once the slower sink answered, not when the faster "
	      "did (dropped %d while the slower had %d)", early_drop, slow_had);
	receiver_stop(&fast);
	struct garbage gz = { 0 };
	push_giving_up(q, 501, &gb);
	push_giving_up(q, 502, &gc); /* the slower sink is still busy with 501 */
	push_giving_up(q, 503, &gz);
	CHECK(atomic_load(&gb.dropped) == 1 && pthread_equal(gb.by, pthread_self()) && !atomic_load(&gc.dropped) &&
	      !atomic_load(&gz.dropped),
	      "three pushes unanswered: the third frees the oldest grave, the last two are kept (a routing pass's "
	      "and its subnet-up copy's)");
	push_giving_up(q, 499, &gd);
	CHECK(atomic_load(&gd.dropped) == 1, "a dropped push's garbage is freed at once");
	receiver_stop(&gr);
	t6 = now_s();
	while ((!atomic_load(&gc.dropped) || !atomic_load(&gz.dropped)) && now_s() - t6 < 10)
		usleep(2000);
	CHECK(atomic_load(&gc.dropped) == 1 && atomic_load(&gz.dropped) == 1 && !pthread_equal(gc.by, pthread_self()) &&
	      !pthread_equal(gz.by, pthread_self()),
	      "both kept graves freed on a worker once the sinks failed");
	/* the spool writes 504 once no socket sink may still answer it: then
	 * both have failed (the slower may have answered 503 above) */
	push(q, 504);
	t6 = now_s();
	while (file_generation(spool_file) != 504 && now_s() - t6 < 10)
		usleep(2000);
	push_giving_up(q, 505, &ge); /* every sink failing: no one waits for it */
	CHECK(file_generation(spool_file) >= 504 && atomic_load(&ge.dropped) == 1 && pthread_equal(ge.by, pthread_self()),
	      "with every sink failing the push frees it at once, not after the next attempt");
	struct garbage gf = { 0 };
	push_giving_up(q, 506, &gf);
	tpq_stop(q);
	CHECK(atomic_load(&gf.dropped) == 1 && atomic_load(&ga.dropped) == 1 && atomic_load(&gb.dropped) == 1 &&
	      atomic_load(&gc.dropped) == 1 && atomic_load(&gz.dropped) == 1 && atomic_load(&ge.dropped) == 1,
	      "nothing is left after shutdown, and nothing is freed twice");

	unlink(sock);
	unlink(fast_sock);
	unlink(spool_file);
	rmdir(dir);
	return TAP_DONE();
}
