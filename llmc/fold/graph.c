// The graph container and the zero-mean analysis (docs/math.md section 3).
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utils.h"

static const char *const OP_NAMES[OP_COUNT] = {
    [OP_INPUT] = "input",
    [OP_PARAM] = "param",
    [OP_LINEAR] = "linear",
    [OP_CONV] = "conv",
    [OP_EMBEDDING] = "embedding",
    [OP_ADD] = "add",
    [OP_SCALE] = "scale",
    [OP_DROPOUT] = "dropout",
    [OP_TEMPERATURE] = "temperature",
    [OP_RESHAPE] = "reshape",
    [OP_WINDOW_PARTITION] = "window_partition",
    [OP_WINDOW_REVERSE] = "window_reverse",
    [OP_CYCLIC_SHIFT] = "cyclic_shift",
    [OP_TOKEN_CONCAT] = "token_concat",
    [OP_AVGPOOL] = "avgpool",
    [OP_CONCAT] = "concat",
    [OP_GELU] = "gelu",
    [OP_RELU] = "relu",
    [OP_TANH] = "tanh",
    [OP_SIGMOID] = "sigmoid",
    [OP_SOFTMAX] = "softmax",
    [OP_MUL] = "mul",
    [OP_ATTENTION] = "attention",
    [OP_LAYERNORM] = "layernorm",
    [OP_RMSNORM] = "rmsnorm",
    [OP_CENTRE] = "centre",
    [OP_OPAQUE] = "opaque",
};

const char *graph_op_name(GraphOp op) {
    return (op >= 0 && op < OP_COUNT) ? OP_NAMES[op] : "?";
}

int graph_op_parse(const char *name) {
    if (strcmp(name, "center") == 0) { // the US spelling, accepted as an alias
        return OP_CENTRE;
    }
    for (int i = 0; i < OP_COUNT; i++) {
        if (strcmp(name, OP_NAMES[i]) == 0) {
            return i;
        }
    }
    return -1;
}

void graph_init(Graph *g, const char *name) {
    memset(g, 0, sizeof(*g));
    snprintf(g->name, sizeof(g->name), "%s", name);
}

void graph_free(Graph *g) {
    free(g->nodes);
    memset(g, 0, sizeof(*g));
}

int graph_find(const Graph *g, const char *name) {
    for (int i = g->num_nodes - 1; i >= 0; i--) {
        if (strcmp(g->nodes[i].name, name) == 0) {
            return i;
        }
    }
    return -1;
}

static int is_linear_family(GraphOp op) {
    return op == OP_LINEAR || op == OP_CONV || op == OP_EMBEDDING;
}

// Ops that move whole tokens, or scale them, without mixing features.
static int keeps_property(GraphOp op) {
    switch (op) {
    case OP_SCALE: case OP_DROPOUT: case OP_TEMPERATURE: case OP_RESHAPE:
    case OP_WINDOW_PARTITION: case OP_WINDOW_REVERSE: case OP_CYCLIC_SHIFT:
    case OP_TOKEN_CONCAT: case OP_AVGPOOL: case OP_ADD:
        return 1;
    default:
        return 0;
    }
}

static void set_union(uint64_t *dst, const uint64_t *src, int words) {
    for (int w = 0; w < words; w++) {
        dst[w] |= src[w];
    }
}

static int set_empty(const uint64_t *set, int words) {
    for (int w = 0; w < words; w++) {
        if (set[w] != 0) {
            return 0;
        }
    }
    return 1;
}

static int set_first(const uint64_t *set, int words) {
    for (int w = 0; w < words; w++) {
        if (set[w] != 0) {
            return w * 64 + __builtin_ctzll(set[w]);
        }
    }
    return -1;
}

// Reader r absorbs a per-token shift of its input k: LN and softmax are
// invariant to x + c 1, the centring op removes it.
static int absorbs_shift(const GraphNode *r) {
    return r->op == OP_LAYERNORM || r->op == OP_SOFTMAX || r->op == OP_CENTRE;
}

// Reader r passes a per-token shift of its k-th input on as a per-token shift
// of its output: the ops that keep the zero-mean property, and single-head
// attention through v alone (each output row is a convex combination of v's
// rows, so c_s 1 becomes (sum_s a_ts c_s) 1). A feature concat does not: its
// parts come from different tokens (PatchMerging) with different shifts.
static int passes_shift(const GraphNode *r, int k) {
    if (r->op == OP_ATTENTION) {
        return r->heads == 1 && r->num_inputs == 3 && k == 2 && r->inputs[0] != r->inputs[2] &&
               r->inputs[1] != r->inputs[2];
    }
    return keeps_property(r->op);
}

