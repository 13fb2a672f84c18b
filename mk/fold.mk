# foldable-LN analysis (foldcheck), folding (fold) and their benchmark
CPU_PROGRAMS += foldcheck fold bench_fold
$(BIN)/foldcheck: $(BUILD)/tools/foldcheck.o $(LLMC_LIB)
	$(LINK) $(ONNX_LIBS)
$(BIN)/fold: $(BUILD)/tools/fold.o $(LLMC_LIB)
	$(LINK) $(ONNX_LIBS)
$(BIN)/bench_fold: $(BUILD)/dev/bench/bench_fold.o $(LLMC_LIB)
	$(LINK)
