// ONNX fold: the zero-mean analysis of the model (onnx_graph.c, graph.c)
// decides; this file rewrites. For a model whose fold is exact:
//   - each CBWC layer's weight is centred along its output axis and its bias
//     centred (W - 1 mean(W), b - mean(b): docs/math.md section 2), each
//     centred param (position embedding, class token) along its feature axis;
//   - each foldable LayerNormalization(x, gamma, beta) becomes
//     x / sqrt(mean(x^2) + eps) * gamma + beta, as Pow, ReduceMean, Add, Sqrt,
//     Div, Mul, Add (the pattern ONNX Runtime fuses into
//     SimplifiedLayerNormalization, as onnx_export.c writes), or with
//     rms_opset 23 as RMSNormalization + Add(beta);
// and nothing else changes. Means are taken in double, the results stored
// in fp32.
#include "onnx_fold.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utils.h"
#include "graph.h"
#include "onnx.pb-c.h"
#include "onnx_graph.h"

typedef struct {
    Onnx__ModelProto *m;
    const char *source;
    char *err;
    size_t err_len;
    int failed;
    char **made; // value names made for new nodes, not yet in the graph
    int num_made, cap_made;
} Fold;

static int fold_fail(Fold *f, const char *fmt, ...) {
    if (!f->failed) {
        int n = snprintf(f->err, f->err_len, "%s: ", f->source);
        va_list ap;
        va_start(ap, fmt);
        if (n >= 0 && (size_t)n < f->err_len) {
            vsnprintf(f->err + n, f->err_len - (size_t)n, fmt, ap);
        }
        va_end(ap);
        f->failed = 1;
    }
    return -1;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc_check(n, "onnx fold name");
    memcpy(d, s, n);
    return d;
}

static char *fmt_str(const char *fmt, const char *a, const char *b) {
    size_t n = strlen(fmt) + strlen(a) + strlen(b) + 1;
    char *d = malloc_check(n, "onnx fold name");
    snprintf(d, n, fmt, a, b);
    return d;
}

static int name_in_use(const Onnx__GraphProto *g, const char *name) {
    for (size_t i = 0; i < g->n_initializer; i++) {
        if (strcmp(g->initializer[i]->name, name) == 0) {
            return 1;
        }
    }
    for (size_t i = 0; i < g->n_input; i++) {
        if (g->input[i]->name != NULL && strcmp(g->input[i]->name, name) == 0) {
            return 1;
        }
    }
    for (size_t i = 0; i < g->n_node; i++) {
        for (size_t k = 0; k < g->node[i]->n_output; k++) {
            if (strcmp(g->node[i]->output[k], name) == 0) {
                return 1;
            }
        }
    }
    return 0;
}

// fmt's name for a ("%s/rms/pow%s": the second %s takes the suffix), made
// unique among the graph's value names and those made so far with ":2", ":3", ...
static char *unique_name(Fold *f, const char *fmt, const char *a) {
    const Onnx__GraphProto *g = f->m->graph;
    char *name = fmt_str(fmt, a, "");
    for (int k = 2;; k++) {
        int taken = name_in_use(g, name);
        for (int i = 0; i < f->num_made && !taken; i++) {
            taken = strcmp(f->made[i], name) == 0;
        }
        if (!taken) {
            break;
        }
        free(name);
        char suffix[16];
        snprintf(suffix, sizeof(suffix), ":%d", k);
        name = fmt_str(fmt, a, suffix);
    }
    if (f->num_made == f->cap_made) {
        f->cap_made = f->cap_made ? 2 * f->cap_made : 64;
        char **grown = realloc(f->made, (size_t)f->cap_made * sizeof(char *));
        if (grown == NULL) {
            fatal("out of memory for onnx fold names");
        }
        f->made = grown;
    }
    f->made[f->num_made++] = dup_str(name);
    return name;
}

static Onnx__TensorProto *find_initializer(const Onnx__GraphProto *g, const char *name) {
    for (size_t i = 0; i < g->n_initializer; i++) {
        if (strcmp(g->initializer[i]->name, name) == 0) {
            return g->initializer[i];
        }
    }
    return NULL;
}

