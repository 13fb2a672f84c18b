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

// Where an analysis node came from, for a fold that rewrites the model
// (llmc/fold/onnx_fold.c): one per node of the graph text, in its order.
typedef struct {
    int onnx_node;     // index in graph.node of the ONNX op it maps (-1: none)
    int norm_op;       // 1: a norm that is one ONNX op (LayerNormalization, ...)
    int weight_value;  // (reader's own indices)
    int bias_value;
    const char *weight; // linear family: its weight; param: the static tensor added (NULL)
    int weight_axis;    // the weight's axis of output features (a param's feature axis;
                        // < 0: the param is broadcast along the features)
    const char *bias;   // linear family: its bias (NULL)
    int bias_axis;
} OnnxOrigin;

struct Onnx__ModelProto;
// The same for a decoded model, with each analysis node's origin (*origins:
// caller frees; names point into the model).
char *onnx_graph_import(const struct Onnx__ModelProto *m, const char *source,
                        OnnxImportReport *report, OnnxOrigin **origins, int *num_origins,
                        char *err, size_t err_len);

// Returns the graph text (caller frees) of the serialized model in data, or
// NULL with "SOURCE: what is wrong" in err. Never exits on bad input.
char *onnx_graph_text(const uint8_t *data, size_t len, const char *source,
                      OnnxImportReport *report, char *err, size_t err_len);

#endif
