# Data parallel across processes with Open MPI (llmc/comm.c) when it is
# installed; without it everything builds and runs as a single process.
# make NO_MPI=1 to build without it.
ifneq ($(NO_MPI),1)
  MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null)
  MPI_LIBS := $(shell pkg-config --libs ompi-c 2>/dev/null)
  ifneq ($(MPI_LIBS),)
    CFLAGS += -DFOLDNORM_MPI $(MPI_CFLAGS)
    LDLIBS += $(MPI_LIBS)
  endif
endif