// Readers of value name: node inputs and graph outputs.
static int count_uses(const Onnx__GraphProto *g, const char *name) {
    int uses = 0;
    for (size_t i = 0; i < g->n_node; i++) {
        for (size_t k = 0; k < g->node[i]->n_input; k++) {
            uses += strcmp(g->node[i]->input[k], name) == 0;
        }
    }
    for (size_t i = 0; i < g->n_output; i++) {
        uses += strcmp(g->output[i]->name, name) == 0;
    }
    return uses;
}

static const Onnx__NodeProto *producer(const Onnx__GraphProto *g, const char *name) {
    for (size_t i = 0; i < g->n_node; i++) {
        for (size_t k = 0; k < g->node[i]->n_output; k++) {
            if (strcmp(g->node[i]->output[k], name) == 0) {
                return g->node[i];
            }
        }
    }
    return NULL;
}

// The fp32 contents of an initializer (raw_data or float_data), or NULL.
static float *tensor_floats(Onnx__TensorProto *t, size_t *count) {
    if (!t->has_data_type || t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
        return NULL;
    }
    size_t numel = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0 || (t->dims[i] > 0 && numel > SIZE_MAX / 4 / (size_t)t->dims[i])) {
            return NULL;
        }
        numel *= (size_t)t->dims[i];
    }
    *count = numel;
    if (t->has_raw_data && t->raw_data.len > 0) {
        return t->raw_data.len == numel * 4 ? (float *)t->raw_data.data : NULL;
    }
    return t->n_float_data == numel ? t->float_data : NULL;
}

// x - mean(x) along axis of t (axis < 0 or out of range: along a broadcast
// axis of width 1, so every entry becomes 0).
static void centre_floats(Onnx__TensorProto *t, float *x, int axis) {
    size_t outer = 1, width = 1, inner = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        size_t d = (size_t)t->dims[i];
        if (axis < 0 || (size_t)axis >= t->n_dims || (int)i < axis) {
            outer *= d;
        } else if ((int)i == axis) {
            width = d;
        } else {
            inner *= d;
        }
    }
    for (size_t o = 0; o < outer; o++) {
        for (size_t i = 0; i < inner; i++) {
            float *p = x + o * width * inner + i;
            double sum = 0.0;
            for (size_t k = 0; k < width; k++) {
                sum += p[k * inner];
            }
            const float mean = (float)(sum / (double)width);
            for (size_t k = 0; k < width; k++) {
                p[k * inner] -= mean;
            }
        }
    }
}

static int64_t attr_int64(const Onnx__NodeProto *n, const char *name, int64_t dflt);
static Onnx__TensorProto *add_initializer_floats(Onnx__GraphProto *g, char *name,
                                                 const Onnx__TensorProto *like, const float *x,
                                                 size_t count);

// The node reading value name as input slot *slot, among nodes that read it;
// when only (node) is given, that node.
static Onnx__NodeProto *reader_of(const Onnx__GraphProto *g, int node, const char *name,
                                  size_t *slot) {
    if (node < 0 || (size_t)node >= g->n_node) {
        return NULL;
    }
    Onnx__NodeProto *n = g->node[node];
    for (size_t k = 0; k < n->n_input; k++) {
        if (strcmp(n->input[k], name) == 0) {
            *slot = k;
            return n;
        }
    }
    return NULL;
}

