# bench_gemm: OpenBLAS vs BLIS vs oneDNN (fp32 and bf16) at GPT-2's matmul
# shapes (dev/bench/bench_gemm.c). Needs scripts/deps/bench.txt's libraries;
# built by `make bench_gemm` (make bench builds it), not by `make all`.
BLIS_OMP := /usr/lib/$(MULTIARCH)/blis-openmp
BLIS_INCLUDE := /usr/include/$(MULTIARCH)/blis-openmp
# OpenBLAS first on the include and link lines: its cblas.h and cblas_sgemm,
# BLIS through its own bli_sgemm only (both libraries export cblas_sgemm)
$(BIN)/bench_gemm: dev/bench/bench_gemm.c $(LLMC_LIB)
	@[ -f $(BLIS_INCLUDE)/blis.h ] && [ -f /usr/include/oneapi/dnnl/dnnl.h ] || \
	    { echo "bench_gemm needs libblis-openmp-dev and libdnnl-dev (make deps)" >&2; exit 1; }
	mkdir -p $(@D) && $(CC) $(CFLAGS) -isystem $(BLIS_INCLUDE) $< -o $@ $(LLMC_LIB) $(BLAS_LIBS) \
	    -L$(BLIS_OMP) -Wl,-rpath,$(BLIS_OMP) -lblis -ldnnl $(LDLIBS)
.PHONY: bench_gemm
bench_gemm: $(BIN)/bench_gemm
