# Data parallel across processes with Open MPI (llmc/core/comm.c) when it is
# installed; without it everything builds and runs as a single process.
# make NO_MPI=1 to build without it.
# The GPU trainers and their emulation get it too: under mpirun without -pf
# the NCCL unique id goes by MPI_Bcast (llmc/cuda/multi_gpu.cuh), and the
# emulated NCCL carries ranks in separate processes over MPI
# (dev/cuda/emu/emu_nccl.cpp). A GPU image without MPI builds as before.
ifneq ($(NO_MPI),1)
  MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null)
  MPI_LIBS := $(shell pkg-config --libs ompi-c 2>/dev/null)
  ifneq ($(MPI_LIBS),)
    CFLAGS += -DFOLDNORM_MPI $(MPI_CFLAGS)
    LDLIBS += $(MPI_LIBS)
    # C++ includes mpi.h without Open MPI's C++ bindings (deprecated; they need -lmpi_cxx)
    NVCC_FLAGS += -DFOLDNORM_MPI -DOMPI_SKIP_MPICXX $(MPI_CFLAGS)
    CUDA_LDLIBS += $(MPI_LIBS)
    EMU_CXXFLAGS += -DFOLDNORM_MPI -DOMPI_SKIP_MPICXX $(MPI_CFLAGS)
  endif
endif
