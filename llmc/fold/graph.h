// A small description of a network as a graph of tensors over tokens, and
// the zero-mean analysis (docs/math.md section 3, the paper's Algorithm 1):
// which LayerNorms see an input that is zero-mean over the feature axis once
// a set S of linear layers uses CBWC, so that LN can be replaced by RMSNorm.
// The text format is documented in docs/graph-format.md.
#ifndef FOLDNORM_GRAPH_H
#define FOLDNORM_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#define GRAPH_MAX_INPUTS 8
#define GRAPH_MAX_NAME 64

typedef enum {
    // leaves
    OP_INPUT,      // data fed to the network (tokens, pixels, features): never zero-mean
    OP_PARAM,      // learned tensor added as is (position embedding, cls token)
    // general linear layers: output axis = the feature axis
    OP_LINEAR,     // Linear, a recurrent cell's input/hidden map (weight= shares weights)
    OP_CONV,       // Conv as a matmul over patches (in = C_in * kh * kw)
    OP_EMBEDDING,  // Embedding lookup = matmul of a one-hot
    // keep the property
    OP_ADD,        // residual add of 2+ tensors of one width
    OP_SCALE,      // multiply by a constant
    OP_DROPOUT,    // eval mode: identity
    OP_TEMPERATURE,// divide by a constant
    OP_RESHAPE,    // token moves: reshape of the token axis
    OP_WINDOW_PARTITION,
    OP_WINDOW_REVERSE,
    OP_CYCLIC_SHIFT,
    OP_TOKEN_CONCAT, // concat along the token axis (e.g. cls token + patches)
    OP_AVGPOOL,    // average pooling over tokens
    OP_CONCAT,     // concat along the feature axis: zero-mean when every part is
    // destroy the property
    OP_GELU,
    OP_RELU,
    OP_TANH,
    OP_SIGMOID,
    OP_SOFTMAX,
    OP_MUL,        // elementwise product of two tensors
    OP_ATTENTION,  // softmax(q k^T) v: one qkv input (3C) or three inputs q, k, v
    // norms
    OP_LAYERNORM,
    OP_RMSNORM,
    OP_CENTRE,     // explicit x - mean(x): zero-mean with nothing in S
    // anything else (an ONNX op the reader does not model): never zero-mean,
    // absorbs no shift, so every layer it reads stays out of S (sound)
    OP_OPAQUE,
    OP_COUNT
} GraphOp;

typedef struct {
    char name[GRAPH_MAX_NAME];
    GraphOp op;
    int num_inputs;
    int inputs[GRAPH_MAX_INPUTS]; // node indices, all < this node's index
    int dim;                      // width of the feature axis of the output
    int in_dim;                   // linear family: declared input width (0 = not declared)
    int vocab;                    // embedding: rows of the table
    int heads;                    // attention: number of heads
    int affine;                   // norms: 1 = gain and bias (default), 0 = none
    int has_bias;                 // linear family: 1 = bias (default)
    double value;                 // scale / temperature constant
    char weight[GRAPH_MAX_NAME];  // linear family: name of the (possibly shared) weight
    char what[GRAPH_MAX_NAME];    // opaque: the op it stands for (an ONNX op type)
    int line;                     // line in the text, 0 when built in code
} GraphNode;

typedef struct {
    GraphNode *nodes;
    int num_nodes;
    int capacity;
    char name[GRAPH_MAX_NAME];
} Graph;

