/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * http_slurm.c - a Slurm job's nodes for the web view (/api/job?id=N, with
 * --http-slurm): `squeue -h -j N -o %N` run on a worker, its output (a
 * Slurm host list, expanded by the page) bounded in size and time. The job
 * ID is digits (and an array task, _digits) and goes to squeue as one
 * argument, never through a shell.
 */
#include "http_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"

extern char **environ;

#define SQUEUE_OUT_MAX 65536
#define SQUEUE_TIMEOUT_MS 10000

int http_job_id_ok(const char *id)
{
	size_t n = strlen(id), digits = strspn(id, "0123456789");
	if (!digits || n > 24)
		return 0;
	if (digits == n)
		return 1;
	return id[digits] == '_' && n > digits + 1 && strspn(id + digits + 1, "0123456789") == n - digits - 1;
}

enum { RB_EOF, RB_FULL, RB_TIMEOUT, RB_ERROR };

/* Reads fd into buf until EOF (RB_EOF), the cap (RB_FULL), the deadline
 * (RB_TIMEOUT) or an error (RB_ERROR); *have: the bytes read. */
static int read_bounded(int fd, char *buf, size_t cap, uint64_t deadline_ns, size_t *have)
{
	*have = 0;
	for (;;) {
		uint64_t now = pool_now_ns();
		if (now >= deadline_ns)
			return RB_TIMEOUT;
		struct pollfd p = { fd, POLLIN, 0 };
		int r = poll(&p, 1, (int)((deadline_ns - now) / 1000000u) + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return RB_ERROR;
		if (r == 0)
			return RB_TIMEOUT;
		ssize_t n = read(fd, buf + *have, cap - *have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return RB_ERROR;
		if (n == 0)
			return RB_EOF;
		*have += (size_t)n;
		if (*have == cap)
			return RB_FULL;
	}
}

/* Runs squeue for id; its status into *st, its output into buf (NUL
 * ended). An RB_ code (RB_ERROR too if it could not be reaped), or -1
 * when it could not be run. */
static int run_squeue(const char *id, char *buf, size_t cap, int *st)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC))
		return -1;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
	char idbuf[32];
	snprintf(idbuf, sizeof(idbuf), "%s", id);
	char *argv[] = { "squeue", "-h", "-j", idbuf, "-o", "%N", NULL };
	/* its own process group: whatever it starts goes with it */
	posix_spawnattr_t at;
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&at, 0);
	pid_t pid;
	int rc = posix_spawnp(&pid, "squeue", &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(pfd[1]);
	if (rc) {
		close(pfd[0]);
		return -1;
	}
	size_t n;
	int how = read_bounded(pfd[0], buf, cap, pool_now_ns() + SQUEUE_TIMEOUT_MS * 1000000ull, &n);
	close(pfd[0]);
	buf[n] = '\0';
	/* Whatever cut the reading short, squeue is not left running; after
	 * its output ended it gets until the same deadline to exit. */
	if (how != RB_EOF)
		kill(-pid, SIGKILL);
	/* Waited for without reaping (WNOWAIT): while squeue is a zombie its
	 * group ID cannot be reused, so killing what it left behind in its
	 * group hits nothing else. */
	uint64_t end = pool_now_ns() + SQUEUE_TIMEOUT_MS * 1000000ull;
	siginfo_t si;
	int r;
	for (;;) {
		si.si_pid = 0;
		r = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT);
		if ((r == 0 && si.si_pid == pid) || (r < 0 && errno != EINTR) || pool_now_ns() > end)
			break;
		usleep(2000);
	}
	if (r == 0 || errno == EINTR)
		kill(-pid, SIGKILL);
	pid_t w;
	while ((w = waitpid(pid, st, 0)) < 0 && errno == EINTR)
		;
	return w == pid ? how : RB_ERROR;
}

int http_job_nodes(const char *id, struct evbuffer *out)
{
	char buf[SQUEUE_OUT_MAX + 1];
	int st = 0, how = run_squeue(id, buf, SQUEUE_OUT_MAX, &st);
	if (how < 0) {
		http_json_error(out, "NOSLURM", "cannot run squeue on topod's host (is Slurm's client installed?)");
		return 503;
	}
	if (how == RB_ERROR) {
		http_json_error(out, "INTERNAL", "squeue's output or exit status could not be read");
		return 500;
	}
	if (how == RB_TIMEOUT) {
		http_json_error(out, "TIMEOUT", "squeue did not answer within 10 s");
		return 504;
	}
	if (how == RB_FULL) {
		http_json_error(out, "TOOBIG", "squeue's answer is longer than 64 KiB");
		return 413;
	}
	size_t len = strcspn(buf, "\n");
	if (!WIFEXITED(st) || WEXITSTATUS(st) || !len) {
		char why[200];
		snprintf(why, sizeof(why), "squeue knows no running job %s%s%.120s", id, len ? ": " : "", buf);
		http_json_error(out, "NOJOB", why);
		return 404;
	}
	buf[len] = '\0';
	evbuffer_add_printf(out, "{\"ok\":true,\"job\":\"%s\",\"nodelist\":", id);
	http_json_string(out, buf, len);
	evbuffer_add_printf(out, "}\n");
	return 200;
}
