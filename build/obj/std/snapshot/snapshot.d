build/obj/std/snapshot/snapshot.o: snapshot/snapshot.c \
 snapshot/snapshot.h
snapshot/snapshot.h:
