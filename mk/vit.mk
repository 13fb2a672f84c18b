# ViT / Swin image classifiers (issue 5): trainer, reference checker, data tools.
CPU_PROGRAMS += train_vit test_vit
LDLIBS += -lz

train_vit: $(BUILD)/train_vit.o $(LLMC_LIB)
	$(LINK)
test_vit: $(BUILD)/test/test_vit.o $(LLMC_LIB)
	$(LINK)

CPU_PROGRAMS += images_to_shard
images_to_shard: $(BUILD)/dev/data/images_to_shard.o $(LLMC_LIB)
	$(LINK) -ljpeg
