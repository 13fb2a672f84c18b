// llmc/core/cli.c's check of a program's flag table: a flag name in it twice
// (as -pr once was, the process rank and a new flag) is found, with both
// entries, and cli_parse refuses such a table (exit 1, the flag named on
// stderr) before it reads the command line, -h included; a table without
// one passes. test/suites/cli.sh runs every program's -h, so a duplicate in
// any program's table fails that suite too.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/cli.h"

static int failures = 0;

static void check(int ok, const char *what) {
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    failures += !ok;
}

int main(int argc, char **argv) {
    CliSpec self = {.program = "test_cli", .synopsis = "",
                    .about = "llmc/core/cli.c: a flag named twice in a table is refused.\n"};
    cli_parse(&self, argc, argv, NULL);
    int rank = 0, other = 0, batch = 0;
    CliFlag twice[] = {
        {"-b", CLI_INT, &batch, 1, 64, "batch", NULL, 0, 0},
        {"-pr", CLI_INT, &rank, 0, 7, "process rank", NULL, 0, 0},
        {"-x", CLI_INT, &other, 0, 7, "steps", NULL, 0, 0},
        {"-pr", CLI_INT, &other, 0, 7, "another flag", NULL, 0, 0},
    };
    CliSpec dup = {.program = "dup", .synopsis = "", .flags = twice,
                   .num_flags = CLI_COUNT(twice)};
    int first = -1, second = -1;
    check(cli_find_duplicate(&dup, &first, &second) == 1 && first == 1 && second == 3,
          "-pr twice: found as entries 1 and 3");
    CliSpec once = {.program = "once", .synopsis = "", .flags = twice, .num_flags = 3};
    check(cli_find_duplicate(&once, &first, &second) == 0, "the first 3 entries: no duplicate");

    // cli_parse on the duplicate table, in a child: exit 1 and -pr named, for -h too
    const char *const cases[] = {"-b", "-h"};
    for (int c = 0; c < 2; c++) {
        int pipe_fds[2];
        if (pipe(pipe_fds) != 0) {
            perror("pipe");
            return EXIT_FAILURE;
        }
        fflush(stdout);
        const pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return EXIT_FAILURE;
        }
        if (pid == 0) {
            dup2(pipe_fds[1], STDERR_FILENO);
            close(pipe_fds[0]);
            char *child_argv[] = {"dup", (char *)cases[c], "2", NULL};
            cli_parse(&dup, c == 0 ? 3 : 2, child_argv, NULL);
            _exit(0); // parsed: the check let the table through
        }
        close(pipe_fds[1]);
        char err[1024] = {0};
        size_t got = 0;
        ssize_t n;
        while (got < sizeof(err) - 1 && (n = read(pipe_fds[0], err + got, sizeof(err) - 1 - got)) > 0) {
            got += (size_t)n;
        }
        close(pipe_fds[0]);
        int status = 0;
        waitpid(pid, &status, 0);
        char what[128];
        snprintf(what, sizeof(what), "cli_parse(%s) on the duplicate table: exit 1 naming -pr",
                 cases[c]);
        check(WIFEXITED(status) && WEXITSTATUS(status) == 1 && strstr(err, "flag -pr") != NULL,
              what);
    }
    printf("%d failed\n", failures);
    return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
