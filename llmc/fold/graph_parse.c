// The graph text format (docs/graph-format.md): one node per line,
//   OP NAME [INPUT ...] [key=value ...]
// in any order; the parser sorts the nodes topologically, rejects cycles,
// dangling inputs, unknown ops and keys, and infers/checks feature widths.
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "core/utils.h"

#define MAX_LINE_TOKENS 32
#define MAX_DIM (1 << 24)
// the analysis keeps node x node bitsets: 2^15 nodes are 128 MiB per set
#define MAX_NODES (1 << 15)

typedef struct {
    GraphNode node;
    char input_names[GRAPH_MAX_INPUTS][GRAPH_MAX_NAME];
} RawNode;

typedef struct {
    char *err;
    size_t err_len;
    const char *source;
} ParseErr;

FN_PRINTF(3, 4) static int parse_fail(ParseErr *pe, int line, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (line > 0) {
        snprintf(pe->err, pe->err_len, "%s:%d: %s", pe->source, line, msg);
    } else {
        snprintf(pe->err, pe->err_len, "%s: %s", pe->source, msg);
    }
    return -1;
}

static int valid_name(const char *s) {
    if (*s == '\0' || strlen(s) >= GRAPH_MAX_NAME) {
        return 0;
    }
    for (; *s; s++) {
        if (!isalnum((unsigned char)*s) && strchr("_.-/[]:", *s) == NULL) {
            return 0;
        }
    }
    return 1;
}

static int parse_int(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        return -1;
    }
    *out = v;
    return 0;
}

// key=value on node n; returns -1 (with the message) on a bad key or value.
static int apply_attribute(ParseErr *pe, int line, RawNode *r, const char *key, const char *val) {
    GraphNode *n = &r->node;
    long v;
    if (strcmp(key, "value") == 0) {
        char *end;
        errno = 0;
        n->value = strtod(val, &end);
        if (errno != 0 || end == val || *end != '\0') {
            return parse_fail(pe, line, "%s: value=%s is not a number", n->name, val);
        }
        return 0;
    }
    if (strcmp(key, "weight") == 0) {
        if (!valid_name(val)) {
            return parse_fail(pe, line, "%s: bad weight name '%s'", n->name, val);
        }
        snprintf(n->weight, sizeof(n->weight), "%s", val);
        return 0;
    }
    if (strcmp(key, "what") == 0) {
        if (!valid_name(val)) {
            return parse_fail(pe, line, "%s: bad op name '%s' in what=", n->name, val);
        }
        snprintf(n->what, sizeof(n->what), "%s", val);
        return 0;
    }
    int is_flag = strcmp(key, "affine") == 0 || strcmp(key, "bias") == 0;
    if (parse_int(val, is_flag ? 0 : 1, is_flag ? 1 : MAX_DIM, &v) != 0) {
        return parse_fail(pe, line, "%s: %s=%s must be %s", n->name, key, val,
                          is_flag ? "0 or 1" : "a positive integer below 2^24");
    }
    if (strcmp(key, "dim") == 0 || strcmp(key, "out") == 0) {
        n->dim = (int)v;
    } else if (strcmp(key, "in") == 0) {
        n->in_dim = (int)v;
    } else if (strcmp(key, "vocab") == 0) {
        n->vocab = (int)v;
    } else if (strcmp(key, "heads") == 0) {
        n->heads = (int)v;
    } else if (strcmp(key, "affine") == 0) {
        n->affine = (int)v;
    } else if (strcmp(key, "bias") == 0) {
        n->has_bias = (int)v;
    } else {
        return parse_fail(pe, line, "%s: unknown key '%s' (dim, in, out, vocab, heads, affine, bias, value, weight, what)",
                          n->name, key);
    }
    return 0;
}

