# foldable-LN analysis (foldcheck), folding (fold), their tests and benchmark
CPU_PROGRAMS += foldcheck fold test_graph bench_fold
$(BIN)/foldcheck: $(BUILD)/tools/foldcheck.o $(LLMC_LIB)
	$(LINK)
$(BIN)/fold: $(BUILD)/tools/fold.o $(LLMC_LIB)
	$(LINK)
$(BIN)/test_graph: $(BUILD)/test/test_graph.o $(LLMC_LIB)
	$(LINK)
$(BIN)/bench_fold: $(BUILD)/dev/bench/bench_fold.o $(LLMC_LIB)
	$(LINK)
CPU_PROGRAMS += test_graph_soundness
$(BIN)/test_graph_soundness: $(BUILD)/test/test_graph_soundness.o $(LLMC_LIB)
	$(LINK)
CPU_PROGRAMS += test_fold
$(BIN)/test_fold: $(BUILD)/test/test_fold.o $(LLMC_LIB)
	$(LINK)
