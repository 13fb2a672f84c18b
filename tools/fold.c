// fold: turns a model trained in ln or cbwc mode (or any llm.c GPT-2 file) into
// an inference model whose foldable LNs are RMSNorm and whose CBWC layers
// hold V and the centred bias directly (docs/math.md sections 3-5): a GPT-2
// (llmc/fold/gpt2_fold.c) or a ViT / Swin (llmc/fold/vision_fold.c), told apart by the
// file's magic. Which norms fold and which layers are centred comes from the
// zero-mean analysis of the model's graph, not from a fixed list. An ONNX
// model (told apart by its name or its first byte, a ModelProto's ir_version
// tag) is folded in place of its own initializers and norm ops
// (llmc/fold/onnx_fold.c).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_write.h"
#include "core/cli.h"
#include "core/reader.h"
#include "fold/onnx_fold.h"
#include "gpt2/gpt2.h"
#include "fold/gpt2_fold.h"
#include "core/utils.h"
#include "fold/vision_fold.h"
#include "vision/vision_model.h"

static void fold_gpt2(const char *in_path, const char *out_path) {
    GPT2 model;
    gpt2_load(&model, in_path);
    gpt2_fold(&model, in_path);
    gpt2_save(&model, out_path);
    const int L = model.config.num_layers;
    printf("fold: %s -> %s: %d/%d LNs -> RMSNorm, %d layers centred (wte + m_t for the tied "
           "head, wpe, %d attn c_proj, %d mlp c_proj)\n",
           in_path, out_path, model.folded_norms, 2 * L + 1, 2 * L + 2, L, L);
    gpt2_free(&model);
}

static void fold_vision(const char *in_path, const char *out_path) {
    VisionConfig config;
    float *params;
    size_t n;
    vision_model_read(in_path, -1, &config, &params, &n);
    const NormMode mode = config.mode;
    VisionFoldReport r;
    vision_fold(&config, params, in_path, &r);
    vision_model_write(out_path, &config, params, n);
    printf("fold: %s -> %s: %s (%s), %d/%d LNs -> RMSNorm (the other %d stay LayerNorm), %d "
           "layers centred\n",
           in_path, out_path, vision_family_name(config.family), norm_mode_name(mode),
           r.folded_norms, r.num_norms, r.num_norms - r.folded_norms, r.centred_layers);
    free(params);
}

// ONNX files over this are refused (protobuf's own limit is 2 GiB)
#define ONNX_MAX_BYTES ((size_t)2 << 30)

typedef struct {
    const uint8_t *bytes;
    size_t len;
} Bytes;

static void write_bytes(FILE *f, const char *path, const void *ctx) {
    const Bytes *b = ctx;
    fwrite_check(b->bytes, 1, b->len, f, path);
}

static int is_onnx_file(const char *path) {
    size_t n = strlen(path);
    if (n > 5 && strcmp(path + n - 5, ".onnx") == 0) {
        return 1;
    }
    FILE *f = fopen(path, "rb");
    int first = f != NULL ? fgetc(f) : EOF;
    if (f != NULL) {
        fclose(f);
    }
    return first == 0x08; // field 1 (ir_version), varint
}

static void fold_onnx(const char *in_path, const char *out_path, const OnnxFoldOptions *opt) {
    unsigned char *bytes;
    size_t len;
    char err[1024];
    if (read_file_bytes(in_path, ONNX_MAX_BYTES, &bytes, &len, err, sizeof(err)) != 0) {
        fatal("%s: %s", in_path, err);
    }
    double t0 = now_seconds();
    uint8_t *out;
    size_t out_len;
    OnnxFoldReport r;
    if (onnx_fold(bytes, len, in_path, opt, &out, &out_len, &r, err, sizeof(err)) != 0) {
        free(bytes);
        fatal("%s", err);
    }
    free(bytes);
    Bytes b = {out, out_len};
    write_file_atomic(out_path, write_bytes, &b);
    free(out);
    printf("fold: %s -> %s: %d/%d norms foldable, %d LayerNormalization -> %s, %d foldable left as "
           "they are (exact on their zero-mean input), %d layers centred%s (%.2f s)\n",
           in_path, out_path, r.num_foldable, r.num_norms, r.replaced,
           opt->rms_opset >= 23 ? "RMSNormalization" : "RMS norm (Pow ReduceMean Add Sqrt Div Mul)",
           r.kept_decomposed, r.centred_layers, opt->no_centre ? " (NOT centred: --no-centre)" : "",
           now_seconds() - t0);
}

int main(int argc, char **argv) {
    int opset = 17, no_centre = 0;
    CliFlag flags[] = {
        {"--opset", CLI_INT, &opset, 17, 23,
         "ONNX: 23 writes each RMS norm as RMSNormalization (and raises the model's opset\n"
         "to 23); below 23 (default 17) as the primitive ops ONNX Runtime fuses", NULL, 0, 0},
        {"--no-centre", CLI_SWITCH, &no_centre, 0, 0,
         "ONNX: skip the centring (a WRONG fold, for the tests' negative control)", NULL, 0, 0},
    };
    CliSpec spec = {
        .program = "fold",
        .synopsis = "IN OUT [--opset 23]",
        .about = "  IN   a GPT-2 (llm.c's files are ln) or ViT / Swin model file in ln\n"
                 "       or cbwc mode, or an ONNX model (.onnx)\n"
                 "  OUT  the folded inference model (norm mode 'folded', docs/formats.md;\n"
                 "       ONNX: the same graph, CBWC layers centred, foldable LNs as RMS norms)\n",
        .flags = flags,
        .num_flags = CLI_COUNT(flags),
        .min_positional = 2,
        .max_positional = 2};
    const char *args[2];
    cli_parse(&spec, argc, argv, args);
    const char *in_path = args[0], *out_path = args[1];
    const int32_t magic = file_magic(in_path);
    if (magic != GPT2_MODEL_MAGIC && magic != VISION_MODEL_MAGIC && is_onnx_file(in_path)) {
        OnnxFoldOptions opt = {.rms_opset = opset >= 23 ? opset : 0, .no_centre = no_centre};
        fold_onnx(in_path, out_path, &opt);
    } else if (magic == GPT2_MODEL_MAGIC || magic == 0) {
        fold_gpt2(in_path, out_path);
    } else if (magic == VISION_MODEL_MAGIC) {
        fold_vision(in_path, out_path);
    } else {
        fatal("%s: not a GPT-2 model file (magic %d, expected %d) nor a ViT/Swin model file "
              "(magic %d)", in_path, magic, GPT2_MODEL_MAGIC, VISION_MODEL_MAGIC);
    }
    return EXIT_SUCCESS;
}
