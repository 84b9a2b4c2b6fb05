/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * inventory.c - topoquery's inventory commands: show, links (iblinkinfo's
 * view of a node and of the cables), hosts and resolve (the protocol's
 * `hosts` and `resolve`, which the admin guide used to reach with nc).
 * Output formats: topoquery(1) and the top of main.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "out.h"
#include "topoquery.h"

/* JSON null for an empty string or a zero GUID. */
static void json_str_or_null(FILE *f, const char *s)
{
	if (*s)
		json_str(f, s);
	else
		fputs("null", f);
}

static void json_guid_or_null(FILE *f, uint64_t g)
{
	if (g)
		json_guid(f, g);
	else
		fputs("null", f);
}

/* Init and Armed are a link on its way up: trained, but not yet
 * activated by the subnet manager, and not carrying traffic. The plugin
 * sends the states of the end of each sweep, so one that stays there is a
 * port the SM could not activate. */
static int state_in_transition(const char *state)
{
	return !strcmp(state, "Init") || !strcmp(state, "Armed");
}

/* iblinkinfo's middle: "==( 4X QDR Active )==>", "==( Down )==>" when
 * the port trained no link, "==( 4X QDR Init, not yet Active )==>". */
static void text_wire(FILE *f, const char *width, const char *speed, const char *state)
{
	const char *more = state_in_transition(state) ? ", not yet Active" : "";

	if (!strcmp(state, "Down") || (!strcmp(width, "?") && !strcmp(speed, "?")))
		fprintf(f, "==( %s%s )==>", state, more);
	else
		fprintf(f, "==( %s %s %s%s )==>", width, speed, state, more);
}

/* ,"state":"Init","transition":true */
static void json_state(FILE *f, const char *state)
{
	fputs(",\"state\":", f);
	json_str(f, state);
	fprintf(f, ",\"transition\":%s", state_in_transition(state) ? "true" : "false");
}

static void show_text(FILE *f, const tii_show_t *s)
{
	fputs("name ", f);
	text_str(f, s->name);
	fprintf(f, "\nkind %s\nplane %s\nhost %s\n", s->kind, s->plane, *s->host ? s->host : "-");
	if (s->leaf) {
		fputs("leaf ", f);
		text_str(f, s->leaf_name);
		fprintf(f, " 0x%016" PRIx64 "\n", s->leaf);
	}
	if (s->leaf_cluster)
		fprintf(f, "leaf_cluster %s 0x%016" PRIx64 "\npod %s 0x%016" PRIx64 "\n",
			*s->leaf_cluster_name ? s->leaf_cluster_name : "-", s->leaf_cluster, *s->pod_name ? s->pod_name : "-",
			s->pod);
	for (size_t i = 0; i < s->nnodes; i++) {
		const struct tii_node_info *n = &s->nodes[i];
		fprintf(f, "node 0x%016" PRIx64 " %s \"", n->guid, n->type);
		text_str(f, n->name);
		fprintf(f, "\" ports %d\n", n->nports);
		for (size_t k = 0; k < n->nlisted; k++) {
			const struct tii_port_info *p = &n->ports[k];
			fprintf(f, "  port %d guid 0x%016" PRIx64 " lid %u ", p->port, p->port_guid, p->lid);
			text_wire(f, p->width, p->speed, p->state);
			if (p->has_peer) {
				fprintf(f, " 0x%016" PRIx64 " %d \"", p->peer_node, p->peer_port);
				text_str(f, p->peer_name);
				fprintf(f, "\" %s\n", p->peer_type);
			} else {
				fputs(" -\n", f);
			}
		}
	}
}

static void show_json_port(FILE *f, const struct tii_port_info *p)
{
	fprintf(f, "{\"port\":%d,\"guid\":", p->port);
	json_guid(f, p->port_guid);
	fprintf(f, ",\"lid\":%u,\"lmc\":%d", p->lid, p->lmc);
	json_state(f, p->state);
	fputs(",\"width\":", f);
	json_str(f, p->width);
	fputs(",\"speed\":", f);
	json_str(f, p->speed);
	fprintf(f, ",\"rate_bps\":%" PRIu64 ",\"peer\":", p->rate_bps);
	if (!p->has_peer) {
		fputs("null}", f);
		return;
	}
	fputs("{\"node\":", f);
	json_guid(f, p->peer_node);
	fprintf(f, ",\"port\":%d,\"guid\":", p->peer_port);
	json_guid(f, p->peer_guid);
	fputs(",\"type\":", f);
	json_str(f, p->peer_type);
	json_state(f, p->peer_state);
	fputs(",\"name\":", f);
	json_str(f, p->peer_name);
	fputs("}}", f);
}