// Per-tensor result of the analysis; sets are bitsets over node indices.
//
// Foldable means exact: the CBWC model (S centred, foldable LNs as RMSNorm)
// computes the same function as the LN model. Centring a layer in S changes
// its output by a per-token multiple of 1 (a "shift"); that is harmless only
// if the shift reaches nothing but ops that absorb it (LayerNorm, softmax,
// an explicit centring op) through ops that carry it unchanged (residual add,
// scalar ops, token moves, the v input of single-head attention). A layer
// whose shift would reach anything else (a feature concat that mixes tokens
// with different shifts, a linear layer, a nonlinearity, a graph output) is
// not shift-safe and is never a zero-mean source (docs/math.md section 3; a
// zero-mean-only rule is inexact for Swin: docs/graph-format.md).
typedef struct {
    int num_nodes;
    int words;            // uint64 words per bitset
    uint8_t *shift_safe;  // linear family / param: centring it is invisible downstream
    int *shift_reader;    // not shift-safe: the first reader its shift would change
    uint8_t *zero_mean;   // 1: zero-mean over the feature axis given CBWC on S(node)
    uint64_t *needs;      // zero-mean nodes: S(node), the linear layers / params to centre
    int *blame;           // unknown nodes: the node where the property was lost
    uint64_t *cbwc_set;   // union of S over the foldable LNs
    int num_layernorms;
    int num_foldable;
    int num_cbwc;
    // exactness of folding a trained LN model: centring a layer in S shifts its
    // output by a per-token multiple of 1; LN and softmax absorb that shift,
    // any other reader would see a changed input
    uint64_t *shift;      // per node: S-layers whose centring shifts this tensor uniformly
    int leak_layer;       // -1, or an S-layer whose shift reaches...
    int leak_reader;      // ...this reader (or the graph output when it is the tensor itself)
} GraphAnalysis;

const char *graph_op_name(GraphOp op);
// Linear, Conv, Embedding: the layers CBWC applies to.
int graph_is_linear_family(GraphOp op);
// Returns the op for a text name ("linear", "layernorm", ...) or -1.
int graph_op_parse(const char *name);

void graph_init(Graph *g, const char *name);
void graph_free(Graph *g);
// Index of the node with this name, or -1.
int graph_find(const Graph *g, const char *name);

// Parses the text format. On error returns -1 and writes "SOURCE:LINE: what
// is wrong" into err; the graph is then freed. On success returns 0.
int graph_parse(Graph *g, const char *text, const char *source, char *err, size_t err_len);
// Reads a file and parses it; dies with a message naming the file on error.
void graph_load_file(Graph *g, const char *path);

// Runs the analysis in topological order (the node order). Fills *a.
void graph_analyze(const Graph *g, GraphAnalysis *a);
void graph_analysis_free(GraphAnalysis *a);
static inline int graph_bit(const uint64_t *set, int i) { return (int)((set[i >> 6] >> (i & 63)) & 1u); }
// Is node i a LayerNorm that can become an RMSNorm given the CBWC set?
int graph_ln_foldable(const Graph *g, const GraphAnalysis *a, int i);
// Writes the one-line reason why LN node i is not foldable into buf.
void graph_ln_reason(const Graph *g, const GraphAnalysis *a, int i, char *buf, size_t len);

// Built-in networks, written as graph text (caller frees). Names:
// gpt2-<descriptor> (gpt2-d12, gpt2-d4c128h4v256t64, see gpt2_parse_descriptor),
// vit-tiny, vit-small, vit-base, swin-tiny, swin-small, bert-base, bert-large,
// opt-125m, opt-350m, phi-2 (these and the vit ones also as NAME-d<L>: L blocks instead of the
// named depth, 1 <= L <= 1000), and the swin ones with
// a "-centred" suffix ("-centered" accepted too) (an explicit centring op after the patch norm),
// swin-tiny-s2 and swin-tiny-s2-centred (Swin-Tiny's first two stages only).
// Returns NULL for an unknown name.
char *graph_builtin_text(const char *name);
// The GPT-2 graph for a config (L layers, C channels, NH heads, V vocab).
char *graph_gpt2_text(int L, int C, int NH, int V);
// The graphs of llmc/vision/vit.c and llmc/vision/swin.c for a config (node names as the
// built-in vit-* and swin-* graphs; vision_fold.c maps them to tensors).
// patch_dim: pixels per patch (channels x P x P); hidden: the MLP width;
// Swin: depths, heads and shifted (odd blocks use shifted windows) per stage,
// centred: the explicit centring ops of swin.h.
char *graph_vit_text(int patch_dim, int dim, int depth, int heads, int hidden, int classes);
char *graph_swin_text(int patch_dim, int embed, int stages, const int *depths, const int *heads,
                      const int *shifted, int mlp_ratio, int classes, int centred);

#endif
