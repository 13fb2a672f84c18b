# ViT / Swin image classifiers (issue 5): trainer, reference checker, data tools.
CPU_PROGRAMS += train_vit test_vit
LDLIBS += -lz

$(BIN)/train_vit: $(BUILD)/train_vit.o $(LLMC_LIB)
	$(LINK)
$(BIN)/test_vit: $(BUILD)/test/test_vit.o $(LLMC_LIB)
	$(LINK)

CPU_PROGRAMS += images_to_shard
$(BIN)/images_to_shard: $(BUILD)/tools/images_to_shard.o $(LLMC_LIB)
	$(LINK) -ljpeg

# the vectorized kernels (fast_exp.h, gelu.c, tile_gemm.c, attention_bidir.c) vs double references
CPU_PROGRAMS += test_kernels
$(BIN)/test_kernels: $(BUILD)/test/test_kernels.o $(LLMC_LIB)
	$(LINK)

# training-step time of the demo ViT / Swin, wall and CPU (dev/bench/bench_vision.c)
CPU_PROGRAMS += bench_vision
$(BIN)/bench_vision: $(BUILD)/dev/bench/bench_vision.o $(LLMC_LIB)
	$(LINK)

# tile_gemm's multiply-adds as FMAs (-std=c11 turns contraction off)
$(BUILD)/llmc/tile_gemm.o: CFLAGS += -ffp-contract=fast
