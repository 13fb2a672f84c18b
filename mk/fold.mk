# foldable-LN analysis (foldcheck), folding (fold), their tests and benchmark
CPU_PROGRAMS += foldcheck fold test_graph bench_fold
foldcheck: $(BUILD)/foldcheck.o $(LLMC_LIB)
	$(LINK)
fold: $(BUILD)/fold.o $(LLMC_LIB)
	$(LINK)
test_graph: $(BUILD)/test/test_graph.o $(LLMC_LIB)
	$(LINK)
bench_fold: $(BUILD)/dev/bench/bench_fold.o $(LLMC_LIB)
	$(LINK)
CPU_PROGRAMS += test_graph_soundness
test_graph_soundness: $(BUILD)/test/test_graph_soundness.o $(LLMC_LIB)
	$(LINK)
CPU_PROGRAMS += test_fold
test_fold: $(BUILD)/test/test_fold.o $(LLMC_LIB)
	$(LINK)
