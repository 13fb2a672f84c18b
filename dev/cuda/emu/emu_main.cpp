// CUDA emulation (a logic check, not a device run): the entry point of an
// emulated program built with -Dmain=emu_program_main. EMU_RANKS=N runs N
// data-parallel ranks as threads of this process (the emulated NCCL joins
// them), each with "-pn N -pr r" appended to its arguments.
#include <stdio.h>
#include <stdlib.h>

#include <string>
#include <thread>
#include <vector>

int emu_program_main(int argc, char **argv);

int main(int argc, char **argv) {
    const char *v = getenv("EMU_RANKS");
    const int ranks = v != nullptr ? atoi(v) : 1;
    if (ranks <= 1) return emu_program_main(argc, argv);
    fprintf(stderr, "emulated CUDA: %d ranks as threads (a logic check, not a device run)\n", ranks);
    std::vector<std::vector<std::string>> args(ranks);
    std::vector<std::vector<char *>> argvs(ranks);
    std::vector<int> codes(ranks, 0);
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; r++) {
        args[r].assign(argv, argv + argc);
        for (const char *s : {"-pn", "", "-pr", ""}) args[r].push_back(s);
        args[r][argc + 1] = std::to_string(ranks);
        args[r][argc + 3] = std::to_string(r);
        for (auto &s : args[r]) argvs[r].push_back(&s[0]);
        argvs[r].push_back(nullptr);
    }
    for (int r = 0; r < ranks; r++) {
        threads.emplace_back([&, r] { codes[r] = emu_program_main(argc + 4, argvs[r].data()); });
    }
    int rc = 0;
    for (int r = 0; r < ranks; r++) {
        threads[r].join();
        if (codes[r] != 0) rc = codes[r];
    }
    return rc;
}
