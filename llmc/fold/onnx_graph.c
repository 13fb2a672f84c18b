// ONNX ModelProto -> graph text (docs/graph-format.md, "ONNX input").
//
// One pass over the ONNX nodes (the format requires topological order). Every
// ONNX value is one of:
//   static   data-independent: initializers, Constant, Shape, and anything
//            computed from those alone (a few small int tensors are evaluated,
//            for Reshape targets, axes and split sizes)
//   act      an activation: an analysis node, the axis that is its feature
//            axis, and its shape when known
//   pattern  a step of a decomposed norm (x - mean(x), its square, the mean of
//            that, + eps, sqrt, 1/sqrt): no node until the norm completes; any
//            other reader turns it into a centre node or an opaque node
// Ops the analysis models map onto its op kinds; everything else, and any
// case whose axes or shapes cannot be followed, becomes an "opaque" node:
// not zero-mean and absorbing no shift, so the verdicts stay sound.
#include "onnx_graph.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "onnx.pb-c.h"
#include "core/utils.h"

#define MAX_RANK 8
#define MAX_INTS 16
#define MAX_WIDTH ((1 << 24) - 1)
// dimensions, strides and pads beyond this are treated as unknown (no overflow)
#define LIMIT ((int64_t)1 << 40)
// an entry of a static int tensor whose value is not known (a symbolic axis)
#define UNKNOWN_INT INT64_MIN

typedef enum {
    V_UNDEF,
    V_STATIC,
    V_ACT,
    V_MEAN,       // ReduceMean(x) over the feature axis
    V_CENTRED,    // x - mean(x)
    V_SQUARE,     // c * c, c = x (RMSNorm) or x - mean(x) (LayerNorm)
    V_MEANSQ,     // mean(c * c) (+ eps)
    V_STD,        // sqrt(mean(c * c) + eps)
    V_INVSTD,     // 1 / std
    V_REDUCED,    // any other per-token statistic of x
} ValueKind;

typedef struct {
    int rank; // -1: unknown
    int64_t d[MAX_RANK]; // -1: unknown
} Shape;

typedef struct {
    const char *name;
    ValueKind kind;
    Shape shape;
    int node;      // act: analysis node (-1: a graph input not yet created); pattern: x's node
    int axis;      // act: feature axis (-1 unknown); pattern: x's feature axis
    int centred;   // pattern: the square chain is of x - mean(x) (1) or of x (0)
    int src;       // pattern: the value x itself (the chain must read this very value)
    int uses;      // readers in the ONNX graph (+1 for a graph output)
    int norm_step; // act: 1 output of an affine-free norm, 2 after its gamma
    int linear_step; // act: 1 output of a linear layer without its bias yet
    int cached;    // pattern/static: the node made for it when read as an activation (-1)
    int nints;     // static: -1, or the number of int values (UNKNOWN_INT where not known)
    int64_t ints[MAX_INTS];
    int has_scalar; // static: one element whose value is known
    double scalar;
    int elem_type; // ONNX element type (0 unknown)
} Value;

typedef struct {
    char name[GRAPH_MAX_NAME];
    GraphOp op;
    int in[GRAPH_MAX_INPUTS];
    int nin;
    int dim;
    int vocab;
    int has_bias;
    int affine;
    double value;
    char weight[GRAPH_MAX_NAME];
    char what[GRAPH_MAX_NAME];
    OnnxOrigin origin; // what a fold rewrites (onnx_graph.h)
} ONode;

typedef struct {
    const char *source;
    char *err;
    size_t err_len;
    int failed;
    Value *values;
    int num_values, cap_values;
    int *slots; // name -> value index, open addressing
    size_t mask;
    ONode *nodes;
    int num_nodes, cap_nodes;
    int *name_slots; // node names in use
    size_t name_mask;
    int opset;
    int cur_node; // index of the ONNX node being mapped (-1 outside the node loop)
    OnnxImportReport *report;
    // opaque op types and their counts, for the report
    char opaque_types[32][GRAPH_MAX_NAME];
    int opaque_counts[32];
    int num_opaque_types;
} Ctx;

static int fail(Ctx *c, const char *fmt, ...) {
    if (!c->failed) {
        int n = snprintf(c->err, c->err_len, "%s: ", c->source);
        va_list ap;
        va_start(ap, fmt);
        if (n >= 0 && (size_t)n < c->err_len) {
            vsnprintf(c->err + n, c->err_len - (size_t)n, fmt, ap);
        }
        va_end(ap);
        c->failed = 1;
    }
    return -1;
}

static size_t str_hash(const char *s) {
    size_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    }
    return h;
}

static int value_find(const Ctx *c, const char *name) {
    for (size_t k = str_hash(name) & c->mask;; k = (k + 1) & c->mask) {
        int v = c->slots[k];
        if (v < 0 || strcmp(c->values[v].name, name) == 0) {
            return v;
        }
    }
}

// A new value named name; -1 (with the message) when it is defined twice.
static int value_new(Ctx *c, const char *name, ValueKind kind) {
    if (value_find(c, name) >= 0) {
        return fail(c, "value '%s' is defined twice", name);
    }
    if (c->num_values == c->cap_values) {
        return fail(c, "more values than the graph declares");
    }
    int v = c->num_values++;
    Value *val = &c->values[v];
    memset(val, 0, sizeof(*val));
    val->name = name;
    val->kind = kind;
    val->shape.rank = -1;
    val->node = -1;
    val->axis = -1;
    val->cached = -1;
    val->nints = -1;
    size_t k = str_hash(name) & c->mask;
    while (c->slots[k] >= 0) {
        k = (k + 1) & c->mask;
    }
    c->slots[k] = v;
    return v;
}

// ---------------------------------------------------------------------------
// analysis nodes and their names

static int valid_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_' || ch == '.' || ch == '-' || ch == '/' || ch == '[' || ch == ']' || ch == ':';
}

// The graph format's name rules: the allowed characters, at most 63 of them
// (a long name keeps its head and tail around "...").
static void sanitize(const char *in, char *out) {
    size_t n = strlen(in);
    char tmp[GRAPH_MAX_NAME];
    if (n == 0) {
        snprintf(tmp, sizeof(tmp), "unnamed");
    } else if (n < GRAPH_MAX_NAME) {
        memcpy(tmp, in, n + 1);
    } else {
        snprintf(tmp, sizeof(tmp), "%.26s...%s", in, in + n - 30);
    }
    for (size_t i = 0; tmp[i]; i++) {
        out[i] = valid_char(tmp[i]) ? tmp[i] : '_';
        out[i + 1] = '\0';
    }
    // "graph" is the format's keyword; '=' cannot occur after sanitizing
    if (strcmp(out, "graph") == 0) {
        snprintf(out, GRAPH_MAX_NAME, "graph_");
    }
}

static int name_taken(const Ctx *c, const char *name) {
    for (size_t k = str_hash(name) & c->name_mask;; k = (k + 1) & c->name_mask) {
        int i = c->name_slots[k];
        if (i < 0) {
            return 0;
        }
        if (strcmp(c->nodes[i].name, name) == 0) {
            return 1;
        }
    }
}

static void names_rehash(Ctx *c, size_t slots) {
    free(c->name_slots);
    c->name_slots = malloc_check(slots * sizeof(int), "onnx node names");
    memset(c->name_slots, -1, slots * sizeof(int));
    c->name_mask = slots - 1;
    for (int i = 0; i < c->num_nodes; i++) {
        size_t k = str_hash(c->nodes[i].name) & c->name_mask;
        while (c->name_slots[k] >= 0) {
            k = (k + 1) & c->name_mask;
        }
        c->name_slots[k] = i;
    }
}

// A new analysis node of op named after base (made unique with ":2", ":3", ...).
static int node_new(Ctx *c, GraphOp op, const char *base) {
    if (c->num_nodes == c->cap_nodes) {
        c->cap_nodes = c->cap_nodes ? 2 * c->cap_nodes : 256;
        ONode *grown = realloc(c->nodes, (size_t)c->cap_nodes * sizeof(ONode));
        if (grown == NULL) {
            fatal("out of memory for %d onnx graph nodes", c->cap_nodes);
        }
        c->nodes = grown;
    }
    if ((size_t)(c->num_nodes + 1) * 2 > c->name_mask + 1) {
        names_rehash(c, (c->name_mask + 1) * 4);
    }
    ONode *n = &c->nodes[c->num_nodes];
    memset(n, 0, sizeof(*n));
    n->op = op;
    n->affine = 1;
    n->value = 1.0;
    n->origin.onnx_node = c->cur_node;
    n->origin.weight_value = n->origin.bias_value = -1;
    char clean[GRAPH_MAX_NAME];
    sanitize(base, clean);
    snprintf(n->name, sizeof(n->name), "%s", clean);
    for (int k = 2; name_taken(c, n->name); k++) {
        char suffix[16];
        int sl = snprintf(suffix, sizeof(suffix), ":%d", k);
        size_t keep = strlen(clean);
        if (keep + (size_t)sl >= GRAPH_MAX_NAME) {
            keep = GRAPH_MAX_NAME - 1 - (size_t)sl;
        }
        snprintf(n->name, sizeof(n->name), "%.*s%s", (int)keep, clean, suffix);
    }
    size_t k = str_hash(n->name) & c->name_mask;
    while (c->name_slots[k] >= 0) {
        k = (k + 1) & c->name_mask;
    }
    c->name_slots[k] = c->num_nodes;
    return c->num_nodes++;
}

static int clamp_width(int64_t w) {
    return (w > 0 && w <= MAX_WIDTH) ? (int)w : 1;
}

static void note_opaque(Ctx *c, const char *op_type) {
    if (strcmp(op_type, "output") == 0) {
        return; // a graph output's reader, not an unknown op
    }
    c->report->opaque_nodes++;
    for (int i = 0; i < c->num_opaque_types; i++) {
        if (strcmp(c->opaque_types[i], op_type) == 0) {
            c->opaque_counts[i]++;
            return;
        }
    }
    if (c->num_opaque_types < 32) {
        snprintf(c->opaque_types[c->num_opaque_types], GRAPH_MAX_NAME, "%s", op_type);
        c->opaque_counts[c->num_opaque_types++] = 1;
    }
}

// An opaque node reading every node in ins (chained when more than the format's 8).
static int opaque_node(Ctx *c, const char *base, const char *op_type, const int *ins, int nin,
                       int dim) {
    int node = -1, k = 0;
    do {
        node = node_new(c, OP_OPAQUE, base);
        ONode *n = &c->nodes[node];
        n->dim = dim;
        char what[GRAPH_MAX_NAME];
        sanitize(op_type, what);
        snprintf(n->what, sizeof(n->what), "%s", what);
        if (k > 0) {
            n->in[n->nin++] = node - 1; // the previous link of the chain
        }
        while (k < nin && n->nin < GRAPH_MAX_INPUTS) {
            n->in[n->nin++] = ins[k++];
        }
        note_opaque(c, op_type);
    } while (k < nin);
    return node;
}

static int unary_node(Ctx *c, GraphOp op, const char *base, int in) {
    int node = node_new(c, op, base);
    c->nodes[node].in[0] = in;
    c->nodes[node].nin = 1;
    c->nodes[node].dim = c->nodes[in].dim;
    return node;
}

// ---------------------------------------------------------------------------
// shapes

static int64_t shape_numel(const Shape *s) {
    if (s->rank < 0) {
        return -1;
    }
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) {
        if (s->d[i] < 0 || (s->d[i] > 0 && n > INT64_MAX / s->d[i])) {
            return -1;
        }
        n *= s->d[i];
    }
    return n;
}

static int shape_known(const Shape *s) {
    return shape_numel(s) >= 0;
}

static int shape_equal(const Shape *a, const Shape *b) {
    if (a->rank < 0 || a->rank != b->rank) {
        return 0;
    }
    for (int i = 0; i < a->rank; i++) {
        if (a->d[i] < 0 || a->d[i] != b->d[i]) {
            return 0;
        }
    }
    return 1;
}

// numpy broadcasting; rank -1 when unknown or incompatible
static Shape shape_broadcast(const Shape *a, const Shape *b) {
    Shape out = {.rank = -1};
    if (a->rank < 0 || b->rank < 0) {
        return out;
    }
    int r = a->rank > b->rank ? a->rank : b->rank;
    out.rank = r;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        int64_t da = ia >= 0 ? a->d[ia] : 1, db = ib >= 0 ? b->d[ib] : 1;
        if (da < 0 || db < 0) {
            out.d[i] = -1;
        } else if (da == db || db == 1) {
            out.d[i] = da;
        } else if (da == 1) {
            out.d[i] = db;
        } else {
            out.rank = -1;
            return out;
        }
    }
    return out;
}

static int norm_axis(int64_t axis, int rank) {
    if (rank < 0 || axis < -rank || axis >= rank) {
        return -1;
    }
    return (int)(axis < 0 ? axis + rank : axis);
}

