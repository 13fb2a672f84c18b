// Soundness of the zero-mean analysis, checked by execution: random small
// graphs are written in the text format, parsed, analysed, and run by a tiny
// double-precision interpreter with random (non-zero-mean) weights, the
// layers of the CBWC set centred. Every LN marked foldable must see inputs
// whose per-token mean is within 1e-6 of zero; some LN marked not foldable
// must see a non-zero mean (the test can tell the two apart). When the
// analysis calls a fold exact, the folded graph (S centred, foldable LNs as
// RMSNorm) must give the original graph's outputs; every fold must be exact,
// and centring any one shift-safe layer alone must leave every output as it
// is, while centring layers that are not shift-safe changes some.
//
// usage: test_graph_soundness SEED [NUM_GRAPHS]
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "fold/graph.h"
#include "core/rand.h"
#include "core/utils.h"
#include "test_helpers.h"

#define TOKENS 5
#define MAX_NODES 64

typedef struct {
    int ntok, dim;
    double *x; // (ntok, dim)
} Tensor;

static double normal(Rng *r) {
    double u1 = rng_uniform(r) + 1e-12, u2 = rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static Tensor tensor_new(int ntok, int dim) {
    Tensor t = {ntok, dim, calloc_check((size_t)ntok * dim, sizeof(double), "tensor")};
    return t;
}

static double row_mean(const double *x, int dim) {
    double s = 0.0;
    for (int c = 0; c < dim; c++) {
        s += x[c];
    }
    return s / dim;
}

// The generator keeps token counts consistent; a one-token operand of an add broadcasts.
static void require_same_tokens(const GraphNode *n, const Tensor *const *in, int broadcast) {
    int ntok = 1;
    for (int k = 0; k < n->num_inputs; k++) {
        ntok = in[k]->ntok > ntok ? in[k]->ntok : ntok;
    }
    for (int k = 0; k < n->num_inputs; k++) {
        if (in[k]->ntok != ntok && !(broadcast && in[k]->ntok == 1)) {
            fatal("generator bug: %s reads tensors of %d and %d tokens", n->name, in[k]->ntok, ntok);
        }
    }
}

// ---- the interpreter: one function per kind of node, r seeded by the node ----

static Tensor run_input(const GraphNode *n, Rng *r) {
    Tensor o = tensor_new(TOKENS, n->dim);
    for (int j = 0; j < TOKENS * n->dim; j++) {
        o.x[j] = 0.7 + normal(r);
    }
    return o;
}

// A learned vector (e.g. a cls token or a position row); centred when in S.
static Tensor run_param(const GraphNode *n, Rng *r, int centre) {
    Tensor o = tensor_new(1, n->dim);
    for (int c = 0; c < n->dim; c++) {
        o.x[c] = 0.5 + normal(r);
    }
    if (centre) {
        double m = row_mean(o.x, n->dim);
        for (int c = 0; c < n->dim; c++) {
            o.x[c] -= m;
        }
    }
    return o;
}

// linear, conv (a linear over patches) and embedding (one-hot of a token id
// read from x); with centre, V = P W and b~ = b - mean(b) (docs/math.md section 2).
static Tensor run_linear(const GraphNode *n, const Tensor *x_in, Rng *r, int centre) {
    int IC = n->op == OP_EMBEDDING ? n->vocab : x_in->dim, OC = n->dim;
    double *W = malloc_check((size_t)OC * IC * sizeof(double), "W");
    double *b = malloc_check((size_t)OC * sizeof(double), "b");
    for (int j = 0; j < OC * IC; j++) {
        W[j] = (0.3 + normal(r)) / sqrt((double)IC);
    }
    for (int o2 = 0; o2 < OC; o2++) {
        b[o2] = n->has_bias && n->op != OP_EMBEDDING ? 0.4 + normal(r) : 0.0;
    }
    if (centre) {
        for (int ic = 0; ic < IC; ic++) {
            double m = 0.0;
            for (int o2 = 0; o2 < OC; o2++) {
                m += W[o2 * IC + ic];
            }
            for (int o2 = 0; o2 < OC; o2++) {
                W[o2 * IC + ic] -= m / OC;
            }
        }
        double mb = row_mean(b, OC);
        for (int o2 = 0; o2 < OC; o2++) {
            b[o2] -= mb;
        }
    }
    Tensor o = tensor_new(x_in->ntok, OC);
    for (int t = 0; t < o.ntok; t++) {
        const double *x = x_in->x + (size_t)t * x_in->dim;
        for (int o2 = 0; o2 < OC; o2++) {
            double s = b[o2];
            if (n->op == OP_EMBEDDING) {
                s += W[o2 * IC + (int)(fabs(x[0]) * 1000.0) % IC];
            } else {
                for (int ic = 0; ic < IC; ic++) {
                    s += W[o2 * IC + ic] * x[ic];
                }
            }
            o.x[(size_t)t * OC + o2] = s;
        }
    }
    free(W);
    free(b);
    return o;
}

// The sum of the inputs; a one-token operand broadcasts.
static Tensor run_add(const GraphNode *n, const Tensor *const *in) {
    require_same_tokens(n, in, 1);
    int ntok = 1;
    for (int k = 0; k < n->num_inputs; k++) {
        ntok = in[k]->ntok > ntok ? in[k]->ntok : ntok;
    }
    Tensor o = tensor_new(ntok, n->dim);
    for (int k = 0; k < n->num_inputs; k++) {
        for (int t = 0; t < ntok; t++) {
            const double *x = in[k]->x + (size_t)(in[k]->ntok == 1 ? 0 : t) * n->dim;
            for (int c = 0; c < n->dim; c++) {
                o.x[(size_t)t * n->dim + c] += x[c];
            }
        }
    }
    return o;
}

// The inputs' tokens one after the other.
static Tensor run_token_concat(const GraphNode *n, const Tensor *const *in) {
    int ntok = 0;
    for (int k = 0; k < n->num_inputs; k++) {
        ntok += in[k]->ntok;
    }
    Tensor o = tensor_new(ntok, n->dim);
    size_t at = 0;
    for (int k = 0; k < n->num_inputs; k++) {
        memcpy(o.x + at, in[k]->x, (size_t)in[k]->ntok * n->dim * sizeof(double));
        at += (size_t)in[k]->ntok * n->dim;
    }
    return o;
}

// The inputs' channels side by side, token by token.
static Tensor run_concat(const GraphNode *n, const Tensor *const *in) {
    require_same_tokens(n, in, 0);
    Tensor o = tensor_new(in[0]->ntok, n->dim);
    for (int t = 0; t < o.ntok; t++) {
        int at = 0;
        for (int k = 0; k < n->num_inputs; k++) {
            memcpy(o.x + (size_t)t * n->dim + at, in[k]->x + (size_t)t * in[k]->dim,
                   (size_t)in[k]->dim * sizeof(double));
            at += in[k]->dim;
        }
    }
    return o;
}

static Tensor run_avgpool(const GraphNode *n, const Tensor *x) {
    Tensor o = tensor_new(1, n->dim);
    for (int t = 0; t < x->ntok; t++) {
        for (int c = 0; c < n->dim; c++) {
            o.x[c] += x->x[(size_t)t * n->dim + c] / x->ntok;
        }
    }
    return o;
}

// Softmax attention without projections, from one packed qkv input or q, k, v.
static Tensor run_attention(const GraphNode *n, const Tensor *const *in) {
    require_same_tokens(n, in, 0);
    int qkv = n->num_inputs == 1, C = n->dim, H = n->heads, hd = C / H;
    const Tensor *q = in[0], *k = in[qkv ? 0 : 1], *v = in[qkv ? 0 : 2];
    int qs = qkv ? 3 * C : q->dim, ks = qkv ? 3 * C : k->dim, vs = qkv ? 3 * C : v->dim;
    int ko = qkv ? C : 0, vo = qkv ? 2 * C : 0, qd = qkv ? C : q->dim, qhd = qd / H;
    Tensor o = tensor_new(q->ntok, C);
    double *w = malloc_check((size_t)k->ntok * sizeof(double), "attention");
    for (int h = 0; h < H; h++) {
        for (int t = 0; t < q->ntok; t++) {
            double mx = -1e300, sum = 0.0;
            for (int s = 0; s < k->ntok; s++) {
                double d = 0.0;
                for (int c = 0; c < qhd; c++) {
                    d += q->x[(size_t)t * qs + h * qhd + c] * k->x[(size_t)s * ks + ko + h * qhd + c];
                }
                w[s] = d / sqrt((double)qhd);
                mx = w[s] > mx ? w[s] : mx;
            }
            for (int s = 0; s < k->ntok; s++) {
                w[s] = exp(w[s] - mx);
                sum += w[s];
            }
            for (int s = 0; s < k->ntok; s++) {
                for (int c = 0; c < hd; c++) {
                    o.x[(size_t)t * C + h * hd + c] += w[s] / sum * v->x[(size_t)s * vs + vo + h * hd + c];
                }
            }
        }
    }
    free(w);
    return o;
}

// Elementwise and per-token ops on input 0 (and 1 for mul), norms included:
// a norm runs as RMSNorm when it is one or as_rms; a LayerNorm records the
// largest |mean| of its input rows in *ln_mean.
static Tensor run_pointwise(const GraphNode *n, const Tensor *const *in, Rng *r, int as_rms,
                            double *ln_mean) {
    require_same_tokens(n, in, 0);
    const Tensor *x = in[0];
    Tensor o = tensor_new(x->ntok, n->dim);
    double gain[256], bias[256];
    for (int c = 0; c < n->dim && c < 256; c++) {
        gain[c] = n->affine ? 1.0 + 0.5 * normal(r) : 1.0;
        bias[c] = n->affine ? 0.3 + 0.5 * normal(r) : 0.0;
    }
    for (int t = 0; t < x->ntok; t++) {
        // token moves: reverse for window partition/reverse, roll by one for the shift
        int src = n->op == OP_WINDOW_PARTITION || n->op == OP_WINDOW_REVERSE ? x->ntok - 1 - t
                  : n->op == OP_CYCLIC_SHIFT ? (t + 1) % x->ntok : t;
        const double *xi = x->x + (size_t)src * n->dim;
        double *y = o.x + (size_t)t * n->dim;
        double m = row_mean(xi, n->dim), ms = 0.0, var = 0.0, mx = -1e300, se = 0.0;
        for (int c = 0; c < n->dim; c++) {
            ms += xi[c] * xi[c] / n->dim;
            var += (xi[c] - m) * (xi[c] - m) / n->dim;
            mx = xi[c] > mx ? xi[c] : mx;
        }
        for (int c = 0; c < n->dim; c++) {
            se += exp(xi[c] - mx);
        }
        if (n->op == OP_LAYERNORM) {
            double am = fabs(m);
            *ln_mean = am > *ln_mean ? am : *ln_mean;
        }
        for (int c = 0; c < n->dim; c++) {
            double v = xi[c];
            switch (n->op) {
            case OP_SCALE: v *= n->value; break;
            case OP_TEMPERATURE: v /= n->value; break;
            case OP_GELU: v = 0.5 * v * (1.0 + erf(v / sqrt(2.0))); break;
            case OP_RELU: v = v > 0 ? v : 0; break;
            case OP_TANH: v = tanh(v); break;
            case OP_SIGMOID: v = 1.0 / (1.0 + exp(-v)); break;
            case OP_SOFTMAX: v = exp(v - mx) / se; break;
            case OP_MUL: v *= in[1]->x[(size_t)t * n->dim + c]; break;
            case OP_CENTRE: v -= m; break;
            case OP_LAYERNORM: case OP_RMSNORM:
                v = as_rms ? v / sqrt(ms + 1e-5) : (v - m) / sqrt(var + 1e-5);
                v = gain[c % 256] * v + bias[c % 256];
                break;
            default: break; // dropout (eval), reshape
            }
            y[c] = v;
        }
    }
    return o;
}

// Runs graph g. The layers in centre_set (NULL: none) use V and P b; folded:
// foldable LNs run as RMSNorm. ln_mean[i]: max over tokens of |mean| of LN i's input.
static void run_graph(const Graph *g, const GraphAnalysis *a, unsigned long long seed,
                      const uint64_t *centre_set, int folded, Tensor *out, double *ln_mean) {
    for (int i = 0; i < g->num_nodes; i++) {
        const GraphNode *n = &g->nodes[i];
        Rng r; // the same weights in every run: seeded by the node
        rng_seed(&r, seed * 1000003ull + (unsigned long long)i);
        const Tensor *in[GRAPH_MAX_INPUTS];
        for (int k = 0; k < n->num_inputs; k++) {
            in[k] = &out[n->inputs[k]];
        }
        const int centre = centre_set != NULL && graph_bit(centre_set, i);
        switch (n->op) {
        case OP_INPUT: out[i] = run_input(n, &r); break;
        case OP_PARAM: out[i] = run_param(n, &r, centre); break;
        case OP_LINEAR: case OP_CONV: case OP_EMBEDDING:
            out[i] = run_linear(n, in[0], &r, centre);
            break;
        case OP_ADD: out[i] = run_add(n, in); break;
        case OP_TOKEN_CONCAT: out[i] = run_token_concat(n, in); break;
        case OP_CONCAT: out[i] = run_concat(n, in); break;
        case OP_AVGPOOL: out[i] = run_avgpool(n, in[0]); break;
        case OP_ATTENTION: out[i] = run_attention(n, in); break;
        default: {
            int as_rms = n->op == OP_RMSNORM || (folded && graph_ln_foldable(g, a, i));
            out[i] = run_pointwise(n, in, &r, as_rms, &ln_mean[i]);
            break;
        }
        }
    }
}

// ---- the random graph generator ----
typedef struct {
    char name[16];
    int dim, ntok;
} GenNode;

typedef struct {
    GenNode nodes[MAX_NODES * 3];
    int count;
    char lines[MAX_NODES * 3][160];
    Rng *rng;
} Gen;

static int pick_recent(Gen *g) {
    int back = (int)fabs(normal(g->rng) * 3.0);
    return back >= g->count ? (int)(rng_u32(g->rng) % (unsigned)g->count) : g->count - 1 - back;
}

static int gen_add(Gen *g, int dim, int ntok, const char *fmt, ...) FN_PRINTF(4, 5);
static int gen_add(Gen *g, int dim, int ntok, const char *fmt, ...) {
    GenNode *n = &g->nodes[g->count];
    snprintf(n->name, sizeof(n->name), "n%d", g->count);
    n->dim = dim;
    n->ntok = ntok;
    char body[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof(body), fmt, ap);
    va_end(ap);
    // body is "OP %s rest": the node's own name goes where %s was written as @
    char *at = strchr(body, '@'), own[16];
    snprintf(own, sizeof(own), "%s", n->name);
    if (at != NULL) {
        *at = '\0';
        snprintf(g->lines[g->count], sizeof(g->lines[0]), "%s%s%s", body, own, at + 1);
    } else {
        snprintf(g->lines[g->count], sizeof(g->lines[0]), "%s", body);
    }
    return g->count++;
}

// An operand with x's token count and this width: an existing one, or a new linear.
static int operand_like(Gen *g, int dim, int x) {
    int ntok = g->nodes[x].ntok;
    for (int tries = 0; tries < 6; tries++) {
        int c = pick_recent(g);
        if (g->nodes[c].dim == dim && (g->nodes[c].ntok == ntok || g->nodes[c].ntok == 1)) {
            return c;
        }
    }
    int c = pick_recent(g);
    c = g->nodes[c].ntok == ntok ? c : x;
    return gen_add(g, dim, ntok, "linear @ %s out=%d", g->nodes[c].name, dim);
}

static void generate(Gen *g, int steps) {
    static const int dims[] = {4, 6, 8};
    g->count = 0;
    gen_add(g, 6, TOKENS, "input @ dim=6");
    if (rng_u32(g->rng) % 2) {
        gen_add(g, 1, TOKENS, "input @ dim=1");
    }
    for (int s = 0; s < steps && g->count < MAX_NODES * 2; s++) {
        int x = pick_recent(g);
        const GenNode xn = g->nodes[x];
        const char *xs = g->nodes[x].name;
        int d = dims[rng_u32(g->rng) % 3];
        switch (rng_u32(g->rng) % 16) {
        case 0: case 1:
            gen_add(g, d, xn.ntok, "%s @ %s out=%d%s", rng_u32(g->rng) % 4 ? "linear" : "conv", xs, d,
                    rng_u32(g->rng) % 4 ? "" : " bias=0");
            break;
        case 2:
            if (xn.dim == 1) {
                gen_add(g, d, xn.ntok, "embedding @ %s vocab=11 out=%d", xs, d);
            } else {
                gen_add(g, xn.dim, 1, "param @ dim=%d", xn.dim);
            }
            break;
        case 3: case 4: {
            int y = operand_like(g, xn.dim, x);
            gen_add(g, xn.dim, xn.ntok, "add @ %s %s", xs, g->nodes[y].name);
            break;
        }
        case 5: {
            static const char *scalar[] = {"scale @ %s value=0.5", "dropout @ %s",
                                           "temperature @ %s value=1.7", "reshape @ %s",
                                           "window_partition @ %s", "window_reverse @ %s",
                                           "cyclic_shift @ %s"};
            gen_add(g, xn.dim, xn.ntok, scalar[rng_u32(g->rng) % 7], xs);
            break;
        }
        case 6:
            if (rng_u32(g->rng) % 2) {
                gen_add(g, xn.dim, 1, "avgpool @ %s", xs);
            } else {
                int p = gen_add(g, xn.dim, 1, "param @ dim=%d", xn.dim);
                gen_add(g, xn.dim, xn.ntok + 1, "token_concat @ %s %s", g->nodes[p].name, xs);
            }
            break;
        case 7: {
            int y = operand_like(g, d, x);
            if (g->nodes[y].ntok != xn.ntok || xn.dim + d > 64) {
                break;
            }
            gen_add(g, xn.dim + d, xn.ntok, "concat @ %s %s", xs, g->nodes[y].name);
            break;
        }
        case 8: {
            static const char *nonlin[] = {"gelu", "relu", "tanh", "sigmoid", "softmax"};
            gen_add(g, xn.dim, xn.ntok, "%s @ %s", nonlin[rng_u32(g->rng) % 5], xs);
            break;
        }
        case 9: {
            int y = operand_like(g, xn.dim, x);
            if (g->nodes[y].ntok == xn.ntok) {
                gen_add(g, xn.dim, xn.ntok, "mul @ %s %s", xs, g->nodes[y].name);
            }
            break;
        }
        case 10: {
            int heads = 1 + (int)(rng_u32(g->rng) % 2);
            if (rng_u32(g->rng) % 2) {
                int qkv = gen_add(g, 3 * 4, xn.ntok, "linear @ %s out=12", xs);
                gen_add(g, 4, xn.ntok, "attention @ %s heads=%d", g->nodes[qkv].name, heads);
            } else {
                int q = gen_add(g, 4, xn.ntok, "linear @ %s out=4", xs);
                int k = gen_add(g, 4, xn.ntok, "linear @ %s out=4", xs);
                int v = rng_u32(g->rng) % 2 ? operand_like(g, 4, x)
                                             : gen_add(g, 4, xn.ntok, "linear @ %s out=4", xs);
                if (g->nodes[v].ntok != xn.ntok) {
                    break;
                }
                gen_add(g, 4, xn.ntok, "attention @ %s %s %s heads=%d", g->nodes[q].name,
                        g->nodes[k].name, g->nodes[v].name, heads);
            }
            break;
        }
        case 11: case 12: case 13:
            gen_add(g, xn.dim, xn.ntok, "layernorm @ %s%s", xs, rng_u32(g->rng) % 6 ? "" : " affine=0");
            break;
        case 14:
            gen_add(g, xn.dim, xn.ntok, "rmsnorm @ %s%s", xs, rng_u32(g->rng) % 3 ? "" : " affine=0");
            break;
        default:
            gen_add(g, xn.dim, xn.ntok, "centre @ %s", xs);
            break;
        }
    }
}

// The reader on damaged text: a few bytes of a valid graph overwritten with
// characters that matter to the format. It must accept or reject cleanly
// (an error naming the source), never crash (run under SAN=1 for memory errors).
static int parse_mutated(const char *text, Rng *rng, int *rejected) {
    static const char alphabet[] = " \n#=xn0123456789abcdefgijklmnoprstuvw._";
    size_t len = strlen(text);
    char *copy = malloc_check(len + 1, "mutant");
    for (int m = 0; m < 4; m++) {
        memcpy(copy, text, len + 1);
        int edits = 1 + (int)(rng_u32(rng) % 4);
        for (int e = 0; e < edits && len > 0; e++) {
            copy[rng_u32(rng) % len] = alphabet[rng_u32(rng) % (sizeof(alphabet) - 1)];
        }
        Graph g;
        char err[768] = "";
        if (graph_parse(&g, copy, "mutant", err, sizeof(err)) == 0) {
            GraphAnalysis a;
            graph_analyze(&g, &a);
            graph_analysis_free(&a);
            graph_free(&g);
        } else {
            if (strncmp(err, "mutant", 6) != 0) {
                fatal("a rejected mutant's error does not name its source: %s", err);
            }
            (*rejected)++;
        }
    }
    free(copy);
    return 4;
}

static double max_abs_diff(const Tensor *a, const Tensor *b, double *scale) {
    double d = 0.0;
    for (size_t j = 0; j < (size_t)a->ntok * a->dim; j++) {
        double e = fabs(a->x[j] - b->x[j]);
        d = worst_of(d, e);
        *scale = fabs(b->x[j]) > *scale ? fabs(b->x[j]) : *scale;
    }
    return d;
}

static void free_tensors(Tensor *t, int n) {
    for (int i = 0; i < n; i++) {
        free(t[i].x);
        t[i].x = NULL;
    }
}

// max |out - ref| over the graph outputs (tensors nobody reads), relative to max |ref|
static double outputs_rel_diff(const Graph *g, const int *readers, const Tensor *out,
                               const Tensor *ref) {
    double diff = 0.0, scale = 1e-30;
    for (int i = 0; i < g->num_nodes; i++) {
        if (readers[i] == 0) {
            double d = max_abs_diff(&out[i], &ref[i], &scale);
            diff = worst_of(diff, d);
        }
    }
    return diff / scale;
}

int main(int argc, char **argv) {
    CliSpec spec = {.program = "test_graph_soundness", .synopsis = "SEED [NUM_GRAPHS=400]",
                    .about = "Random graphs: the fold analysis against numerical evaluation.\n",
                    .min_positional = 1, .max_positional = 2};
    const char *args[2];
    int n = cli_parse(&spec, argc, argv, args);
    unsigned long long seed =
        (unsigned long long)cli_positional_int(&spec, "SEED", args[0], 0, LONG_MAX);
    int num_graphs =
        n > 1 ? (int)cli_positional_int(&spec, "NUM_GRAPHS", args[1], 1, 10000000) : 400;
    Rng rng;
    rng_seed(&rng, seed);
    Gen *gen = malloc_check(sizeof(Gen), "generator");
    gen->rng = &rng;
    int foldable = 0, not_foldable = 0, seen_nonzero = 0, exact = 0, inexact = 0;
    int bad_foldable = 0, bad_exact = 0, mutations = 0, mutants_rejected = 0;
    int safe_layers = 0, bad_safe = 0, unsafe_layers = 0, unsafe_seen = 0;
    double worst_foldable_mean = 0.0;
    char *text = malloc_check(MAX_NODES * 3 * 160 + 1, "graph text");
    for (int k = 0; k < num_graphs; k++) {
        generate(gen, 4 + (int)(rng_u32(&rng) % 24));
        // lines in a random order half the time: the parser sorts them
        int order[MAX_NODES * 3];
        for (int i = 0; i < gen->count; i++) {
            order[i] = i;
        }
        if (k % 2) {
            for (int i = gen->count - 1; i > 0; i--) {
                int j = (int)(rng_u32(&rng) % (unsigned)(i + 1)), t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
        }
        text[0] = '\0';
        for (int i = 0; i < gen->count; i++) {
            strcat(text, gen->lines[order[i]]);
            strcat(text, "\n");
        }
        Graph g;
        char err[768];
        if (graph_parse(&g, text, "random", err, sizeof(err)) != 0) {
            fprintf(stderr, "generated graph %d does not parse: %s\n%s", k, err, text);
            return EXIT_FAILURE;
        }
        GraphAnalysis a;
        graph_analyze(&g, &a);
        mutations += parse_mutated(text, &rng, &mutants_rejected);
        Tensor *out = calloc_check((size_t)g.num_nodes, sizeof(Tensor), "tensors");
        Tensor *ref = calloc_check((size_t)g.num_nodes, sizeof(Tensor), "tensors");
        double *ln_mean = calloc_check((size_t)g.num_nodes, sizeof(double), "means");
        double *ln_mean_ref = calloc_check((size_t)g.num_nodes, sizeof(double), "means");
        unsigned long long wseed = seed + 7919ull * (unsigned long long)k;
        run_graph(&g, &a, wseed, a.cbwc_set, 1, out, ln_mean); // centred S, folded LNs
        run_graph(&g, &a, wseed, NULL, 0, ref, ln_mean_ref);   // the original LN graph
        for (int i = 0; i < g.num_nodes; i++) {
            if (g.nodes[i].op != OP_LAYERNORM) {
                continue;
            }
            if (graph_ln_foldable(&g, &a, i)) {
                foldable++;
                worst_foldable_mean = ln_mean[i] > worst_foldable_mean ? ln_mean[i] : worst_foldable_mean;
                if (!(ln_mean[i] <= 1e-6)) {
                    bad_foldable++;
                    if (bad_foldable == 1) {
                        fprintf(stderr, "graph %d: foldable LN %s sees mean %.3e\n%s", k,
                                g.nodes[i].name, ln_mean[i], text);
                    }
                }
            } else {
                not_foldable++;
                seen_nonzero += ln_mean[i] > 1e-3;
            }
        }
        // outputs (tensors nobody reads) of the folded graph vs the original
        int *readers = calloc_check((size_t)g.num_nodes, sizeof(int), "readers");
        for (int i = 0; i < g.num_nodes; i++) {
            for (int j = 0; j < g.nodes[i].num_inputs; j++) {
                readers[g.nodes[i].inputs[j]]++;
            }
        }
        double rel = outputs_rel_diff(&g, readers, out, ref);
        if (a.leak_layer < 0) {
            exact++;
            if (!(rel <= 1e-9)) {
                bad_exact++;
                if (bad_exact == 1) {
                    fprintf(stderr, "graph %d: called exact but outputs differ by %.3e\n%s", k, rel, text);
                }
            }
        } else {
            inexact++; // the analysis keeps every fold exact: any is a bug
        }
        // each linear layer centred alone: a shift-safe one never changes an
        // output; a layer the analysis keeps out of S for its shift often does
        uint64_t *one = calloc_check((size_t)a.words + 1, sizeof(uint64_t), "one layer");
        for (int i = 0; i < g.num_nodes; i++) {
            if (!graph_is_linear_family(g.nodes[i].op) && g.nodes[i].op != OP_PARAM) {
                continue;
            }
            one[i >> 6] |= 1ull << (i & 63);
            free_tensors(out, g.num_nodes);
            run_graph(&g, &a, wseed, one, 0, out, ln_mean);
            one[i >> 6] = 0;
            double d = outputs_rel_diff(&g, readers, out, ref);
            if (a.shift_safe[i]) {
                safe_layers++;
                if (!(d <= 1e-9)) {
                    bad_safe++;
                    if (bad_safe == 1) {
                        fprintf(stderr, "graph %d: centring shift-safe %s changes an output by %.3e\n%s",
                                k, g.nodes[i].name, d, text);
                    }
                }
            } else {
                unsafe_layers++;
                unsafe_seen += d > 1e-6;
            }
        }
        free(one);
        free_tensors(out, g.num_nodes);
        free_tensors(ref, g.num_nodes);
        free(out);
        free(ref);
        free(ln_mean);
        free(ln_mean_ref);
        free(readers);
        graph_analysis_free(&a);
        graph_free(&g);
    }
    int ok = 1;
    printf("%s %d foldable LNs over %d random graphs: worst |mean| of the input %.3e (bound 1e-6), %d over\n",
           bad_foldable == 0 && foldable > 0 ? "ok  " : "FAIL", foldable, num_graphs, worst_foldable_mean, bad_foldable);
    ok &= bad_foldable == 0 && foldable > 0;
    printf("%s %d LNs not foldable: %d of them see a mean above 1e-3 (must be some)\n",
           seen_nonzero > 0 ? "ok  " : "FAIL", not_foldable, seen_nonzero);
    ok &= seen_nonzero > 0;
    printf("%s %d graphs called exact to fold: folded outputs == original (rel 1e-9), %d differ\n",
           bad_exact == 0 && exact > 0 ? "ok  " : "FAIL", exact, bad_exact);
    ok &= bad_exact == 0 && exact > 0;
    printf("%s %d graphs called not exact (the analysis keeps only shift-safe layers in S: must be 0)\n",
           inexact == 0 ? "ok  " : "FAIL", inexact);
    ok &= inexact == 0;
    printf("%s %d shift-safe layers centred alone: %d change an output (must be 0)\n",
           bad_safe == 0 && safe_layers > 0 ? "ok  " : "FAIL", safe_layers, bad_safe);
    ok &= bad_safe == 0 && safe_layers > 0;
    printf("%s %d layers not shift-safe centred alone: %d of them change an output (must be some)\n",
           unsafe_seen > 0 ? "ok  " : "FAIL", unsafe_layers, unsafe_seen);
    ok &= unsafe_seen > 0;
    printf("ok   %d damaged graph texts: %d rejected with an error naming the source, none crashed\n",
           mutations, mutants_rejected);
    free(text);
    free(gen);
    printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
