// ONNX models in: maps an ONNX ModelProto onto the graph text format of the
// zero-mean analysis (docs/graph-format.md, "ONNX input"), so foldcheck can
// say which LayerNorms of a real exported model fold. The protobuf decoding
// is protobuf-c's, generated at build time from ONNX's own schema.
#ifndef FOLDNORM_ONNX_GRAPH_H
#define FOLDNORM_ONNX_GRAPH_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int onnx_nodes;        // nodes in the ONNX graph
    int opaque_nodes;      // analysis nodes standing for ops it does not model
    int unplaced_norms;    // norms whose feature axis the reader lost (counted, not foldable)
    char opaque_ops[512];  // "Erf x2 Where x2 ...": the ONNX op types behind them
} OnnxImportReport;

// Returns the graph text (caller frees) of the serialized model in data, or
// NULL with "SOURCE: what is wrong" in err. Never exits on bad input.
char *onnx_graph_text(const uint8_t *data, size_t len, const char *source,
                      OnnxImportReport *report, char *err, size_t err_len);

#endif