// Where the feature axis f of in lands when in is reshaped (row-major) to
// out: an axis j of the same size with the same number of elements after it,
// so each feature vector stays one contiguous axis; -1 when it is split or merged.
// The axes before the feature axis (batch, sequence) may be unknown: the
// blocks of in[f] x (elements after f) line up all the same.
static int reshape_axis(const Shape *in, int f, const Shape *out) {
    if (in->rank < 0 || out->rank < 0 || f < 0 || f >= in->rank ||
        (shape_known(in) && shape_known(out) && shape_numel(in) != shape_numel(out))) {
        return -1;
    }
    int64_t after_in = 1;
    for (int i = f; i < in->rank; i++) {
        if (in->d[i] < 0 || in->d[i] > LIMIT) {
            return -1;
        }
        after_in *= i > f ? in->d[i] : 1;
    }
    int64_t after_out = 1;
    for (int j = out->rank - 1; j >= 0 && out->d[j] >= 0 && out->d[j] <= LIMIT; j--) {
        if (after_out == after_in && out->d[j] == in->d[f]) {
            return j;
        }
        if (after_out > after_in) {
            break;
        }
        after_out *= out->d[j];
    }
    return -1;
}

// Two operands of an elementwise op on activations: the same rank and feature
// axis of one known width (other axes may broadcast: copies of tokens).
static int same_features(const Value *a, const Value *b, const Shape *out) {
    int f = a->axis;
    return out->rank >= 0 && a->shape.rank == out->rank && b->shape.rank == out->rank && f >= 0 &&
           b->axis == f && a->shape.d[f] >= 0 && b->shape.d[f] == a->shape.d[f] &&
           out->d[f] == a->shape.d[f];
}

// ---------------------------------------------------------------------------
// tensors and attributes

static int elem_bytes(int type) {
    switch (type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return 8;
    default: return 0;
    }
}

// Shape, small int contents and a scalar's value of a tensor (as far as known).
static int tensor_value(Ctx *c, int v, const Onnx__TensorProto *t) {
    Value *val = &c->values[v];
    val->kind = V_STATIC;
    val->elem_type = t->data_type;
    if (t->n_dims > MAX_RANK) {
        return 0;
    }
    val->shape.rank = (int)t->n_dims;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0) {
            return fail(c, "tensor '%s' has a negative dimension %lld", val->name,
                        (long long)t->dims[i]);
        }
        val->shape.d[i] = t->dims[i] <= LIMIT ? t->dims[i] : -1;
    }
    int64_t n = shape_numel(&val->shape);
    int bytes = elem_bytes(t->data_type);
    if (n < 0 || n > MAX_INTS || bytes == 0) {
        return 0;
    }
    int raw = t->has_raw_data && t->raw_data.len > 0;
    if (raw && t->raw_data.len != (size_t)n * (size_t)bytes) {
        return 0; // a wrong size: contents unknown (the analysis does not need them)
    }
    int is_int = t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ||
                 t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT32;
    size_t have = raw ? (size_t)n
                  : t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64  ? t->n_int64_data
                  : t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT32  ? t->n_int32_data
                  : t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT  ? t->n_float_data
                                                                          : t->n_double_data;
    if (have != (size_t)n) {
        return 0;
    }
    double first = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double x = 0.0;
        int64_t xi = 0;
        if (raw) {
            const uint8_t *p = t->raw_data.data + (size_t)i * (size_t)bytes;
            if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
                memcpy(&xi, p, 8);
            } else if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT32) {
                int32_t y;
                memcpy(&y, p, 4);
                xi = y;
            } else if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
                float y;
                memcpy(&y, p, 4);
                x = y;
            } else {
                memcpy(&x, p, 8);
            }
        } else if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
            xi = t->int64_data[i];
        } else if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT32) {
            xi = t->int32_data[i];
        } else if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
            x = t->float_data[i];
        } else {
            x = t->double_data[i];
        }
        if (is_int) {
            val->ints[i] = xi;
            x = (double)xi;
        }
        if (i == 0) {
            first = x;
        }
    }
    if (is_int) {
        val->nints = (int)n;
    }
    if (n == 1) {
        val->has_scalar = 1;
        val->scalar = first;
    }
    return 0;
}

static const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name) {
    for (size_t i = 0; i < n->n_attribute; i++) {
        if (n->attribute[i]->name != NULL && strcmp(n->attribute[i]->name, name) == 0) {
            return n->attribute[i];
        }
    }
    return NULL;
}

static int64_t attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt) {
    const Onnx__AttributeProto *a = attr(n, name);
    return (a != NULL && a->has_i) ? a->i : dflt;
}

// Int list from an attribute or (newer opsets) from a static input; -1 when
// unknown; partial: entries may be UNKNOWN_INT (shapes with symbolic axes).
static int int_list_partial(const Ctx *c, const Onnx__NodeProto *n, const char *attr_name,
                            int input, int64_t *out) {
    const Onnx__AttributeProto *a = attr(n, attr_name);
    if (a != NULL) {
        if (a->n_ints > MAX_INTS) {
            return -1;
        }
        for (size_t i = 0; i < a->n_ints; i++) {
            out[i] = a->ints[i];
        }
        return (int)a->n_ints;
    }
    if (input >= 0 && (size_t)input < n->n_input && n->input[input][0] != '\0') {
        const Value *v = &c->values[value_find(c, n->input[input])];
        if (v->kind != V_STATIC || v->nints < 0) {
            return -1;
        }
        memcpy(out, v->ints, (size_t)v->nints * sizeof(int64_t));
        return v->nints;
    }
    return -2; // absent: the op's default
}

static int int_list(const Ctx *c, const Onnx__NodeProto *n, const char *attr_name, int input,
                    int64_t *out) {
    int k = int_list_partial(c, n, attr_name, input, out);
    for (int i = 0; i < k; i++) {
        if (out[i] == UNKNOWN_INT) {
            return -1;
        }
    }
    return k;
}

// ---------------------------------------------------------------------------
// values as activations

static int act_width(const Ctx *c, int node) {
    return c->nodes[node].dim;
}

// The analysis node of value v read as an activation (made on first need).
static int as_node(Ctx *c, int v, const char *reader_type) {
    Value *val = &c->values[v];
    if (val->kind == V_ACT) {
        if (val->node < 0) { // a graph input
            val->node = node_new(c, OP_INPUT, val->name);
            int64_t w = val->axis >= 0 ? val->shape.d[val->axis] : -1;
            c->nodes[val->node].dim = clamp_width(w);
        }
        return val->node;
    }
    if (val->cached >= 0) {
        return val->cached;
    }
    if (val->kind == V_STATIC) {
        int64_t w = val->shape.rank > 0 ? val->shape.d[val->shape.rank - 1] : 1;
        val->cached = node_new(c, OP_PARAM, val->name);
        c->nodes[val->cached].dim = clamp_width(w);
        c->nodes[val->cached].origin.weight_value = v;
        c->nodes[val->cached].origin.weight_axis = val->shape.rank - 1;
    } else if (val->kind == V_CENTRED) {
        val->cached = unary_node(c, OP_CENTRE, val->name, val->node);
    } else {
        if ((val->kind == V_STD || val->kind == V_INVSTD) && val->centred && val->uses == 1 &&
            val->node >= 0) {
            // the deviation of a decomposed LN, read by an op that does not
            // finish the pattern (gamma applied before the division, say):
            // still a norm in the count, not analysed
            char base[2 * GRAPH_MAX_NAME];
            snprintf(base, sizeof(base), "%s:axis-lost", c->nodes[val->node].name);
            int up = val->node;
            int lost = opaque_node(c, base, "not-analysed", &up, 1, c->nodes[up].dim);
            unary_node(c, OP_LAYERNORM, val->name, lost);
            c->report->unplaced_norms++;
        }
        // a per-token statistic of x read by something else: not modelled
        int in = val->node;
        val->cached = opaque_node(c, val->name, reader_type, &in, in >= 0, 1);
    }
    return val->cached;
}

static int is_act(const Value *v) {
    return v->kind == V_ACT;
}

// Output o of ONNX node becomes an activation.
static void set_act(Ctx *c, const char *name, int node, int axis, Shape shape) {
    int v = value_find(c, name);
    Value *val = &c->values[v];
    val->kind = V_ACT;
    val->node = node;
    val->shape = shape;
    val->axis = (shape.rank >= 0 && axis >= shape.rank) ? -1 : axis;
}

// Batched matrix product shapes (numpy matmul rules).
static Shape matmul_shape(const Shape *a, const Shape *b) {
    Shape out = {.rank = -1};
    if (a->rank < 1 || b->rank < 1) {
        return out;
    }
    if (b->rank == 1) {
        out = *a;
        out.rank--;
        return out;
    }
    if (a->rank == 1) {
        out = *b;
        out.d[out.rank - 2] = out.d[out.rank - 1];
        out.rank--;
        return out;
    }
    Shape ab = {.rank = a->rank - 2}, bb = {.rank = b->rank - 2};
    memcpy(ab.d, a->d, sizeof(int64_t) * (size_t)ab.rank);
    memcpy(bb.d, b->d, sizeof(int64_t) * (size_t)bb.rank);
    out = shape_broadcast(&ab, &bb);
    if (out.rank < 0 || out.rank + 2 > MAX_RANK) {
        out.rank = -1;
        return out;
    }
    out.d[out.rank++] = a->d[a->rank - 2];
    out.d[out.rank++] = b->d[b->rank - 1];
    return out;
}

// Output 0's shape for ops whose handlers did not work one out: elementwise
// ops broadcast their inputs, MatMul, and ops that keep their input's shape.
static Shape generic_shape(const Ctx *c, const Onnx__NodeProto *n) {
    static const char *const same[] = {"Softmax", "LogSoftmax", "Erf", "Tanh", "Relu", "Sigmoid",
                                       "Gelu", "Sqrt", "Reciprocal", "Neg", "Exp", "Log", "Abs",
                                       "Cast", "Identity", "Dropout", "LayerNormalization",
                                       "Clip", "LeakyRelu", "Elu", "HardSigmoid", "Softplus",
                                       "Trilu", "Not", "Sin", "Cos", "Floor", "Ceil", "Round",
                                       "Sign", "Mish", "HardSwish", "Selu", "CumSum",
                                       "SimplifiedLayerNormalization", "RMSNormalization"};
    static const char *const broadcast[] = {"Add", "Sub", "Mul", "Div", "Pow", "Where", "Equal",
                                            "Greater", "Less", "And", "Or", "Max", "Min",
                                            "GreaterOrEqual", "LessOrEqual", "Mod", "PRelu"};
    Shape out = {.rank = -1};
    int x = n->n_input > 0 && n->input[0][0] != '\0' ? value_find(c, n->input[0]) : -1;
    if (x < 0) {
        return out;
    }
    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
        if (strcmp(n->op_type, same[i]) == 0) {
            return c->values[x].shape;
        }
    }
    for (size_t i = 0; i < sizeof(broadcast) / sizeof(broadcast[0]); i++) {
        if (strcmp(n->op_type, broadcast[i]) == 0) {
            out = c->values[x].shape;
            for (size_t k = 1; k < n->n_input && out.rank >= 0; k++) {
                if (n->input[k][0] != '\0') {
                    out = shape_broadcast(&out, &c->values[value_find(c, n->input[k])].shape);
                }
            }
            return out;
        }
    }
    if (strcmp(n->op_type, "MatMul") == 0 && n->n_input >= 2) {
        return matmul_shape(&c->values[x].shape, &c->values[value_find(c, n->input[1])].shape);
    }
    return out;
}

static int in_value(const Ctx *c, const Onnx__NodeProto *n, size_t i) {
    if (i >= n->n_input || n->input[i][0] == '\0') {
        return -1;
    }
    return value_find(c, n->input[i]);
}

// Every output of ONNX node n becomes one opaque node reading its non-static inputs.
static void make_opaque(Ctx *c, const Onnx__NodeProto *n, const char *op_type, const Shape *shape0) {
    int *ins = malloc_check((n->n_input + 1) * sizeof(int), "onnx opaque inputs");
    int nin = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        if (n->input[i][0] == '\0') {
            continue;
        }
        int v = value_find(c, n->input[i]);
        if (c->values[v].kind != V_STATIC) {
            ins[nin++] = as_node(c, v, op_type);
        }
    }
    int dim = 1;
    Shape s = shape0 != NULL && shape0->rank >= 0 ? *shape0 : generic_shape(c, n);
    if (s.rank > 0) {
        dim = clamp_width(s.d[s.rank - 1]);
    }
    // an output of an input's very shape (an elementwise op: ConvNeXt's
    // per-channel layer scale on NCHW) keeps that input's feature axis;
    // otherwise the last axis is taken as the feature axis
    int axis0 = s.rank > 0 ? s.rank - 1 : -1;
    for (size_t i = 0; i < n->n_input; i++) {
        int v = in_value(c, n, i);
        if (v >= 0 && c->values[v].kind == V_ACT && c->values[v].axis >= 0 &&
            shape_equal(&c->values[v].shape, &s)) {
            axis0 = c->values[v].axis;
            dim = clamp_width(s.d[axis0]);
            break;
        }
    }
    const char *base = n->name[0] ? n->name : n->output[0];
    int node = opaque_node(c, base, op_type, ins, nin, dim);
    free(ins);
    for (size_t o = 0; o < n->n_output; o++) {
        if (n->output[o][0] != '\0') {
            set_act(c, n->output[o], node, o == 0 ? axis0 : -1,
                    o == 0 ? s : (Shape){.rank = -1});
        }
    }
}

