// The SFT shard (magic 20241202, tokens + loss mask): shard_parse, llmc/gpt2/dataloader.c,
// as train_gpt2 reads one (GPT-2 vocabulary, B*T+1 = 65 tokens at least).
#include "gpt2/dataloader.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Reader r;
    reader_init_memory(&r, data, size);
    Shard shard;
    char err[READER_ERR_BYTES] = {0};
    int rc = shard_parse(&r, &shard, 65, 50257, err, sizeof(err));
    fuzz_check_error(rc, err, sizeof(err));
    if (rc == 0) {
        shard_free(&shard);
    }
    return 0;
}
