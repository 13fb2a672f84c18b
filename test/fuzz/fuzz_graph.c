// The graph text format (docs/graph-format.md): graph_parse,
// llmc/fold/graph_parse.c, then the zero-mean analysis and each LN's verdict and
// reason, as foldcheck runs them.
#include "fuzz.h"
#include "fold/graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (text == NULL) {
        return 0;
    }
    memcpy(text, data, size);
    text[size] = '\0'; // graph_load_file rejects NUL bytes; the parser sees text up to one
    Graph g;
    char err[768] = {0};
    int rc = graph_parse(&g, text, "fuzz.txt", err, sizeof(err));
    free(text);
    fuzz_check_error(rc, err, sizeof(err));
    if (rc != 0) {
        return 0;
    }
    GraphAnalysis a;
    graph_analyze(&g, &a);
    char reason[1024];
    for (int i = 0; i < g.num_nodes; i++) {
        if (g.nodes[i].op == OP_LAYERNORM && !graph_ln_foldable(&g, &a, i)) {
            graph_ln_reason(&g, &a, i, reason, sizeof(reason));
        }
    }
    graph_analysis_free(&a);
    graph_free(&g);
    return 0;
}