// ---------------------------------------------------------------------------
// the ops

static const char *node_base(const Onnx__NodeProto *n) {
    return n->name[0] ? n->name : n->output[0];
}

// A static tensor that varies at most along x's feature axis (a gain or a bias).
static int per_feature(const Ctx *c, int s, int x) {
    const Shape *ss = &c->values[s].shape;
    const Shape *xs = &c->values[x].shape;
    int f = c->values[x].axis;
    if (ss->rank < 0 || xs->rank < 0 || ss->rank > xs->rank || f < 0) {
        return 0;
    }
    for (int i = 0; i < ss->rank; i++) {
        int aligned = i + xs->rank - ss->rank;
        if (aligned != f && ss->d[i] != 1) {
            return 0;
        }
        if (aligned == f && ss->d[i] != 1 && ss->d[i] != xs->d[f]) {
            return 0;
        }
    }
    return 1;
}

// x + static s (or x - s): a learned tensor added as is, or a linear layer's bias.
static void add_static(Ctx *c, const Onnx__NodeProto *n, int x, int s, int negate_x) {
    Value *xv = &c->values[x];
    Shape out = shape_broadcast(&xv->shape, &c->values[s].shape);
    int f = xv->axis;
    if (out.rank < 0 || out.rank != xv->shape.rank || f < 0 || xv->shape.d[f] < 0 ||
        out.d[f] != xv->shape.d[f]) { // the constant must not widen the feature axis
        make_opaque(c, n, n->op_type, &out);
        return;
    }
    int xn = as_node(c, x, n->op_type);
    if (!negate_x && xv->uses == 1 && per_feature(c, s, x)) {
        if (xv->linear_step == 1) { // MatMul + Add(bias): one linear layer with a bias
            c->nodes[xn].has_bias = 1;
            c->nodes[xn].origin.bias_value = s;
            c->nodes[xn].origin.bias_axis = f - (xv->shape.rank - c->values[s].shape.rank);
            set_act(c, n->output[0], xn, xv->axis, xv->shape);
            return;
        }
        if (xv->norm_step == 2) { // LN * gamma + beta
            set_act(c, n->output[0], xn, xv->axis, xv->shape);
            return;
        }
    }
    if (negate_x) {
        xn = unary_node(c, OP_SCALE, node_base(n), xn);
        c->nodes[xn].value = -1.0;
    }
    int p = node_new(c, OP_PARAM, c->values[s].name);
    c->nodes[p].dim = act_width(c, xn);
    c->nodes[p].origin.weight_value = s;
    c->nodes[p].origin.weight_axis = f - (out.rank - c->values[s].shape.rank);
    int a = node_new(c, OP_ADD, node_base(n));
    c->nodes[a].in[0] = xn;
    c->nodes[a].in[1] = p;
    c->nodes[a].nin = 2;
    c->nodes[a].dim = c->nodes[xn].dim;
    set_act(c, n->output[0], a, f, out);
}

// a + b or a - b of two activations of one shape and feature axis.
static void add_acts(Ctx *c, const Onnx__NodeProto *n, int a, int b, int negate_b) {
    Value *av = &c->values[a], *bv = &c->values[b];
    Shape out = shape_broadcast(&av->shape, &bv->shape);
    if (!is_act(av) || !is_act(bv) || !same_features(av, bv, &out)) {
        make_opaque(c, n, n->op_type, &out);
        return;
    }
    int an = as_node(c, a, n->op_type), bn = as_node(c, b, n->op_type);
    if (c->nodes[an].dim != c->nodes[bn].dim) {
        make_opaque(c, n, n->op_type, &out);
        return;
    }
    if (negate_b) {
        bn = unary_node(c, OP_SCALE, node_base(n), bn);
        c->nodes[bn].value = -1.0;
    }
    int node = node_new(c, OP_ADD, node_base(n));
    c->nodes[node].in[0] = an;
    c->nodes[node].in[1] = bn;
    c->nodes[node].nin = 2;
    c->nodes[node].dim = c->nodes[an].dim;
    set_act(c, n->output[0], node, av->axis, out);
}

// Sets output 0 to a pattern value about x's node.
static void set_pattern(Ctx *c, const Onnx__NodeProto *n, ValueKind kind, int node, int axis,
                        int centred, Shape shape, int src) {
    Value *out = &c->values[value_find(c, n->output[0])];
    out->src = src;
    out->kind = kind;
    out->node = node;
    out->axis = axis;
    out->centred = centred;
    out->shape = shape;
}

// The norm node over x's node (LN when the chain was centred, else RMSNorm).
static void finish_norm(Ctx *c, const Onnx__NodeProto *n, int x_node, int axis, int centred,
                        Shape shape) {
    int node = unary_node(c, centred ? OP_LAYERNORM : OP_RMSNORM, node_base(n), x_node);
    c->nodes[node].affine = 0; // a following Mul by a gain sets it
    set_act(c, n->output[0], node, axis, shape);
    c->values[value_find(c, n->output[0])].norm_step = 1;
}

// The operand matching the square chain s as its numerator: x - mean(x) for a
// centred chain, x itself for an RMS chain.
static int chain_numerator(const Ctx *c, int num, int chain) {
    const Value *nv = &c->values[num], *cv = &c->values[chain];
    if (cv->centred) {
        return nv->kind == V_CENTRED && nv->src == cv->src;
    }
    return nv->kind == V_ACT && num == cv->src;
}

static void op_add_sub(Ctx *c, const Onnx__NodeProto *n, int sub) {
    int a = in_value(c, n, 0), b = in_value(c, n, 1);
    Value *av = &c->values[a], *bv = &c->values[b];
    if (sub && av->kind == V_ACT && bv->kind == V_MEAN) {
        int an = as_node(c, a, n->op_type);
        if (bv->src == a) { // x - mean(x) of this very x
            set_pattern(c, n, V_CENTRED, an, av->axis, 1, av->shape, a);
            return;
        }
    }
    if (!sub && bv->kind == V_STATIC && bv->has_scalar && av->kind == V_MEANSQ) {
        set_pattern(c, n, V_MEANSQ, av->node, av->axis, av->centred, av->shape, av->src); // + eps
        return;
    }
    if (av->kind == V_STATIC && bv->kind != V_STATIC) {
        if (sub) {
            add_static(c, n, b, a, 1);
        } else {
            add_static(c, n, b, a, 0);
        }
        return;
    }
    if (bv->kind == V_STATIC) {
        add_static(c, n, a, b, 0);
        return;
    }
    add_acts(c, n, a, b, sub);
}

static void op_mul(Ctx *c, const Onnx__NodeProto *n) {
    int a = in_value(c, n, 0), b = in_value(c, n, 1);
    if (c->values[a].kind == V_STATIC) {
        int t = a;
        a = b;
        b = t;
    }
    Value *av = &c->values[a], *bv = &c->values[b];
    if (bv->kind == V_STATIC) {
        int elems = (int)shape_numel(&bv->shape);
        if (av->kind == V_ACT && av->axis >= 0 && elems == 1) { // times a constant
            int node = unary_node(c, OP_SCALE, node_base(n), as_node(c, a, n->op_type));
            c->nodes[node].value = bv->has_scalar ? bv->scalar : 1.0;
            set_act(c, n->output[0], node, av->axis, av->shape);
            return;
        }
        Shape out = shape_broadcast(&av->shape, &bv->shape);
        if (av->kind == V_ACT && av->norm_step == 1 && av->uses == 1 && per_feature(c, b, a) &&
            shape_equal(&out, &av->shape)) { // the norm's gain
            c->nodes[av->node].affine = 1;
            set_act(c, n->output[0], av->node, av->axis, av->shape);
            c->values[value_find(c, n->output[0])].norm_step = 2;
            return;
        }
        make_opaque(c, n, "Mul", &out); // an elementwise gain: any mean
        return;
    }
    // c * c: the square of a norm's chain
    if ((av->kind == V_CENTRED || av->kind == V_ACT) && a == b) {
        int node = av->kind == V_CENTRED ? av->node : as_node(c, a, n->op_type);
        set_pattern(c, n, V_SQUARE, node, av->axis, av->kind == V_CENTRED, av->shape,
                    av->kind == V_CENTRED ? av->src : a);
        return;
    }
    // c * (1 / std(c)): the normalised output
    for (int swap = 0; swap < 2; swap++) {
        int num = swap ? b : a, inv = swap ? a : b;
        if (c->values[num].kind == V_ACT) {
            as_node(c, num, n->op_type);
        }
        if (c->values[inv].kind == V_INVSTD && chain_numerator(c, num, inv)) {
            const Value *iv = &c->values[inv];
            finish_norm(c, n, iv->node, iv->axis, iv->centred, c->values[num].shape);
            return;
        }
    }
    if (is_act(av) && is_act(bv) && shape_equal(&av->shape, &bv->shape) && av->axis >= 0 &&
        av->axis == bv->axis) {
        int an = as_node(c, a, n->op_type), bn = as_node(c, b, n->op_type);
        if (c->nodes[an].dim == c->nodes[bn].dim) {
            int node = node_new(c, OP_MUL, node_base(n));
            c->nodes[node].in[0] = an;
            c->nodes[node].in[1] = bn;
            c->nodes[node].nin = 2;
            c->nodes[node].dim = c->nodes[an].dim;
            set_act(c, n->output[0], node, av->axis, av->shape);
            return;
        }
    }
    Shape out = shape_broadcast(&av->shape, &bv->shape);
    make_opaque(c, n, "Mul", &out);
}

static void op_div(Ctx *c, const Onnx__NodeProto *n) {
    int a = in_value(c, n, 0), b = in_value(c, n, 1);
    Value *av = &c->values[a], *bv = &c->values[b];
    if (av->kind == V_STATIC && av->has_scalar && av->scalar == 1.0 && bv->kind == V_STD) {
        set_pattern(c, n, V_INVSTD, bv->node, bv->axis, bv->centred, bv->shape, bv->src);
        return;
    }
    if (av->kind == V_ACT) {
        as_node(c, a, n->op_type);
    }
    if (bv->kind == V_STD && chain_numerator(c, a, b)) {
        finish_norm(c, n, bv->node, bv->axis, bv->centred, av->shape);
        return;
    }
    if (av->kind == V_ACT && av->axis >= 0 && bv->kind == V_STATIC && shape_numel(&bv->shape) == 1 &&
        bv->has_scalar && bv->scalar != 0.0) {
        int node = unary_node(c, OP_SCALE, node_base(n), as_node(c, a, n->op_type));
        c->nodes[node].value = 1.0 / bv->scalar;
        set_act(c, n->output[0], node, av->axis, av->shape);
        return;
    }
    Shape out = shape_broadcast(&av->shape, &bv->shape);
    make_opaque(c, n, "Div", &out);
}

static void op_unary_pattern(Ctx *c, const Onnx__NodeProto *n, int sqrt) {
    int a = in_value(c, n, 0);
    Value *av = &c->values[a];
    if (sqrt && av->kind == V_MEANSQ) {
        set_pattern(c, n, V_STD, av->node, av->axis, av->centred, av->shape, av->src);
        return;
    }
    if (!sqrt && av->kind == V_STD) {
        set_pattern(c, n, V_INVSTD, av->node, av->axis, av->centred, av->shape, av->src);
        return;
    }
    make_opaque(c, n, n->op_type, &av->shape);
}

static void op_pow(Ctx *c, const Onnx__NodeProto *n) {
    int a = in_value(c, n, 0), b = in_value(c, n, 1);
    Value *av = &c->values[a], *bv = &c->values[b];
    if ((av->kind == V_CENTRED || av->kind == V_ACT) && bv->kind == V_STATIC && bv->has_scalar &&
        bv->scalar == 2.0) {
        int node = av->kind == V_CENTRED ? av->node : as_node(c, a, n->op_type);
        set_pattern(c, n, V_SQUARE, node, av->axis, av->kind == V_CENTRED, av->shape,
                    av->kind == V_CENTRED ? av->src : a);
        return;
    }
    make_opaque(c, n, "Pow", &av->shape);
}

