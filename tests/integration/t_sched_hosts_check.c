/* t_sched_hosts_check.c - libtii's expansion of host-level schedule replies
 * (t_sched_hosts.py builds and runs it against a real topod):
 *
 *   t_sched_hosts_check SERVER HOSTS RANKS_PER_HOST ALGO MODE
 *
 * MODE "valid": the default (host-level) form; the expanded schedule is a
 * valid all-to-all: every ordered pair of distinct ranks exactly once, each
 * step's flow count equals topod's figure, no rank sends or receives twice
 * in a step unless multi (and multi only if some rank does).
 * MODE "equal": the host-level form and the rank-level form give the same
 * tii_schedule_t: steps, flows in order, figures, times.
 * MODE "ranks": the rank-level form; prints its error. A MODE ending in 0
 * ("valid0", "equal0") asks fallback=0: the algorithm as asked. Hosts "h%04u" get
 * RANKS_PER_HOST consecutive ranks each, but host 1's block is split around
 * host 2's when there are 3 or more hosts (ranks need not be contiguous).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tii.h"

static int valid(const tii_schedule_t *s)
{
	size_t P = (size_t)s->nranks;
	uint8_t *seen = calloc(P * P, 1);
	int *ss = malloc(P * sizeof(int)), *rs = malloc(P * sizeof(int)), twice = 0;
	size_t count = 0;
	for (size_t r = 0; r < P; r++)
		ss[r] = rs[r] = -1;
	for (int st = 0; st < s->nsteps; st++) {
		if (s->step_off[st + 1] - s->step_off[st] != s->steps[st].flows) {
			printf("not ok - step %d: %d flows, topod counted %d\n", st, s->step_off[st + 1] - s->step_off[st],
			       s->steps[st].flows);
			count = 0;
			goto out;
		}
		for (int f = s->step_off[st]; f < s->step_off[st + 1]; f++) {
			int a = s->src[f], b = s->dst[f];
			/* allgather: every block reaches every rank once */
			size_t key = s->blk ? (size_t)b * P + (size_t)s->blk[f] : (size_t)a * P + (size_t)b;
			if (a < 0 || b < 0 || (size_t)a >= P || (size_t)b >= P || a == b ||
			    (s->blk && (s->blk[f] < 0 || (size_t)s->blk[f] >= P || s->blk[f] == b)) || seen[key]++) {
				printf("not ok - step %d: flow %d -> %d out of range, to itself or twice\n", st, a, b);
				count = 0;
				goto out;
			}
			twice |= ss[a] == st || rs[b] == st;
			ss[a] = rs[b] = st;
			count++;
		}
	}
out:
	free(seen);
	free(ss);
	free(rs);
	printf("%s - expanded %s: %zu flows = P(P-1) for P=%zu, %d steps, every ordered pair once, per-step counts as "
	       "topod's, no rank twice in a step unless multi (multi=%d)\n",
	       count == P * (P - 1) && twice == s->multi ? "ok" : "not ok", tii_schedule_algo_name(s->algo), count, P,
	       s->nsteps, s->multi);
	return !(count == P * (P - 1) && twice == s->multi);
}

