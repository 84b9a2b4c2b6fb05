/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * picture.h - topoquery's pictures: the hierarchy as nested boxes (tree,
 * graphviz), a job's link loads over the hierarchy (load --plot, gnuplot)
 * and schedule conflicts per step (schedule --plot, gnuplot).
 *
 * Every picture is bounded whatever the fabric's size: at most PIC_MAX_PT
 * points (1/72 inch) wide and high, hosts collapsed into hostlist ranges
 * per leaf and, beyond PIC_BOXES_MAX boxes, whole switch clusters collapsed.
 * A missing graphviz or gnuplot is named before anything runs (exit 5).
 */
#ifndef TOPOQUERY_PICTURE_H
#define TOPOQUERY_PICTURE_H

#include <stdio.h>

#include "topoquery.h"

#define PIC_MAX_PT 2000       /* either side of any picture, in points */
#define PIC_HOSTS_EACH 8      /* a leaf with more hosts shows one range */
#define PIC_HOSTS_DETAIL 512  /* above this many hosts every leaf shows a range */
#define PIC_BOXES_MAX 600     /* more boxes than this: the level above collapses */
#define PIC_COLUMNS_EACH 128  /* load --plot: more hosts than this, one column per leaf */

/* tree --format dot (DOT on q->out or q->output FILE.dot|.gv), or the
 * picture itself with -o FILE.svg|.png|.pdf. An exit status. */
int pic_tree(struct tq *q, const tii_tree_t *tr, const struct kids *k);
/* load --dot: the loaded cables as a graphviz graph; beyond PIC_DOT_LINKS_MAX
 * directed links only the heaviest that many, said in the graph's label
 * and in *dropped (the others). -1: out of memory, nothing written. */
#define PIC_DOT_LINKS_MAX 4096
int pic_load_dot(FILE *o, const tii_load_t *l, const char *title, size_t *dropped);
/* load --plot FILE.svg|.png|.pdf: the hierarchy's cables coloured by bytes. */
int pic_load_plot(struct tq *q, const tii_load_t *l, const char *title);
/* schedule --plot FILE.svg|.png|.pdf: conflicts per step of n schedules
 * (NULL entries left out). */
int pic_schedule_plot(struct tq *q, tii_schedule_t *const *s, const char *const *label, int n);

#endif