// Centres the static tensor named name along axis: an initializer, or (a
// param, or an initializer the exporter shared through Identity) one reached
// through Expand, Unsqueeze, Reshape, Identity that keep the last axis. An
// initializer that other nodes read too is copied and the copy centred for
// this reader (node: the ONNX node that reads name, -1 unknown).
static int centre_static(Fold *f, const char *layer, const char *name, int axis, int node) {
    Onnx__GraphProto *g = f->m->graph;
    Onnx__TensorProto *t = find_initializer(g, name);
    Onnx__NodeProto *reader = NULL;
    size_t slot = 0;
    if (t == NULL) {
        const Onnx__NodeProto *p = producer(g, name);
        static const char *const keep_last[] = {"Expand", "Unsqueeze", "Reshape", "Identity"};
        int ok = 0;
        for (size_t i = 0; p != NULL && i < sizeof(keep_last) / sizeof(keep_last[0]); i++) {
            ok |= strcmp(p->op_type, keep_last[i]) == 0;
        }
        // rows of a table (positions at Range(T)): centring every row centres any selection
        const Onnx__TensorProto *table =
            p != NULL && p->n_input >= 2 ? find_initializer(g, p->input[0]) : NULL;
        ok |= p != NULL && strcmp(p->op_type, "Gather") == 0 && attr_int64(p, "axis", 0) == 0 &&
              table != NULL && table->n_dims == 2;
        if (!ok || p->n_input < 1 || count_uses(g, name) != 1) {
            return fold_fail(f,
                             "%s: its tensor %s is computed by %s, not an initializer the fold "
                             "can centre",
                             layer, name, p != NULL ? p->op_type : "no node");
        }
        t = find_initializer(g, p->input[0]);
        if (t == NULL || t->n_dims < 1) {
            return fold_fail(f, "%s: %s is not read from an initializer", layer, name);
        }
        if (strcmp(p->op_type, "Identity") != 0) {
            axis = (int)t->n_dims - 1; // these ops keep the feature axis last
        }
        reader = (Onnx__NodeProto *)p;
        slot = 0;
        name = p->input[0];
    } else {
        reader = reader_of(g, node, name, &slot);
    }
    size_t count;
    float *x = tensor_floats(t, &count);
    if (x == NULL) {
        return fold_fail(f, "%s: initializer %s is not fp32 data held in the file", layer, name);
    }
    if (count_uses(g, name) != 1) {
        if (reader == NULL) {
            return fold_fail(f,
                             "%s: initializer %s is read by %d nodes; centring it for one would "
                             "change the others",
                             layer, name, count_uses(g, name));
        }
        char *base = fmt_str("%s/centred_for/%s", name, layer);
        char *copy = unique_name(f, "%s%s", base);
        free(base);
        t = add_initializer_floats(g, copy, t, x, count);
        x = (float *)t->raw_data.data;
        free(reader->input[slot]);
        reader->input[slot] = dup_str(copy);
    }
    centre_floats(t, x, axis);
    return 0;
}

// ---------------------------------------------------------------------------
// the RMS norm nodes

static Onnx__NodeProto *new_node(const char *op, char *name, const char *const *ins, int nin,
                                 char *out) {
    Onnx__NodeProto *n = malloc_check(sizeof(*n), "onnx fold node");
    onnx__node_proto__init(n);
    n->op_type = dup_str(op);
    n->name = name;
    n->n_input = (size_t)nin;
    n->input = malloc_check((size_t)nin * sizeof(char *) + 1, "onnx fold inputs");
    for (int i = 0; i < nin; i++) {
        n->input[i] = dup_str(ins[i]);
    }
    n->n_output = 1;
    n->output = malloc_check(sizeof(char *), "onnx fold outputs");
    n->output[0] = out;
    return n;
}

static void add_attr(Onnx__NodeProto *n, const char *name, Onnx__AttributeProto__AttributeType type,
                     int64_t i, float fv) {
    Onnx__AttributeProto *a = malloc_check(sizeof(*a), "onnx fold attribute");
    onnx__attribute_proto__init(a);
    a->name = dup_str(name);
    a->has_type = 1;
    a->type = type;
    if (type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS) {
        a->n_ints = 1;
        a->ints = malloc_check(sizeof(int64_t), "onnx fold attribute");
        a->ints[0] = i;
    } else if (type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) {
        a->has_i = 1;
        a->i = i;
    } else {
        a->has_f = 1;
        a->f = fv;
    }
    Onnx__AttributeProto **grown = realloc(n->attribute, (n->n_attribute + 1) * sizeof(*grown));
    if (grown == NULL) {
        fatal("out of memory for an onnx attribute");
    }
    n->attribute = grown;
    n->attribute[n->n_attribute++] = a;
}

static void add_initializer(Onnx__GraphProto *g, char *name, int type, const void *value,
                            size_t bytes, int rank1) {
    Onnx__TensorProto *t = malloc_check(sizeof(*t), "onnx fold initializer");
    onnx__tensor_proto__init(t);
    t->name = name;
    t->has_data_type = 1;
    t->data_type = type;
    if (rank1) {
        t->n_dims = 1;
        t->dims = malloc_check(sizeof(int64_t), "onnx fold dims");
        t->dims[0] = 1;
    }
    t->has_raw_data = 1;
    t->raw_data.len = bytes;
    t->raw_data.data = malloc_check(bytes, "onnx fold data");
    memcpy(t->raw_data.data, value, bytes);
    Onnx__TensorProto **grown = realloc(g->initializer, (g->n_initializer + 1) * sizeof(*grown));
    if (grown == NULL) {
        fatal("out of memory for an onnx initializer");
    }
    g->initializer = grown;
    g->initializer[g->n_initializer++] = t;
}

