// Checks the zero-mean analysis (llmc/fold/graph.h) on the networks whose answer
// docs/math.md section 3 works out by hand (GPT-2, ViT, Swin), on adversarial
// graphs, on bad graph text, against the set the GPT-2 trainer's cbwc mode
// centres, and the analysis time of a 1000-node graph. One line per check.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "fold/graph.h"
#include "vision/swin.h"
#include "core/utils.h"

static int failures = 0;

static void expect(int ok, const char *fmt, const char *a, const char *b) {
    printf("%s ", ok ? "ok  " : "FAIL");
    printf(fmt, a, b);
    printf("\n");
    failures += !ok;
}

static void parse_or_die(Graph *g, const char *text, const char *name) {
    char err[768];
    if (graph_parse(g, text, name, err, sizeof(err)) != 0) {
        fatal("%s: %s", name, err);
    }
}

static int foldable_by_name(const Graph *g, const GraphAnalysis *a, const char *name) {
    int i = graph_find(g, name);
    if (i < 0 || g->nodes[i].op != OP_LAYERNORM) {
        fatal("no LayerNorm named %s in %s", name, g->name);
    }
    return graph_ln_foldable(g, a, i);
}

static int in_cbwc(const Graph *g, const GraphAnalysis *a, const char *name) {
    int i = graph_find(g, name);
    return i >= 0 && graph_bit(a->cbwc_set, i);
}

// The trainer's fixed cbwc set (llmc/gpt2/gpt2.h): wte as embedding, wpe, every
// attn c_proj and mlp c_proj; every norm (ln_1, ln_2, ln_f) RMS. The analysis
// of the GPT-2 graph must give exactly that.
static void check_gpt2(int L, int C, int NH, int V) {
    char *text = graph_gpt2_text(L, C, NH, V);
    Graph g;
    parse_or_die(&g, text, "gpt2");
    free(text);
    GraphAnalysis a;
    graph_analyze(&g, &a);
    char label[64], name[GRAPH_MAX_NAME];
    snprintf(label, sizeof(label), "L=%d C=%d", L, C);
    int ok_norms = a.num_layernorms == 2 * L + 1 && a.num_foldable == 2 * L + 1;
    int ok_set = a.num_cbwc == 2 * L + 2 && in_cbwc(&g, &a, "wte") && in_cbwc(&g, &a, "wpe") &&
                 !in_cbwc(&g, &a, "lm_head");
    for (int l = 0; l < L; l++) {
        const char *norms[2] = {"ln_1", "ln_2"};
        for (int k = 0; k < 2; k++) {
            snprintf(name, sizeof(name), "h%d.%s", l, norms[k]);
            ok_norms &= foldable_by_name(&g, &a, name);
        }
        snprintf(name, sizeof(name), "h%d.attn.c_proj", l);
        ok_set &= in_cbwc(&g, &a, name);
        snprintf(name, sizeof(name), "h%d.mlp.c_proj", l);
        ok_set &= in_cbwc(&g, &a, name);
    }
    ok_norms &= foldable_by_name(&g, &a, "ln_f");
    expect(ok_norms, "gpt2 %s: all 2L+1 LNs (ln_1, ln_2, ln_f) foldable%s", label, "");
    expect(ok_set, "gpt2 %s: cbwc set == trainer's {wte, wpe, attn c_proj, mlp c_proj}%s", label, "");
    expect(a.leak_layer < 0, "gpt2 %s: folding a trained LN model is exact%s", label, "");
    graph_analysis_free(&a);
    graph_free(&g);
}