static void op_reduce_mean(Ctx *c, const Onnx__NodeProto *n) {
    int a = in_value(c, n, 0);
    Value *av = &c->values[a];
    int64_t axes[MAX_INTS];
    int na = int_list(c, n, "axes", c->opset >= 18 ? 1 : -1, axes);
    int keep = (int)attr_int(n, "keepdims", 1);
    int rank = av->shape.rank;
    uint32_t mask = 0;
    for (int i = 0; i < na; i++) {
        int ax = norm_axis(axes[i], rank);
        if (ax < 0) {
            na = -1;
            break;
        }
        mask |= 1u << ax;
    }
    if (na == -2 && rank > 0) {
        mask = (1u << rank) - 1; // all axes
    } else if (na < 0) {
        make_opaque(c, n, "ReduceMean", NULL);
        return;
    }
    Shape out = av->shape;
    if (rank >= 0) {
        out.rank = 0;
        for (int i = 0; i < rank; i++) {
            if (!(mask >> i & 1u)) {
                out.d[out.rank++] = av->shape.d[i];
            } else if (keep) {
                out.d[out.rank++] = 1;
            }
        }
    }
    int f = av->axis;
    if (f >= 0 && mask == (1u << f) && keep && (av->kind == V_ACT || av->kind == V_SQUARE)) {
        int node = av->kind == V_ACT ? as_node(c, a, n->op_type) : av->node;
        set_pattern(c, n, av->kind == V_ACT ? V_MEAN : V_MEANSQ, node, f, av->centred, out,
                    av->kind == V_ACT ? a : av->src);
        return;
    }
    if (av->kind == V_ACT && f >= 0 && !(mask >> f & 1u)) { // a mean over tokens keeps the property
        int nf = f;
        if (!keep) {
            for (int i = 0; i < f; i++) {
                nf -= (int)(mask >> i & 1u);
            }
        }
        set_act(c, n->output[0], as_node(c, a, n->op_type), nf, out);
        return;
    }
    make_opaque(c, n, "ReduceMean", &out);
}

static void op_matmul(Ctx *c, const Onnx__NodeProto *n) {
    int a = in_value(c, n, 0), b = in_value(c, n, 1);
    Value *av = &c->values[a], *bv = &c->values[b];
    Shape out = matmul_shape(&av->shape, &bv->shape);
    if (av->kind != V_STATIC && bv->kind == V_STATIC && bv->shape.rank == 2 && av->shape.rank >= 2 &&
        out.rank >= 1) {
        int x = as_node(c, a, n->op_type);
        int node = node_new(c, OP_LINEAR, node_base(n));
        ONode *ln = &c->nodes[node];
        ln->in[0] = x;
        ln->nin = 1;
        ln->dim = clamp_width(bv->shape.d[1]);
        ln->has_bias = 0;
        ln->origin.weight_value = b;
        ln->origin.weight_axis = 1;
        sanitize(bv->name, ln->weight);
        set_act(c, n->output[0], node, out.rank - 1, out);
        c->values[value_find(c, n->output[0])].linear_step = 1;
        return;
    }
    make_opaque(c, n, "MatMul", &out);
}

static void op_gemm(Ctx *c, const Onnx__NodeProto *n) {
    int a = in_value(c, n, 0), b = in_value(c, n, 1), bias = in_value(c, n, 2);
    Value *av = &c->values[a], *bv = &c->values[b];
    int trans_b = (int)attr_int(n, "transB", 0);
    if (av->kind != V_STATIC && bv->kind == V_STATIC && bv->shape.rank == 2 &&
        attr_int(n, "transA", 0) == 0 && av->shape.rank == 2 &&
        (bias < 0 || c->values[bias].kind == V_STATIC)) {
        int64_t outw = bv->shape.d[trans_b ? 0 : 1];
        Shape out = {.rank = 2, .d = {av->shape.d[0], outw}};
        int in = as_node(c, a, n->op_type); // (may grow c->nodes: before taking ln)
        int node = node_new(c, OP_LINEAR, node_base(n));
        ONode *ln = &c->nodes[node];
        ln->in[0] = in;
        ln->nin = 1;
        ln->dim = clamp_width(outw);
        ln->has_bias = bias >= 0;
        ln->origin.weight_value = b;
        ln->origin.weight_axis = trans_b ? 0 : 1;
        ln->origin.bias_value = bias;
        ln->origin.bias_axis = c->values[bias >= 0 ? bias : b].shape.rank - 1;
        sanitize(bv->name, ln->weight);
        set_act(c, n->output[0], node, 1, out);
        return;
    }
    make_opaque(c, n, "Gemm", NULL);
}

static void op_conv(Ctx *c, const Onnx__NodeProto *n) {
    int x = in_value(c, n, 0), w = in_value(c, n, 1), bias = in_value(c, n, 2);
    Value *xv = &c->values[x], *wv = &c->values[w];
    int rank = xv->shape.rank;
    // like MatMul, a Conv's output channels are a general linear map of any input
    const int64_t group = attr_int(n, "group", 1);
    if (xv->kind == V_ACT && wv->kind == V_STATIC && wv->shape.rank == rank &&
        rank >= 3 && group >= 1 && (bias < 0 || c->values[bias].kind == V_STATIC)) {
        // output spatial sizes: floor((in + pads - dilation (k - 1) - 1) / stride) + 1
        int64_t strides[MAX_INTS], pads[MAX_INTS], dil[MAX_INTS];
        int ns = int_list(c, n, "strides", -1, strides), np = int_list(c, n, "pads", -1, pads);
        int nd = int_list(c, n, "dilations", -1, dil);
        const Onnx__AttributeProto *ap = attr(n, "auto_pad");
        int sp = rank - 2;
        Shape out = {.rank = rank, .d = {xv->shape.d[0], wv->shape.d[0]}};
        for (int i = 0; i < sp; i++) {
            int64_t s = ns == sp ? strides[i] : 1, d = nd == sp ? dil[i] : 1;
            int64_t p = np == 2 * sp ? pads[i] + pads[i + sp] : 0;
            int64_t in = xv->shape.d[2 + i], k = wv->shape.d[2 + i];
            out.d[2 + i] = (in < 0 || k < 0 || s <= 0 || s > LIMIT || d <= 0 || d > LIMIT ||
                            p < 0 || p > LIMIT ||
                            (ap != NULL && ap->has_s && ap->s.len > 0 &&
                             (ap->s.len != 6 || memcmp(ap->s.data, "NOTSET", 6) != 0)))
                               ? -1
                               : (in + p - d * (k - 1) - 1) / s + 1;
        }
        if (group != 1) {
            // each output channel reads its group's input channels only: not a
            // general linear map of the feature vector, so CBWC cannot centre it
            // (a channel-wise op: the feature axis stays axis 1)
            int in = as_node(c, x, n->op_type);
            int node = opaque_node(c, node_base(n), "grouped-Conv", &in, 1,
                                   clamp_width(wv->shape.d[0]));
            set_act(c, n->output[0], node, 1, out);
            return;
        }
        int in = as_node(c, x, n->op_type); // (may grow c->nodes: before taking cn)
        int node = node_new(c, OP_CONV, node_base(n));
        ONode *cn = &c->nodes[node];
        cn->in[0] = in;
        cn->nin = 1;
        cn->dim = clamp_width(wv->shape.d[0]);
        cn->has_bias = bias >= 0;
        cn->origin.weight_value = w;
        cn->origin.weight_axis = 0;
        cn->origin.bias_value = bias;
        cn->origin.bias_axis = 0;
        sanitize(wv->name, cn->weight);
        set_act(c, n->output[0], node, 1, out);
        return;
    }
    make_opaque(c, n, "Conv", NULL);
}

static void op_gather(Ctx *c, const Onnx__NodeProto *n) {
    int d = in_value(c, n, 0), idx = in_value(c, n, 1);
    Value *dv = &c->values[d], *iv = &c->values[idx];
    int axis = norm_axis(attr_int(n, "axis", 0), dv->shape.rank);
    Shape out = {.rank = -1};
    if (axis >= 0 && iv->shape.rank >= 0 && dv->shape.rank - 1 + iv->shape.rank <= MAX_RANK) {
        out.rank = 0;
        for (int i = 0; i < axis; i++) {
            out.d[out.rank++] = dv->shape.d[i];
        }
        for (int i = 0; i < iv->shape.rank; i++) {
            out.d[out.rank++] = iv->shape.d[i];
        }
        for (int i = axis + 1; i < dv->shape.rank; i++) {
            out.d[out.rank++] = dv->shape.d[i];
        }
    }
    if (dv->kind == V_STATIC && iv->kind != V_STATIC && dv->shape.rank == 2 && axis == 0) {
        int in = as_node(c, idx, n->op_type); // (may grow c->nodes: before taking en)
        int node = node_new(c, OP_EMBEDDING, node_base(n));
        ONode *en = &c->nodes[node];
        en->in[0] = in;
        en->nin = 1;
        en->dim = clamp_width(dv->shape.d[1]);
        en->vocab = clamp_width(dv->shape.d[0]);
        en->origin.weight_value = d;
        en->origin.weight_axis = 1;
        sanitize(dv->name, en->weight);
        set_act(c, n->output[0], node, out.rank - 1, out);
        return;
    }
    if (dv->kind == V_ACT && iv->kind == V_STATIC && dv->axis >= 0 && axis >= 0 && axis != dv->axis &&
        out.rank >= 0) { // picks whole tokens
        int f = dv->axis < axis ? dv->axis : dv->axis - 1 + iv->shape.rank;
        set_act(c, n->output[0], as_node(c, d, n->op_type), f, out);
        return;
    }
    make_opaque(c, n, "Gather", &out);
}

// Reshape, Flatten, Squeeze, Unsqueeze: token moves when the feature axis survives whole.
static void reshape_to(Ctx *c, const Onnx__NodeProto *n, Shape out) {
    int x = in_value(c, n, 0);
    Value *xv = &c->values[x];
    int f = xv->kind == V_ACT ? reshape_axis(&xv->shape, xv->axis, &out) : -1;
    if (f >= 0) {
        set_act(c, n->output[0], as_node(c, x, n->op_type), f, out);
        return;
    }
    make_opaque(c, n, n->op_type, &out);
}

static void op_reshape_family(Ctx *c, const Onnx__NodeProto *n) {
    int x = in_value(c, n, 0);
    const Shape *in = &c->values[x].shape;
    Shape out = {.rank = -1};
    int64_t ints[MAX_INTS];
    const char *op = n->op_type;
    if (strcmp(op, "Reshape") == 0) {
        int k = int_list_partial(c, n, "shape", 1, ints);
        int64_t numel = shape_numel(in), known = 1;
        int infer = -1;
        if (k >= 0 && k <= MAX_RANK) {
            out.rank = k;
            for (int i = 0; i < k && out.rank >= 0; i++) {
                int64_t d = ints[i];
                if (d == 0 && attr_int(n, "allowzero", 0) == 0) {
                    d = i < in->rank && in->d[i] >= 0 ? in->d[i] : UNKNOWN_INT;
                }
                if (d == UNKNOWN_INT) {
                    d = -1; // a symbolic axis
                    known = -1;
                } else if (d == -1 && infer < 0) {
                    infer = i;
                } else if (d < 0) {
                    out.rank = -1;
                } else {
                    // -1 (unknown or too large) stays -1: -1 * d would be a false count
                    known = known < 0 || (d > 0 && known > INT64_MAX / d) ? -1 : known * d;
                }
                out.d[i] = d;
            }
            if (out.rank >= 0 && infer >= 0) {
                out.d[infer] = numel >= 0 && known > 0 && numel % known == 0 ? numel / known : -1;
            }
            for (int i = 0; i < out.rank; i++) {
                out.d[i] = out.d[i] <= LIMIT ? out.d[i] : -1;
            }
        }
    } else if (strcmp(op, "Flatten") == 0) {
        int a = norm_axis(attr_int(n, "axis", 1), in->rank + 1);
        if (a >= 0 && shape_known(in)) {
            out.rank = 2;
            out.d[0] = out.d[1] = 1;
            for (int i = 0; i < in->rank; i++) {
                out.d[i < a ? 0 : 1] *= in->d[i];
            }
        }
    } else {
        int unsq = strcmp(op, "Unsqueeze") == 0;
        int k = int_list(c, n, "axes", c->opset >= 13 ? 1 : -1, ints);
        int out_rank = unsq && k >= 0 ? in->rank + k : in->rank;
        uint32_t mask = 0;
        for (int i = 0; i < k; i++) {
            int a = norm_axis(ints[i], out_rank);
            mask |= a >= 0 ? 1u << a : 1u << 31;
        }
        if (in->rank >= 0 && out_rank <= MAX_RANK && !(mask >> 31) && (k >= 0 || (!unsq && k == -2))) {
            out.rank = 0;
            for (int i = 0, j = 0; i < (unsq ? out_rank : in->rank); i++) {
                if (unsq) {
                    out.d[out.rank++] = (mask >> i & 1u) ? 1 : in->d[j++];
                } else if (k == -2 ? in->d[i] != 1 : !(mask >> i & 1u)) {
                    out.d[out.rank++] = in->d[i];
                }
            }
        }
    }
    if (c->values[x].kind == V_STATIC) {
        Value *o = &c->values[value_find(c, n->output[0])];
        o->kind = V_STATIC;
        o->shape = out;
        const Value *xv = &c->values[x];
        if (xv->nints >= 0) { // shape arithmetic: the values do not change
            o->nints = xv->nints;
            memcpy(o->ints, xv->ints, sizeof(o->ints));
        }
        o->has_scalar = xv->has_scalar;
        o->scalar = xv->scalar;
        return;
    }
    reshape_to(c, n, out);
}

