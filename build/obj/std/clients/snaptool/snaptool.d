build/obj/std/clients/snaptool/snaptool.o: clients/snaptool/snaptool.c \
 snapshot/snapshot.h snapshot/textdump.h snapshot/snapshot.h
snapshot/snapshot.h:
snapshot/textdump.h:
snapshot/snapshot.h:
