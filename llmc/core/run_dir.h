// A run folder (-o DIR) holds one run: its checkpoints, main.log, and
// run.txt, the flags a resume must repeat. The trainers' start rules
// (docs/reliability.md, "A run folder is one run"):
//   - without -y 1, a folder that holds a checkpoint is refused (resume it
//     with -y 1, or pick a new folder); with -y 1, a folder without one is;
//   - *.tmp files left by an interrupted atomic write are removed, named;
//   - on resume, each run.txt value must equal this run's (-e, -b, -t, ...).
#ifndef FOLDNORM_RUN_DIR_H
#define FOLDNORM_RUN_DIR_H

// newest_step: the newest complete checkpoint in dir, -1 if none. Dies with
// a message naming the folder when resume and newest_step disagree.
void run_dir_check_start(const char *dir, int resume, int newest_step);
// Removes DIR/*.tmp, printing each name; returns how many.
int run_dir_remove_stale_tmp(const char *dir);

// One recorded setting: a flag ("-b") and its value as text.
typedef struct {
    const char *flag;
    char value[1024];
} RunSetting;

// Fresh run: writes DIR/run.txt (atomically) with the settings. Resuming:
// every setting must equal run.txt's (dies naming both values); a folder
// without run.txt (checkpoints copied by hand) is announced and gets one.
void run_dir_check_settings(const char *dir, const RunSetting *settings, int n, int resuming);
// Does dir hold a run.txt (then run_dir_check_settings only reads it)?
int run_dir_has_settings(const char *dir);

// Prints "resume with: [mpirun -np RANKS] ARGV -y 1" to stdout, the
// arguments shell-quoted where needed, any earlier -y pair dropped.
void run_dir_print_resume_command(int argc, char **argv, int ranks);
// After a stop signal (stop_signal.h) at step: prints what was saved (the
// checkpoint of that step in dir, or that there is no -o) and the command
// that resumes.
void run_dir_report_stop(int sig, int step, const char *dir, int argc, char **argv, int ranks);

#endif
