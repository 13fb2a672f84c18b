// ONNX models folded (issue 34): the CBWC layers the zero-mean analysis picks
// centred in the initializers, each foldable LayerNormalization replaced by an
// RMS norm, every other node and name left as it is (docs/graph-format.md,
// "Folding an ONNX model").
#ifndef FOLDNORM_ONNX_FOLD_H
#define FOLDNORM_ONNX_FOLD_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int rms_opset; // 0: the decomposed RMS norm ONNX Runtime fuses; 23: RMSNormalization
    int no_centre; // 1: skip the centring (a wrong fold: the tests' negative control)
} OnnxFoldOptions;

typedef struct {
    int num_norms; // norms in the file (the analysis' denominator)
    int num_foldable;
    int replaced;        // LayerNormalization ops replaced by an RMS norm
    int kept_decomposed; // foldable norms left as they are (written as primitive ops, or a
                         // LayerNormalization with a positive axis or read statistics): on a
                         // zero-mean input they compute the RMS norm already
    int centred_layers;  // linear / conv / embedding layers and params centred
} OnnxFoldReport;

// Folds the serialized model in data into *out (caller frees). Returns 0, or
// -1 with "SOURCE: what is wrong" in err (no output) when the file is not an
// ONNX model, keeps initializers in external files, or cannot be folded
// exactly (the reason names the layer and the reader it would change).
int onnx_fold(const uint8_t *data, size_t len, const char *source, const OnnxFoldOptions *opt,
              uint8_t **out, size_t *out_len, OnnxFoldReport *report, char *err, size_t err_len);

#endif
