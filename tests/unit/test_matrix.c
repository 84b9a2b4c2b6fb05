/*
 * test_matrix.c - matrix_hops() against route_hops() pair by pair (rows
 * shared per leaf, dead cables, second rails, a switch), and the source
 * groups of a path matrix against share_build()'s grp_of.
 */
#include "matrix.h"
#include "testfab.h"

static uint32_t ep_of(const struct route_tab *rt, const char *name, uint16_t *dlid)
{
	uint32_t ep;
	if (route_resolve(rt, name, &ep, dlid))
		tf_die(name);
	return ep;
}

static void test_hops(const struct route_tab *rt)
{
	static const char *const names[] = { "h0000", "h0001", "h0005", "h0005/HCA-2", "h0004", "h0010",
					     "h0003", "h0002", "lid:1", "h0007", "h0012", "0x0008f10500000001" };
	size_t n = sizeof(names) / sizeof(*names);
	uint32_t eps[sizeof(names) / sizeof(*names)];
	uint16_t dl[sizeof(names) / sizeof(*names)];
	for (size_t i = 0; i < n; i++)
		eps[i] = ep_of(rt, names[i], &dl[i]);
	int16_t *out = malloc(n * n * sizeof(*out));
	CHECK(out && matrix_hops(rt, eps, dl, n, out) == AN_OK, "matrix_hops over %zu end ports", n);
	size_t bad = 0, failed = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			int h = route_hops(rt, eps[i], dl[j]);
			int want = i == j ? 0 : h < 0 ? -1 : h;
			bad += out[i * n + j] != want;
			failed += i != j && h < 0;
		}
	CHECK(bad == 0, "every entry is route_hops() (0 on the diagonal, -1 for no route): %zu differ", bad);
	CHECK(failed > 0, "including %zu failed walks (h0005's cable is down)", failed);
	CHECK(out[0 * n + 1] == 1 && out[1 * n + 0] == 1, "two hosts of one leaf are 1 hop apart, both ways");
	CHECK(out[8 * n + 0] == 0 && out[0 * n + 8] == 0,
	      "lid:1, h0000's own port listed again, is 0 hops from h0000 both ways, as on the diagonal (%d %d)",
	      out[8 * n + 0], out[0 * n + 8]);
	CHECK(out[8 * n + 1] == 1 && out[1 * n + 8] == 1,
	      "h0001, whose row is copied from h0000's, reaches lid:1 (h0000's port) in 1 hop, and back (%d %d)",
	      out[8 * n + 1], out[1 * n + 8]);
	free(out);
}

static void test_groups(const struct route_tab *rt)
{
	static const char *const names[] = { "h0000", "h0004", "h0001", "h0008", "h0005/HCA-2", "h0002", "h0012" };
	size_t n = sizeof(names) / sizeof(*names);
	uint32_t eps[sizeof(names) / sizeof(*names)];
	uint16_t dl;
	for (size_t i = 0; i < n; i++)
		eps[i] = ep_of(rt, names[i], &dl);
	struct share *sh = NULL;
	struct matrix_groups mg;
	CHECK(share_build(rt, eps, n, SHARE_KEEP_PATHS, &sh) == AN_OK, "a share with paths over %zu hosts", n);
	CHECK(sh && matrix_groups_build(sh, &mg) == AN_OK && mg.G == sh->G, "its %u source groups", sh ? sh->G : 0);
	if (!sh)
		return;
	size_t bad = 0;
	for (uint32_t g = 0; g < mg.G; g++) {
		bad += mg.start[g + 1] <= mg.start[g];
		for (uint32_t k = mg.start[g]; k < mg.start[g + 1]; k++)
			bad += sh->grp_of[mg.members[k]] != g || (k > mg.start[g] && mg.members[k] <= mg.members[k - 1]);
	}
	CHECK(bad == 0 && mg.start[0] == 0 && mg.start[mg.G] == n,
	      "each group lists exactly its hosts, ascending, none empty, all hosts once");
	/* h0000, h0001, h0002 share leaf 0: one group. */
	uint32_t g0 = sh->grp_of[0], rep;
	CHECK(sh->grp_of[2] == g0 && sh->grp_of[5] == g0 && mg.start[g0 + 1] - mg.start[g0] == 3,
	      "the three hosts of leaf 0 are one group");
	CHECK(matrix_group_rep(&mg, g0, 3, &rep) && rep == 0, "its route to another host is its first member's");
	CHECK(matrix_group_rep(&mg, g0, 0, &rep) && rep == 2, "to its first member, the next member's");
	uint32_t g1 = sh->grp_of[1];
	CHECK(mg.start[g1 + 1] - mg.start[g1] == 1 && !matrix_group_rep(&mg, g1, 1, &rep) &&
		      matrix_group_rep(&mg, g1, 0, &rep) && rep == 1,
	      "a group of one has no pair with its own host, and stands for itself to the others");
	matrix_groups_free(&mg);
	CHECK(!mg.start && !mg.members && mg.G == 0, "matrix_groups_free leaves it empty");
	share_free(sh);
}

int main(void)
{
	struct snap *s = snap_new();
	tf_tree2(s, 4, 4, 2, 2);
	tf_finish(s, 0);
	/* h0005's first rail: CA id 5 * 4 + 1; its cable goes down. */
	tf_link_down(s, (uint32_t)snap_find_node(s, TF_CA_GUID + 16 * 21), 1);
	struct route_tab *rt = NULL;
	CHECK(route_build(s, NULL, &rt) == AN_OK, "a 2-rail tree with one dead cable");
	test_hops(rt);
	test_groups(rt);
	route_free(rt);
	snap_free(s);
	return tf_failures != 0;
}