// Backward over the node order (readers come after what they read): a tensor
// is shift-safe when every reader absorbs a shift or passes it on to a
// shift-safe tensor; a tensor nobody reads is a graph output, never safe.
static void analyze_shift_safety(const Graph *g, GraphAnalysis *a) {
    for (int i = 0; i < g->num_nodes; i++) {
        a->shift_safe[i] = 1;
        a->shift_reader[i] = -1;
    }
    uint8_t *read = calloc_check((size_t)g->num_nodes + 1, 1, "graph readers");
    for (int r = g->num_nodes - 1; r >= 0; r--) {
        if (!read[r]) {
            a->shift_safe[r] = 0;
            a->shift_reader[r] = r; // a graph output: its value would change
        }
        const GraphNode *rn = &g->nodes[r];
        for (int k = 0; k < rn->num_inputs; k++) {
            int in = rn->inputs[k];
            read[in] = 1;
            if (absorbs_shift(rn) || (passes_shift(rn, k) && a->shift_safe[r])) {
                continue;
            }
            if (a->shift_safe[in]) {
                a->shift_safe[in] = 0;
                // name the op that breaks it: r itself, or where r's shift breaks
                a->shift_reader[in] = passes_shift(rn, k) ? a->shift_reader[r] : r;
            }
        }
    }
    free(read);
}

// Forward rule for one node: zero-mean given S, or unknown with the node to blame.
static void analyze_node(const Graph *g, GraphAnalysis *a, int i) {
    const GraphNode *n = &g->nodes[i];
    uint64_t *needs = a->needs + (size_t)i * a->words;
    a->blame[i] = -1;
    a->zero_mean[i] = 0;
    switch (n->op) {
    case OP_PARAM: case OP_LINEAR: case OP_CONV: case OP_EMBEDDING:
        // a linear map onto the feature axis (or a learned leaf): centre it,
        // if its shift is invisible downstream (else the fold is inexact)
        if (!a->shift_safe[i]) {
            a->blame[i] = i;
            return;
        }
        a->zero_mean[i] = 1;
        needs[i >> 6] |= 1ull << (i & 63);
        return;
    case OP_CENTRE:
        a->zero_mean[i] = 1;
        return;
    case OP_LAYERNORM: case OP_RMSNORM:
        if (n->affine) {
            a->blame[i] = i; // gamma * x_hat + beta is not zero-mean
            return;
        }
        if (n->op == OP_LAYERNORM) {
            a->zero_mean[i] = 1; // (x - mu) / sigma
            return;
        }
        break; // x / rms(x) keeps the mean's sign: zero iff the input's is
    case OP_ATTENTION:
        // one head: each output row is a convex combination of v's rows; with
        // several heads each head's slice would need to be zero-mean on its own
        if (n->heads == 1 && n->num_inputs == 3) {
            int v = n->inputs[2];
            a->zero_mean[i] = a->zero_mean[v];
            a->blame[i] = a->zero_mean[v] ? -1 : a->blame[v];
            memcpy(needs, a->needs + (size_t)v * a->words, (size_t)a->words * sizeof(uint64_t));
        } else {
            a->blame[i] = i;
        }
        return;
    default:
        if (!keeps_property(n->op) && n->op != OP_CONCAT) {
            a->blame[i] = i; // inputs and nonlinearities
            return;
        }
        break;
    }
    // keeps the property of its operands: zero-mean iff all are (add, concat,
    // token moves, scalar ops, affine-free RMSNorm); S is the union
    for (int k = 0; k < n->num_inputs; k++) {
        int in = n->inputs[k];
        if (!a->zero_mean[in]) {
            a->blame[i] = a->blame[in];
            memset(needs, 0, (size_t)a->words * sizeof(uint64_t));
            return;
        }
        set_union(needs, a->needs + (size_t)in * a->words, a->words);
    }
    a->zero_mean[i] = 1;
}

int graph_ln_foldable(const Graph *g, const GraphAnalysis *a, int i) {
    return g->nodes[i].op == OP_LAYERNORM && a->zero_mean[g->nodes[i].inputs[0]];
}

// Exactness of folding a trained LN model: follow each S-layer's uniform
// shift (its output minus its centred output is mean * 1 per token). Since
// only shift-safe layers enter S this finds no leak; it is the independent
// forward check of the backward shift-safety pass.
static void analyze_shifts(const Graph *g, GraphAnalysis *a) {
    int *readers = calloc_check((size_t)g->num_nodes, sizeof(int), "graph readers");
    for (int i = 0; i < g->num_nodes; i++) {
        const GraphNode *n = &g->nodes[i];
        uint64_t *shift = a->shift + (size_t)i * a->words;
        for (int k = 0; k < n->num_inputs; k++) {
            readers[n->inputs[k]]++;
        }
        int absorbs = absorbs_shift(n);
        for (int k = 0; k < n->num_inputs; k++) {
            const uint64_t *in_shift = a->shift + (size_t)n->inputs[k] * a->words;
            if (passes_shift(n, k)) {
                set_union(shift, in_shift, a->words);
            } else if (!absorbs && !set_empty(in_shift, a->words) && a->leak_layer < 0) {
                a->leak_layer = set_first(in_shift, a->words);
                a->leak_reader = i;
            }
        }
        if (graph_bit(a->cbwc_set, i)) {
            memset(shift, 0, (size_t)a->words * sizeof(uint64_t));
            shift[i >> 6] |= 1ull << (i & 63);
        }
    }
    for (int i = 0; i < g->num_nodes && a->leak_layer < 0; i++) {
        const uint64_t *shift = a->shift + (size_t)i * a->words;
        if (readers[i] == 0 && !set_empty(shift, a->words)) {
            a->leak_layer = set_first(shift, a->words); // a graph output would change
            a->leak_reader = i;
        }
    }
    free(readers);
}

