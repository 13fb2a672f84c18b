# The namespace test cluster's link delay (scripts/cluster/link_delay.c: a
# link's latency where the kernel has no tc netem), built where
# libnetfilter_queue is installed (scripts/deps/cluster.txt); without it the
# cluster suites' latency cases print SKIP naming it. Linked on its own: it
# uses nothing from llmc/.
NFQ_LIBS := $(shell pkg-config --libs libnetfilter_queue 2>/dev/null)
ifneq ($(NFQ_LIBS),)
  CPU_PROGRAMS += link_delay
  $(BIN)/link_delay: $(BUILD)/scripts/cluster/link_delay.o
	mkdir -p $(@D) && $(CC) $^ $(filter -fsanitize=%,$(LDLIBS)) $(NFQ_LIBS) -o $@
endif
# comm_allreduce_mean's time over message sizes (dev/bench/bench_allreduce.c)
CPU_PROGRAMS += bench_allreduce
$(BIN)/bench_allreduce: $(BUILD)/dev/bench/bench_allreduce.o $(LLMC_LIB)
	$(LINK)
