# Every test/test_NAME.c is a test program bin/test_NAME (helpers go
# elsewhere, without the test_ prefix); a suite in test/suites/ runs it.
TEST_PROGRAMS := $(patsubst test/%.c,%,$(wildcard test/test_*.c))
CPU_PROGRAMS += $(TEST_PROGRAMS)
$(BIN)/test_%: $(BUILD)/test/test_%.o $(LLMC_LIB)
	$(LINK)