static void op_transpose(Ctx *c, const Onnx__NodeProto *n) {
    int x = in_value(c, n, 0);
    Value *xv = &c->values[x];
    int rank = xv->shape.rank;
    int64_t perm[MAX_INTS];
    int k = int_list(c, n, "perm", -1, perm);
    Shape out = {.rank = -1};
    if (rank >= 0 && k == -2) {
        k = rank;
        for (int i = 0; i < rank; i++) {
            perm[i] = rank - 1 - i;
        }
    }
    int f = -1;
    if (rank >= 0 && k == rank) {
        out.rank = rank;
        for (int i = 0; i < rank; i++) {
            if (perm[i] < 0 || perm[i] >= rank) {
                out.rank = -1;
                break;
            }
            out.d[i] = xv->shape.d[perm[i]];
            if (perm[i] == xv->axis) {
                f = i;
            }
        }
    }
    if (xv->kind == V_ACT && out.rank >= 0 && f >= 0) {
        set_act(c, n->output[0], as_node(c, x, n->op_type), f, out);
        return;
    }
    make_opaque(c, n, "Transpose", &out);
}

static void op_split(Ctx *c, const Onnx__NodeProto *n) {
    int x = in_value(c, n, 0);
    Value *xv = &c->values[x];
    int rank = xv->shape.rank;
    int axis = norm_axis(attr_int(n, "axis", 0), rank);
    int64_t sizes[MAX_INTS];
    int k = int_list(c, n, "split", c->opset >= 13 ? 1 : -1, sizes);
    int outs = (int)n->n_output;
    if (k == -2 && axis >= 0 && xv->shape.d[axis] >= 0 && outs > 0 && outs <= MAX_INTS) {
        int64_t part = (xv->shape.d[axis] + outs - 1) / outs;
        for (int i = 0; i < outs; i++) {
            int64_t left = xv->shape.d[axis] - part * i;
            sizes[i] = left < part ? (left > 0 ? left : 0) : part;
        }
        k = outs;
    }
    if (xv->kind != V_ACT || axis < 0 || k != outs || axis == xv->axis || xv->axis < 0) {
        // a feature split (q, k, v of a fused projection): each part has any mean
        int in = xv->kind == V_STATIC ? -1 : as_node(c, x, "Split");
        for (int o = 0; o < outs; o++) {
            if (n->output[o][0] == '\0') {
                continue;
            }
            Shape s = {.rank = -1};
            if (axis >= 0 && k == outs) {
                s = xv->shape;
                s.d[axis] = sizes[o];
            }
            int node = opaque_node(c, n->output[o], "Split", &in, in >= 0, s.rank > 0 ? clamp_width(s.d[s.rank - 1]) : 1);
            set_act(c, n->output[o], node, s.rank > 0 ? s.rank - 1 : -1, s);
        }
        return;
    }
    int node = as_node(c, x, "Split");
    for (int o = 0; o < outs; o++) {
        if (n->output[o][0] != '\0') {
            Shape s = xv->shape;
            s.d[axis] = sizes[o];
            set_act(c, n->output[o], node, xv->axis, s);
        }
    }
}

static void op_slice(Ctx *c, const Onnx__NodeProto *n) {
    int x = in_value(c, n, 0);
    Value *xv = &c->values[x];
    int rank = xv->shape.rank;
    int64_t starts[MAX_INTS], ends[MAX_INTS], axes[MAX_INTS], steps[MAX_INTS];
    int old = c->opset < 10;
    int ns = int_list(c, n, "starts", old ? -1 : 1, starts);
    int ne = int_list(c, n, "ends", old ? -1 : 2, ends);
    int na = int_list(c, n, "axes", old ? -1 : 3, axes);
    int nst = old ? -2 : int_list(c, n, "steps", 4, steps);
    if (na == -2 && ns >= 0) {
        na = ns;
        for (int i = 0; i < na; i++) {
            axes[i] = i;
        }
    }
    Shape out = xv->shape;
    int ok = rank >= 0 && ns >= 0 && ns == ne && ns == na && (nst == -2 || nst == ns);
    int touches_f = 0;
    for (int i = 0; ok && i < na; i++) {
        int a = norm_axis(axes[i], rank);
        int64_t dim = a >= 0 ? xv->shape.d[a] : -1, step = nst == -2 ? 1 : steps[i];
        if (a < 0 || dim < 0 || step == 0 || step == INT64_MIN) {
            ok = 0;
            break;
        }
        touches_f |= a == xv->axis;
        int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
        int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
        if (step > 0) {
            s = s < 0 ? 0 : (s > dim ? dim : s);
            e = e < 0 ? 0 : (e > dim ? dim : e);
            out.d[a] = e > s ? (e - s - 1) / step + 1 : 0;
        } else {
            s = s < 0 ? -1 : (s > dim - 1 ? dim - 1 : s);
            e = e < -1 ? -1 : (e > dim - 1 ? dim - 1 : e);
            out.d[a] = s > e ? (s - e - 1) / (-step) + 1 : 0;
        }
    }
    if (!ok) {
        out.rank = -1;
    }
    if (xv->kind == V_ACT && ok && !touches_f && xv->axis >= 0) { // drops or reorders tokens
        set_act(c, n->output[0], as_node(c, x, n->op_type), xv->axis, out);
        return;
    }
    make_opaque(c, n, "Slice", &out);
}

// Pad of non-feature axes only: a token move that inserts tokens (zeros, or
// copies of edge tokens), each zero-mean when the input is and shifted by
// its source's shift or not at all (Swin's window padding).
static void op_pad(Ctx *c, const Onnx__NodeProto *n) {
    int x = in_value(c, n, 0), cv = in_value(c, n, 2);
    Value *xv = &c->values[x];
    const int rank = xv->shape.rank;
    int64_t pads[MAX_INTS], axes[MAX_INTS];
    int np = int_list(c, n, "pads", c->opset >= 11 ? 1 : -1, pads);
    int na = c->opset >= 18 ? int_list(c, n, "axes", 3, axes) : -2;
    const Onnx__AttributeProto *mode = attr(n, "mode");
    int constant = mode == NULL || !mode->has_s ||
                   (mode->s.len == 8 && memcmp(mode->s.data, "constant", 8) == 0);
    int zero_fill = cv < 0 || (c->values[cv].has_scalar && c->values[cv].scalar == 0.0);
    if (na == -2 && rank >= 0) {
        na = rank;
        for (int i = 0; i < rank; i++) {
            axes[i] = i;
        }
    }
    Shape out = xv->shape;
    int ok = xv->kind == V_ACT && xv->axis >= 0 && rank >= 0 && na >= 0 && np == 2 * na &&
             (!constant || zero_fill);
    for (int i = 0; ok && i < na; i++) {
        int a = norm_axis(axes[i], rank);
        int64_t add = pads[i] + pads[i + na];
        ok = a >= 0 && pads[i] >= -LIMIT && pads[i] <= LIMIT && pads[i + na] >= -LIMIT &&
             pads[i + na] <= LIMIT && (a != xv->axis || (pads[i] == 0 && pads[i + na] == 0));
        if (ok && out.d[a] >= 0) {
            out.d[a] = out.d[a] + add >= 0 ? out.d[a] + add : -1;
        }
    }
    if (ok) {
        set_act(c, n->output[0], as_node(c, x, n->op_type), xv->axis, out);
        return;
    }
    make_opaque(c, n, "Pad", NULL);
}

// GlobalAveragePool of NC...: the mean over the tokens (the spatial axes).
static void op_global_avgpool(Ctx *c, const Onnx__NodeProto *n) {
    int x = in_value(c, n, 0);
    Value *xv = &c->values[x];
    if (xv->kind == V_ACT && xv->axis == 1 && xv->shape.rank >= 3) {
        Shape out = xv->shape;
        for (int i = 2; i < out.rank; i++) {
            out.d[i] = 1;
        }
        int node = unary_node(c, OP_AVGPOOL, node_base(n), as_node(c, x, n->op_type));
        set_act(c, n->output[0], node, 1, out);
        return;
    }
    make_opaque(c, n, n->op_type, NULL);
}

static void op_concat(Ctx *c, const Onnx__NodeProto *n) {
    int first_act = -1;
    for (size_t i = 0; i < n->n_input; i++) {
        int v = in_value(c, n, i);
        if (v >= 0 && c->values[v].kind != V_STATIC) {
            first_act = v;
            break;
        }
    }
    Value *fv = &c->values[first_act];
    int rank = fv->shape.rank;
    int axis = norm_axis(attr_int(n, "axis", 0), rank);
    int f = fv->axis;
    Shape out = fv->shape;
    int ok = fv->kind == V_ACT && axis >= 0 && f >= 0 && n->n_input >= 2 && n->n_input <= 64;
    if (ok) {
        out.d[axis] = 0;
    }
    for (size_t i = 0; ok && i < n->n_input; i++) {
        int v = in_value(c, n, i);
        const Value *iv = v >= 0 ? &c->values[v] : NULL;
        ok = iv != NULL && iv->shape.rank == rank && (iv->kind == V_STATIC || (iv->kind == V_ACT && iv->axis == f));
        for (int d = 0; ok && d < rank; d++) {
            ok = iv->shape.d[d] >= 0 && (d == axis || iv->shape.d[d] == fv->shape.d[d]);
        }
        if (ok) {
            out.d[axis] += iv->shape.d[axis];
        }
    }
    if (!ok) {
        make_opaque(c, n, "Concat", NULL);
        return;
    }
    GraphOp op = axis == f ? OP_CONCAT : OP_TOKEN_CONCAT;
    int ins[64];
    int nin = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        int v = in_value(c, n, i);
        ins[nin] = as_node(c, v, "Concat");
        if (c->values[v].kind == V_STATIC) { // a learned tensor: a param of its own width
            c->nodes[ins[nin]].dim = clamp_width(c->values[v].shape.d[f]);
        }
        nin++;
    }
    for (int i = 1; op == OP_TOKEN_CONCAT && i < nin; i++) {
        if (c->nodes[ins[i]].dim != c->nodes[ins[0]].dim) {
            make_opaque(c, n, "Concat", &out);
            return;
        }
    }
    // chained when more than 8 parts: concatenation is associative
    int node = -1, k = 0;
    while (k < nin) {
        node = node_new(c, op, node_base(n));
        ONode *cn = &c->nodes[node];
        if (k > 0) {
            cn->in[cn->nin++] = node - 1;
        }
        while (k < nin && cn->nin < GRAPH_MAX_INPUTS) {
            cn->in[cn->nin++] = ins[k++];
        }
        cn->dim = c->nodes[cn->in[0]].dim;
        for (int i = 1; op == OP_CONCAT && i < cn->nin; i++) {
            cn->dim += c->nodes[cn->in[i]].dim;
        }
        if (cn->dim > MAX_WIDTH) {
            cn->op = OP_OPAQUE;
            cn->dim = 1;
            snprintf(cn->what, sizeof(cn->what), "Concat");
            note_opaque(c, "Concat");
        }
    }
    set_act(c, n->output[0], node, f, out);
}

static void op_norm_node(Ctx *c, const Onnx__NodeProto *n, GraphOp op) {
    int x = in_value(c, n, 0);
    Value *xv = &c->values[x];
    int axis = norm_axis(attr_int(n, "axis", -1), xv->shape.rank);
    // a norm the reader cannot place (its input's feature axis lost upstream,
    // or not the axis normalised) still counts: it reads a "not-analysed"
    // opaque node, so it is never foldable and the report names where
    int in;
    if (xv->kind == V_ACT && axis >= 0 && axis == xv->shape.rank - 1 && axis == xv->axis) {
        in = as_node(c, x, n->op_type);
    } else {
        int up = xv->kind == V_STATIC || xv->kind == V_UNDEF ? -1 : as_node(c, x, n->op_type);
        char base[2 * GRAPH_MAX_NAME];
        snprintf(base, sizeof(base), "%s:axis-lost", up >= 0 ? c->nodes[up].name : xv->name);
        int64_t w = axis >= 0 && axis == xv->shape.rank - 1 ? xv->shape.d[axis] : -1;
        in = opaque_node(c, base, "not-analysed", &up, up >= 0, clamp_width(w));
        c->report->unplaced_norms++;
    }
    int node = unary_node(c, op, node_base(n), in);
    c->nodes[node].affine = 1;
    c->nodes[node].origin.norm_op = 1;
    set_act(c, n->output[0], node, axis, xv->shape);
    for (size_t o = 1; o < n->n_output; o++) { // mean, inverse std: statistics
        if (n->output[o][0] != '\0') {
            Value *sv = &c->values[value_find(c, n->output[o])];
            sv->kind = V_REDUCED;
            sv->node = in;
            sv->axis = axis;
        }
    }
}

