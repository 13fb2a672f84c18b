# ViT / Swin image classifiers: trainer and data tools (their tests:
# test/test_vit.c, test/test_kernels.c, built by mk/tests.mk's test_% rule).
CPU_PROGRAMS += train_vit
LDLIBS += $(ZLIB_LIBS)

$(BIN)/train_vit: $(BUILD)/train_vit.o $(LLMC_LIB)
	$(LINK)

CPU_PROGRAMS += images_to_shard
$(BIN)/images_to_shard: $(BUILD)/tools/images_to_shard.o $(LLMC_LIB)
	$(LINK) -ljpeg

# training-step time of the demo ViT / Swin, wall and CPU (dev/bench/bench_vision.c)
CPU_PROGRAMS += bench_vision
$(BIN)/bench_vision: $(BUILD)/dev/bench/bench_vision.o $(LLMC_LIB)
	$(LINK)

# tile_gemm's multiply-adds as FMAs (-std=c11 turns contraction off)
$(BUILD)/llmc/kernels/tile_gemm.o: CFLAGS += -ffp-contract=fast

# host augmentation throughput, one thread and the prefetch pool (dev/bench/bench_augment.c)
CPU_PROGRAMS += bench_augment
$(BIN)/bench_augment: $(BUILD)/dev/bench/bench_augment.o $(LLMC_LIB)
	$(LINK)

# the narrow layers through every matmul route, 1 thread and all (dev/bench/bench_narrow_gemm.c)
CPU_PROGRAMS += bench_narrow_gemm
$(BIN)/bench_narrow_gemm: $(BUILD)/dev/bench/bench_narrow_gemm.o $(LLMC_LIB)
	$(LINK)