// Swin without the centring ops: only the patch norm, the last stage's block
// LNs and the final LN (the last stage's stream never meets a PatchMerging
// concat) fold exactly; llmc/vision/swin.c's cbwc mode uses the same set
// (swin_stage_stream_zero_mean). With them, and for ViT, every LN folds.
static void check_builtin(const char *net, int all_foldable) {
    char *text = graph_builtin_text(net);
    if (text == NULL) {
        fatal("no built-in %s", net);
    }
    Graph g;
    parse_or_die(&g, text, net);
    free(text);
    GraphAnalysis a;
    graph_analyze(&g, &a);
    int ok = 1;
    for (int i = 0; i < g.num_nodes; i++) {
        if (g.nodes[i].op != OP_LAYERNORM) {
            continue;
        }
        const char *n = g.nodes[i].name;
        int expected = all_foldable || strcmp(n, "patch_embed.norm") == 0 || strcmp(n, "norm") == 0 ||
                       (strncmp(n, "layers.3.", 9) == 0 && strstr(n, "downsample") == NULL);
        if (graph_ln_foldable(&g, &a, i) != expected) {
            printf("     %s: %s expected %s\n", net, n, expected ? "foldable" : "not foldable");
            ok = 0;
        }
    }
    expect(ok && a.num_layernorms > 0 && a.leak_layer < 0,
           all_foldable ? "%s: every LN foldable, fold exact%s"
                        : "%s: patch norm, last-stage block LNs and final LN foldable, the rest not, fold exact%s",
           net, "");
    graph_analysis_free(&a);
    graph_free(&g);
}

static int safe_by_name(const Graph *g, const GraphAnalysis *a, const char *name) {
    int i = graph_find(g, name);
    if (i < 0) {
        fatal("no node named %s in %s", name, g->name);
    }
    return a->shift_safe[i];
}

// The Swin trainer (llmc/vision/swin.c) picks its RMS norms and centred layers from
// the config; they must be the analysis' foldable LNs, and every layer it
// centres must be shift-safe and include the analysis' cbwc set.
static void check_swin_trainer(int centre) {
    const SwinConfig cfg = {.image_size = 224, .image_channels = 3, .patch_size = 4,
                            .num_classes = 1000, .embed_dim = 96, .num_stages = 4,
                            .depths = {2, 2, 6, 2}, .heads = {3, 6, 12, 24}, .window = 7,
                            .mlp_ratio = 4, .centre_ops = centre};
    char *text = graph_builtin_text(centre ? "swin-tiny-centred" : "swin-tiny");
    Graph g;
    parse_or_die(&g, text, "swin");
    free(text);
    GraphAnalysis a;
    graph_analyze(&g, &a);
    int ok = foldable_by_name(&g, &a, "patch_embed.norm") && in_cbwc(&g, &a, "patch_embed.proj") &&
             safe_by_name(&g, &a, "patch_embed.proj");
    int centred_by_trainer = 1, in_set = a.num_cbwc > 0 ? 1 : 0;
    char name[GRAPH_MAX_NAME];
    for (int s = 0; s < cfg.num_stages; s++) {
        int rms = swin_stage_stream_zero_mean(&cfg, s);
        for (int k = 0; k < cfg.depths[s]; k++) {
            const char *norms[2] = {"norm1", "norm2"}, *layers[2] = {"attn.proj", "mlp.fc2"};
            for (int q = 0; q < 2; q++) {
                snprintf(name, sizeof(name), "layers.%d.blocks.%d.%s", s, k, norms[q]);
                ok &= foldable_by_name(&g, &a, name) == rms;
                snprintf(name, sizeof(name), "layers.%d.blocks.%d.%s", s, k, layers[q]);
                if (rms) { // the trainer centres proj and fc2 of every block of this stage
                    ok &= safe_by_name(&g, &a, name);
                    centred_by_trainer++;
                } else {
                    ok &= !in_cbwc(&g, &a, name);
                }
            }
        }
        if (s > 0) { // merge into stage s: RMS iff the centring ops; reduction centred iff rms
            snprintf(name, sizeof(name), "layers.%d.downsample.norm", s - 1);
            ok &= foldable_by_name(&g, &a, name) == centre;
            snprintf(name, sizeof(name), "layers.%d.downsample.reduction", s - 1);
            ok &= in_cbwc(&g, &a, name) == rms && (!rms || safe_by_name(&g, &a, name));
            centred_by_trainer += rms;
        }
    }
    ok &= foldable_by_name(&g, &a, "norm") == swin_stage_stream_zero_mean(&cfg, cfg.num_stages - 1);
    ok &= in_set && a.num_cbwc <= centred_by_trainer && a.leak_layer < 0;
    expect(ok, "swin-tiny%s: the trainer's RMS norms == the analysis' foldable LNs, its centred "
               "layers shift-safe and a superset of the cbwc set%s",
           centre ? " with centring ops" : "", "");
    graph_analysis_free(&a);
    graph_free(&g);
}