static void op_softmax(Ctx *c, const Onnx__NodeProto *n) {
    int x = in_value(c, n, 0);
    Value *xv = &c->values[x];
    int rank = xv->shape.rank;
    int axis = norm_axis(attr_int(n, "axis", c->opset >= 13 ? -1 : 1), rank);
    if (xv->kind == V_ACT && axis >= 0 && axis == xv->axis && (c->opset >= 13 || axis == rank - 1)) {
        int node = unary_node(c, OP_SOFTMAX, node_base(n), as_node(c, x, n->op_type));
        set_act(c, n->output[0], node, axis, xv->shape);
        return;
    }
    make_opaque(c, n, "Softmax", &xv->shape);
}

static void op_activation(Ctx *c, const Onnx__NodeProto *n, GraphOp op) {
    int x = in_value(c, n, 0);
    Value *xv = &c->values[x];
    if (xv->kind != V_ACT) {
        make_opaque(c, n, n->op_type, &xv->shape);
        return;
    }
    int node = unary_node(c, op, node_base(n), as_node(c, x, n->op_type));
    set_act(c, n->output[0], node, xv->axis, xv->shape);
}

static void op_alias(Ctx *c, const Onnx__NodeProto *n) {
    int x = in_value(c, n, 0);
    Value *xv = &c->values[x];
    if (xv->kind != V_ACT) {
        make_opaque(c, n, n->op_type, &xv->shape);
        return;
    }
    set_act(c, n->output[0], as_node(c, x, n->op_type), xv->axis, xv->shape);
    for (size_t o = 1; o < n->n_output; o++) { // Dropout's mask: all ones in inference
        if (n->output[o][0] != '\0') {
            c->values[value_find(c, n->output[o])].kind = V_STATIC;
        }
    }
}

static void op_expand(Ctx *c, const Onnx__NodeProto *n) {
    int x = in_value(c, n, 0);
    Value *xv = &c->values[x];
    int64_t ints[MAX_INTS];
    int k = int_list_partial(c, n, "", 1, ints);
    Shape target = {.rank = k >= 0 && k <= MAX_RANK ? k : -1};
    for (int i = 0; i < target.rank; i++) {
        target.d[i] = ints[i] >= 0 && ints[i] <= LIMIT ? ints[i] : -1;
    }
    Shape out = shape_broadcast(&xv->shape, &target);
    if (xv->kind == V_STATIC) {
        Value *o = &c->values[value_find(c, n->output[0])];
        o->kind = V_STATIC;
        o->shape = out;
        return;
    }
    int f = xv->axis >= 0 && out.rank >= 0 ? xv->axis + out.rank - xv->shape.rank : -1;
    if (xv->kind == V_ACT && f >= 0 && xv->shape.d[xv->axis] >= 0 &&
        out.d[f] == xv->shape.d[xv->axis]) { // copies tokens
        set_act(c, n->output[0], as_node(c, x, n->op_type), f, out);
        return;
    }
    make_opaque(c, n, "Expand", &out);
}

// Elementwise int arithmetic of shape computations (Add, Sub, Mul, Div,
// Equal, Where, Max, Min on 0-D/1-D int tensors, scalars broadcast); 1 when done.
static int int_binary(const Ctx *c, const Onnx__NodeProto *n, Value *out) {
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div", "Equal", "Max", "Min", "Where",
                                      "Mod"};
    int which = -1;
    for (int i = 0; i < 9; i++) {
        which = strcmp(n->op_type, ops[i]) == 0 ? i : which;
    }
    size_t nin = which == 7 ? 3 : 2;
    if (which < 0 || n->n_input != nin) {
        return 0;
    }
    const Value *in[3];
    int len = 1;
    for (size_t k = 0; k < nin; k++) {
        int v = in_value(c, n, k);
        if (v < 0 || c->values[v].nints < 0 || c->values[v].shape.rank > 1) {
            return 0;
        }
        in[k] = &c->values[v];
        if (in[k]->nints != 1) {
            if (len != 1 && len != in[k]->nints) {
                return 0;
            }
            len = in[k]->nints;
        }
    }
    for (int i = 0; i < len; i++) {
        int64_t x[3];
        for (size_t k = 0; k < nin; k++) {
            x[k] = in[k]->ints[in[k]->nints == 1 ? 0 : i];
        }
        int64_t a = x[0], b = x[1], r;
        if (a == UNKNOWN_INT || b == UNKNOWN_INT || (which == 7 && x[2] == UNKNOWN_INT)) {
            out->ints[i] = UNKNOWN_INT;
            continue;
        }
        if (which != 7 && (a > LIMIT || a < -LIMIT || b > LIMIT || b < -LIMIT)) {
            return 0; // no overflow: shapes are small
        }
        switch (which) {
        case 0: r = a + b; break;
        case 1: r = a - b; break;
        case 2: r = a * b; break;
        case 3:
            if (b == 0) {
                return 0;
            }
            r = a / b;
            break;
        case 4: r = a == b; break;
        case 5: r = a > b ? a : b; break;
        case 6: r = a < b ? a : b; break;
        case 8:
            if (b == 0) {
                return 0;
            }
            r = a % b;
            if (attr_int(n, "fmod", 0) == 0 && r != 0 && (r < 0) != (b < 0)) {
                r += b; // integer Mod takes the divisor's sign (Python's %)
            }
            break;
        default: r = a ? x[1] : x[2]; break;
        }
        out->ints[i] = r;
    }
    out->nints = len;
    int rank = 0;
    for (size_t k = 0; k < nin; k++) {
        rank = in[k]->shape.rank > rank ? in[k]->shape.rank : rank;
    }
    out->shape.rank = rank;
    out->shape.d[0] = len;
    return 1;
}

// Transpose and Slice of a small static int tensor of known shape (the pads of
// a PyTorch F.pad export: reshape to [-1, 2], reverse, transpose, flatten):
// the result's shape and values; out stays unknown when anything is not known.
static void static_int_moves(const Ctx *c, const Onnx__NodeProto *n, const Value *xv, Value *out) {
    const int rank = xv->shape.rank;
    if (rank < 1 || rank > MAX_RANK || shape_numel(&xv->shape) != xv->nints) {
        return;
    }
    int64_t start[MAX_RANK], step[MAX_RANK], perm[MAX_INTS];
    Shape os = xv->shape;
    for (int i = 0; i < rank; i++) {
        start[i] = 0;
        step[i] = 1;
        perm[i] = i;
    }
    if (strcmp(n->op_type, "Transpose") == 0) {
        int k = int_list(c, n, "perm", -1, perm);
        if (k == -2) {
            for (int i = 0; i < rank; i++) {
                perm[i] = rank - 1 - i;
            }
        } else if (k != rank) {
            return;
        }
        for (int i = 0; i < rank; i++) {
            if (perm[i] < 0 || perm[i] >= rank) {
                return;
            }
            os.d[i] = xv->shape.d[perm[i]];
        }
    } else {
        int64_t st[MAX_INTS], en[MAX_INTS], ax[MAX_INTS], sp[MAX_INTS];
        int ns = int_list(c, n, "starts", c->opset < 10 ? -1 : 1, st);
        int ne = int_list(c, n, "ends", c->opset < 10 ? -1 : 2, en);
        int na = int_list(c, n, "axes", c->opset < 10 ? -1 : 3, ax);
        int nsp = c->opset < 10 ? -2 : int_list(c, n, "steps", 4, sp);
        if (ns < 0 || ns != ne || (na != -2 && na != ns) || (nsp != -2 && nsp != ns)) {
            return;
        }
        for (int i = 0; i < ns; i++) {
            int a = norm_axis(na == -2 ? i : ax[i], rank);
            int64_t dim = a >= 0 ? xv->shape.d[a] : -1, stp = nsp == -2 ? 1 : sp[i];
            if (a < 0 || stp == 0 || stp < -LIMIT || stp > LIMIT) {
                return;
            }
            int64_t b = st[i] < 0 ? st[i] + dim : st[i], e = en[i] < 0 ? en[i] + dim : en[i];
            if (stp > 0) {
                b = b < 0 ? 0 : (b > dim ? dim : b);
                e = e < 0 ? 0 : (e > dim ? dim : e);
                os.d[a] = e > b ? (e - b - 1) / stp + 1 : 0;
            } else {
                b = b < 0 ? -1 : (b > dim - 1 ? dim - 1 : b);
                e = e < -1 ? -1 : (e > dim - 1 ? dim - 1 : e);
                os.d[a] = b > e ? (b - e - 1) / (-stp) + 1 : 0;
            }
            start[a] = b;
            step[a] = stp;
        }
    }
    // walk the output in row-major order; idx[i] is the output index on axis i
    int64_t total = shape_numel(&os), idx[MAX_RANK] = {0};
    if (total < 0 || total > MAX_INTS) {
        return;
    }
    for (int64_t o = 0; o < total; o++) {
        int64_t src = 0;
        for (int a = 0; a < rank; a++) { // source offset, axis by axis of the input
            int64_t i_in = 0;
            for (int j = 0; j < rank; j++) {
                if (perm[j] == a) {
                    i_in = start[a] + idx[j] * step[a];
                }
            }
            src = src * xv->shape.d[a] + i_in;
        }
        if (src < 0 || src >= xv->nints) {
            return;
        }
        out->ints[o] = xv->ints[src];
        for (int j = rank - 1; j >= 0 && ++idx[j] == os.d[j]; j--) {
            idx[j] = 0;
        }
    }
    out->shape = os;
    out->nints = (int)total;
}

