// llm.c's multiple-choice eval file (magic 20240522): mc_eval_read,
// llmc/gpt2/mc_eval.c, as train_gpt2 -mc reads one (GPT-2 vocabulary).
#include "fuzz.h"
#include "gpt2/mc_eval.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Reader r;
    reader_init_memory(&r, data, size);
    McEvalSet set;
    char err[READER_ERR_BYTES] = {0};
    int rc = mc_eval_read(&set, &r, 50257, err, sizeof(err));
    fuzz_check_error(rc, err, sizeof(err));
    if (rc == 0) {
        mc_eval_free(&set);
    } else if (set.examples != NULL || set.stream != NULL) {
        abort(); // a failed read leaves nothing allocated
    }
    return 0;
}