static Onnx__TensorProto *add_initializer_floats(Onnx__GraphProto *g, char *name,
                                                 const Onnx__TensorProto *like, const float *x,
                                                 size_t count) {
    add_initializer(g, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, x, count * sizeof(float), 0);
    Onnx__TensorProto *t = g->initializer[g->n_initializer - 1];
    t->n_dims = like->n_dims;
    t->dims = malloc_check(like->n_dims * sizeof(int64_t) + 1, "onnx fold dims");
    memcpy(t->dims, like->dims, like->n_dims * sizeof(int64_t));
    return t;
}

static float attr_float(const Onnx__NodeProto *n, const char *name, float dflt) {
    for (size_t i = 0; i < n->n_attribute; i++) {
        if (strcmp(n->attribute[i]->name, name) == 0 && n->attribute[i]->has_f) {
            return n->attribute[i]->f;
        }
    }
    return dflt;
}

static int64_t attr_int64(const Onnx__NodeProto *n, const char *name, int64_t dflt) {
    for (size_t i = 0; i < n->n_attribute; i++) {
        if (strcmp(n->attribute[i]->name, name) == 0 && n->attribute[i]->has_i) {
            return n->attribute[i]->i;
        }
    }
    return dflt;
}

// The nodes that replace LayerNormalization ln (appended to out[]); 0 when
// it cannot be replaced as one op (its statistics outputs are read, or it
// normalises more than the last axis), then it stays.
static int rms_nodes(Fold *f, const Onnx__NodeProto *ln, int opset, int rms_opset,
                     Onnx__NodeProto **out) {
    Onnx__GraphProto *g = f->m->graph;
    if (attr_int64(ln, "axis", -1) != -1 || ln->n_input < 2) {
        return 0;
    }
    for (size_t o = 1; o < ln->n_output; o++) {
        if (ln->output[o][0] != '\0' && count_uses(g, ln->output[o]) > 0) {
            return 0;
        }
    }
    const float eps = attr_float(ln, "epsilon", 1e-5f);
    const char *base = ln->name[0] ? ln->name : ln->output[0];
    const char *x = ln->input[0], *gamma = ln->input[1];
    const char *beta = ln->n_input > 2 && ln->input[2][0] != '\0' ? ln->input[2] : NULL;
    char *y = beta ? unique_name(f, "%s/rms/scaled%s", base) : dup_str(ln->output[0]);
    int k = 0;
    if (rms_opset >= 23) {
        const char *ins[2] = {x, gamma};
        out[k] = new_node("RMSNormalization", fmt_str("%s/rms%s", base, ""), ins, 2, y);
        add_attr(out[k], "axis", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, -1, 0.0f);
        add_attr(out[k++], "epsilon", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, 0, eps);
    } else {
        const float two = 2.0f;
        const int64_t last = -1;
        char *two_name = unique_name(f, "%s/rms/two%s", base),
             *eps_name = unique_name(f, "%s/rms/eps%s", base);
        add_initializer(g, two_name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, &two, 4, 0);
        add_initializer(g, eps_name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, &eps, 4, 0);
        char *sq = unique_name(f, "%s/rms/pow%s", base),
             *ms = unique_name(f, "%s/rms/mean%s", base);
        char *ve = unique_name(f, "%s/rms/add_eps%s", base),
             *rt = unique_name(f, "%s/rms/sqrt%s", base);
        char *xh = unique_name(f, "%s/rms/div%s", base);
        const char *pow_in[2] = {x, two_name};
        out[k++] = new_node("Pow", fmt_str("%s/rms/Pow%s", base, ""), pow_in, 2, sq);
        if (opset >= 18) { // ReduceMean's axes became an input
            char *axes_name = unique_name(f, "%s/rms/axes%s", base);
            add_initializer(g, axes_name, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, &last, 8, 1);
            const char *rm_in[2] = {sq, axes_name};
            out[k++] =
                new_node("ReduceMean", fmt_str("%s/rms/ReduceMean%s", base, ""), rm_in, 2, ms);
        } else {
            const char *rm_in[1] = {sq};
            out[k] = new_node("ReduceMean", fmt_str("%s/rms/ReduceMean%s", base, ""), rm_in, 1, ms);
            add_attr(out[k++], "axes", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, -1, 0.0f);
        }
        add_attr(out[k - 1], "keepdims", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, 1, 0.0f);
        const char *add_in[2] = {ms, eps_name}, *sqrt_in[1] = {ve}, *div_in[2] = {x, rt};
        const char *mul_in[2] = {xh, gamma};
        out[k++] = new_node("Add", fmt_str("%s/rms/AddEps%s", base, ""), add_in, 2, ve);
        out[k++] = new_node("Sqrt", fmt_str("%s/rms/Sqrt%s", base, ""), sqrt_in, 1, rt);
        out[k++] = new_node("Div", fmt_str("%s/rms/Div%s", base, ""), div_in, 2, xh);
        out[k++] = new_node("Mul", fmt_str("%s/rms/Mul%s", base, ""), mul_in, 2, y);
    }
    if (beta) {
        const char *bias_in[2] = {y, beta};
        out[k++] = new_node("Add", fmt_str("%s/rms/AddBias%s", base, ""), bias_in, 2,
                            dup_str(ln->output[0]));
    }
    return k;
}