// Static result of an op on static inputs: the shape where it is easy, and
// the small int arithmetic of shape computations.
static void static_result(Ctx *c, const Onnx__NodeProto *n) {
    const char *op = n->op_type;
    int x = in_value(c, n, 0);
    for (size_t o = 0; o < n->n_output; o++) {
        if (n->output[o][0] != '\0') {
            c->values[value_find(c, n->output[o])].kind = V_STATIC;
        }
    }
    Value *out = &c->values[value_find(c, n->output[0])];
    if (x < 0) {
        return;
    }
    Value *xv = &c->values[x];
    if (strcmp(op, "Cast") == 0 || strcmp(op, "Identity") == 0) {
        int64_t to = attr_int(n, "to", 0);
        Value keep = *xv;
        out->shape = keep.shape;
        if (to == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 || to == ONNX__TENSOR_PROTO__DATA_TYPE__INT32 ||
            strcmp(op, "Identity") == 0) {
            out->nints = keep.nints;
            memcpy(out->ints, keep.ints, sizeof(out->ints));
        }
        out->has_scalar = keep.has_scalar;
        out->scalar = keep.scalar;
    } else if (strcmp(op, "Range") == 0) {
        // 1-D; its length is known when start, limit and delta are
        const Value *st = &c->values[x];
        int li = in_value(c, n, 1), de = in_value(c, n, 2);
        out->shape.rank = 1;
        out->shape.d[0] = -1;
        if (li >= 0 && de >= 0 && st->nints == 1 && c->values[li].nints == 1 &&
            c->values[de].nints == 1 && st->ints[0] != UNKNOWN_INT &&
            c->values[li].ints[0] != UNKNOWN_INT && c->values[de].ints[0] > 0 &&
            c->values[li].ints[0] - st->ints[0] <= LIMIT && st->ints[0] >= -LIMIT) {
            int64_t d = c->values[de].ints[0], len = c->values[li].ints[0] - st->ints[0];
            out->shape.d[0] = len > 0 ? (len + d - 1) / d : 0;
        }
    } else if (strcmp(op, "Gather") == 0 && !(xv->nints >= 0 && xv->shape.rank == 1)) {
        // rows of a table (a position embedding at positions Range(T)): the shape
        int idx = in_value(c, n, 1);
        int axis = norm_axis(attr_int(n, "axis", 0), xv->shape.rank);
        const Shape *is = idx >= 0 ? &c->values[idx].shape : NULL;
        if (axis >= 0 && is != NULL && is->rank >= 0 && xv->shape.rank - 1 + is->rank <= MAX_RANK) {
            out->shape.rank = 0;
            for (int i = 0; i < axis; i++) {
                out->shape.d[out->shape.rank++] = xv->shape.d[i];
            }
            for (int i = 0; i < is->rank; i++) {
                out->shape.d[out->shape.rank++] = is->d[i];
            }
            for (int i = axis + 1; i < xv->shape.rank; i++) {
                out->shape.d[out->shape.rank++] = xv->shape.d[i];
            }
        }
    } else if (strcmp(op, "Gather") == 0) {
        int idx = in_value(c, n, 1);
        if (idx >= 0 && xv->nints >= 0 && xv->shape.rank == 1 && attr_int(n, "axis", 0) == 0 &&
            c->values[idx].nints >= 0 && c->values[idx].shape.rank <= 1) {
            const Value *iv = &c->values[idx];
            out->shape = iv->shape;
            out->nints = 0;
            for (int i = 0; i < iv->nints; i++) {
                int64_t j = iv->ints[i] < 0 ? iv->ints[i] + xv->nints : iv->ints[i];
                if (j < 0 || j >= xv->nints) {
                    out->nints = -1;
                    break;
                }
                out->ints[out->nints++] = xv->ints[j];
            }
        }
    } else if (strcmp(op, "Concat") == 0) {
        out->nints = 0;
        out->shape.rank = 1;
        for (size_t i = 0; i < n->n_input && out->nints >= 0; i++) {
            int v = in_value(c, n, i);
            const Value *iv = v >= 0 ? &c->values[v] : NULL;
            if (iv == NULL || iv->nints < 0 || iv->shape.rank != 1 || out->nints + iv->nints > MAX_INTS) {
                out->nints = -1;
                out->shape.rank = -1;
                break;
            }
            memcpy(out->ints + out->nints, iv->ints, (size_t)iv->nints * sizeof(int64_t));
            out->nints += iv->nints;
        }
        out->shape.d[0] = out->nints;
    } else if (strcmp(op, "Transpose") == 0 || (strcmp(op, "Slice") == 0 && xv->nints >= 0 &&
                                                  xv->shape.rank != 1)) {
        static_int_moves(c, n, xv, out);
    } else if (strcmp(op, "Slice") == 0 && !(xv->nints >= 0 && xv->shape.rank == 1)) {
        int64_t ax[MAX_INTS];
        int na = int_list(c, n, "axes", c->opset < 10 ? -1 : 3, ax);
        out->shape = xv->shape; // the sliced axes become unknown (their bounds may be)
        for (int i = 0; i < na && out->shape.rank >= 0; i++) {
            int a = norm_axis(ax[i], xv->shape.rank);
            if (a < 0) {
                out->shape.rank = -1;
            } else {
                out->shape.d[a] = -1;
            }
        }
        if (na < 0) {
            out->shape.rank = -1;
        }
    } else if (strcmp(op, "Slice") == 0) {
        int64_t st[MAX_INTS], en[MAX_INTS], ax[MAX_INTS], sp[MAX_INTS];
        int ns = int_list(c, n, "starts", c->opset < 10 ? -1 : 1, st);
        int ne = int_list(c, n, "ends", c->opset < 10 ? -1 : 2, en);
        int na = int_list(c, n, "axes", c->opset < 10 ? -1 : 3, ax);
        int nsp = c->opset < 10 ? -2 : int_list(c, n, "steps", 4, sp);
        int64_t len = xv->nints;
        if (ns == 1 && ne == 1 && (na == -2 || (na == 1 && (ax[0] == 0 || ax[0] == -1))) &&
            (nsp == -2 || (nsp == 1 && sp[0] == 1))) {
            int64_t b = st[0] < 0 ? st[0] + len : st[0], e = en[0] < 0 ? en[0] + len : en[0];
            b = b < 0 ? 0 : (b > len ? len : b);
            e = e < 0 ? 0 : (e > len ? len : e);
            out->nints = 0;
            for (int64_t i = b; i < e; i++) {
                out->ints[out->nints++] = xv->ints[i];
            }
            out->shape.rank = 1;
            out->shape.d[0] = out->nints;
        }
    } else if (strcmp(op, "ConstantOfShape") == 0 && xv->nints >= 0 && xv->nints <= MAX_RANK) {
        out->shape.rank = xv->nints;
        for (int i = 0; i < xv->nints; i++) {
            out->shape.d[i] = xv->ints[i] >= 0 && xv->ints[i] <= LIMIT ? xv->ints[i] : -1;
        }
        const Onnx__AttributeProto *a = attr(n, "value");
        int64_t numel = shape_numel(&out->shape);
        if (a != NULL && a->t != NULL && numel >= 0 && numel <= MAX_INTS) {
            Shape keep = out->shape;
            tensor_value(c, (int)(out - c->values), a->t); // the fill value, into out for now
            Value fill = *out;
            out->shape = keep;
            out->nints = fill.nints == 1 ? (int)numel : -1;
            for (int64_t i = 0; i < numel && out->nints >= 0; i++) {
                out->ints[i] = fill.ints[0];
            }
            out->has_scalar = numel == 1 && fill.has_scalar;
        }
    } else if (int_binary(c, n, out)) {
        // small int arithmetic done
    } else if (strcmp(op, "Sqrt") == 0 || strcmp(op, "Neg") == 0 || strcmp(op, "Trilu") == 0 ||
               strcmp(op, "Not") == 0) {
        out->shape = xv->shape;
    } else {
        out->shape = generic_shape(c, n); // elementwise: the broadcast shape (Range(T) + 2)
    }
}

static int any_act(const Ctx *c, const Onnx__NodeProto *n) {
    for (size_t i = 0; i < n->n_input; i++) {
        int v = in_value(c, n, i);
        if (v >= 0 && c->values[v].kind != V_STATIC) {
            return 1;
        }
    }
    return 0;
}

// x - mean(x) read by anything but the rest of a decomposed LN (Pow or Mul
// squaring it, Div by the deviation) is an explicit centring op (Swin's
// centring ops, llmc/vision/swin.c -k 1): from here on an activation, the centre node.
static void centred_inputs_as_acts(Ctx *c, const Onnx__NodeProto *n) {
    for (size_t i = 0; i < n->n_input; i++) {
        int v = in_value(c, n, i);
        if (v >= 0 && c->values[v].kind == V_CENTRED) {
            int node = as_node(c, v, n->op_type);
            c->values[v].kind = V_ACT;
            c->values[v].node = node;
        }
    }
}

static void map_node(Ctx *c, const Onnx__NodeProto *n) {
    const char *op = n->op_type;
    int ms = n->domain != NULL && strcmp(n->domain, "com.microsoft") == 0;
    int std_domain = n->domain == NULL || n->domain[0] == '\0' || strcmp(n->domain, "ai.onnx") == 0;
    if (std_domain && strcmp(op, "Constant") == 0) {
        int v = value_find(c, n->output[0]);
        const Onnx__AttributeProto *a = attr(n, "value");
        if (a != NULL && a->t != NULL) {
            tensor_value(c, v, a->t);
        } else {
            c->values[v].kind = V_STATIC;
            if ((a = attr(n, "value_float")) != NULL) {
                c->values[v].shape.rank = 0;
                c->values[v].has_scalar = 1;
                c->values[v].scalar = a->f;
            } else if ((a = attr(n, "value_int")) != NULL) {
                c->values[v].shape.rank = 0;
                c->values[v].has_scalar = 1;
                c->values[v].scalar = (double)a->i;
                c->values[v].nints = 1;
                c->values[v].ints[0] = a->i;
            } else if ((a = attr(n, "value_ints")) != NULL && a->n_ints <= MAX_INTS) {
                c->values[v].shape.rank = 1;
                c->values[v].shape.d[0] = (int64_t)a->n_ints;
                c->values[v].nints = (int)a->n_ints;
                for (size_t i = 0; i < a->n_ints; i++) { // (a->ints is NULL when empty)
                    c->values[v].ints[i] = a->ints[i];
                }
            }
        }
        return;
    }
    if (std_domain && strcmp(op, "Shape") == 0) { // data-independent
        int x = in_value(c, n, 0);
        Value *o = &c->values[value_find(c, n->output[0])];
        o->kind = V_STATIC;
        const Shape *s = x >= 0 ? &c->values[x].shape : NULL;
        if (s != NULL && s->rank >= 0) {
            o->shape.rank = 1;
            o->shape.d[0] = s->rank;
            if (attr(n, "start") == NULL && attr(n, "end") == NULL) {
                o->nints = s->rank;
                for (int i = 0; i < s->rank; i++) {
                    o->ints[i] = s->d[i] >= 0 ? s->d[i] : UNKNOWN_INT;
                }
            }
        }
        return;
    }
    if (!any_act(c, n)) {
        if (std_domain && (strcmp(op, "Reshape") == 0 || strcmp(op, "Unsqueeze") == 0 ||
                           strcmp(op, "Squeeze") == 0 || strcmp(op, "Flatten") == 0)) {
            op_reshape_family(c, n);
        } else if (std_domain && strcmp(op, "Expand") == 0) {
            op_expand(c, n);
        } else {
            static_result(c, n);
        }
        return;
    }
    if (ms && strcmp(op, "SimplifiedLayerNormalization") == 0) {
        op_norm_node(c, n, OP_RMSNORM);
        return;
    }
    if (!std_domain) {
        make_opaque(c, n, op, NULL);
        return;
    }
    if (strcmp(op, "Pow") != 0 && strcmp(op, "Mul") != 0 && strcmp(op, "Div") != 0) {
        centred_inputs_as_acts(c, n);
    }
    static const struct {
        const char *name;
        GraphOp op;
    } activations[] = {{"Relu", OP_RELU}, {"Tanh", OP_TANH}, {"Sigmoid", OP_SIGMOID}, {"Gelu", OP_GELU}};
    for (size_t i = 0; i < sizeof(activations) / sizeof(activations[0]); i++) {
        if (strcmp(op, activations[i].name) == 0) {
            op_activation(c, n, activations[i].op);
            return;
        }
    }
    if (strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0) {
        op_add_sub(c, n, op[0] == 'S');
    } else if (strcmp(op, "Mul") == 0) {
        op_mul(c, n);
    } else if (strcmp(op, "Div") == 0) {
        op_div(c, n);
    } else if (strcmp(op, "Pow") == 0) {
        op_pow(c, n);
    } else if (strcmp(op, "Sqrt") == 0 || strcmp(op, "Reciprocal") == 0) {
        op_unary_pattern(c, n, op[0] == 'S');
    } else if (strcmp(op, "ReduceMean") == 0) {
        op_reduce_mean(c, n);
    } else if (strcmp(op, "MatMul") == 0) {
        op_matmul(c, n);
    } else if (strcmp(op, "Gemm") == 0) {
        op_gemm(c, n);
    } else if (strcmp(op, "Conv") == 0) {
        op_conv(c, n);
    } else if (strcmp(op, "Gather") == 0) {
        op_gather(c, n);
    } else if (strcmp(op, "Reshape") == 0 || strcmp(op, "Flatten") == 0 ||
               strcmp(op, "Squeeze") == 0 || strcmp(op, "Unsqueeze") == 0) {
        op_reshape_family(c, n);
    } else if (strcmp(op, "Transpose") == 0) {
        op_transpose(c, n);
    } else if (strcmp(op, "Split") == 0) {
        op_split(c, n);
    } else if (strcmp(op, "Slice") == 0) {
        op_slice(c, n);
    } else if (strcmp(op, "Concat") == 0) {
        op_concat(c, n);
    } else if (strcmp(op, "GlobalAveragePool") == 0) {
        op_global_avgpool(c, n);
    } else if (strcmp(op, "Pad") == 0) {
        op_pad(c, n);
    } else if (strcmp(op, "Expand") == 0) {
        op_expand(c, n);
    } else if (strcmp(op, "LayerNormalization") == 0) {
        op_norm_node(c, n, OP_LAYERNORM);
    } else if (strcmp(op, "RMSNormalization") == 0) {
        op_norm_node(c, n, OP_RMSNORM);
    } else if (strcmp(op, "Softmax") == 0) {
        op_softmax(c, n);
    } else if (strcmp(op, "Identity") == 0 || strcmp(op, "Dropout") == 0) {
        op_alias(c, n);
    } else if (strcmp(op, "Cast") == 0) {
        int64_t to = attr_int(n, "to", 0);
        if (to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT || to == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE ||
            to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 || to == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16) {
            op_alias(c, n);
        } else {
            make_opaque(c, n, "Cast", NULL);
        }
    } else {
        make_opaque(c, n, op, NULL);
    }
}

// ---------------------------------------------------------------------------
// the model

static void shape_from_type(const Onnx__TypeProto *t, Shape *s) {
    s->rank = -1;
    if (t == NULL || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || t->tensor_type == NULL ||
        t->tensor_type->shape == NULL || t->tensor_type->shape->n_dim > MAX_RANK) {
        return;
    }
    const Onnx__TensorShapeProto *sp = t->tensor_type->shape;
    s->rank = (int)sp->n_dim;
    for (size_t i = 0; i < sp->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = sp->dim[i];
        s->d[i] = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                          d->dim_value >= 0 && d->dim_value <= LIMIT ? d->dim_value : -1;
    }
}

