build/obj/std/snapshot/sink.o: snapshot/sink.c snapshot/sink.h \
 snapshot/snapshot.h
snapshot/sink.h:
snapshot/snapshot.h:
