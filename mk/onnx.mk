# ONNX: the protobuf-c code for ONNX's schema is generated
# at build time from the onnx.proto that Debian's python3-onnx ships
# (scripts/deps/onnx.txt) into build/onnx/ (never committed) and lives in
# libllmc.a; the programs that read or write ONNX link -lprotobuf-c.
ONNX_PROTO ?= /usr/lib/python3/dist-packages/onnx/onnx.proto
ONNX_GEN := $(BUILD)/onnx
ONNX_LIBS := -lprotobuf-c
CFLAGS += -I$(ONNX_GEN)
LLMC_OBJS += $(ONNX_GEN)/onnx.pb-c.o

$(ONNX_GEN)/onnx.pb-c.c $(ONNX_GEN)/onnx.pb-c.h &: $(ONNX_PROTO)
	@mkdir -p $(ONNX_GEN)
	@command -v protoc-c > /dev/null || { echo "protoc-c not found: run make deps (scripts/deps/onnx.txt)"; exit 1; }
	cp $(ONNX_PROTO) $(ONNX_GEN)/onnx.proto
	cd $(ONNX_GEN) && protoc-c --c_out=. onnx.proto
$(ONNX_GEN)/onnx.pb-c.o: $(ONNX_GEN)/onnx.pb-c.c $(BUILD)/config.stamp
	$(CC) $(CFLAGS) -c $< -o $@
$(BUILD)/llmc/fold/onnx_graph.o $(BUILD)/llmc/fold/onnx_fold.o $(BUILD)/llmc/interop/onnx_export.o: $(ONNX_GEN)/onnx.pb-c.h

# the ONNX export tool
CPU_PROGRAMS += onnx_export
$(BIN)/onnx_export: $(BUILD)/tools/onnx_export.o $(LLMC_LIB)
	$(LINK) $(ONNX_LIBS)