static void show_json(FILE *f, const tii_show_t *s)
{
	fprintf(f, "{\"generation\":%" PRIu64 ",\"name\":", s->generation);
	json_str(f, s->name);
	fputs(",\"kind\":", f);
	json_str(f, s->kind);
	fputs(",\"plane\":", f);
	json_str(f, s->plane);
	fputs(",\"host\":", f);
	json_str_or_null(f, s->host);
	fputs(",\"leaf\":", f);
	if (s->leaf) {
		fputs("{\"guid\":", f);
		json_guid(f, s->leaf);
		fputs(",\"name\":", f);
		json_str(f, s->leaf_name);
		fputs("}", f);
	} else {
		fputs("null", f);
	}
	fputs(",\"leaf_cluster\":", f);
	json_guid_or_null(f, s->leaf_cluster);
	fputs(",\"pod\":", f);
	json_guid_or_null(f, s->pod);
	fputs(",\"leaf_cluster_name\":", f);
	if (*s->leaf_cluster_name)
		json_str(f, s->leaf_cluster_name);
	else
		fputs("null", f);
	fputs(",\"pod_name\":", f);
	if (*s->pod_name)
		json_str(f, s->pod_name);
	else
		fputs("null", f);
	fputs(",\"nodes\":[", f);
	for (size_t i = 0; i < s->nnodes; i++) {
		const struct tii_node_info *n = &s->nodes[i];
		fputs(i ? ",{\"guid\":" : "{\"guid\":", f);
		json_guid(f, n->guid);
		fputs(",\"type\":", f);
		json_str(f, n->type);
		fputs(",\"name\":", f);
		json_str(f, n->name);
		fputs(",\"desc\":", f);
		json_str(f, n->desc);
		fprintf(f, ",\"nports\":%d,\"sysimg_guid\":", n->nports);
		json_guid(f, n->sysimg_guid);
		fputs(",\"ports\":[", f);
		for (size_t k = 0; k < n->nlisted; k++) {
			if (k)
				fputc(',', f);
			show_json_port(f, &n->ports[k]);
		}
		fputs("]}", f);
	}
	fputs("]}\n", f);
}

int cmd_show(struct tq *q, int argc, char **argv)
{
	if (argc != 1)
		return tq_usage_error("usage: show HOST|HCA|SWITCH");
	tii_show_t *s;
	int rc = tii_show(q->t, argv[0], &s);
	if (rc) {
		char w[300];
		snprintf(w, sizeof(w), "show %s", argv[0]);
		return tq_fail_node(q, w, rc);
	}
	if (q->json)
		show_json(q->out, s);
	else
		show_text(q->out, s);
	tii_show_free(s);
	return EXIT_OK;
}

static void link_end_json(FILE *f, const struct tii_link *k, int e)
{
	fputs("{\"node\":", f);
	json_guid(f, k->node[e]);
	fprintf(f, ",\"port\":%d,\"type\":", k->port[e]);
	json_str(f, k->type[e]);
	json_state(f, k->end_state[e]);
	fputs(",\"name\":", f);
	json_str(f, k->name[e]);
	fputc('}', f);
}

static void links_out(FILE *f, int json, const tii_links_t *l)
{
	if (json)
		fprintf(f, "{\"generation\":%" PRIu64 ",\"total\":%zu,\"links\":[", l->generation, l->total);
	for (size_t i = 0; i < l->n; i++) {
		const struct tii_link *k = &l->links[i];
		if (json) {
			fputs(i ? ",{\"a\":" : "{\"a\":", f);
			link_end_json(f, k, 0);
			fputs(",\"b\":", f);
			link_end_json(f, k, 1);
			json_state(f, k->state);
			fputs(",\"width\":", f);
			json_str(f, k->width);
			fputs(",\"speed\":", f);
			json_str(f, k->speed);
			fprintf(f, ",\"rate_bps\":%" PRIu64 "}", k->rate_bps);
			continue;
		}
		fprintf(f, "0x%016" PRIx64 " %d \"", k->node[0], k->port[0]);
		text_str(f, k->name[0]);
		fputs("\" ", f);
		text_wire(f, k->width, k->speed, k->state);
		fprintf(f, " 0x%016" PRIx64 " %d \"", k->node[1], k->port[1]);
		text_str(f, k->name[1]);
		fputs("\"\n", f);
	}
	if (json)
		fputs("]}\n", f);
}