typedef struct {
    const char *what;
    const char *text;
    const char *foldable;     // space-separated LN names expected foldable
    const char *not_foldable; // ... expected not foldable
    const char *blame;        // node the first not-foldable LN's reason must name (or "")
    int num_cbwc;             // expected size of the cbwc set (-1: unchecked)
} Adversarial;

static const Adversarial ADVERSARIAL[] = {
    {"ReLU before an LN", "input x dim=8\nlinear a x out=8\nrelu r a\nlayernorm n r\n", "", "n", "r", 0},
    {"GELU before an LN", "input x dim=8\nlinear a x out=8\ngelu r a\nlayernorm n r\n", "", "n", "r", 0},
    {"LN feeding LN", "input x dim=8\nlinear a x out=8\nlayernorm n1 a\nlayernorm n2 n1\n", "n1", "n2", "n1", 1},
    {"affine-free LN feeding LN", "input x dim=8\nlayernorm n1 x affine=0\nlayernorm n2 n1\n", "n2", "n1", "x", 0},
    {"residual add with one nonlinear branch",
     "input x dim=8\nlinear a x out=8\nlinear b x out=8\ngelu g b\nadd s a g\nlayernorm n s\n", "", "n", "g", 0},
    {"residual add of two linear branches",
     "input x dim=8\nlinear a x out=8\nlinear b x out=8\nadd s a b\nlayernorm n s\n", "n", "", "", 2},
    {"feature concat with one non-zero-mean part",
     "input x dim=8\nlinear a x out=4\nlinear b x out=4\nrelu r b\nconcat c a r\nlayernorm n c\n", "", "n", "a", 0},
    // zero-mean, but centring a and b shifts the two parts by different
    // amounts: LN(concat) would change (Swin's PatchMerging, docs/math.md 3)
    {"feature concat of zero-mean parts",
     "input x dim=8\nlinear a x out=4\nlinear b x out=6\nconcat c a b\nlayernorm n c\n", "", "n", "a", 0},
    {"feature concat of centred parts (explicit centring ops)",
     "input x dim=8\nlinear a x out=4\nlinear b x out=6\ncentre ca a\ncenter cb b\nconcat c ca cb\n"
     "layernorm n c\nlayernorm na a\n", "n na", "", "", 1},
    {"a centred layer also read by a linear layer",
     "input x dim=8\nlinear a x out=8\nlayernorm n a\nlinear b a out=8\n", "", "n", "a", 0},
    {"a centred layer that is a graph output",
     "input x dim=8\nlinear a x out=8\nlayernorm n a\n", "n", "", "", 1},
    {"a residual stream that is a graph output",
     "input x dim=8\nlinear a x out=8\nlinear b x out=8\nadd s a b\nlayernorm n s\nscale o s value=2\n",
     "", "n", "a", 0},
    {"elementwise product", "input x dim=8\nlinear a x out=8\nlinear b x out=8\nmul m a b\nlayernorm n m\n", "", "n", "m", 0},
    {"a linear layer read by two LNs", "input x dim=8\nlinear a x out=8\nlayernorm n1 a\nlayernorm n2 a\n", "n1 n2", "", "", 1},
    {"a network input straight into an LN", "input x dim=8\nlayernorm n x\n", "", "n", "x", 0},
    {"scalar and token ops keep it",
     "input x dim=8\nconv a x out=8\nscale s a value=0.5\ndropout d s\ntemperature t d value=2\n"
     "cyclic_shift c t\nwindow_partition w c\nwindow_reverse r w\nreshape h r\nparam p dim=8\n"
     "token_concat k p h\navgpool v k\nlayernorm n v\n", "n", "", "", 2},
    {"explicit centring after an affine LN",
     "input x dim=8\nlayernorm n1 x\ncentre c n1\nlinear a x out=8\nadd s c a\nlayernorm n2 s\n", "n2", "n1", "x", 1},
    {"single-head attention over a zero-mean v",
     "input x dim=8\nlinear q x out=8\nlinear k x out=8\nlinear v x out=8\nattention t q k v heads=1\nlayernorm n t\n",
     "n", "", "", 1},
    {"multi-head attention", "input x dim=8\nlinear v x out=8\nattention t v v v heads=2\nlayernorm n t\n", "", "n", "t", 0},
    {"affine RMSNorm output", "input x dim=8\nlinear a x out=8\nrmsnorm r a\nlayernorm n r\n", "", "n", "r", 0},
    // zero-mean in, zero-mean out, but x + c 1 changes x / rms(x): not exact
    {"affine-free RMSNorm does not absorb a shift", "input x dim=8\nlinear a x out=8\nrmsnorm r a affine=0\nlayernorm n r\n", "", "n", "a", 0},
    {"embedding + position param", "input ids dim=1\nembedding e ids vocab=50 out=8\nparam p dim=8\nadd s e p\nlayernorm n s\n", "n", "", "", 2},
    {"a recurrent cell: shared maps, tanh state",
     "input x0 dim=4\ninput x1 dim=4\nlinear wx0 x0 out=8 weight=Wx\nlinear wx1 x1 out=8 weight=Wx\n"
     "tanh h0 wx0\nlinear wh1 h0 out=8 weight=Wh\nadd pre1 wx1 wh1\nlayernorm n1 pre1\ntanh h1 pre1\nlayernorm n2 h1\n",
     "", "n1 n2", "wx1", 0},
};

