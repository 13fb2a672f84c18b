// Multiple-choice eval files in llm.c's format (the one its HellaSwag eval
// reads; written by write_evalfile in llm.c/dev/data/data_common.py), and
// llm.c's score: each completion is appended to the context, the model's mean
// token loss over the completion's tokens is taken, and the completion with
// the lowest mean loss is the answer (docs/formats.md).
//
// File: 256 int32 header slots: magic 20240522, version 1, the number of
// examples, the longest example in bytes; then each example as uint16: 65535,
// the example's bytes (this record included), its index, the label, the
// number of completions, the context's length and tokens, then for each
// completion its length and tokens.
#ifndef FOLDNORM_MC_EVAL_H
#define FOLDNORM_MC_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/reader.h"
#include "gpt2.h"

#define MC_EVAL_MAGIC 20240522
#define MC_MAX_COMPLETIONS 16

typedef struct {
    int label;
    int num_completions;
    int context_len;
    const uint16_t *context;
    int completion_len[MC_MAX_COMPLETIONS];
    const uint16_t *completion[MC_MAX_COMPLETIONS];
} McExample;

typedef struct {
    int count;
    McExample *examples;
    uint16_t *stream; // the examples' uint16s, which the examples point into
    int longest_row;  // the most input tokens a row needs: context + completion - 1
} McEvalSet;

// Parses r: every example's marker, byte count, index (its position), label
// (< completions), completion count (1..MC_MAX_COMPLETIONS), lengths (the
// context and each completion >= 1 token, as llm.c asserts) and tokens (< vocab_size) are checked, and the
// header's count and longest example match the examples. 0, or -1 with the
// reason in err (nothing left allocated). Never exits.
int mc_eval_read(McEvalSet *set, Reader *r, int vocab_size, char *err, size_t err_bytes);
// mc_eval_read of the file at path, or fatal naming it.
void mc_eval_load(McEvalSet *set, const char *path, int vocab_size);
// A trainer's -mc: loads PATH when it is not NULL and refuses rows longer than
// -t T; returns whether a set was loaded (then mc_eval_free it)
int mc_eval_load_for_trainer(McEvalSet *set, const char *path, int vocab_size, int T);
void mc_eval_free(McEvalSet *set);
// Writes examples[0..count) to path in the format above, atomically (fatal on
// a bad example: no context, a completion of no tokens, a token >= 65535, a
// label past the completions, an example of 65536 bytes or more).
void mc_eval_write(const char *path, const McExample *examples, int count);

// Scores examples first, first + stride, ... (one rank's share) with rows of
// T tokens (each example's completions, one forward of num_completions rows;
// T >= set->longest_row); returns how many the model answers right and adds
// the number scored to *scored.
int mc_eval_score(GPT2 *model, const McEvalSet *set, int first, int stride, int T, int *scored);

// The pieces of mc_eval_score a GPU trainer shares (llmc/cuda/gpt2_mc_eval.cuh):
// e's rows of T tokens (num_completions of them: context, completion, zeros)
// and their targets (-1 but on the completion's tokens) ...
void mc_eval_rows(const McExample *e, int T, int *inputs, int *targets);
// ... and the completion of lowest mean loss over its targets (losses: the
// forward's per-position losses of those rows; ties: the first).
int mc_eval_pick(const McExample *e, const int *targets, const float *losses, int T);

#endif
