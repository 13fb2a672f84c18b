// foldcheck: which LayerNorms of a network can become RMSNorm once a set of
// linear layers uses CBWC (docs/math.md section 3). Reads a GPT-2 or ViT /
// Swin model file, a graph text file (docs/graph-format.md) or a built-in config name.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "gpt2/gpt2.h"
#include "fold/graph.h"
#include "fold/onnx_graph.h"
#include "core/reader.h"
#include "core/utils.h"
#include "fold/vision_fold.h"
#include "vision/vision_model.h"

// ONNX files over this are refused (protobuf's own limit is 2 GiB)
#define ONNX_MAX_BYTES ((size_t)2 << 30)

// The graph of a GPT-2 model file's config (header only; gpt2_load checks the rest).
static char *model_file_graph(const char *path) {
    FILE *f = fopen_check(path, "rb");
    int32_t header[256];
    fread_check(header, sizeof(int32_t), 256, f, path, "the model header");
    fclose(f);
    GPT2Config cfg;
    NormMode mode;
    char err[READER_ERR_BYTES];
    if (gpt2_header_parse(header, &cfg, &mode, err, sizeof(err)) != 0) {
        fatal("%s: %s", path, err);
    }
    printf("model file %s: L=%d C=%d NH=%d V=%d, norm mode %s\n", path, cfg.num_layers,
           cfg.channels, cfg.num_heads, cfg.vocab_size, norm_mode_name(mode));
    return graph_gpt2_text(cfg.num_layers, cfg.channels, cfg.num_heads, cfg.vocab_size);
}

// The graph of a ViT / Swin model file's config (the file is read and checked whole).
static char *vision_file_graph(const char *path) {
    VisionConfig config;
    float *params;
    size_t n;
    vision_model_read(path, -1, &config, &params, &n);
    free(params);
    printf("model file %s: %s, norm mode %s, %d norms\n", path,
           vision_family_name(config.family), norm_mode_name(config.mode),
           vision_num_norms(&config));
    return vision_graph_text(&config);
}

static int is_onnx_path(const char *path) {
    size_t n = strlen(path);
    return n > 5 && strcmp(path + n - 5, ".onnx") == 0;
}

// The analysis graph of an ONNX model (docs/graph-format.md, "ONNX input").
static char *onnx_file_graph(const char *path) {
    unsigned char *bytes;
    size_t len;
    char err[READER_ERR_BYTES];
    if (read_file_bytes(path, ONNX_MAX_BYTES, &bytes, &len, err, sizeof(err)) != 0) {
        fatal("%s: %s", path, err);
    }
    OnnxImportReport report;
    char *text = onnx_graph_text(bytes, len, path, &report, err, sizeof(err));
    free(bytes);
    if (text == NULL) {
        fatal("%s", err);
    }
    fprintf(stderr, "onnx %s: %d nodes; %d opaque (not modelled, treated as not zero-mean)%s%s\n",
            path, report.onnx_nodes, report.opaque_nodes, report.opaque_nodes ? ": " : "",
            report.opaque_ops);
    if (report.unplaced_norms > 0) {
        fprintf(stderr, "onnx %s: %d norm%s not analysed (the reader lost the feature axis "
                "before them; counted, and NOT foldable)\n", path, report.unplaced_norms,
                report.unplaced_norms == 1 ? "" : "s");
    }
    return text;
}

static int file_exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f != NULL) {
        fclose(f);
    }
    return f != NULL;
}