static void check_adversarial(const Adversarial *t) {
    Graph g;
    parse_or_die(&g, t->text, t->what);
    GraphAnalysis a;
    graph_analyze(&g, &a);
    int ok = 1;
    char names[256];
    for (int want = 0; want < 2; want++) {
        snprintf(names, sizeof(names), "%s", want ? t->foldable : t->not_foldable);
        for (char *n = strtok(names, " "); n != NULL; n = strtok(NULL, " ")) {
            if (foldable_by_name(&g, &a, n) != want) {
                printf("     %s: %s should be %s\n", t->what, n, want ? "foldable" : "not foldable");
                ok = 0;
            }
        }
    }
    if (t->blame[0] != '\0') {
        snprintf(names, sizeof(names), "%s", t->not_foldable);
        char reason[1024], *first = strtok(names, " ");
        graph_ln_reason(&g, &a, graph_find(&g, first), reason, sizeof(reason));
        char needle[GRAPH_MAX_NAME + 2];
        snprintf(needle, sizeof(needle), "%s ", t->blame);
        if (strstr(reason, needle) == NULL) {
            printf("     %s: reason '%s' does not name %s\n", t->what, reason, t->blame);
            ok = 0;
        }
    }
    if (t->num_cbwc >= 0 && a.num_cbwc != t->num_cbwc) {
        printf("     %s: %d cbwc layers, expected %d\n", t->what, a.num_cbwc, t->num_cbwc);
        ok = 0;
    }
    expect(ok, "adversarial: %s%s", t->what, "");
    graph_analysis_free(&a);
    graph_free(&g);
}

static void check_bad(const char *what, const char *text, const char *must_contain) {
    Graph g;
    char err[768] = "";
    int rc = graph_parse(&g, text, "bad.txt", err, sizeof(err));
    int ok = rc != 0 && strstr(err, must_contain) != NULL && strncmp(err, "bad.txt:", 8) == 0;
    printf("%s bad graph: %s -> %s\n", ok ? "ok  " : "FAIL", what, rc != 0 ? err : "accepted");
    failures += !ok;
    if (rc == 0) {
        graph_free(&g);
    }
}

