# issue 3: GPT-2 tokenizer, corpora into shards, sampling, Alpaca SFT
LDLIBS += -lpcre2-8 -lcjson
CPU_PROGRAMS += tokenizer
tokenizer: $(BUILD)/tokenizer.o $(LLMC_LIB)
	$(LINK)
CPU_PROGRAMS += bpe_shards
bpe_shards: $(BUILD)/dev/data/bpe_shards.o $(LLMC_LIB)
	$(LINK)
CPU_PROGRAMS += alpaca_to_sft
alpaca_to_sft: $(BUILD)/dev/data/alpaca_to_sft.o $(LLMC_LIB)
	$(LINK)
CPU_PROGRAMS += test_dataloader
test_dataloader: $(BUILD)/test/test_dataloader.o $(LLMC_LIB)
	$(LINK)
CPU_PROGRAMS += sample
sample: $(BUILD)/sample.o $(LLMC_LIB)
	$(LINK)
CPU_PROGRAMS += bench_tokenizer
bench_tokenizer: $(BUILD)/dev/bench/bench_tokenizer.o $(LLMC_LIB)
	$(LINK)