static void print_report(const Graph *g, const GraphAnalysis *a, double ms) {
    printf("graph %s: %d nodes, %d LayerNorms (analysis %.3f ms)\n", g->name, g->num_nodes,
           a->num_layernorms, ms);
    char reason[1024];
    for (int i = 0; i < g->num_nodes; i++) {
        if (g->nodes[i].op != OP_LAYERNORM) {
            continue;
        }
        if (graph_ln_foldable(g, a, i)) {
            const uint64_t *needs = a->needs + (size_t)g->nodes[i].inputs[0] * a->words;
            int k = 0;
            for (int j = 0; j < g->num_nodes; j++) {
                k += graph_bit(needs, j);
            }
            printf("  LN %-36s foldable -> RMSNorm (input zero-mean given CBWC on %d layer%s)\n",
                   g->nodes[i].name, k, k == 1 ? "" : "s");
        } else {
            graph_ln_reason(g, a, i, reason, sizeof(reason));
            printf("  LN %-36s NOT foldable: %s\n", g->nodes[i].name, reason);
        }
    }
    printf("cbwc layers (%d):", a->num_cbwc);
    for (int i = 0; i < g->num_nodes; i++) {
        if (graph_bit(a->cbwc_set, i)) {
            printf(" %s(%s)", g->nodes[i].name, graph_op_name(g->nodes[i].op));
        }
    }
    printf("\n");
    // a centred weight also used by a layer outside S needs its uncentred copy there
    for (int i = 0; i < g->num_nodes; i++) {
        if (!graph_bit(a->cbwc_set, i) || !graph_is_linear_family(g->nodes[i].op)) {
            continue;
        }
        for (int j = 0; j < g->num_nodes; j++) {
            if (j != i && graph_is_linear_family(g->nodes[j].op) &&
                strcmp(g->nodes[i].weight, g->nodes[j].weight) == 0 &&
                (!graph_bit(a->cbwc_set, j) || g->nodes[j].op != g->nodes[i].op)) {
                printf("note: weight %s is centred for %s but %s reads it uncentred: keep both "
                       "(for a tied GPT-2 head: V plus m_t = mean(W_t), docs/math.md section 4)\n",
                       g->nodes[i].weight, g->nodes[i].name, g->nodes[j].name);
            }
        }
    }
    if (a->leak_layer < 0) {
        printf("exact fold of a trained LN model: yes (every centred output reaches only LNs)\n");
    } else if (a->leak_reader == a->leak_layer || g->nodes[a->leak_reader].num_inputs == 0) {
        printf("exact fold of a trained LN model: no (centring %s changes the graph output %s)\n",
               g->nodes[a->leak_layer].name, g->nodes[a->leak_reader].name);
    } else {
        printf("exact fold of a trained LN model: no (centring %s shifts the input of %s (%s), "
               "which does not absorb it; CBWC training is still valid)\n",
               g->nodes[a->leak_layer].name, g->nodes[a->leak_reader].name,
               graph_op_name(g->nodes[a->leak_reader].op));
    }
    printf("foldable: %d/%d LNs, cbwc layers: %d\n", a->num_foldable, a->num_layernorms,
           a->num_cbwc);
}

int main(int argc, char **argv) {
    int emit = 0;
    CliFlag flags[] = {
        {"--emit", CLI_SWITCH, &emit, 0, 0, "print the graph text instead of the analysis", NULL,
         0, 0},
    };
    CliSpec spec = {
        .program = "foldcheck",
        .synopsis = "MODEL.bin|MODEL.onnx|GRAPH.txt|NAME [--emit]",
        .about = "  MODEL.bin  a GPT-2 (llm.c format) or ViT / Swin model file: its config's graph\n"
                 "  MODEL.onnx an ONNX model: its graph mapped onto the analysis' ops\n"
                 "  GRAPH.txt  a network in the graph text format (docs/graph-format.md)\n"
                 "  NAME       gpt2-d12 (any gpt2-<descriptor>), vit-tiny, vit-small, vit-base,\n"
                 "             swin-tiny, swin-small, swin-tiny-centred, swin-small-centred,\n"
                 "             swin-tiny-s2, swin-tiny-s2-centred (the first two stages),\n"
                 "             bert-base, bert-large, opt-125m, opt-350m, phi-2 (these and\n"
                 "             the vit ones also as NAME-d<L>: L blocks, e.g. opt-350m-d2)\n",
        .flags = flags,
        .num_flags = CLI_COUNT(flags),
        .min_positional = 1,
        .max_positional = 1,
        .footer = "Prints each LN's verdict, the CBWC layer set, and ends with\n"
                  "'foldable: N/M LNs, cbwc layers: K'. --emit prints a built-in network's\n"
                  "or an ONNX model's graph text.\n",
    };
    const char *arg;
    cli_parse(&spec, argc, argv, &arg);
    Graph g;
    char *text = NULL;
    const int32_t magic = file_magic(arg);
    if (magic == GPT2_MODEL_MAGIC) {
        text = model_file_graph(arg);
    } else if (magic == VISION_MODEL_MAGIC) {
        text = vision_file_graph(arg);
    } else if (is_onnx_path(arg)) {
        text = onnx_file_graph(arg);
    } else if (!file_exists(arg)) {
        text = graph_builtin_text(arg);
        if (text == NULL) {
            fatal("%s: neither a file nor a built-in network (gpt2-d12, vit-tiny, swin-tiny, ...)",
                  arg);
        }
    }
    if (text != NULL) {
        if (emit) {
            fputs(text, stdout);
            free(text);
            return EXIT_SUCCESS;
        }
        char err[768];
        if (graph_parse(&g, text, arg, err, sizeof(err)) != 0) {
            fatal("%s", err);
        }
        free(text);
    } else {
        graph_load_file(&g, arg);
        if (emit) {
            fatal("--emit prints built-in networks; %s is already a graph file", arg);
        }
    }
    GraphAnalysis a;
    double t0 = now_seconds();
    graph_analyze(&g, &a);
    double ms = (now_seconds() - t0) * 1e3;
    print_report(&g, &a, ms);
    graph_analysis_free(&a);
    graph_free(&g);
    return EXIT_SUCCESS;
}