// ---------------------------------------------------------------------------

static int check_external(Fold *f) {
    const Onnx__GraphProto *g = f->m->graph;
    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        if (t->name == NULL) {
            return fold_fail(f, "initializer %zu has no name", i);
        }
        if ((t->has_data_location &&
             t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) ||
            t->n_external_data > 0) {
            const char *file = "?";
            for (size_t k = 0; k < t->n_external_data; k++) {
                if (t->external_data[k]->key && strcmp(t->external_data[k]->key, "location") == 0 &&
                    t->external_data[k]->value) {
                    file = t->external_data[k]->value;
                }
            }
            return fold_fail(f,
                             "initializer %s keeps its data in an external file (%s): not "
                             "supported; save the model with its data inside (onnx.save(m, path, "
                             "save_as_external_data=False))",
                             t->name, file);
        }
    }
    return 0;
}

static int model_opset(const Onnx__ModelProto *m) {
    int opset = 1;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if ((o->domain == NULL || o->domain[0] == '\0' || strcmp(o->domain, "ai.onnx") == 0) &&
            o->has_version) {
            opset = (int)o->version;
        }
    }
    return opset;
}

static void set_opset(Onnx__ModelProto *m, int version) {
    for (size_t i = 0; i < m->n_opset_import; i++) {
        Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if ((o->domain == NULL || o->domain[0] == '\0' || strcmp(o->domain, "ai.onnx") == 0) &&
            o->has_version && o->version < version) {
            o->version = version;
        }
    }
}

