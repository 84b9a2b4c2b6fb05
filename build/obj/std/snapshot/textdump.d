build/obj/std/snapshot/textdump.o: snapshot/textdump.c \
 snapshot/textdump.h snapshot/snapshot.h
snapshot/textdump.h:
snapshot/snapshot.h:
