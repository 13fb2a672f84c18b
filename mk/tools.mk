# Small tools of every family: text into token shards, what this machine and
# build are (bin/cpu_info: CPU flags, oneDNN's ISA, OpenBLAS's kernels).
CPU_PROGRAMS += text_to_shard cpu_info
$(BIN)/text_to_shard: $(BUILD)/tools/text_to_shard.o $(LLMC_LIB)
	$(LINK)
$(BIN)/cpu_info: $(BUILD)/tools/cpu_info.o $(LLMC_LIB)
	$(LINK)
