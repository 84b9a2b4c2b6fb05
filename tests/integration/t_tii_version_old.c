/*
 * t_tii_version_old.c - a program of libtii's API level 1.4, as it was
 * built before libtii's symbols were versioned (t_tii_version.sh links it
 * against an unversioned libtii.so.1 and runs it with the versioned one).
 * Its calls need no server: names, colours, a refused connection.
 * Prints "old program: ok" when every call answered as 1.4 documents.
 */
#include <stdio.h>
#include <string.h>

#include "tii.h"

int main(void)
{
	uint64_t ids[4] = { 7, 3, 7, 9 };
	int colors[4], ncolors = 0, bad = 0;
	tii_t *t = NULL;
	bad |= tii_cluster_colors(ids, 4, colors, &ncolors) != 0 || ncolors != 3 || colors[0] != colors[2] ||
	       colors[1] != 0;
	bad |= strcmp(tii_schedule_algo_name(TII_SCHED_XOR), "xor") != 0;
	bad |= tii_strerror(TII_E_CONNECT) == NULL;
	/* port 1 on loopback: nobody listens */
	if (tii_open(&t, "127.0.0.1:1") == 0) {
		tii_set_timeout(t, 2000);
		const char *free_hosts[2] = { "a", "b" };
		size_t chosen[1];
		tii_pick_info_t info;
		int e = tii_pick_hosts(t, free_hosts, 2, 1, chosen, &info);
		bad |= e != TII_E_CONNECT;
		tii_close(t);
	} else {
		bad = 1;
	}
	printf("old program: %s\n", bad ? "FAILED" : "ok");
	return bad;
}
