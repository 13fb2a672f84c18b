# The text tools: GPT-2 tokenizer, corpora into shards, sampling, Alpaca SFT
LDLIBS += -lpcre2-8 -lcjson
CPU_PROGRAMS += tokenizer
$(BIN)/tokenizer: $(BUILD)/tools/tokenizer.o $(LLMC_LIB)
	$(LINK)
CPU_PROGRAMS += bpe_shards
$(BIN)/bpe_shards: $(BUILD)/tools/bpe_shards.o $(LLMC_LIB)
	$(LINK)
CPU_PROGRAMS += alpaca_to_sft
$(BIN)/alpaca_to_sft: $(BUILD)/tools/alpaca_to_sft.o $(LLMC_LIB)
	$(LINK)
CPU_PROGRAMS += sample
$(BIN)/sample: $(BUILD)/tools/sample.o $(LLMC_LIB)
	$(LINK)
CPU_PROGRAMS += bench_tokenizer
$(BIN)/bench_tokenizer: $(BUILD)/dev/bench/bench_tokenizer.o $(LLMC_LIB)
	$(LINK)
# real instruction data: GCIDE entries into Alpaca JSON (the sft study)
CPU_PROGRAMS += gcide_to_alpaca
$(BIN)/gcide_to_alpaca: $(BUILD)/tools/gcide_to_alpaca.o $(LLMC_LIB)
	$(LINK)
# Hugging Face GPT-2 checkpoints (safetensors) in and out
CPU_PROGRAMS += hf_gpt2
$(BIN)/hf_gpt2: $(BUILD)/tools/hf_gpt2.o $(LLMC_LIB)
	$(LINK)
# generation with and without the KV cache (make bench)
CPU_PROGRAMS += bench_sample
$(BIN)/bench_sample: $(BUILD)/dev/bench/bench_sample.o $(LLMC_LIB)
	$(LINK)
# a multiple-choice eval set (llm.c's eval format) from GCIDE's held-out headwords
CPU_PROGRAMS += gcide_to_mc
$(BIN)/gcide_to_mc: $(BUILD)/tools/gcide_to_mc.o $(LLMC_LIB)
	$(LINK)