// Splits one line into a RawNode; returns 1 for a node, 0 for blank/comment/graph line.
static int parse_line(ParseErr *pe, char *text, int line, RawNode *r, Graph *g) {
    char *hash = strchr(text, '#');
    if (hash != NULL) {
        *hash = '\0';
    }
    char *tokens[MAX_LINE_TOKENS];
    int count = 0;
    for (char *t = strtok(text, " \t\r"); t != NULL; t = strtok(NULL, " \t\r")) {
        if (count == MAX_LINE_TOKENS) {
            return parse_fail(pe, line, "more than %d words on one line", MAX_LINE_TOKENS);
        }
        tokens[count++] = t;
    }
    if (count == 0) {
        return 0;
    }
    if (strcmp(tokens[0], "graph") == 0) {
        if (count != 2 || !valid_name(tokens[1])) {
            return parse_fail(pe, line, "expected 'graph NAME'");
        }
        snprintf(g->name, sizeof(g->name), "%s", tokens[1]);
        return 0;
    }
    int op = graph_op_parse(tokens[0]);
    if (op < 0) {
        return parse_fail(pe, line, "unknown op '%s' (see docs/graph-format.md)", tokens[0]);
    }
    if (count < 2 || !valid_name(tokens[1]) || strchr(tokens[1], '=') != NULL) {
        return parse_fail(pe, line, "%s: expected a node name after the op", tokens[0]);
    }
    memset(r, 0, sizeof(*r));
    GraphNode *n = &r->node;
    n->op = (GraphOp)op;
    n->line = line;
    n->affine = 1;
    n->has_bias = 1;
    n->heads = 1;
    n->value = 1.0;
    snprintf(n->name, sizeof(n->name), "%s", tokens[1]);
    for (int k = 2; k < count; k++) {
        char *eq = strchr(tokens[k], '=');
        if (eq != NULL) {
            *eq = '\0';
            if (apply_attribute(pe, line, r, tokens[k], eq + 1) != 0) {
                return -1;
            }
            continue;
        }
        if (n->num_inputs == GRAPH_MAX_INPUTS) {
            return parse_fail(pe, line, "%s: more than %d inputs", n->name, GRAPH_MAX_INPUTS);
        }
        if (!valid_name(tokens[k])) {
            return parse_fail(pe, line, "%s: bad input name '%s'", n->name, tokens[k]);
        }
        snprintf(r->input_names[n->num_inputs++], GRAPH_MAX_NAME, "%s", tokens[k]);
    }
    if (n->weight[0] == '\0') {
        snprintf(n->weight, sizeof(n->weight), "%s", n->name);
    }
    return 1;
}

// Name -> raw index, open addressing (the 1000-node graphs must parse fast).
typedef struct {
    int *slots;
    size_t mask;
} NameTable;

static size_t name_hash(const char *s) {
    size_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    }
    return h;
}

static int table_find(const NameTable *t, const RawNode *raw, const char *name) {
    for (size_t k = name_hash(name) & t->mask;; k = (k + 1) & t->mask) {
        if (t->slots[k] < 0 || strcmp(raw[t->slots[k]].node.name, name) == 0) {
            return t->slots[k];
        }
    }
}

static void table_insert(NameTable *t, const char *name, int index) {
    size_t k = name_hash(name) & t->mask;
    while (t->slots[k] >= 0) {
        k = (k + 1) & t->mask;
    }
    t->slots[k] = index;
}