void graph_analyze(const Graph *g, GraphAnalysis *a) {
    memset(a, 0, sizeof(*a));
    a->num_nodes = g->num_nodes;
    a->words = (g->num_nodes + 63) / 64;
    size_t set_words = (size_t)g->num_nodes * (size_t)a->words;
    a->zero_mean = calloc_check((size_t)g->num_nodes + 1, 1, "analysis flags");
    a->needs = calloc_check(set_words + 1, sizeof(uint64_t), "analysis sets");
    a->shift = calloc_check(set_words + 1, sizeof(uint64_t), "analysis shifts");
    a->blame = calloc_check((size_t)g->num_nodes + 1, sizeof(int), "analysis blame");
    a->shift_safe = calloc_check((size_t)g->num_nodes + 1, 1, "analysis shift safety");
    a->shift_reader = calloc_check((size_t)g->num_nodes + 1, sizeof(int), "analysis shift readers");
    analyze_shift_safety(g, a);
    a->cbwc_set = calloc_check((size_t)a->words + 1, sizeof(uint64_t), "cbwc set");
    a->leak_layer = a->leak_reader = -1;
    for (int i = 0; i < g->num_nodes; i++) {
        analyze_node(g, a, i);
    }
    for (int i = 0; i < g->num_nodes; i++) {
        if (g->nodes[i].op != OP_LAYERNORM) {
            continue;
        }
        a->num_layernorms++;
        if (graph_ln_foldable(g, a, i)) {
            a->num_foldable++;
            set_union(a->cbwc_set, a->needs + (size_t)g->nodes[i].inputs[0] * a->words, a->words);
        }
    }
    for (int i = 0; i < g->num_nodes; i++) {
        a->num_cbwc += graph_bit(a->cbwc_set, i);
    }
    analyze_shifts(g, a);
}

void graph_analysis_free(GraphAnalysis *a) {
    free(a->zero_mean);
    free(a->needs);
    free(a->shift);
    free(a->blame);
    free(a->shift_safe);
    free(a->shift_reader);
    free(a->cbwc_set);
    memset(a, 0, sizeof(*a));
}

static const char *blame_reason(const GraphNode *n) {
    switch (n->op) {
    case OP_INPUT: return "a network input (arbitrary mean)";
    case OP_LAYERNORM: case OP_RMSNORM: return "output of a norm with an affine (gamma * x_hat + beta)";
    case OP_ATTENTION:
        return n->heads == 1 ? "attention reading a fused qkv (v's slice alone is not centred)"
                             : "multi-head attention (each head's slice of v would need its own centring)";
    case OP_MUL: return "elementwise product";
    case OP_OPAQUE:
        // what= words the ONNX reader writes (docs/graph-format.md, "ONNX input")
        if (strcmp(n->what, "grouped-Conv") == 0) {
            return "a grouped or depthwise Conv: each output channel reads only its group's "
                   "channels, so it is not a general linear layer that CBWC can centre";
        }
        if (strcmp(n->what, "not-analysed") == 0) {
            return "not analysed: the ONNX reader lost the norm's feature axis here";
        }
        return n->what[0] ? n->what : "an op the analysis does not model";
    default: return "nonlinearity";
    }
}

void graph_ln_reason(const Graph *g, const GraphAnalysis *a, int i, char *buf, size_t len) {
    int in = g->nodes[i].inputs[0];
    int b = a->blame[in];
    if (b < 0) {
        snprintf(buf, len, "input %s is zero-mean", g->nodes[in].name);
        return;
    }
    const GraphNode *bn = &g->nodes[b];
    if (graph_is_linear_family(bn->op) || bn->op == OP_PARAM) {
        int r = a->shift_reader[b];
        if (r == b) {
            snprintf(buf, len, "input %s would be zero-mean with %s centred, but %s is a graph "
                     "output: centring would change it", g->nodes[in].name, bn->name, bn->name);
        } else {
            snprintf(buf, len, "input %s would be zero-mean with %s centred, but that shifts "
                     "what %s (%s) reads, which does not absorb a per-token shift",
                     g->nodes[in].name, bn->name, g->nodes[r].name, graph_op_name(g->nodes[r].op));
        }
        return;
    }
    if (b == in) {
        snprintf(buf, len, "input %s (%s) is not zero-mean: %s", g->nodes[in].name,
                 graph_op_name(bn->op), blame_reason(bn));
    } else {
        snprintf(buf, len, "input %s is not zero-mean: broken at %s (%s: %s)", g->nodes[in].name,
                 bn->name, graph_op_name(bn->op), blame_reason(bn));
    }
}

int graph_is_linear_family(GraphOp op) {
    return is_linear_family(op);
}