static int fold_model(Fold *f, const OnnxFoldOptions *opt, OnnxFoldReport *r) {
    Onnx__GraphProto *g = f->m->graph;
    if (g == NULL || check_external(f) != 0) {
        return g == NULL ? fold_fail(f, "the model has no graph") : -1;
    }
    OnnxImportReport ir;
    OnnxOrigin *origins = NULL;
    int num_origins = 0;
    char *text =
        onnx_graph_import(f->m, f->source, &ir, &origins, &num_origins, f->err, f->err_len);
    if (text == NULL) {
        f->failed = 1;
        return -1;
    }
    Graph gr;
    char perr[768];
    if (graph_parse(&gr, text, f->source, perr, sizeof(perr)) != 0) {
        free(text);
        free(origins);
        return fold_fail(f, "internal: the analysis graph does not parse: %s", perr);
    }
    free(text);
    GraphAnalysis a;
    graph_analyze(&gr, &a);
    r->num_norms = a.num_layernorms;
    r->num_foldable = a.num_foldable;
    int rc = 0;
    if (a.leak_layer >= 0) {
        const GraphNode *ln = NULL;
        for (int i = 0; i < gr.num_nodes && ln == NULL; i++) {
            if (gr.nodes[i].op == OP_LAYERNORM && graph_ln_foldable(&gr, &a, i) &&
                graph_bit(a.needs + (size_t)gr.nodes[i].inputs[0] * a.words, a.leak_layer)) {
                ln = &gr.nodes[i];
            }
        }
        rc = fold_fail(f,
                       "cannot fold exactly: norm %s needs %s centred, but that changes %s "
                       "(%s), which does not absorb a per-token shift (foldcheck lists every norm)",
                       ln ? ln->name : "?", gr.nodes[a.leak_layer].name,
                       gr.nodes[a.leak_reader].name, graph_op_name(gr.nodes[a.leak_reader].op));
    }
    // centre S
    for (int i = 0; rc == 0 && i < gr.num_nodes && i < num_origins; i++) {
        if (!graph_bit(a.cbwc_set, i)) {
            continue;
        }
        const OnnxOrigin *o = &origins[i];
        if (o->weight == NULL) {
            rc = fold_fail(f, "%s: a CBWC layer without a weight the fold can find",
                           gr.nodes[i].name);
            break;
        }
        if (!opt->no_centre) {
            rc = centre_static(f, gr.nodes[i].name, o->weight, o->weight_axis, o->onnx_node);
            if (rc == 0 && o->bias != NULL && gr.nodes[i].op != OP_PARAM) {
                rc = centre_static(f, gr.nodes[i].name, o->bias, o->bias_axis, o->onnx_node);
            }
        }
        r->centred_layers += rc == 0;
    }
    // replace the foldable norms that are one LayerNormalization op
    unsigned char *replace = calloc_check(g->n_node + 1, 1, "onnx fold marks");
    for (int i = 0; rc == 0 && i < gr.num_nodes && i < num_origins; i++) {
        if (gr.nodes[i].op != OP_LAYERNORM || !graph_ln_foldable(&gr, &a, i)) {
            continue;
        }
        const OnnxOrigin *o = &origins[i];
        if (o->norm_op && o->onnx_node >= 0 &&
            strcmp(g->node[o->onnx_node]->op_type, "LayerNormalization") == 0) {
            replace[o->onnx_node] = 1;
        } else {
            r->kept_decomposed++;
        }
    }
    if (rc == 0) {
        const int opset = model_opset(f->m);
        size_t cap = g->n_node * 8 + 8, k = 0;
        Onnx__NodeProto **nodes = malloc_check(cap * sizeof(*nodes), "onnx fold nodes");
        for (size_t i = 0; i < g->n_node; i++) {
            Onnx__NodeProto *made[8];
            int nm = replace[i] ? rms_nodes(f, g->node[i], opset, opt->rms_opset, made) : 0;
            if (nm == 0) {
                r->kept_decomposed += replace[i];
                nodes[k++] = g->node[i];
                continue;
            }
            for (int j = 0; j < nm; j++) {
                nodes[k++] = made[j];
            }
            replace[i] = 2;
            r->replaced++;
        }
        // the replaced norms go only now: the names of every node, old and
        // new, were in use while the new ones were named
        for (size_t i = 0; i < g->n_node; i++) {
            if (replace[i] == 2) {
                onnx__node_proto__free_unpacked(g->node[i], NULL);
            }
        }
        free(g->node);
        g->node = nodes;
        g->n_node = k;
        if (opt->rms_opset >= 23 && r->replaced > 0) {
            set_opset(f->m, opt->rms_opset);
        }
    }
    free(replace);
    graph_analysis_free(&a);
    graph_free(&gr);
    free(origins);
    return rc;
}

int onnx_fold(const uint8_t *data, size_t len, const char *source, const OnnxFoldOptions *opt,
              uint8_t **out, size_t *out_len, OnnxFoldReport *report, char *err, size_t err_len) {
    memset(report, 0, sizeof(*report));
    Fold f = {.source = source, .err = err, .err_len = err_len};
    f.m = onnx__model_proto__unpack(NULL, len, data);
    if (f.m == NULL) {
        fold_fail(&f, "not an ONNX model (truncated, or the protobuf does not decode as a "
                      "ModelProto)");
        return -1;
    }
    int rc = fold_model(&f, opt, report);
    for (int i = 0; i < f.num_made; i++) {
        free(f.made[i]);
    }
    free(f.made);
    if (rc == 0) {
        *out_len = onnx__model_proto__get_packed_size(f.m);
        *out = malloc_check(*out_len + 1, "the folded onnx model");
        onnx__model_proto__pack(f.m, *out);
    }
    onnx__model_proto__free_unpacked(f.m, NULL);
    return rc;
}
