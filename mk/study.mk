# The comparison studies' own programs (scripts/study.sh): ln vs cbwc (and the
# rms control) trained side by side, differences per step (dev/study/).
CPU_PROGRAMS += equivalence_steps
$(BIN)/equivalence_steps: $(BUILD)/dev/study/equivalence_steps.o $(LLMC_LIB)
	$(LINK)