static void check_order_independence(void) {
    // the same network with its lines in another order gives the same verdicts
    const char *sorted = "input x dim=8\nlinear a x out=8\nlinear b x out=8\ngelu g b\n"
                         "layernorm n1 a\nlayernorm n2 g\n";
    const char *shuffled = "layernorm n2 g\nlayernorm n1 a\ngelu g b\nlinear b x out=8\n"
                           "linear a x out=8\ninput x dim=8\n";
    Graph g1, g2;
    parse_or_die(&g1, sorted, "sorted");
    parse_or_die(&g2, shuffled, "shuffled");
    GraphAnalysis a1, a2;
    graph_analyze(&g1, &a1);
    graph_analyze(&g2, &a2);
    int ok = foldable_by_name(&g1, &a1, "n1") == foldable_by_name(&g2, &a2, "n1") &&
             foldable_by_name(&g1, &a1, "n2") == foldable_by_name(&g2, &a2, "n2") &&
             foldable_by_name(&g2, &a2, "n1") && !foldable_by_name(&g2, &a2, "n2");
    expect(ok, "lines in any order: same verdicts%s%s", "", "");
    graph_analysis_free(&a1);
    graph_analysis_free(&a2);
    graph_free(&g1);
    graph_free(&g2);
}

static int compare_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void check_speed(void) {
    // GPT-2 with 100 layers: 10 nodes per layer + 6 = 1006 nodes
    char *text = graph_gpt2_text(100, 64, 4, 256);
    Graph g;
    parse_or_die(&g, text, "gpt2-1000");
    free(text);
    double ms[9];
    for (int r = 0; r < 9; r++) {
        GraphAnalysis a;
        double t0 = now_seconds();
        graph_analyze(&g, &a);
        ms[r] = (now_seconds() - t0) * 1e3;
        graph_analysis_free(&a);
    }
    qsort(ms, 9, sizeof(double), compare_double);
    char line[128];
    snprintf(line, sizeof(line), "%d nodes analysed in %.3f ms (median of 9)", g.num_nodes, ms[4]);
    expect(g.num_nodes >= 1000 && ms[4] < 10.0, "speed: %s, target < 10 ms%s", line, "");
    graph_free(&g);
}

int main(int argc, char **argv) {
    CliSpec spec = {.program = "test_graph", .synopsis = "",
                    .about = "The fold analysis of GPT-2, ViT and Swin graphs and the graph parser.\n"};
    cli_parse(&spec, argc, argv, NULL);
    check_gpt2(12, 768, 12, 50257);
    check_gpt2(1, 32, 2, 256);
    check_gpt2(5, 96, 6, 301);
    check_builtin("vit-tiny", 1);
    check_builtin("vit-base", 1);
    check_builtin("swin-tiny", 0);
    check_builtin("swin-small", 0);
    check_builtin("swin-tiny-centred", 1);
    check_swin_trainer(0);
    check_swin_trainer(1);
    for (size_t i = 0; i < sizeof(ADVERSARIAL) / sizeof(ADVERSARIAL[0]); i++) {
        check_adversarial(&ADVERSARIAL[i]);
    }
    check_order_independence();
    check_bad("a cycle", "input x dim=4\nlinear a b out=4\nlinear b a out=4\n", "cycle");
    check_bad("a self loop", "input x dim=4\nadd a a x\n", "cycle");
    check_bad("an unknown op", "input x dim=4\nfrobnicate a x\n", "unknown op 'frobnicate'");
    check_bad("a dangling input", "input x dim=4\nlinear a y out=4\n", "'y' is not defined");
    check_bad("add of widths 4 and 8", "input x dim=4\nlinear a x out=8\nadd s x a\n", "differ");
    check_bad("linear in= vs its input", "input x dim=4\nlinear a x in=5 out=8\n", "in=5");
    check_bad("layernorm dim= vs its input", "input x dim=4\nlayernorm n x dim=6\n", "dim=6");
    check_bad("fused qkv not a multiple of 3", "input x dim=4\nattention t x\n", "multiple of 3");
    check_bad("a duplicate name", "input x dim=4\nlinear x x out=4\n", "already defined");
    check_bad("an unknown key", "input x dim=4\nlinear a x out=4 width=3\n", "unknown key");
    check_bad("a missing width", "input x\n", "needs dim=");
    check_bad("wrong arity", "input x dim=4\nmul m x\n", "takes 2");
    check_bad("a bad number", "input x dim=four\n", "dim=four");
    check_bad("an empty file", "# nothing\n", "no nodes");
    check_speed();
    printf("%s (%d failed)\n", failures == 0 ? "OK" : "FAILED", failures);
    return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
