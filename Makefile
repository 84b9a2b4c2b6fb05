# topod - topology service for InfiniBand clusters.
#
#   make          build everything into build/
#   make deps     install the Debian packages the build, tests and demo need
#   make check    deps + build + every test (unit tests also under ASan/UBSan),
#                 built with make -j and run in parallel (tests/run.sh)
#   make demo     deps + build + a simulated fabric with OpenSM, the plugin and topod
#   make install  PREFIX=/usr/local DESTDIR=
#   make check T=PATTERN   only the tests whose file name contains PATTERN
#
# CFLAGS, CPPFLAGS and LDFLAGS are honoured (distribution builds set them).

# One version for the whole tree (topod --version, libtii's file name, tii.pc).
VERSION     := $(shell cat VERSION)
CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter
XCFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) -Icommon -Isnapshot -Ianalysis -Ilibtii -pthread -MMD -MP \
	   -DTOPO_VERSION='"$(VERSION)"' $(CPPFLAGS)
B       := build
PREFIX  ?= /usr/local
DESTDIR ?=

# OpenSM's headers include each other as <opensm/...>, <iba/...>, <complib/...>.
OSM_INC := -I/usr/include/infiniband

# The snapshot codec, its delta, journal, sink, text dump and authentication:
# one static library per object flavour (std, PIC for the plugin, ASan for
# the unit tests' sanitised builds, clang's fuzz), so a program names the
# library and the linker takes the members it calls. libtopoanalysis.a calls
# into it, so it comes after the analyses on a link line.
SNAP_SRC    := $(wildcard snapshot/*.c)
SNAP_LIB    := $(B)/lib/libtoposnap.a
SNAP_PIC    := $(B)/lib/pic/libtoposnap.a
SNAP_SAN    := $(B)/lib/asan/libtoposnap.a
SNAP_FUZZ   := $(B)/lib/fuzz/libtoposnap.a
PLUGIN_SRC  := $(wildcard osm_plugin/*.c)
TOPOD_SRC   := $(wildcard topod/*.c)
# The analyses over one fabric (analysis/README.md): one internal static
# library, linked by topod, the benchmarks, topo-routeopt and the tests. Its
# objects are built without -Itopod, so a service header cannot creep in.
ANALYSIS_SRC := $(wildcard analysis/*.c)
ANALYSIS_LIB := $(B)/lib/libtopoanalysis.a
ANALYSIS_SAN := $(B)/lib/asan/libtopoanalysis.a
COLLECT_SRC := $(wildcard clients/collect/*.c)
SNAPTOOL_SRC:= $(wildcard clients/snaptool/*.c)
LIBTII_SRC  := $(wildcard libtii/*.c)
TOPOQUERY_SRC := $(wildcard clients/topoquery/*.c)
TII_SOVER   := 1
TII_VER     := $(VERSION)

obj = $(patsubst %.c,$(B)/obj/$(1)/%.o,$(2))

LIBTII := $(B)/lib/libtii.so.$(TII_VER) $(B)/lib/libtii.so.$(TII_SOVER) $(B)/lib/libtii.so $(B)/lib/libtii.a
TII_PC_UNINST := $(B)/lib/pkgconfig/tii-uninstalled.pc

all: $(ANALYSIS_LIB) $(B)/lib/libosmtopo.so $(B)/bin/topod $(B)/bin/topo-collect $(B)/bin/topo-snap \
     $(if $(LIBTII_SRC),$(LIBTII) $(TII_PC_UNINST)) $(if $(TOPOQUERY_SRC),$(B)/bin/topoquery)

$(B)/obj/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(XCFLAGS) $(OSM_INC) -fPIC -fvisibility=hidden -c $< -o $@

$(B)/obj/std/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(XCFLAGS) $(OSM_INC) -fopenmp -c $< -o $@

# The sources that print TOPO_VERSION: their objects are rebuilt when
# VERSION changes (the compiler's dependency files do not see a -D).
VERSIONED_SRC := $(shell grep -l TOPO_VERSION topod/*.c clients/*/*.c 2>/dev/null)
$(foreach v,std pic unit unitsan san fuzz,$(call obj,$(v),$(VERSIONED_SRC))): VERSION

# The plugin exports only osm_event_plugin; everything else is hidden so that
# our symbols can never collide with OpenSM's or another plugin's. From the
# snapshot library it takes what it calls (the codec, delta, sink, auth),
# never the journal or the text dump.
$(B)/lib/libosmtopo.so: $(call obj,pic,$(PLUGIN_SRC)) $(SNAP_PIC)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -pthread -Wl,-z,defs -o $@ $^ -lopensm -losmcomp -lsodium

