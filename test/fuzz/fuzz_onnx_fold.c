// ONNX fold (llmc/fold/onnx_fold.c): the reader, the analysis and the writer,
// as bin/fold runs them on a .onnx file. A fold that succeeds must write a
// model the reader takes again (unique value names, topological order).
#include "fold/onnx_fold.h"
#include "fold/onnx_graph.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[1024] = {0};
    OnnxFoldOptions opt = {.rms_opset = size > 0 && (data[0] & 1) ? 23 : 0};
    OnnxFoldReport report;
    uint8_t *out = NULL;
    size_t out_len = 0;
    int rc = onnx_fold(data, size, "fuzz.onnx", &opt, &out, &out_len, &report, err, sizeof(err));
    fuzz_check_error(rc, err, sizeof(err));
    if (rc != 0) {
        return 0;
    }
    OnnxImportReport ir;
    char err2[1024] = {0};
    char *text = onnx_graph_text(out, out_len, "folded.onnx", &ir, err2, sizeof(err2));
    if (text == NULL && strstr(err2, "no graph or an empty one") == NULL &&
        strstr(err2, "nothing in the graph depends") == NULL) {
        fprintf(stderr, "the folded model does not read back: %s\n", err2);
        abort();
    }
    free(text);
    free(out);
    return 0;
}