// Arity and widths; returns -1 with the message on a mismatch.
static int infer_shape(ParseErr *pe, GraphNode *n, const Graph *g) {
    int k = n->num_inputs;
    const GraphNode *in0 = k > 0 ? &g->nodes[n->inputs[0]] : NULL;
    int min_in = 1, max_in = 1;
    switch (n->op) {
    case OP_INPUT: case OP_PARAM: min_in = max_in = 0; break;
    case OP_OPAQUE: min_in = 0; max_in = GRAPH_MAX_INPUTS; break;
    case OP_ADD: case OP_TOKEN_CONCAT: case OP_CONCAT: min_in = 2; max_in = GRAPH_MAX_INPUTS; break;
    case OP_MUL: min_in = max_in = 2; break;
    case OP_ATTENTION: max_in = 3; break;
    default: break;
    }
    if (k < min_in || k > max_in || (n->op == OP_ATTENTION && k == 2)) {
        return parse_fail(pe, n->line, "%s: %s takes %s input(s), got %d", n->name,
                          graph_op_name(n->op),
                          n->op == OP_ATTENTION ? "1 (qkv) or 3 (q k v)"
                          : n->op == OP_OPAQUE ? "at most 8"
                          : min_in == max_in ? (min_in == 0 ? "no" : min_in == 1 ? "1" : "2")
                                             : "2 or more",
                          k);
    }
    switch (n->op) {
    case OP_INPUT: case OP_PARAM: case OP_OPAQUE:
        if (n->dim <= 0) {
            return parse_fail(pe, n->line, "%s: %s needs dim=", n->name, graph_op_name(n->op));
        }
        return 0;
    case OP_LINEAR: case OP_CONV: case OP_EMBEDDING:
        if (n->dim <= 0) {
            return parse_fail(pe, n->line, "%s: %s needs out=", n->name, graph_op_name(n->op));
        }
        if (n->op != OP_EMBEDDING && n->in_dim > 0 && n->in_dim != in0->dim) {
            return parse_fail(pe, n->line, "%s: in=%d but input %s has width %d", n->name,
                              n->in_dim, in0->name, in0->dim);
        }
        if (n->op != OP_EMBEDDING) {
            n->in_dim = in0->dim;
        }
        return 0;
    case OP_CONCAT:
        n->dim = 0;
        for (int i = 0; i < k; i++) {
            n->dim += g->nodes[n->inputs[i]].dim;
        }
        if (n->dim > MAX_DIM) {
            return parse_fail(pe, n->line, "%s: concat width %d too large", n->name, n->dim);
        }
        return 0;
    case OP_ATTENTION: {
        const GraphNode *v = &g->nodes[n->inputs[k - 1]];
        if (k == 1 && in0->dim % 3 != 0) {
            return parse_fail(pe, n->line, "%s: fused qkv input %s has width %d, not a multiple of 3",
                              n->name, in0->name, in0->dim);
        }
        if (k == 3 && g->nodes[n->inputs[1]].dim != in0->dim) {
            return parse_fail(pe, n->line, "%s: q width %d and k width %d differ", n->name,
                              in0->dim, g->nodes[n->inputs[1]].dim);
        }
        int out = k == 1 ? in0->dim / 3 : v->dim;
        if (out % n->heads != 0 || (k == 3 && in0->dim % n->heads != 0)) {
            return parse_fail(pe, n->line, "%s: width %d is not a multiple of heads=%d", n->name,
                              out, n->heads);
        }
        if (n->dim > 0 && n->dim != out) {
            return parse_fail(pe, n->line, "%s: dim=%d but the attention output has width %d",
                              n->name, n->dim, out);
        }
        n->dim = out;
        return 0;
    }
    default:
        break;
    }
    // the output width is the input width; every operand must agree
    for (int i = 1; i < k; i++) {
        const GraphNode *other = &g->nodes[n->inputs[i]];
        if (other->dim != in0->dim) {
            return parse_fail(pe, n->line, "%s: inputs %s (width %d) and %s (width %d) differ",
                              n->name, in0->name, in0->dim, other->name, other->dim);
        }
    }
    if (n->dim > 0 && n->dim != in0->dim) {
        return parse_fail(pe, n->line, "%s: dim=%d but input %s has width %d", n->name, n->dim,
                          in0->name, in0->dim);
    }
    n->dim = in0->dim;
    if (n->op == OP_TEMPERATURE && n->value <= 0.0) {
        return parse_fail(pe, n->line, "%s: temperature value must be positive", n->name);
    }
    return 0;
}

// Depth-first topological order (file order when inputs come first).
static int topo_sort(ParseErr *pe, RawNode *raw, int count, int *const *in_index, int *order) {
    int *state = calloc_check((size_t)count, sizeof(int), "graph sort"); // 0 new, 1 open, 2 done
    int *stack = malloc_check((size_t)count * 2 * sizeof(int), "graph sort stack");
    int emitted = 0, rc = 0;
    for (int root = 0; root < count && rc == 0; root++) {
        if (state[root] != 0) {
            continue;
        }
        int top = 0;
        stack[top++] = root;
        stack[top++] = 0;
        state[root] = 1;
        while (top > 0 && rc == 0) {
            int node = stack[top - 2], next = stack[top - 1];
            if (next == raw[node].node.num_inputs) {
                state[node] = 2;
                order[emitted++] = node;
                top -= 2;
                continue;
            }
            stack[top - 1]++;
            int in = in_index[node][next];
            if (state[in] == 1) {
                rc = parse_fail(pe, raw[node].node.line,
                                "cycle: %s reads %s, which depends on %s (a graph must be acyclic)",
                                raw[node].node.name, raw[in].node.name, raw[node].node.name);
            } else if (state[in] == 0) {
                state[in] = 1;
                stack[top++] = in;
                stack[top++] = 0;
            }
        }
    }
    free(state);
    free(stack);
    return rc;
}

