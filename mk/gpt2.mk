# The GPT-2 trainer on the CPU and its benchmarks (dev/bench).
CPU_PROGRAMS += train_gpt2
$(BIN)/train_gpt2: $(BUILD)/train_gpt2.o $(LLMC_LIB)
	$(LINK)

# training steps per norm mode and precision, the norm kernels against a copy, AdamW
CPU_PROGRAMS += bench_gpt2 bench_norms bench_adamw
$(BIN)/bench_gpt2: $(BUILD)/dev/bench/bench_gpt2.o $(LLMC_LIB)
	$(LINK)
$(BIN)/bench_norms: $(BUILD)/dev/bench/bench_norms.o $(LLMC_LIB)
	$(LINK)
$(BIN)/bench_adamw: $(BUILD)/dev/bench/bench_adamw.o $(LLMC_LIB)
	$(LINK)
