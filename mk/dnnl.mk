# train_gpt2 as a build without oneDNN links it (make NO_DNNL=1), for
# test/suites/cpu_bf16.sh without a second full build: the same objects, but
# llmc/kernels/matmul_dnnl.c compiled without FOLDNORM_DNNL (its symbols then come
# from this object, and libdnnl is not linked: -Wl,--as-needed)
$(BUILD)/nodnnl/matmul_dnnl.o: llmc/kernels/matmul_dnnl.c $(LLMC_HEADERS) $(BUILD)/config.stamp
	@mkdir -p $(@D)
	$(CC) $(filter-out -DFOLDNORM_DNNL,$(CFLAGS)) -c $< -o $@
$(BUILD)/nodnnl/train_gpt2: $(BUILD)/train_gpt2.o $(BUILD)/nodnnl/matmul_dnnl.o $(LLMC_LIB)
	$(LINK)
# built with everything else, so that it has the same flags (make SAN=1 cpu)
cpu: $(BUILD)/nodnnl/train_gpt2