// Outputs a handler left undefined (extra outputs of a malformed or unusual
// node): opaque, reading the node's inputs.
static void unmapped_outputs(Ctx *c, const Onnx__NodeProto *n) {
    for (size_t o = 0; o < n->n_output; o++) {
        if (n->output[o][0] == '\0' || c->values[value_find(c, n->output[o])].kind != V_UNDEF) {
            continue;
        }
        int *ins = malloc_check((n->n_input + 1) * sizeof(int), "onnx opaque inputs");
        int nin = 0;
        for (size_t i = 0; i < n->n_input; i++) {
            int v = in_value(c, n, i);
            if (v >= 0 && c->values[v].kind != V_STATIC && c->values[v].kind != V_UNDEF) {
                ins[nin++] = as_node(c, v, n->op_type);
            }
        }
        set_act(c, n->output[o], opaque_node(c, n->output[o], n->op_type, ins, nin, 1), -1,
                (Shape){.rank = -1});
        free(ins);
    }
}

static int has_subgraph(const Onnx__NodeProto *n) {
    for (size_t i = 0; i < n->n_attribute; i++) {
        if (n->attribute[i]->g != NULL || n->attribute[i]->n_graphs > 0) {
            return 1;
        }
    }
    return 0;
}

static int str_ok(const char *s) {
    return s != NULL;
}

// Declares the values and checks the references; -1 with the message.
static int declare(Ctx *c, const Onnx__GraphProto *g) {
    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        if (!str_ok(t->name) || t->name[0] == '\0') {
            return fail(c, "initializer %zu has no name", i);
        }
        int v = value_new(c, t->name, V_STATIC);
        if (v < 0 || tensor_value(c, v, t) != 0) {
            return -1;
        }
    }
    for (size_t i = 0; i < g->n_sparse_initializer; i++) {
        const Onnx__SparseTensorProto *t = g->sparse_initializer[i];
        if (t->values == NULL || !str_ok(t->values->name) || t->values->name[0] == '\0') {
            return fail(c, "sparse initializer %zu has no name", i);
        }
        int v = value_new(c, t->values->name, V_STATIC);
        if (v < 0) {
            return -1;
        }
        if (t->n_dims <= MAX_RANK) {
            c->values[v].shape.rank = (int)t->n_dims;
            for (size_t d = 0; d < t->n_dims; d++) {
                c->values[v].shape.d[d] = t->dims[d] >= 0 && t->dims[d] <= LIMIT ? t->dims[d] : -1;
            }
        }
    }
    for (size_t i = 0; i < g->n_input; i++) {
        const char *name = g->input[i]->name;
        if (!str_ok(name) || name[0] == '\0') {
            return fail(c, "graph input %zu has no name", i);
        }
        if (value_find(c, name) >= 0) {
            continue; // an initializer listed as an input (older exporters)
        }
        int v = value_new(c, name, V_ACT);
        if (v < 0) {
            return -1;
        }
        shape_from_type(g->input[i]->type, &c->values[v].shape);
        c->values[v].axis = c->values[v].shape.rank > 0 ? c->values[v].shape.rank - 1 : -1;
    }
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        if (!str_ok(n->op_type) || n->op_type[0] == '\0') {
            return fail(c, "node %zu has no op type", i);
        }
        if (!str_ok(g->node[i]->name)) { // names are optional: an empty one (freed with the message)
            g->node[i]->name = malloc_check(1, "onnx node name");
            g->node[i]->name[0] = '\0';
        }
        if (n->n_output == 0 || !str_ok(n->output[0]) || n->output[0][0] == '\0') {
            return fail(c, "node %zu (%s %s) has no first output", i, n->op_type, n->name);
        }
        if (has_subgraph(n)) {
            return fail(c, "node %s (%s) holds a subgraph (If/Loop/Scan): not supported", n->name,
                        n->op_type);
        }
        for (size_t k = 0; k < n->n_input; k++) {
            if (!str_ok(n->input[k])) {
                return fail(c, "node %s has a missing input name", n->name);
            }
            if (n->input[k][0] == '\0') {
                continue;
            }
            int v = value_find(c, n->input[k]);
            if (v < 0) {
                return fail(c, "node %s (%s) reads '%s', which no earlier node, graph input or "
                            "initializer defines (ONNX requires topological order)",
                            n->name[0] ? n->name : n->output[0], n->op_type, n->input[k]);
            }
            c->values[v].uses++;
        }
        for (size_t o = 0; o < n->n_output; o++) {
            if (!str_ok(n->output[o])) {
                return fail(c, "node %s has a missing output name", n->name);
            }
            if (n->output[o][0] != '\0' && value_new(c, n->output[o], V_UNDEF) < 0) {
                return -1;
            }
        }
    }
    for (size_t i = 0; i < g->n_output; i++) {
        const char *name = g->output[i]->name;
        int v = str_ok(name) ? value_find(c, name) : -1;
        if (v < 0) {
            return fail(c, "graph output '%s' is defined nowhere", str_ok(name) ? name : "");
        }
        c->values[v].uses++;
    }
    return 0;
}

// A node with inputs must have input 0, and the binary ops input 1 (the
// handlers read them); ops without inputs (Constant, RandomNormal) are constants.
static int check_arity(Ctx *c, const Onnx__NodeProto *n) {
    static const char *const two[] = {"Add", "Sub", "Mul", "Div", "Pow", "MatMul", "Gemm", "Conv",
                                      "Gather", "Expand"};
    const char *name = n->name[0] ? n->name : n->output[0];
    if (n->n_input == 0) {
        return 0;
    }
    if (n->input[0][0] == '\0') {
        return fail(c, "node %s (%s) lacks input 0", name, n->op_type);
    }
    for (size_t i = 0; i < sizeof(two) / sizeof(two[0]); i++) {
        if (strcmp(n->op_type, two[i]) == 0 && (n->n_input < 2 || n->input[1][0] == '\0')) {
            return fail(c, "node %s (%s) lacks input 1", name, n->op_type);
        }
    }
    return 0;
}

// The nodes as graph text; NULL (with the message) when they are too many.
static char *emit_text(Ctx *c, const char *graph_name) {
    size_t cap = 256 + (size_t)c->num_nodes * 256, len = 0;
    char *text = malloc_check(cap, "onnx graph text");
    char name[GRAPH_MAX_NAME];
    sanitize(graph_name[0] ? graph_name : "onnx", name);
    len += (size_t)snprintf(text + len, cap - len, "# from ONNX (%s)\ngraph %s\n", c->source, name);
    for (int i = 0; i < c->num_nodes; i++) {
        if (len + 2048 > cap) { // a line is at most ~11 names and its keys
            cap *= 2;
            char *grown = realloc(text, cap);
            if (grown == NULL) {
                fatal("out of memory for the onnx graph text");
            }
            text = grown;
        }
        const ONode *n = &c->nodes[i];
        len += (size_t)snprintf(text + len, cap - len, "%s %s", graph_op_name(n->op), n->name);
        for (int k = 0; k < n->nin; k++) {
            len += (size_t)snprintf(text + len, cap - len, " %s", c->nodes[n->in[k]].name);
        }
        switch (n->op) {
        case OP_INPUT: case OP_PARAM:
            len += (size_t)snprintf(text + len, cap - len, " dim=%d", n->dim);
            break;
        case OP_OPAQUE:
            len += (size_t)snprintf(text + len, cap - len, " dim=%d what=%s", n->dim, n->what);
            break;
        case OP_LINEAR: case OP_CONV:
            len += (size_t)snprintf(text + len, cap - len, " out=%d bias=%d weight=%s", n->dim,
                                    n->has_bias, n->weight);
            break;
        case OP_EMBEDDING:
            len += (size_t)snprintf(text + len, cap - len, " vocab=%d out=%d weight=%s", n->vocab,
                                    n->dim, n->weight);
            break;
        case OP_SCALE:
            len += (size_t)snprintf(text + len, cap - len, " value=%.9g", n->value);
            break;
        case OP_LAYERNORM: case OP_RMSNORM:
            len += (size_t)snprintf(text + len, cap - len, " affine=%d", n->affine);
            break;
        default:
            break;
        }
        len += (size_t)snprintf(text + len, cap - len, "\n");
    }
    return text;
}

char *onnx_graph_text(const uint8_t *data, size_t len, const char *source,
                      OnnxImportReport *report, char *err, size_t err_len) {
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, data);
    if (m == NULL) {
        memset(report, 0, sizeof(*report));
        snprintf(err, err_len, "%s: not an ONNX model (the protobuf does not decode as a "
                 "ModelProto)", source);
        return NULL;
    }
    char *text = onnx_graph_import(m, source, report, NULL, NULL, err, err_len);
    onnx__model_proto__free_unpacked(m, NULL);
    return text;
}

char *onnx_graph_import(const Onnx__ModelProto *m, const char *source, OnnxImportReport *report,
                        OnnxOrigin **origins, int *num_origins, char *err, size_t err_len) {
    Ctx c;
    memset(&c, 0, sizeof(c));
    c.source = source;
    c.err = err;
    c.err_len = err_len;
    c.cur_node = -1;
    memset(report, 0, sizeof(*report));
    c.report = report;
    char *text = NULL;
    const Onnx__GraphProto *g = m->graph;
    if (g == NULL || g->n_node == 0) {
        fail(&c, "the model has no graph or an empty one");
        goto done;
    }
    c.opset = 1;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if ((o->domain == NULL || o->domain[0] == '\0' || strcmp(o->domain, "ai.onnx") == 0) &&
            o->has_version && o->version > 0 && o->version < 1000) {
            c.opset = (int)o->version;
        }
    }
    size_t outputs = 0;
    for (size_t i = 0; i < g->n_node; i++) {
        outputs += g->node[i]->n_output;
    }
    size_t total = g->n_initializer + g->n_sparse_initializer + g->n_input + outputs;
    size_t slots = 16;
    while (slots < 2 * total + 2) {
        slots *= 2;
    }
    c.cap_values = (int)(total < (size_t)1 << 28 ? total : (size_t)1 << 28);
    c.values = calloc_check((size_t)c.cap_values + 1, sizeof(Value), "onnx values");
    c.slots = malloc_check(slots * sizeof(int), "onnx value table");
    memset(c.slots, -1, slots * sizeof(int));
    c.mask = slots - 1;
    names_rehash(&c, 64);
    report->onnx_nodes = (int)g->n_node;
    if (declare(&c, g) != 0) {
        goto done;
    }
    for (size_t i = 0; i < g->n_node && !c.failed; i++) {
        c.cur_node = (int)i;
        if (check_arity(&c, g->node[i]) == 0) {
            map_node(&c, g->node[i]);
            unmapped_outputs(&c, g->node[i]);
        }
    }
    c.cur_node = -1;
    if (c.failed) {
        goto done;
    }
    // each graph output gets a reader: its value must not change (a centred
    // layer there would make the fold inexact), even when later nodes read it too
    for (size_t i = 0; i < g->n_output; i++) {
        int v = value_find(&c, g->output[i]->name);
        if (c.values[v].kind != V_STATIC && c.values[v].kind != V_UNDEF) {
            int in = as_node(&c, v, "output");
            char base[GRAPH_MAX_NAME + 8];
            snprintf(base, sizeof(base), "output:%s", g->output[i]->name);
            opaque_node(&c, base, "output", &in, 1, c.nodes[in].dim);
        }
    }
    if (c.num_nodes == 0) {
        fail(&c, "nothing in the graph depends on its inputs");
        goto done;
    }
    size_t at = 0;
    for (int i = 0; i < c.num_opaque_types; i++) {
        if (c.opaque_counts[i] > 0 && at < sizeof(report->opaque_ops)) {
            at += (size_t)snprintf(report->opaque_ops + at, sizeof(report->opaque_ops) - at,
                                   "%s%s x%d", at ? " " : "", c.opaque_types[i], c.opaque_counts[i]);
        }
    }
    text = emit_text(&c, g->name != NULL ? g->name : "");
    if (origins != NULL) {
        *origins = malloc_check((size_t)c.num_nodes * sizeof(OnnxOrigin) + 1, "onnx origins");
        for (int i = 0; i < c.num_nodes; i++) {
            OnnxOrigin *o = &(*origins)[i];
            *o = c.nodes[i].origin;
            o->weight = o->weight_value >= 0 ? c.values[o->weight_value].name : NULL;
            o->bias = o->bias_value >= 0 ? c.values[o->bias_value].name : NULL;
        }
        *num_origins = c.num_nodes;
    }
done:
    free(c.values);
    free(c.slots);
    free(c.nodes);
    free(c.name_slots);
    return text;
}