int graph_parse(Graph *g, const char *text, const char *source, char *err, size_t err_len) {
    ParseErr pe = {.err = err, .err_len = err_len, .source = source};
    graph_init(g, source);
    size_t cap = 64, count = 0;
    RawNode *raw = malloc_check(cap * sizeof(RawNode), "graph nodes");
    char *copy = malloc_check(strlen(text) + 1, "graph text");
    strcpy(copy, text);
    int rc = 0, line = 0;
    for (char *s = copy; s != NULL && rc == 0; line++) {
        char *nl = strchr(s, '\n');
        if (nl != NULL) {
            *nl = '\0';
        }
        if (count == cap) {
            cap *= 2;
            RawNode *grown = realloc(raw, cap * sizeof(RawNode));
            if (grown == NULL) {
                rc = parse_fail(&pe, line + 1, "out of memory for %zu nodes", cap);
                break;
            }
            raw = grown;
        }
        int got = parse_line(&pe, s, line + 1, &raw[count], g);
        rc = got < 0 ? -1 : 0;
        count += got > 0;
        if (rc == 0 && count > MAX_NODES) {
            rc = parse_fail(&pe, line + 1, "more than %d nodes", MAX_NODES);
        }
        s = nl != NULL ? nl + 1 : NULL;
    }
    free(copy);
    if (rc == 0 && count == 0) {
        rc = parse_fail(&pe, 0, "no nodes");
    }
    NameTable table = {0};
    size_t slots = 16;
    while (slots < 2 * count) {
        slots *= 2;
    }
    table.slots = malloc_check(slots * sizeof(int), "graph names");
    table.mask = slots - 1;
    memset(table.slots, 0xff, slots * sizeof(int));
    int *in_flat = malloc_check((count + 1) * GRAPH_MAX_INPUTS * sizeof(int), "graph edges");
    int **in_index = malloc_check((count + 1) * sizeof(int *), "graph edges");
    for (size_t i = 0; i < count && rc == 0; i++) {
        int prev = table_find(&table, raw, raw[i].node.name);
        if (prev >= 0) {
            rc = parse_fail(&pe, raw[i].node.line, "node '%s' already defined on line %d",
                            raw[i].node.name, raw[prev].node.line);
        } else {
            table_insert(&table, raw[i].node.name, (int)i);
        }
    }
    for (size_t i = 0; i < count && rc == 0; i++) {
        in_index[i] = in_flat + i * GRAPH_MAX_INPUTS;
        for (int k = 0; k < raw[i].node.num_inputs && rc == 0; k++) {
            int in = table_find(&table, raw, raw[i].input_names[k]);
            if (in < 0) {
                rc = parse_fail(&pe, raw[i].node.line, "%s: input '%s' is not defined anywhere",
                                raw[i].node.name, raw[i].input_names[k]);
            }
            in_index[i][k] = in;
        }
    }
    int *order = malloc_check((count + 1) * sizeof(int), "graph order");
    int *position = malloc_check((count + 1) * sizeof(int), "graph order");
    if (rc == 0) {
        rc = topo_sort(&pe, raw, (int)count, in_index, order);
    }
    if (rc == 0) {
        g->nodes = malloc_check(count * sizeof(GraphNode), "graph nodes");
        g->capacity = (int)count;
        for (size_t j = 0; j < count; j++) {
            position[order[j]] = (int)j;
        }
        for (size_t j = 0; j < count && rc == 0; j++) {
            int i = order[j];
            GraphNode n = raw[i].node;
            for (int k = 0; k < n.num_inputs; k++) {
                n.inputs[k] = position[in_index[i][k]];
            }
            g->nodes[j] = n;
            g->num_nodes = (int)j + 1;
            rc = infer_shape(&pe, &g->nodes[j], g);
        }
    }
    free(order);
    free(position);
    free(in_flat);
    free(in_index);
    free(table.slots);
    free(raw);
    if (rc != 0) {
        graph_free(g);
    }
    return rc;
}

void graph_load_file(Graph *g, const char *path) {
    FILE *f = fopen_check(path, "rb");
    long bytes = file_size_bytes(f, path);
    if (bytes > (64L << 20)) {
        fatal("%s: graph file of %ld bytes is too large (64 MiB at most)", path, bytes);
    }
    char *text = malloc_check((size_t)bytes + 1, "graph text");
    fread_check(text, 1, (size_t)bytes, f, path, "the graph text");
    fclose(f);
    text[bytes] = '\0';
    if (memchr(text, '\0', (size_t)bytes) != NULL) {
        fatal("%s: not a text file (contains a NUL byte)", path);
    }
    char err[768];
    if (graph_parse(g, text, path, err, sizeof(err)) != 0) {
        fatal("%s", err);
    }
    free(text);
}