static int equal(const tii_schedule_t *a, const tii_schedule_t *b)
{
	int d = a->nsteps != b->nsteps || a->nranks != b->nranks || a->algo != b->algo || a->multi != b->multi ||
		a->host_steps != b->host_steps || a->extra_steps != b->extra_steps || a->time_s != b->time_s ||
		a->xor_time_s != b->xor_time_s || a->bound_s != b->bound_s || a->fallback != b->fallback ||
		a->ring_time_s != b->ring_time_s || a->nvariants != b->nvariants || a->requested != b->requested;
	for (int i = 0; !d && i < a->nvariants; i++)
		d = a->variants[i].algo != b->variants[i].algo || a->variants[i].state != b->variants[i].state ||
		    a->variants[i].time_s != b->variants[i].time_s;
	for (int st = 0; !d && st <= a->nsteps; st++)
		d = a->step_off[st] != b->step_off[st] ||
		    (st < a->nsteps && memcmp(&a->steps[st], &b->steps[st], sizeof(a->steps[st])));
	size_t n = d ? 0 : (size_t)a->step_off[a->nsteps];
	d = d || memcmp(a->src, b->src, n * sizeof(int)) || memcmp(a->dst, b->dst, n * sizeof(int)) ||
	    (a->blk != NULL) != (b->blk != NULL) || (a->blk && memcmp(a->blk, b->blk, n * sizeof(int)));
	printf("%s - %s, %d ranks: the host-level reply (form=%d, %d hosts, %d host steps) expands to exactly the "
	       "rank-level reply (form=%d): %d steps, %zu flows, figures and times\n",
	       d ? "not ok" : "ok", tii_schedule_algo_name(a->algo), a->nranks, a->form, a->nhosts, a->nhsteps, b->form,
	       a->nsteps, n);
	return d;
}

int main(int argc, char **argv)
{
	if (argc != 6)
		return 2;
	int H = atoi(argv[2]), R = atoi(argv[3]), P = H * R;
	struct tii_schedule_params par = { .algo = -1, .conflicts = 1 };
	for (int a = 0; tii_schedule_algo_name(a); a++)
		if (!strcmp(argv[4], tii_schedule_algo_name(a)))
			par.algo = a;
	char(*names)[16] = malloc((size_t)H * sizeof(*names));
	const char **rh = malloc((size_t)P * sizeof(*rh));
	for (int h = 0; h < H; h++)
		snprintf(names[h], sizeof(names[h]), "h%04d", h);
	for (int r = 0; r < P; r++) {
		int h = r / R;
		if (H >= 3 && h == 2 && r % R < R / 2)
			h = 1; /* host 1's block split around host 2's */
		else if (H >= 3 && h == 1 && r % R >= (R + 1) / 2)
			h = 2;
		rh[r] = names[h];
	}
	tii_t *t = NULL;
	if (tii_open(&t, argv[1]) || tii_set_timeout(t, 60000) || tii_set_max_reply_bytes(t, (size_t)1 << 30))
		return 3;
	/* MODE "valid0" / "equal0": fallback=0, the algorithm as asked */
	char mode[16];
	snprintf(mode, sizeof(mode), "%s", argv[5]);
	if (mode[0] && mode[strlen(mode) - 1] == '0') {
		mode[strlen(mode) - 1] = 0;
		tii_set_schedule_advice(t, 0, 0);
	}
	argv[5] = mode;
	tii_schedule_t *a = NULL, *b = NULL;
	int rc = tii_get_schedule(t, &par, rh, (size_t)P, &a), bad = 1;
	if (!strcmp(argv[5], "ranks")) {
		tii_set_schedule_form(t, TII_SCHED_FORM_RANKS);
		tii_schedule_free(a);
		a = NULL;
		rc = tii_get_schedule(t, &par, rh, (size_t)P, &a);
		printf("%s %s\n", tii_strerror(rc), rc ? tii_last_message(t) : "");
		bad = 0;
	} else if (rc) {
		printf("not ok - %s: %s\n", tii_strerror(rc), tii_last_message(t));
	} else if (!strcmp(argv[5], "valid")) {
		bad = valid(a) || a->form != TII_SCHED_FORM_HOSTS;
	} else {
		tii_set_schedule_form(t, TII_SCHED_FORM_RANKS);
		rc = tii_get_schedule(t, &par, rh, (size_t)P, &b);
		bad = rc ? (printf("not ok - rank form: %s\n", tii_last_message(t)), 1) : equal(a, b) || valid(a);
	}
	tii_schedule_free(a);
	tii_schedule_free(b);
	tii_close(t);
	free(rh);
	free(names);
	return bad;
}