$(ANALYSIS_LIB): $(call obj,std,$(ANALYSIS_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(ANALYSIS_SAN): $(call obj,san,$(ANALYSIS_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(SNAP_LIB): $(call obj,std,$(SNAP_SRC))
$(SNAP_PIC): $(call obj,pic,$(SNAP_SRC))
$(SNAP_SAN): $(call obj,san,$(SNAP_SRC))
$(SNAP_FUZZ): $(call obj,fuzz,$(SNAP_SRC))
$(SNAP_LIB) $(SNAP_PIC) $(SNAP_SAN) $(SNAP_FUZZ):
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(B)/bin/topod: $(call obj,std,$(TOPOD_SRC)) $(ANALYSIS_LIB) $(SNAP_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -fopenmp -pthread -o $@ $^ -levent -levent_pthreads -lsodium $(PLACE_LIBS)

$(B)/bin/topo-collect: $(call obj,std,$(COLLECT_SRC)) $(SNAP_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -pthread -o $@ $^ -libnetdisc -libmad -libumad -lsodium

$(B)/bin/topo-snap: $(call obj,std,$(SNAPTOOL_SRC)) $(SNAP_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -pthread -o $@ $^ -lsodium

# libtii: the shared object exports only tii_* (visibility in tii.h), each
# in the version node of the API level that added it (libtii/libtii.map).
$(B)/lib/libtii.so.$(TII_VER): $(call obj,pic,$(LIBTII_SRC)) libtii/libtii.map
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -pthread -Wl,-soname,libtii.so.$(TII_SOVER) \
		-Wl,--version-script=libtii/libtii.map -Wl,-z,defs -o $@ $(filter %.o,$^)

$(B)/lib/libtii.so.$(TII_SOVER) $(B)/lib/libtii.so: $(B)/lib/libtii.so.$(TII_VER)
	ln -sf libtii.so.$(TII_VER) $@

$(B)/lib/libtii.a: $(call obj,std,$(LIBTII_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# libtii from this build tree, before any make install (docs/libtii.md):
# PKG_CONFIG_PATH=build/lib/pkgconfig finds tii-uninstalled.pc, which
# pkg-config prefers to tii.pc (its convention for an uninstalled library):
# tii.pc.in with the tree's tii.h and topo_limits.h, and an rpath to
# build/lib, so a program built against the tree runs the tree's libtii.
# Absolute paths: the tree must be rebuilt (make) where it is used.
$(TII_PC_UNINST): libtii/tii.pc.in VERSION Makefile
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(CURDIR)|' -e 's|@LIBDIR@|$(abspath $(B)/lib)|' -e 's|@INCLUDEDIR@|$(CURDIR)/libtii|' \
	    -e 's|@VERSION@|$(VERSION)|' -e 's|^\(Cflags: .*\)|\1 -I$${prefix}/common|' \
	    -e 's|^Libs: -L$${libdir}|& -Wl,-rpath,$${libdir}|' \
	    -e 's|^# pkg-config file for libtii.*|# pkg-config file for libtii in the build tree $(CURDIR) (make writes it)|' $< > $@

# topoquery links libtii statically: one binary, no rpath to get wrong.
$(B)/bin/topoquery: $(call obj,std,$(TOPOQUERY_SRC)) $(B)/lib/libtii.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -pthread -o $@ $^ $(TOPOQUERY_LIBS)

# Test and benchmark binaries are compiled straight from their .c, so their
# .d files sit beside them: a unit test that #includes a .c is rebuilt when
# that .c changes.
-include $(shell find $(B)/obj $(B)/tests $(B)/bench -name '*.d' 2>/dev/null)

# ---- web view ----
# topod/web/index.html is compiled into topod as one C string (http.c):
# one static page, no file to install or to find at run time.
WEB_PAGE := $(B)/gen/web_page.h
$(WEB_PAGE): topod/web/index.html
	@mkdir -p $(dir $@)
	sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/?/\\?/g' -e 's/^/"/' -e 's/$$/\\n"/' $< > $@
HTTP_OBJS := $(call obj,std,topod/http.c) $(call obj,unit,topod/http.c) $(call obj,unitsan,topod/http.c) \
	     $(call obj,fuzz,topod/http.c)
$(HTTP_OBJS): $(WEB_PAGE)
$(HTTP_OBJS): XCFLAGS += -I$(B)/gen

# ---- place ----
# topod's map command glues onto Scotch (Debian libscotch-dev); scotcherr is
# Scotch's required error handler (it logs to stderr, topod's log).
PLACE_LIBS := -lscotch -lscotcherr -lm

# ---- unit tests, plain and under ASan+UBSan -------------------------------
UNIT_SRC  := $(wildcard tests/unit/*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRC))
ASAN_BINS := $(patsubst tests/unit/%.c,$(B)/tests/asan/%,$(UNIT_SRC))
SAN       := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# The tests link every topod source but main.c, the plugin's queue and LFT
# copy (which know nothing of OpenSM) and the analyses' and the snapshot
# code's libraries of their flavour; each source is compiled once per flavour.
UNIT_LINK := $(filter-out topod/main.c,$(TOPOD_SRC)) osm_plugin/queue.c osm_plugin/lftcopy.c
UNIT_OBJ  := $(call obj,unit,$(UNIT_LINK)) $(ANALYSIS_LIB) $(SNAP_LIB)
SAN_OBJ   := $(call obj,unitsan,$(UNIT_LINK)) $(ANALYSIS_SAN) $(SNAP_SAN)

$(B)/obj/unit/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(XCFLAGS) -Itopod -fopenmp -c $< -o $@

$(B)/obj/unitsan/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) -O1 -g $(SAN) $(XCFLAGS) -Itopod -fopenmp -c $< -o $@

$(B)/obj/san/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) -O1 -g $(SAN) $(XCFLAGS) -fopenmp -c $< -o $@

$(B)/tests/%: tests/unit/%.c $(UNIT_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(XCFLAGS) -Itopod -fopenmp -o $@ $< $(UNIT_OBJ) -levent -levent_pthreads -lsodium $(PLACE_LIBS)

$(B)/tests/asan/%: tests/unit/%.c $(SAN_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -O1 -g $(SAN) $(XCFLAGS) -Itopod -fopenmp -o $@ $< $(SAN_OBJ) -levent -levent_pthreads -lsodium $(PLACE_LIBS)

# ---- fuzz ----
# libFuzzer harnesses (tests/fuzz/README.md), one per parser of untrusted
# bytes, under ASan and UBSan (clang's: it also stops on a NULL pointer
# given to qsort or offset by 0, which GCC's does not see); t_fuzz.sh runs
# each for a bounded time with its corpus and every past crash. The code
# under test is compiled once per source into build/obj/fuzz with
# -fsanitize=fuzzer-no-link (coverage), the harness links it.
FUZZ_SAN   := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_FLAGS := -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer $(FUZZ_SAN) -Icommon -Isnapshot -Ianalysis -Itopod -Ilibtii
MPI_INC     = $(shell $(MPICC_OMPI) --showme:compile 2>/dev/null)
MPI_LINK    = $(shell $(MPICC_OMPI) --showme:link 2>/dev/null)
$(B)/obj/fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	clang -g -O1 -fsanitize=fuzzer-no-link $(FUZZ_SAN) $(XCFLAGS) -Wno-unknown-warning-option -Itopod -fopenmp -c $< -o $@
FUZZ_NAMES := fuzz_snapshot fuzz_delta fuzz_proto fuzz_query fuzz_server fuzz_conf fuzz_tii fuzz_text \
	      fuzz_namemap fuzz_coll_sched fuzz_coll_topo fuzz_topoquery
FUZZ_BINS  := $(addprefix $(B)/fuzz/,$(FUZZ_NAMES))
# topod without main.c, the analyses and the snapshot code, as the unit tests link them.
FUZZ_TOPOD := $(call obj,fuzz,$(UNIT_LINK) $(ANALYSIS_SRC)) $(SNAP_FUZZ)
FUZZ_TOPOD_LIBS := -fopenmp -levent -levent_pthreads -lsodium $(PLACE_LIBS) -lpthread
FUZZ_LINK = @mkdir -p $(dir $@) && clang $(FUZZ_FLAGS) -o $@ $(filter %.c %.o %.a,$^)
$(B)/fuzz/fuzz_snapshot: tests/fuzz/fuzz_snapshot.c $(SNAP_FUZZ)
	$(FUZZ_LINK) -lpthread
$(B)/fuzz/fuzz_delta: tests/fuzz/fuzz_delta.c $(SNAP_FUZZ) tests/unit/testfab.h
	$(FUZZ_LINK) -Itests/unit -lpthread
$(B)/fuzz/fuzz_proto: tests/fuzz/fuzz_proto.c $(call obj,fuzz,topod/proto.c)
	$(FUZZ_LINK) -lpthread
$(B)/fuzz/fuzz_query $(B)/fuzz/fuzz_server: $(B)/fuzz/%: tests/fuzz/%.c $(FUZZ_TOPOD) tests/unit/testfab.h
	$(FUZZ_LINK) -Itests/unit $(FUZZ_TOPOD_LIBS)
# topod.conf: main.c itself (its main renamed), so the real parse_config runs.
$(B)/fuzz/fuzz_conf: tests/fuzz/fuzz_conf.c topod/main.c $(FUZZ_TOPOD)
	@mkdir -p $(dir $@)
	clang $(FUZZ_FLAGS) -DTOPO_VERSION='"$(VERSION)"' -I$(B)/gen -o $@ $< $(FUZZ_TOPOD) $(FUZZ_TOPOD_LIBS)
# libtii with the system calls under net.c replaced (fuzz_tii.c's top).
FUZZ_WRAP := -Wl,--wrap=socket,--wrap=connect,--wrap=send,--wrap=recv,--wrap=poll,--wrap=setsockopt \
	     -Wl,--wrap=getsockopt,--wrap=nanosleep
$(B)/fuzz/fuzz_tii: tests/fuzz/fuzz_tii.c $(call obj,fuzz,$(LIBTII_SRC))
	$(FUZZ_LINK) $(FUZZ_WRAP) -lpthread
$(B)/fuzz/fuzz_text: tests/fuzz/fuzz_text.c $(SNAP_FUZZ)
	$(FUZZ_LINK) -lpthread
$(B)/fuzz/fuzz_namemap: tests/fuzz/fuzz_namemap.c $(call obj,fuzz,$(ANALYSIS_SRC)) $(SNAP_FUZZ)
	$(FUZZ_LINK) -Itests/unit -fopenmp $(PLACE_LIBS) -lpthread
# libtopocoll's parsers: the .c under test included by the harness (its
# helpers are static), the rest of the library beside it, Open MPI's
# headers and library (nothing calls MPI).
FUZZ_COLL := $(patsubst coll/%.c,$(B)/obj/fuzz/coll/%.o,$(wildcard coll/*.c))
$(B)/obj/fuzz/coll/%.o: coll/%.c
	@mkdir -p $(dir $@)
	clang -g -O1 -fsanitize=fuzzer-no-link $(FUZZ_SAN) $(XCFLAGS) $(MPI_INC) -c $< -o $@
$(B)/fuzz/fuzz_coll_sched: tests/fuzz/fuzz_coll_sched.c $(filter-out %/sched.o,$(FUZZ_COLL)) $(call obj,fuzz,$(LIBTII_SRC))
	@mkdir -p $(dir $@)
	clang $(FUZZ_FLAGS) $(MPI_INC) -Icoll -o $@ $(filter %.c %.o,$^) $(MPI_LINK) -lm -lpthread
$(B)/fuzz/fuzz_coll_topo: tests/fuzz/fuzz_coll_topo.c $(filter-out %/topo.o,$(FUZZ_COLL)) $(call obj,fuzz,$(LIBTII_SRC))
	@mkdir -p $(dir $@)
	clang $(FUZZ_FLAGS) $(MPI_INC) -Icoll -o $@ $(filter %.c %.o,$^) $(MPI_LINK) -lm -lpthread

# topoquery whole (main renamed), over libtii with the fake transport.
TQ_FUZZ_OBJ := $(call obj,fuzz,$(filter-out clients/topoquery/main.c,$(TOPOQUERY_SRC)) $(LIBTII_SRC))
$(B)/obj/fuzz/topoquery_main.o: clients/topoquery/main.c
	@mkdir -p $(dir $@)
	clang -g -O1 -fsanitize=fuzzer-no-link $(FUZZ_SAN) $(XCFLAGS) -Dmain=topoquery_main -c $< -o $@
$(B)/fuzz/fuzz_topoquery: tests/fuzz/fuzz_topoquery.c $(B)/obj/fuzz/topoquery_main.o $(TQ_FUZZ_OBJ)
	$(FUZZ_LINK) $(FUZZ_WRAP) $(TOPOQUERY_LIBS) -lm -lpthread

# MPI test programs: tests/mpi/X.c -> build/tests/mpi/X, linked against the
# shared libtii (with an rpath, so mpirun finds the build's, not an installed one).
# Warnings are errors: mpi.h and tii.h must both be clean for an MPI user.
MPI_SRC  := $(wildcard tests/mpi/*.c)
MPI_BINS := $(patsubst tests/mpi/%.c,$(B)/tests/mpi/%,$(MPI_SRC))
$(B)/tests/mpi/%: tests/mpi/%.c $(B)/lib/libtii.so libtii/tii.h
	@mkdir -p $(dir $@)
	$(MPICC_OMPI) -std=c11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Werror -Icommon -Ilibtii $(CPPFLAGS) -o $@ $< \
		-L$(B)/lib -ltii -Wl,-rpath,$(abspath $(B)/lib) $(LDFLAGS) -pthread

# The same programs for MPICH (mpicc.mpich): build/tests/mpich/X. MPICH
# 4.0 defines MPI_STATUSES_IGNORE as (MPI_Status *)1 and annotates
# MPI_Waitall's array size, which GCC 12 takes for an overflow.
MPICH_BINS := $(patsubst tests/mpi/%.c,$(B)/tests/mpich/%,$(MPI_SRC))
$(B)/tests/mpich/%: tests/mpi/%.c $(B)/lib/libtii.so libtii/tii.h
	@mkdir -p $(dir $@)
	$(MPICC_MPICH) -std=c11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-stringop-overflow -Werror -Icommon -Ilibtii $(CPPFLAGS) -o $@ $< \
		-L$(B)/lib -ltii -Wl,-rpath,$(abspath $(B)/lib) $(LDFLAGS) -pthread

# Preloaded into the tests' MPICH jobs (tests/lib/ucx_yield.c: idle ranks yield).
$(B)/tests/lib/libucx_yield.so: tests/lib/ucx_yield.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(XCFLAGS) -shared -fPIC -o $@ $< -ldl -pthread

# bench_delta: t_topod_prep.py makes its chain of deltas with it.
tests: $(B)/tests/lib/libucx_yield.so $(UNIT_BINS) $(ASAN_BINS) $(FUZZ_BINS) $(MPI_BINS) $(MPICH_BINS) $(B)/bench/bench_build $(B)/bench/bench_delta

# The benchmarks of the analyses link the library, never topod/: each is
# bench/bench_X.c + libtopoanalysis.a + the snapshot library.
# bench_build K: route/hier/share on a synthetic fat tree.
BENCH_DEPS := $(ANALYSIS_LIB) $(SNAP_LIB) $(wildcard analysis/*.h snapshot/*.h tests/unit/testfab.h)
BENCH_LINK = $(CC) $(CFLAGS) $(XCFLAGS) -Itests/unit -fopenmp -o $@ $< $(ANALYSIS_LIB) $(SNAP_LIB)
$(B)/bench/bench_build: bench/bench_build.c $(BENCH_DEPS)
	@mkdir -p $(dir $@)
	$(BENCH_LINK)

# ---- place ---- (benchmark of order/pick/map)
$(B)/bench/bench_place: bench/bench_place.c $(BENCH_DEPS)
	@mkdir -p $(dir $@)
	$(BENCH_LINK) $(PLACE_LIBS)

$(B)/bench/bench_delta: bench/bench_delta.c $(BENCH_DEPS)
	@mkdir -p $(dir $@)
	$(BENCH_LINK)

# bench_vmstall [SECONDS]: another thread's page faults and unmaps against
# one thread's loads, on this machine (no library: it measures the VM).
$(B)/bench/bench_vmstall: bench/bench_vmstall.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(XCFLAGS) -o $@ $<

bench: $(B)/bench/bench_build $(B)/bench/bench_place $(B)/bench/bench_delta $(B)/bench/bench_vmstall

# ---- profiler ----------------------------------------------------------------
# topoprof: the PMPI traffic profiler (docs/profiler.md). One self-contained
# shared object per MPI implementation, because a PMPI library is bound to
# its MPI's ABI: build/lib/libtopoprof.so for Open MPI (also
# build/lib/openmpi/), build/lib/mpich/libtopoprof.so for MPICH. libtii's
# PIC objects inside, only MPI_* exported (profiler/exports.map).
MPICC_OMPI  := mpicc.openmpi
MPICC_MPICH := mpicc.mpich
PROF_SRC := $(wildcard profiler/*.c)
PROF_LIB := $(B)/lib/libtopoprof.so
PROF_LIB_MPICH := $(B)/lib/mpich/libtopoprof.so
# No -fvisibility=hidden: MPICH's mpi.h, unlike Open MPI's, does not mark
# MPI_* visible, so the wrappers would vanish; the version script alone
# exports MPI_* and keeps everything else local.
PROF_BUILD = -std=c11 -D_GNU_SOURCE $(CFLAGS) $(WARN) -Werror -Icommon -Ilibtii -fPIC -shared \
	-Wl,--version-script=profiler/exports.map -Wl,-z,defs -o $@ $(PROF_SRC) \
	$(call obj,pic,$(LIBTII_SRC)) $(LDFLAGS) -lm -pthread
$(PROF_LIB): $(PROF_SRC) profiler/prof.h profiler/exports.map common/mpiabi.h $(call obj,pic,$(LIBTII_SRC))
	@mkdir -p $(dir $@) $(B)/lib/openmpi
	$(MPICC_OMPI) $(PROF_BUILD)
	ln -sf ../libtopoprof.so $(B)/lib/openmpi/libtopoprof.so
$(PROF_LIB_MPICH): $(PROF_SRC) profiler/prof.h profiler/exports.map common/mpiabi.h $(call obj,pic,$(LIBTII_SRC))
	@mkdir -p $(dir $@)
	$(MPICC_MPICH) $(PROF_BUILD)
all: $(PROF_LIB_MPICH)
# ---- collectives --------------------------------------------------------------
# topocoll: topology-aware collectives for unmodified MPI programs
# (docs/collectives.md), one self-contained PMPI library per MPI like the
# profiler: build/lib/libtopocoll.so (Open MPI; also openmpi/) and
# build/lib/mpich/libtopocoll.so.
COLL_SRC := $(wildcard coll/*.c)
# coll/an.c compiles these in (the cost model and the MPIs' own collectives)
COLL_AN := analysis/cost.c analysis/rate.c analysis/mprog.c analysis/native.c analysis/nativecoll.c \
	analysis/nativecoll_reduce.c \
	$(wildcard analysis/*.h)
COLL_LIB := $(B)/lib/libtopocoll.so
COLL_LIB_MPICH := $(B)/lib/mpich/libtopocoll.so
COLL_BUILD = -std=c11 -D_GNU_SOURCE $(CFLAGS) $(WARN) -Werror -Icommon -Ilibtii -Ianalysis -Isnapshot -fPIC -shared \
	-Wl,--version-script=coll/exports.map -Wl,-z,defs -o $@ $(COLL_SRC) \
	$(call obj,pic,$(LIBTII_SRC)) $(LDFLAGS) -pthread
$(COLL_LIB): $(COLL_SRC) $(COLL_AN) coll/coll.h coll/exports.map common/mpihost.h common/mpiabi.h $(call obj,pic,$(LIBTII_SRC))
	@mkdir -p $(dir $@) $(B)/lib/openmpi
	$(MPICC_OMPI) $(COLL_BUILD)
	ln -sf ../libtopocoll.so $(B)/lib/openmpi/libtopocoll.so
$(COLL_LIB_MPICH): $(COLL_SRC) $(COLL_AN) coll/coll.h coll/exports.map common/mpihost.h common/mpiabi.h $(call obj,pic,$(LIBTII_SRC))
	@mkdir -p $(dir $@)
	$(MPICC_MPICH) $(COLL_BUILD)
all: $(COLL_LIB) $(COLL_LIB_MPICH)
# topocoll and the profiler as one library, build/lib/libtopocollprof.so
# (and mpich/): two PMPI libraries preloaded together do not stack (the
# first takes every call, the other never runs), so here the profiler's
# wrappers, compiled with coll/behind_prof.h, call topocoll's entry points.
COLLPROF_LIB := $(B)/lib/libtopocollprof.so
COLLPROF_LIB_MPICH := $(B)/lib/mpich/libtopocollprof.so
COLLPROF_DEPS := $(PROF_SRC) profiler/prof.h common/mpiabi.h $(COLL_SRC) $(COLL_AN) coll/coll.h coll/behind_prof.h coll/exports.map \
	common/mpihost.h $(call obj,pic,$(LIBTII_SRC))
# $(call collprof,MPICC,OBJDIR)
collprof = mkdir -p $(dir $@) $2 && rm -f $2/*.o && \
	for f in $(PROF_SRC); do \
		case $$f in */wrap_*.c) inc="-include coll/behind_prof.h" ;; *) inc= ;; esac; \
		$1 -std=c11 -D_GNU_SOURCE $(CFLAGS) $(WARN) -Werror -Icommon -Ilibtii -fPIC $$inc \
			-c $$f -o $2/$$(basename $$f .c).o || exit 1; \
	done && \
	$1 -std=c11 -D_GNU_SOURCE -DTOPOCOLL_BEHIND_PROF $(CFLAGS) $(WARN) -Werror -Icommon -Ilibtii -Ianalysis -Isnapshot \
		-fPIC -shared \
		-Wl,--version-script=coll/exports.map -Wl,-z,defs -o $@ $2/*.o $(COLL_SRC) \
		$(call obj,pic,$(LIBTII_SRC)) $(LDFLAGS) -lm -pthread
$(COLLPROF_LIB): $(COLLPROF_DEPS)
	$(call collprof,$(MPICC_OMPI),$(B)/collprof/openmpi)
$(COLLPROF_LIB_MPICH): $(COLLPROF_DEPS)
	$(call collprof,$(MPICC_MPICH),$(B)/collprof/mpich)
all: $(COLLPROF_LIB) $(COLLPROF_LIB_MPICH)
# Under AddressSanitizer and UBSan, for t_coll.sh (preloaded after libasan).
COLL_LIB_ASAN := $(B)/lib/asan/libtopocoll.so
$(COLL_LIB_ASAN): $(COLL_SRC) $(COLL_AN) coll/coll.h coll/exports.map common/mpihost.h common/mpiabi.h $(LIBTII_SRC)
	@mkdir -p $(dir $@)
	$(MPICC_OMPI) -std=c11 -D_GNU_SOURCE -O1 -g $(SAN) $(WARN) -Werror -Icommon -Ilibtii -Ianalysis -Isnapshot -fPIC -shared \
		-Wl,--version-script=coll/exports.map -o $@ $(COLL_SRC) $(LIBTII_SRC) -pthread
COLL_LIB_ASAN_MPICH := $(B)/lib/asan/mpich/libtopocoll.so
$(COLL_LIB_ASAN_MPICH): $(COLL_SRC) $(COLL_AN) coll/coll.h coll/exports.map common/mpihost.h common/mpiabi.h $(LIBTII_SRC)
	@mkdir -p $(dir $@)
	$(MPICC_MPICH) -std=c11 -D_GNU_SOURCE -O1 -g $(SAN) $(WARN) -Werror -Icommon -Ilibtii -Ianalysis -Isnapshot -fPIC -shared \
		-Wl,--version-script=coll/exports.map -o $@ $(COLL_SRC) $(LIBTII_SRC) -pthread
tests: $(COLL_LIB_ASAN) $(COLL_LIB_ASAN_MPICH)
install: install-coll
install-coll: $(COLL_LIB) $(COLL_LIB_MPICH) $(COLLPROF_LIB) $(COLLPROF_LIB_MPICH)
	install -d $(DESTDIR)$(LIBDIR)/openmpi $(DESTDIR)$(LIBDIR)/mpich $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(DOCDIR)
	install -m 755 $(COLL_LIB) $(DESTDIR)$(LIBDIR)/libtopocoll.so
	install -m 755 $(COLL_LIB) $(DESTDIR)$(LIBDIR)/openmpi/libtopocoll.so
	install -m 755 $(COLL_LIB_MPICH) $(DESTDIR)$(LIBDIR)/mpich/libtopocoll.so
	install -m 755 $(COLLPROF_LIB) $(DESTDIR)$(LIBDIR)/libtopocollprof.so
	install -m 755 $(COLLPROF_LIB) $(DESTDIR)$(LIBDIR)/openmpi/libtopocollprof.so
	install -m 755 $(COLLPROF_LIB_MPICH) $(DESTDIR)$(LIBDIR)/mpich/libtopocollprof.so
	install -m 644 man/topocoll.7 $(DESTDIR)$(MANDIR)/man7/
	install -m 644 docs/collectives.md $(DESTDIR)$(DOCDIR)/
.PHONY: install-coll

# The report builder without MPI, for the offline benchmark (synthetic traffic).
PROF_REP_SRC := profiler/report.c profiler/svg.c profiler/fabric.c profiler/links.c
$(B)/bench/prof_report: bench/prof_report.c $(PROF_REP_SRC) profiler/prof.h $(B)/lib/libtii.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(XCFLAGS) -Iprofiler -o $@ bench/prof_report.c $(PROF_REP_SRC) $(B)/lib/libtii.a -lm
# The small-message rate benchmark (a plain MPI program) and the memory
# benchmark (profiler/count.c with the PMPI calls it makes answered by the
# benchmark itself, so it can size the counters for 4,096 peers).
$(B)/bench/prof_rate: bench/prof_rate.c
	@mkdir -p $(dir $@)
	$(MPICC_OMPI) -std=c11 -D_GNU_SOURCE $(CFLAGS) $(WARN) -Werror -o $@ $<
$(B)/bench/prof_mem: bench/prof_mem.c bench/pmpi_stub.c bench/pmpi_stub.h profiler/count.c profiler/prof.h
	@mkdir -p $(dir $@)
	$(MPICC_OMPI) -std=c11 -D_GNU_SOURCE $(CFLAGS) $(WARN) -Werror -o $@ bench/prof_mem.c bench/pmpi_stub.c profiler/count.c -pthread
# topoquery profile reads the report's JSON with Jansson (libjansson-dev).
TOPOQUERY_LIBS := -ljansson
# Unit test of the report builder (no MPI), plain and under ASan+UBSan;
# tests/run.sh runs everything in build/tests/.
PROF_UNIT_SRC := tests/profiler/test_profreport.c $(PROF_REP_SRC) $(LIBTII_SRC)
$(B)/tests/test_profreport: $(PROF_UNIT_SRC) profiler/prof.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(XCFLAGS) -Iprofiler -o $@ $(PROF_UNIT_SRC) -lm
$(B)/tests/asan/test_profreport: $(PROF_UNIT_SRC) profiler/prof.h
	@mkdir -p $(dir $@)
	$(CC) -O1 -g $(SAN) $(XCFLAGS) -Iprofiler -o $@ $(PROF_UNIT_SRC) -lm
tests: $(B)/tests/test_profreport $(B)/tests/asan/test_profreport
all: $(PROF_LIB)
install: install-profiler
install-profiler: $(PROF_LIB) $(PROF_LIB_MPICH)
	install -d $(DESTDIR)$(LIBDIR)/openmpi $(DESTDIR)$(LIBDIR)/mpich $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(DOCDIR)
	install -m 755 $(PROF_LIB) $(DESTDIR)$(LIBDIR)/libtopoprof.so
	install -m 755 $(PROF_LIB) $(DESTDIR)$(LIBDIR)/openmpi/libtopoprof.so
	install -m 755 $(PROF_LIB_MPICH) $(DESTDIR)$(LIBDIR)/mpich/libtopoprof.so
	install -m 644 man/topoprof.7 $(DESTDIR)$(MANDIR)/man7/
	install -m 644 docs/profiler.md $(DESTDIR)$(DOCDIR)/
.PHONY: install-profiler
bench: $(B)/bench/prof_report $(B)/bench/prof_rate $(B)/bench/prof_mem

# ---- sched ----
# Schedule benchmark (seed 004 Table 6.1): bench/bench_sched K HOSTS RANKS [THREADS]
$(B)/bench/bench_sched: bench/bench_sched.c $(BENCH_DEPS)
	@mkdir -p $(dir $@)
	$(BENCH_LINK)
tests: $(B)/bench/bench_sched
bench: $(B)/bench/bench_sched
# ---- end sched ----

# ---- the two commands a newcomer types ------------------------------------
# Both build with one job per core (BUILD_JOBS=N to change it), unless make
# was given -j itself: then its choice and jobserver are kept. tests/run.sh
# runs the tests in parallel too (TEST_JOBS=N; its header says how).
BUILD_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
JOBS_FLAG = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(BUILD_JOBS))

deps:
	@sh tests/deps.sh

check: deps
	$(MAKE) $(JOBS_FLAG) all tests
	@bash tests/run.sh $(T)

demo: deps
	$(MAKE) $(JOBS_FLAG) all
	@bash tests/demo.sh

clean:
	rm -rf $(B)

# ---- install ----------------------------------------------------------------
# OpenSM dlopen()s lib<name>.so by bare name, so the plugin goes into the
# linker's default search path (the multiarch libdir), not a private one.
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
PLUGINDIR ?= $(PREFIX)/lib/$(MULTIARCH)
LIBDIR ?= $(PREFIX)/lib/$(MULTIARCH)
INCLUDEDIR ?= $(PREFIX)/include
# Configuration lives in /etc for a system PREFIX (/usr, /usr/local: the
# unit reads /etc/topod/topod.conf), in PREFIX/etc for any other (a private
# tree must not write the machine's /etc); units go where systemd looks for
# this PREFIX (/usr/local/lib/systemd/system is on its search path).
SYSTEM_PREFIX := $(filter /usr /usr/local,$(PREFIX))
SYSCONFDIR ?= $(if $(SYSTEM_PREFIX),/etc,$(PREFIX)/etc)
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
DOCDIR ?= $(DATADIR)/doc/topod
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
# The example config goes to $(SYSCONFDIR)/topod only if none is there (never
# overwrite an administrator's). The loader finds /usr/local/lib/<multiarch>
# only through ld.so.cache, so a real install (no DESTDIR) as root into a
# system PREFIX runs ldconfig; otherwise run it yourself (docs/admin-guide.md).
MAN_PAGES := man/topoquery.1 man/topo-snap.1 man/tii.3 man/topod.conf.5 man/topod.8 man/topo-collect.8
DOCS := docs/admin-guide.md docs/libtii.md docs/protocol.md docs/architecture.md \
	docs/snapshot-format.md docs/performance.md docs/ingest.md clients/topoquery/README-format.md \
	docs/scheduling.md docs/reliability.md docs/cost-model.md docs/metrics.md

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PLUGINDIR)
	install -m 755 $(B)/bin/topod $(DESTDIR)$(PREFIX)/sbin/topod
	install -m 755 $(B)/bin/topo-collect $(DESTDIR)$(PREFIX)/sbin/topo-collect
	install -m 755 $(B)/bin/topo-snap $(DESTDIR)$(PREFIX)/bin/topo-snap
	install -m 644 $(B)/lib/libosmtopo.so $(DESTDIR)$(PLUGINDIR)/libosmtopo.so
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)
	install -m 755 $(B)/lib/libtii.so.$(TII_VER) $(DESTDIR)$(LIBDIR)/
	ln -sf libtii.so.$(TII_VER) $(DESTDIR)$(LIBDIR)/libtii.so.$(TII_SOVER)
	ln -sf libtii.so.$(TII_SOVER) $(DESTDIR)$(LIBDIR)/libtii.so
	install -m 644 $(B)/lib/libtii.a $(DESTDIR)$(LIBDIR)/
	install -m 644 libtii/tii.h common/topo_limits.h $(DESTDIR)$(INCLUDEDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	    libtii/tii.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/tii.pc
	install -m 755 $(B)/bin/topoquery $(DESTDIR)$(PREFIX)/bin/topoquery
	install -m 755 clients/slurm/sbatch-topo $(DESTDIR)$(PREFIX)/bin/sbatch-topo
	for p in $(MAN_PAGES); do \
		s=$${p##*.}; install -d $(DESTDIR)$(MANDIR)/man$$s && \
		install -m 644 $$p $(DESTDIR)$(MANDIR)/man$$s/ || exit 1; \
	done
	install -d $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(SYSCONFDIR)/topod
	sed -e 's|/usr/local/sbin/topod|$(PREFIX)/sbin/topod|' -e 's|/etc/topod/|$(SYSCONFDIR)/topod/|' \
	    systemd/topod.service > $(DESTDIR)$(SYSTEMDUNITDIR)/topod.service
	chmod 644 $(DESTDIR)$(SYSTEMDUNITDIR)/topod.service
	install -m 644 systemd/topod.conf systemd/opensm-osmtopo.conf $(DESTDIR)$(DOCDIR)/examples/
	install -m 644 $(DOCS) $(DESTDIR)$(DOCDIR)/
	test -e $(DESTDIR)$(SYSCONFDIR)/topod/topod.conf || \
		install -m 644 systemd/topod.conf $(DESTDIR)$(SYSCONFDIR)/topod/topod.conf
	if [ -z "$(DESTDIR)" ] && [ -n "$(SYSTEM_PREFIX)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi

.PHONY: all deps check demo clean install tests bench

# Objects are intermediate to the unit tests and benchmarks: keep them, so
# that editing one test rebuilds one program, not every object.
.SECONDARY:

# ---- load ----
# Link loads of job patterns (issue 9 item 1): bench/bench_load K [HOSTS [RPH [THREADS [PATTERN]]]]
$(B)/bench/bench_load: bench/bench_load.c $(BENCH_DEPS)
	@mkdir -p $(dir $@)
	$(BENCH_LINK)
tests: $(B)/bench/bench_load
bench: $(B)/bench/bench_load

# ---- libtii ----
# The libtii checker (tests/integration/t_tii_check.c), linked as users link
# libtii.a, for the lab scripts (t_tii_lab.sh runs its "every" scenario on
# real OpenSM fabrics); t_tii_api.py builds its own plain and ASan copies.
$(B)/tests/clients/tii_check: tests/integration/t_tii_check.c $(B)/lib/libtii.a libtii/tii.h common/topo_limits.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(XCFLAGS) $(CPPFLAGS) -o $@ $< $(B)/lib/libtii.a $(LDFLAGS)
tests: $(B)/tests/clients/tii_check

# ---- routeopt ----
# topo-routeopt: pattern-specific routes for XGFTs (seed 001), GLPK for the
# per-layer ILPs; written as an LFT file for OpenSM's `file` engine.
# analysis/pattern.c (through the library): the pattern names are one module
# for topod and the optimiser.
ROUTEOPT_SRC := $(wildcard clients/routeopt/*.c)
ROUTEOPT_LIB := $(filter-out clients/routeopt/main.c,$(ROUTEOPT_SRC))
all: $(B)/bin/topo-routeopt
tests: $(B)/tests/test_routeopt $(B)/tests/asan/test_routeopt

$(B)/bin/topo-routeopt: $(call obj,std,$(ROUTEOPT_SRC)) $(ANALYSIS_LIB) $(SNAP_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lglpk

# The unit test links the optimiser, not topod (explicit rules beat the
# tests/unit pattern rules above).
$(B)/tests/test_routeopt: tests/unit/test_routeopt.c $(call obj,unit,$(ROUTEOPT_LIB)) $(ANALYSIS_LIB) $(SNAP_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(XCFLAGS) -Iclients/routeopt -o $@ $^ -lglpk

$(B)/tests/asan/test_routeopt: tests/unit/test_routeopt.c $(call obj,unitsan,$(ROUTEOPT_LIB)) $(ANALYSIS_SAN) $(SNAP_SAN)
	@mkdir -p $(dir $@)
	$(CC) -O1 -g $(SAN) $(XCFLAGS) -Iclients/routeopt -o $@ $^ -lglpk

install: install-routeopt
install-routeopt: $(B)/bin/topo-routeopt
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(DOCDIR)
	install -m 755 $(B)/bin/topo-routeopt $(DESTDIR)$(PREFIX)/sbin/topo-routeopt
	install -m 644 man/topo-routeopt.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 644 docs/routeopt.md $(DESTDIR)$(DOCDIR)/
.PHONY: install-routeopt

# ---- a lab fabric that stays up --------------------------------------------
# make lab: the demo's fabric (ibsim, OpenSM with the plugin, topod) until ^C
# or make lab-stop; it prints how to query and change it (tests/lab/keep.sh).
lab: deps
	$(MAKE) all
	@bash tests/lab/keep.sh
lab-stop:
	@bash tests/lab/keep.sh stop
# eval "$(make -s lab-env)": the running lab's TII_SERVERS (docs/collectives.md).
lab-env:
	@bash tests/lab/keep.sh env
.PHONY: lab lab-stop lab-env

# bench_sched_e2e: a `schedule` request end to end, topod's server in
# process and libtii as the client (docs/performance.md).
$(B)/bench/bench_sched_e2e: bench/bench_sched_e2e.c $(UNIT_OBJ) $(B)/lib/libtii.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(XCFLAGS) -Itopod -Itests/unit -fopenmp -o $@ $< $(UNIT_OBJ) $(B)/lib/libtii.a \
		-levent -levent_pthreads -lsodium $(PLACE_LIBS)

# ---- deb ----
# make deb: the Debian packages of debian/ into build/deb/ (admin guide,
# "Installing from the Debian packages"). dpkg-buildpackage runs in a copy of
# the tree, build/deb/topod/, so its clean never touches this tree's build/;
# the copy keeps its own build/ between runs: a second make deb compiles only
# what changed. DEB_JOBS=N limits the parallel jobs (default: all cores).
DEB_DIR  := $(B)/deb
DEB_SRC  := $(DEB_DIR)/topod
DEB_JOBS ?= auto
deb:
	@v=$$(dpkg-parsechangelog -l debian/changelog -S Version) && [ "$$v" = "$(VERSION)" ] || \
		{ echo "make deb: debian/changelog is at $$v but VERSION is $(VERSION): add an entry (dch -v $(VERSION))" >&2; exit 1; }
	@mkdir -p $(DEB_SRC)
	find $(DEB_SRC) -mindepth 1 -maxdepth 1 ! -name build -exec rm -rf {} +
	tar -cf - --exclude=./build --exclude=./.git . | tar -xf - -C $(DEB_SRC)
	cd $(DEB_SRC) && dpkg-buildpackage -b -nc -us -uc -j$(DEB_JOBS)
.PHONY: deb
