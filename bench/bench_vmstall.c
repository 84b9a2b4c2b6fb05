/*
 * How much one thread's memory work stalls another thread of the same
 * process: the question behind the OpenSM lock's long slices
 * (docs/performance.md, "The lock's long slices are the VM's").
 *
 *   build/bench/bench_vmstall [SECONDS per case, default 10]
 *
 * A walker thread reads 16 scattered pages of a 64 MB working set per step
 * (about what the plugin does for a node or 16 LFT blocks under OpenSM's
 * lock) and records each step's CPU time. Beside it, in turn:
 *   quiet     nothing;
 *   faults    another thread of the process writes fresh pages (first
 *             touches: page faults, as a growing heap or a new buffer);
 *   unmaps    another thread maps, touches and unmaps 64 KB over and over
 *             (as free() trimming a heap or returning a large block);
 *   process   the same fresh pages written by another process.
 * On bare metal or under a hypervisor with nested paging the walker's
 * steps stay in microseconds in every case. Under shadow page tables (the
 * lab's PVM guest) a change to the process's address space can cost every
 * thread of it its mappings: the walker's next loads fault into the
 * hypervisor, invisible to the guest's fault counters and charged as the
 * walker's CPU time.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WORKING_SET (64u << 20)
#define PAGE 4096u
#define FRESH_SPAN (2ul << 30) /* fresh pages written, then started over */

enum beside { QUIET, FAULTS, UNMAPS, PROCESS };

static uint64_t ns(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static atomic_int stop;

/* Writes one byte to each page of a fresh mapping, 2 GB at most, then
 * maps another: every write is a first touch. */
static void fresh_pages(void)
{
	while (!atomic_load(&stop)) {
		char *p = mmap(NULL, FRESH_SPAN, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return;
		for (size_t o = 0; o < FRESH_SPAN && !atomic_load(&stop); o += PAGE)
			p[o] = 1;
		munmap(p, FRESH_SPAN);
	}
}

static void *beside_main(void *arg)
{
	enum beside b = *(enum beside *)arg;

	if (b == FAULTS)
		fresh_pages();
	while (b == UNMAPS && !atomic_load(&stop)) {
		char *p = mmap(NULL, 1u << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			break;
		p[0] = 1;
		munmap(p, 1u << 16);
	}
	return NULL;
}

struct result {
	unsigned long steps, over1, over5;
	uint64_t longest_cpu, longest_wall;
};

static void walk(const volatile char *ws, double secs, struct result *r)
{
	uint64_t end = ns(CLOCK_MONOTONIC) + (uint64_t)(secs * 1e9);
	size_t pos = 0;
	unsigned long sum = 0;

	memset(r, 0, sizeof(*r));
	while (ns(CLOCK_MONOTONIC) < end) {
		uint64_t c0 = ns(CLOCK_THREAD_CPUTIME_ID), w0 = ns(CLOCK_MONOTONIC);
		for (int k = 0; k < 16; k++) {
			sum += (unsigned char)ws[pos];
			pos = (pos + 7 * PAGE + 64) % WORKING_SET;
		}
		uint64_t dc = ns(CLOCK_THREAD_CPUTIME_ID) - c0, dw = ns(CLOCK_MONOTONIC) - w0;
		r->steps++;
		r->over1 += dc > 1000000;
		r->over5 += dc > 5000000;
		if (dc > r->longest_cpu)
			r->longest_cpu = dc;
		if (dw > r->longest_wall)
			r->longest_wall = dw;
	}
	if (sum == 1) /* keeps the loads */
		fputc('\n', stderr);
}

static int run(enum beside b, const volatile char *ws, double secs, struct result *r)
{
	pthread_t thr;
	pid_t kid = -1;

	atomic_store(&stop, 0);
	if (b == PROCESS) {
		kid = fork();
		if (kid < 0)
			return -1;
		if (kid == 0) {
			fresh_pages(); /* until killed */
			_exit(0);
		}
	} else if (pthread_create(&thr, NULL, beside_main, &b)) {
		return -1;
	}
	walk(ws, secs, r);
	atomic_store(&stop, 1);
	if (kid > 0) {
		kill(kid, SIGKILL);
		waitpid(kid, NULL, 0);
	} else {
		pthread_join(thr, NULL);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const name[] = { "quiet", "faults", "unmaps", "process" };
	double secs = argc > 1 ? atof(argv[1]) : 10;
	char *ws = malloc(WORKING_SET);

	if (!ws || secs <= 0) {
		fprintf(stderr, "usage: bench_vmstall [SECONDS per case]\n");
		return 2;
	}
	memset(ws, 1, WORKING_SET);
	printf("# a walker's steps of 16 page reads, %.0f s per case; beside it:\n", secs);
	printf("%-8s %10s %9s %9s %16s %16s\n", "beside", "steps", ">1ms CPU", ">5ms CPU", "longest CPU ms", "longest wall ms");
	for (enum beside b = QUIET; b <= PROCESS; b++) {
		struct result r;
		if (run(b, ws, secs, &r)) {
			perror("bench_vmstall");
			return 1;
		}
		printf("%-8s %10lu %9lu %9lu %16.2f %16.2f\n", name[b], r.steps, r.over1, r.over5, r.longest_cpu / 1e6,
		       r.longest_wall / 1e6);
	}
	free(ws);
	return 0;
}
