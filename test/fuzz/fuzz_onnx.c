// ONNX models in (llmc/fold/onnx_graph.c): protobuf-c's decoding of a ModelProto,
// the mapping onto the graph text, then graph_parse and the analysis, as
// foldcheck runs them on a .onnx file.
#include "fuzz.h"
#include "fold/graph.h"
#include "fold/onnx_graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[READER_ERR_BYTES] = {0};
    OnnxImportReport report;
    char *text = onnx_graph_text(data, size, "fuzz.onnx", &report, err, sizeof(err));
    fuzz_check_error(text == NULL ? -1 : 0, err, sizeof(err));
    if (text == NULL) {
        return 0;
    }
    Graph g;
    char perr[768] = {0};
    int rc = graph_parse(&g, text, "fuzz.onnx", perr, sizeof(perr));
    free(text);
    fuzz_check_error(rc, perr, sizeof(perr));
    if (rc != 0) {
        return 0;
    }
    GraphAnalysis a;
    graph_analyze(&g, &a);
    graph_analysis_free(&a);
    graph_free(&g);
    return 0;
}