int cmd_links(struct tq *q, int argc, char **argv)
{
	if (argc > 1)
		return tq_usage_error("usage: links [--down | --state STATE] [NAME_SUBSTRING]");
	tii_links_t *l;
	int rc = tii_get_links(q->t, argc ? argv[0] : NULL, q->link_state, &l);
	if (rc == TII_E_INVAL)
		return tq_usage_error("links: a filter is one word of printable characters, and --state one of down, "
				      "init, armed, active, notactive, up");
	if (rc) {
		char w[300];
		snprintf(w, sizeof(w), "links%s%.200s", argc ? " " : "", argc ? argv[0] : "");
		return tq_fail_node(q, w, rc);
	}
	links_out(q->out, q->json, l);
	tii_links_free(l);
	return EXIT_OK;
}

int cmd_hosts(struct tq *q, int argc, char **argv)
{
	(void)argv;
	if (argc)
		return tq_usage_error("usage: hosts");
	tii_hosts_t *hs;
	int rc = tii_get_hosts(q->t, &hs);
	if (rc)
		return tq_fail(q, "hosts", rc);
	FILE *f = q->out;
	if (q->json)
		fprintf(f, "{\"generation\":%" PRIu64 ",\"hosts\":[", hs->generation);
	for (size_t i = 0; i < hs->n; i++) {
		const struct tii_host *h = &hs->hosts[i];
		if (q->json) {
			fputs(i ? ",{\"name\":" : "{\"name\":", f);
			json_str(f, h->name);
			fputs(",\"rails\":[", f);
		} else {
			text_str(f, h->name);
			fprintf(f, " rails=%zu", h->nrails);
		}
		for (size_t k = 0; k < h->nrails; k++) {
			const struct tii_rail *r = &h->rails[k];
			if (q->json) {
				fputs(k ? ",{\"hca\":" : "{\"hca\":", f);
				json_str(f, r->hca);
				fputs(",\"port_guid\":", f);
				json_guid(f, r->port_guid);
				fprintf(f, ",\"lid\":%u}", r->lid);
			} else {
				fputc(' ', f);
				text_str(f, r->hca);
				fprintf(f, " 0x%016" PRIx64 " lid=%u", r->port_guid, r->lid);
			}
		}
		fputs(q->json ? "]}" : "\n", f);
	}
	if (q->json)
		fputs("]}\n", f);
	tii_hosts_free(hs);
	return EXIT_OK;
}

int cmd_resolve(struct tq *q, int argc, char **argv)
{
	if (argc != 1)
		return tq_usage_error("usage: resolve NAME");
	struct tii_endpoint e;
	int rc = tii_resolve(q->t, argv[0], &e);
	if (rc) {
		char w[300];
		snprintf(w, sizeof(w), "resolve %s", argv[0]);
		return tq_fail(q, w, rc);
	}
	FILE *f = q->out;
	if (!q->json) {
		fprintf(f, "name %s\nhost %s\nhca %s\nport_guid 0x%016" PRIx64 "\nnode_guid 0x%016" PRIx64
			   "\nport %d\nlid %u\ndlid %u\nlmc %d\n",
			e.name, *e.host ? e.host : "-", *e.hca ? e.hca : "-", e.port_guid, e.node_guid, e.port, e.lid,
			e.dlid, e.lmc);
		if (e.leaf)
			fprintf(f, "leaf 0x%016" PRIx64 "\n", e.leaf);
		else
			fputs("leaf -\n", f);
		return EXIT_OK;
	}
	fputs("{\"name\":", f);
	json_str(f, e.name);
	fputs(",\"host\":", f);
	json_str_or_null(f, e.host);
	fputs(",\"hca\":", f);
	json_str_or_null(f, e.hca);
	fputs(",\"port_guid\":", f);
	json_guid(f, e.port_guid);
	fputs(",\"node_guid\":", f);
	json_guid(f, e.node_guid);
	fprintf(f, ",\"port\":%d,\"lid\":%u,\"dlid\":%u,\"lmc\":%d,\"leaf\":", e.port, e.lid, e.dlid, e.lmc);
	json_guid_or_null(f, e.leaf);
	fprintf(f, ",\"generation\":%" PRIu64 "}\n", tii_last_generation(q->t));
	return EXIT_OK;
}
